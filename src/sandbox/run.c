/* `agentrun run`: the launch sequence of a sandbox as one flat list of steps
 * (nsjail's containProc). Each step is a small function here or in its own file;
 * the order below is the order of the sandbox:
 *
 *   preflight -> prepare -> signals blocked -> network (gc, the name, the /30,
 *   audit file) -> the agent spec (environment, mounts) -> cgroup (v2; v1: only planned) -> clone
 * (child: child.c, which unshares its netns first and writes its uid/gid maps) ->
 * proxy process, then proxy netns + listener, then the child's netns (sent by it) and the veth into
 * it, with v1 cgroup creation beside them on a thread -> v2 membership -> the proxy serves, state
 * written -> release the command -> wait, forwarding signals, watching the proxy -> the child's
 * report -> teardown
 *
 * Whatever has been created is undone by release_sandbox on every path out. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentrun/log.h"
#include "agentrun/util.h"
#include "internal.h"

static void close_fd(int *fd)
{
	ar_cleanup_closep(fd);
	*fd = -1;
}

static void close_cgroup_self(struct sandbox *sb)
{
	while (sb->n_cg_self > 0)
		close(sb->cg_self[--sb->n_cg_self]);
}

/* Idempotent: run on the failure path, and again (with nothing left) at scope exit. */
static void release_sandbox(struct sandbox *sb)
{
	ar_auto_error ar_error_t err = NULL;

	if (sb->pid > 0) {
		kill(sb->pid, SIGKILL);
		TEMP_FAILURE_RETRY(waitpid(sb->pid, NULL, 0));
		sb->pid = 0;
	}
	close_cgroup_self(sb);
	if (sb->cg != NULL && ar_cgroup_destroy(sb->cg, &err) == -1)
		ar_warn("%s", err->msg);
	sb->cg = NULL;
	ar_net_stop(&sb->net);
	close_fd(&sb->hosts_fd);
	for (int i = 0; i < 2; i++) {
		close_fd(&sb->release[i]);
		close_fd(&sb->report[i]);
	}
	ar_seccomp_free(sb->seccomp);
	sb->seccomp = NULL;
	ar_mount_plan_free(&sb->plan);
	ar_spec_free(sb->spec);
	sb->spec = NULL;
	sb->env = NULL; /* the spec's */
	sandbox_pty_stop(sb);
	ar_state_uid_release(&sb->lease);
}

/* The spec's seccomp filter, compiled here so a bad profile fails before anything exists
 * (`default` comes precompiled from the build). */
static int prepare(struct sandbox *sb, ar_error_t *err)
{
	return ar_seccomp_prepare_program(ar_spec_seccomp_of(sb->p), &sb->seccomp, err);
}

/* /etc/FILE can be covered: in a rootfs, nothing is created, so only a regular file
 * there is. */
static bool etc_coverable(const char *rootfs, const char *file)
{
	struct stat st;
	if (rootfs == NULL)
		return true; /* the host view is a tmpfs: a mount point can be made */
	ar_autofree char *path = ar_xasprintf("%s/etc/%s", rootfs, file);
	return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The spec's /etc/hosts, where it can be covered. */
static int hosts_file(struct sandbox *sb, ar_error_t *err)
{
	if (!etc_coverable(sb->plan.rootfs, "hosts"))
		return 0;
	sb->hosts_fd = ar_sealed_memfd("hosts", sb->spec->hosts, strlen(sb->spec->hosts));
	if (sb->hosts_fd == -1)
		return ar_error_make(err, errno, "the sandbox's /etc/hosts");
	ar_mount_plan_add_file(&sb->plan, sb->hosts_fd, "/etc/hosts", "the sandbox's /etc/hosts");
	return 0;
}

/* The agent spec (src/spec), once the network has its address and secrets their
 * placeholders: what the command gets (ids, environment, hidden places, mounts, /etc/hosts)
 * is the spec's, and the mount plan is made from it. */
static int spec(struct sandbox *sb, ar_error_t *err)
{
	const char *bundle_target = NULL;
	const char *bundle = ar_net_ca_bundle(&sb->net, &bundle_target);
	struct ar_spec_opts o = {
	    .term = sb->o->term,
	    .caller_private = sb->o->caller_private,
	    .proxy_url = ar_net_proxy_url(&sb->net),
	    .secrets = ar_net_secrets(&sb->net),
	    .ca_bundle = bundle,
	    .ca_bundle_target = bundle_target,
	    .kubeconfig = ar_net_kubeconfig(&sb->net),
	    .ids_set = true,
	    .uid = sb->uid,
	    .gid = sb->gid,
	    .idmap = {.userns = sb->userns, .outer_uid = sb->outer_uid, .outer_gid = sb->outer_gid},
	};
	if (ar_spec_build(sb->p, &o, &sb->spec, err) == -1)
		return -1;
	sb->env = sb->spec->env;
	ar_mount_plan_build(sb->spec, &sb->plan);
	/* transparent capture: the sandbox's resolver is the proxy's DNS stub (in a rootfs,
	 * nothing is created: only a regular /etc/resolv.conf there is covered) */
	if (ar_net_resolv_fd(&sb->net) >= 0 && etc_coverable(sb->plan.rootfs, "resolv.conf"))
		ar_mount_plan_add_file(&sb->plan, ar_net_resolv_fd(&sb->net), "/etc/resolv.conf",
				       "network: proxy: /etc/resolv.conf");
	if (hosts_file(sb, err) == -1)
		return -1;
	return sandbox_idmap_prepare(sb, err);
}

/* The network (DESIGN §7, src/net/): gc of dead sandboxes, this sandbox's name and
 * state; for `network: proxy` the /30 and the audit file. `none` is the bare network
 * namespace the clone creates (loopback only, brought up by the child). The spec
 * follows: its environment carries the listener's address. */
static int network(struct sandbox *sb, ar_error_t *err)
{
	struct ar_net_opts o = {
	    .policy_path = sb->o->policy_path,
	    .audit_path = sb->o->audit_path,
	    .proxy_log = sb->o->proxy_log,
	    .no_cgroups = sb->o->no_cgroups,
	    .busy_poll_us = sb->o->proxy_busy_poll_us,
	};
	return ar_net_start(&sb->net, sb->p, &o, err);
}

static int cgroup_late(struct sandbox *sb, ar_error_t *err);

static int cgroup_late_job(void *arg, ar_error_t *err)
{
	return cgroup_late(arg, err);
}

static int read_report(struct sandbox *sb, int *status, ar_error_t *err);

/* A step on the child that failed because the child died meanwhile (its /proc files
 * gone, as when its first act, the netns, failed): the child's report, written before
 * it exited, is the error. Never waits: a child still alive has written nothing. */
static int child_failed_first(struct sandbox *sb, ar_error_t *err)
{
	struct pollfd p = {.fd = sb->report[0], .events = POLLIN};
	ar_auto_error ar_error_t why = NULL;
	int status = 0;
	if (poll(&p, 1, 0) == 1 && read_report(sb, &status, &why) == -1) {
		ar_error_release(err);
		*err = steal_pointer(&why);
	}
	return -1;
}

/* The child's netns, which its init unshares first thing and sends (network: proxy)
 * with a route socket it opened there. No message: the child failed (its report says
 * why) or was killed. */
static int sandbox_netns(void *arg, int *route, ar_error_t *err)
{
	struct sandbox *sb = arg;
	char stage = 0;
	int fds[2], status = 0;
	size_t n = 0;

	*route = -1;
	int r = ar_recv_fds(sb->release[1], &stage, fds, 2, &n);
	if (r == 1 && n == 2 && stage == SANDBOX_NETNS) {
		*route = fds[1];
		return fds[0];
	}
	int e = errno;
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	/* EOF, or a reset when it died with our go-ahead unread: it has exited, and its
	 * report (written before) says why */
	if ((r == 0 || (r == -1 && e == ECONNRESET)) && read_report(sb, &status, err) == -1)
		return -1;
	return ar_error_make(err, r == -1 ? e : 0, "network: the sandbox's netns never came");
}

/* While the child builds its root: the confined proxy, which makes the proxy netns
 * and its listeners first (forked after the clone, so the sandbox inherits none of
 * their descriptors), the veth into the child's netns (created in place there); beside
 * them, on a thread of its own, the v1 cgroups (cgroup_late: their directories and
 * limits are independent of the network). */
static int network_attach(struct sandbox *sb, ar_error_t *err)
{
	struct ar_net_sandbox with = {.pid = sb->pid,
				      .userns = -1,
				      .netns = sandbox_netns,
				      .beside = cgroup_late_job,
				      .arg = sb};
	/* not root: the proxy netns belongs to the sandbox's user namespace too (the only
	 * way both ends of the veth are in namespaces one netlink request may touch); the
	 * proxy child enters it for that alone (docs/rootless.md). Opened now, while the
	 * init is still dumpable; it names the namespace, not the process. */
	ar_autoclose int userns = -1;
	if (sb->userns && sb->spec->net.mode == AR_NETWORK_PROXY) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)sb->pid);
		if ((userns = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
			ar_error_make(err, errno, "open the sandbox's user namespace");
			return child_failed_first(sb, err);
		}
		with.userns = userns;
	}
	return ar_net_attach(&sb->net, &with, err);
}

/* The proxy's go-ahead, after the cgroup work that ran beside its start: the command
 * never runs without its proxy. */
static int network_ready(struct sandbox *sb, ar_error_t *err)
{
	return ar_net_ready(&sb->net, sb->cg, err);
}

/* Fail closed, and say how to opt out (once). */
static int cgroup_failed(ar_error_t *err)
{
	if (*err != NULL && strstr((*err)->msg, "--no-cgroups") == NULL) {
		char *msg =
		    ar_xasprintf("%s (pass --no-cgroups to run without limits)", (*err)->msg);
		free((*err)->msg);
		(*err)->msg = msg;
	}
	return -1;
}

/* Root fails closed when a limit cannot be enforced. A caller without root uses a
 * cgroup v2 subtree delegated to it; what that lacks is said in one line, and the
 * sandbox runs, unless limits.required (--require-limits) makes it a failure. */
static int cgroup_plan(struct sandbox *sb, ar_error_t *err)
{
	struct ar_cgroup_gap gap;

	if (!sb->userns)
		return ar_cgroup_plan(&sb->spec->limits.cgroup, sb->cgroup_name, &sb->cg, err);
	if (ar_cgroup_plan_delegated(&sb->spec->limits.cgroup, sb->cgroup_name, &sb->cg, &gap,
				     err) == -1)
		return -1;
	if (gap.missing == 0)
		return 0;
	if (sb->spec->limits.cgroup.required)
		return ar_error_make(err, 0,
				     "limits required (--require-limits or limits.required) but "
				     "not enforced without root (%s): %s",
				     gap.limits, gap.why);
	fprintf(stderr, "agentrun: limits not enforced (%s): %s\n", gap.limits, gap.why);
	return 0;
}

/* Which manager, and on v1 which directories; nothing is created yet. On v2 the
 * cgroup is made now: its manager may move agentrun itself into a leaf cgroup, which
 * only works while no child shares agentrun's cgroup. On v1 it is made after the
 * clone (cgroup_late), while the child builds its root on the other CPU. */
static int cgroup(struct sandbox *sb, ar_error_t *err)
{
	if (sb->o->no_cgroups)
		return 0;
	snprintf(sb->cgroup_name, sizeof(sb->cgroup_name), "agentrun-%s-%d", sb->p->name,
		 (int)getpid());
	if (cgroup_plan(sb, err) == -1)
		return cgroup_failed(err);
	if (sb->cg == NULL)
		return 0; /* without root: nothing of the limits can be enforced here */
	sb->child_enters_cgroup = ar_cgroup_self_entry(sb->cg);
	if (!sb->child_enters_cgroup && ar_cgroup_make(sb->cg, &sb->spec->limits.cgroup, err) == -1)
		return cgroup_failed(err);
	return 0;
}

/* v1: create the cgroups now, and open the files through which the child moves itself
 * in (no RCU grace period on the way, cgroup.h); release_command hands them over. */
static int cgroup_late(struct sandbox *sb, ar_error_t *err)
{
	if (sb->cg == NULL || !sb->child_enters_cgroup)
		return 0;
	if (ar_cgroup_make(sb->cg, &sb->spec->limits.cgroup, err) == -1)
		return cgroup_failed(err);
	int n = ar_cgroup_open_self(sb->cg, sb->cg_self, AR_ARRAY_SIZE(sb->cg_self), err);
	if (n == -1)
		return -1;
	sb->n_cg_self = (size_t)n;
	return 0;
}

/* With one of 0, 1, 2 closed by the caller, a pipe would take its number and the
 * command would write into it: hold them with /dev/null first. */
static int open_pipes(struct sandbox *sb, ar_error_t *err)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) == -1 && open("/dev/null", O_RDWR) != fd)
			return ar_error_make(err, errno, "open /dev/null for fd %d", fd);
	/* release: a socket, so a write to a child that already died is EPIPE, not SIGPIPE */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sb->release) == -1 ||
	    pipe2(sb->report, O_CLOEXEC) == -1)
		return ar_error_make(err, errno, "pipe");
	return 0;
}

/* Signals for the sandbox are taken synchronously (sigwaitinfo) by the parent and by
 * the sandbox's init; blocking them before the cgroup exists means none is lost in
 * between and a SIGTERM meanwhile cannot leave the cgroup behind: it is forwarded to
 * the command once that runs. */
static int block_signals(struct sandbox *sb, ar_error_t *err)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (size_t i = 0; i < SANDBOX_N_FORWARDED; i++)
		sigaddset(&set, sandbox_forwarded[i]);
	/* with SIGCHLD ignored (inherited) the kernel would reap the sandbox for us */
	signal(SIGCHLD, SIG_DFL);
	if (sigprocmask(SIG_BLOCK, &set, &sb->oldmask) == -1)
		return ar_error_make(err, errno, "sigprocmask");
	return 0;
}

static void record(const struct sandbox *sb);

/* The clone; then the sandbox's line in its lease, which its init holds from now on. */
static int spawn(struct sandbox *sb, ar_error_t *err)
{
	pid_t pid = sandbox_clone(sb, err);
	if (pid == -1)
		return -1;
	if (pid == 0)
		sandbox_child(sb); /* never returns */
	sb->pid = pid;
	close_fd(&sb->release[0]);
	close_fd(&sb->report[1]);
	record(sb);
	ar_state_uid_release(&sb->lease); /* the init holds the dynamic uid's lease now */
	return 0;
}

/* Unless the child moves itself in (v1: after the release, before it forks the
 * command, without the global threadgroup lock a move by another process takes). */
static int enter_cgroup(struct sandbox *sb, ar_error_t *err)
{
	if (sb->cg == NULL || sb->child_enters_cgroup)
		return 0;
	return ar_cgroup_enter(sb->cg, sb->pid, err);
}

/* The child builds its root from the clone on (it writes its own uid/gid maps), on the
 * other CPU, while this side makes the network and the cgroup (on v1 creates it, on v2
 * moves the child in, which waits for an RCU grace period); it forks the command once
 * released here, 'c', with, on v1, the `tasks` files through which it moves itself in
 * first: the command must start there. A child that died already is reaped by
 * wait_sandbox and its report says why. */
static int release_command(struct sandbox *sb, ar_error_t *err)
{
	if (ar_send_fds(sb->release[1], SANDBOX_RELEASE_COMMAND, sb->cg_self, sb->n_cg_self) ==
		-1 &&
	    errno != EPIPE && errno != ECONNRESET)
		return ar_error_make(err, errno, "release the sandbox");
	close_cgroup_self(sb); /* the child's now */
	close_fd(&sb->release[1]);
	return 0;
}

/* Wait for the sandbox's init, forwarding SIGINT, SIGTERM, SIGHUP, ... to it. */
static int wait_sandbox(struct sandbox *sb, int *wstatus, ar_error_t *err)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (size_t i = 0; i < SANDBOX_N_FORWARDED; i++)
		sigaddset(&set, sandbox_forwarded[i]);
	for (;;) {
		pid_t r = waitpid(sb->pid, wstatus, WNOHANG);
		if (r == sb->pid) {
			sb->pid = 0;
			return 0;
		}
		if (r == -1 && errno != EINTR)
			return ar_error_make(err, errno, "wait for the sandbox");
		/* fail closed: without its proxy the sandbox has no business running */
		if (ar_net_proxy_died(&sb->net)) {
			kill(sb->pid, SIGKILL);
			return ar_error_make(err, 0,
					     "the proxy (pid %d) died; the sandbox was killed",
					     (int)sb->net.proxy.pid);
		}
		int sig = sigwaitinfo(&set, NULL);
		if (sig == SIGWINCH)
			sandbox_pty_resize(sb);
		if (sig > 0 && sig != SIGCHLD)
			kill(sb->pid, sig);
	}
}

/* A failing child left one report in the pipe; a command that ran left none. */
static int read_report(struct sandbox *sb, int *status, ar_error_t *err)
{
	struct child_report r;
	ssize_t n = TEMP_FAILURE_RETRY(read(sb->report[0], &r, sizeof(r)));

	if (n != (ssize_t)sizeof(r))
		return 0;
	r.msg[sizeof(r.msg) - 1] = '\0';
	*status = r.code;
	return ar_error_make(err, 0, "%s", r.msg);
}

/* The sandbox's line in its lease, for `agentrun ps` (after the clone: it names the
 * init's pid). */
static void record(const struct sandbox *sb)
{
	const struct ar_net_state *s = &sb->net.state;
	struct ar_sandbox_record r = {.owner = s->owner,
				      .owner_start = s->owner_start,
				      .pid = sb->pid,
				      .started = s->started,
				      .overrides = sb->o->overrides};
	const char *policy = sb->o->policy_path ? sb->o->policy_path : "";

	snprintf(r.network, sizeof(r.network), "%s", s->network);
	snprintf(r.name, sizeof(r.name), "%s", s->name);
	/* not a path (too long): check --name then asks for --policy */
	snprintf(r.policy, sizeof(r.policy), "%s",
		 strlen(policy) < sizeof(r.policy) ? policy : "?");
	ar_state_record_write(&sb->lease, &r);
}

static void teardown(struct sandbox *sb)
{
	ar_auto_error ar_error_t err = NULL;

	if (sb->cg == NULL)
		return;
	if (ar_cgroup_oom_killed(sb->cg))
		fprintf(stderr, "agentrun: killed by the memory limit (%s)\n",
			sb->spec->limits.cgroup.memory_str ? sb->spec->limits.cgroup.memory_str
							   : "?");
	if (ar_cgroup_destroy(sb->cg, &err) == -1)
		ar_warn("%s", err->msg);
	sb->cg = NULL;
}

/* From the network to the command's go-ahead, in the order of the sandbox; on a failure
 * release_sandbox undoes whatever exists. */
static int (*const steps[])(struct sandbox *, ar_error_t *) = {
    network,	       /* gc, the name, the /30, the audit file */
    spec,	       /* the agent spec (its proxy URL and placeholders), the mount plan */
    cgroup,	       /* planned; on v2 made now, before any child shares our cgroup */
    open_pipes,	       /* release and report */
    spawn,	       /* clone: the child builds its root (child.c) */
    sandbox_pty_start, /* the command's own terminal, relayed */
    network_attach,    /* proxy, proxy netns, veth; v1 cgroups beside them */
    enter_cgroup,      /* v2: the child into its cgroup */
    network_ready,     /* the proxy serves, the state is written */
    release_command,   /* the command runs */
};

int ar_sandbox_run(const struct ar_policy *p, const struct ar_run_opts *o, char *const argv[],
		   int *status, ar_error_t *err)
{
	__attribute__((cleanup(release_sandbox))) struct sandbox sb = {
	    .p = p,
	    .o = o,
	    .argv = argv,
	    .userns = geteuid() != 0,
	    .outer_uid = geteuid(),
	    .outer_gid = getegid(),
	    .release = {-1, -1},
	    .report = {-1, -1},
	    .lease = {.fd = -1},
	    .hosts_fd = -1,
	};
	int wstatus = 0;

	*status = AR_EXIT_RUN_FAIL;
	/* nothing exists yet, and the caller's signal mask is still its own */
	if (sandbox_preflight(&sb, err) == -1 || prepare(&sb, err) == -1 ||
	    block_signals(&sb, err) == -1)
		return -1;
	for (size_t i = 0; i < AR_ARRAY_SIZE(steps); i++)
		if (steps[i](&sb, err) == -1)
			goto fail;
	if (wait_sandbox(&sb, &wstatus, err) == -1)
		goto fail;
	*status = sandbox_exit_code(wstatus);
	if (read_report(&sb, status, err) == -1)
		goto fail;
	teardown(&sb);
	ar_net_stop(&sb.net);
	sigprocmask(SIG_SETMASK, &sb.oldmask, NULL);
	return 0;
fail:
	/* kill the child, remove the cgroup, and only then take pending signals */
	release_sandbox(&sb);
	sigprocmask(SIG_SETMASK, &sb.oldmask, NULL);
	return -1;
}

/* The proxy process of one sandbox: forked by agentrun, it stays in the host netns
 * (its upstream sockets are made there) and serves on a listener that was made
 * inside the proxy netns. Before it serves it is confined, in this order (a table,
 * like the sandbox's child steps): it dies with agentrun, joins its own small cgroup,
 * gets a mount namespace whose root holds only what c-ares reads (resolv.conf, hosts,
 * nsswitch.conf, host.conf, /dev/urandom), builds the proxy (rules from the policy in
 * memory, the resolver, the audit descriptor), drops to an unprivileged uid with no
 * capabilities in any set, sets no_new_privs and installs seccomp/proxy.json. Then it
 * reports "ok" (or the failing step's message) and serves until SIGTERM.
 *
 * Run by an ordinary user (docs/rootless.md) the same steps hold, with three changes:
 * the proxy netns is made by a short-lived grandchild that enters the sandbox's user
 * namespace first (its owner, the caller, may: that namespace then owns both ends of
 * the veth, the one way a netlink request from agentrun, which can enter neither, may
 * join them), while the proxy itself never leaves the caller's user and network
 * namespaces (it dials out as the caller); the proxy's view needs a user namespace of
 * its own (mapping the caller to itself, no one else); and it keeps the caller's uid
 * (no other is the caller's to give).
 *
 * This is the only file that calls the proxy library (include/agentrun/proxy.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <seccomp.h>

#include "agentrun/cgroup.h"
#include "agentrun/net.h"
#include "agentrun/proxy.h"
#include "agentrun/rules.h"
#include "agentrun/seccomp.h"
#include "agentrun/secrets.h"
#include "agentrun/util.h"
#include "internal.h"

#define PROXY_ROOT  "/tmp" /* the tmpfs root is built over it, in the child's mount ns */
#define MAX_PRIVATE 32
#define CG_SELF_MAX 4 /* `tasks` files of the proxy's cgroup: one per v1 hierarchy */

struct child {
	const struct ar_net_proxy_opts *o;
	pid_t parent;
	int chan;		    /* the proxy netns goes to the parent through here */
	int cgchan;		    /* v1: the parent sends the `tasks` files of our cgroup */
	struct net_proxy_netns pn;  /* made here: the netns, a route socket, our listeners */
	pid_t netns_pid;	    /* not root: the grandchild that makes them, else 0 */
	int netns_back;		    /* ... and its socket, on which it sends the listeners */
	int report;		    /* write */
	int stop_fd;		    /* a pidfd of o->stop_with, or -1 */
	const struct ar_cgroup *cg; /* planned by the parent */
	bool cg_by_child;	    /* v1: made and joined here */
	struct ar_proxy *px;
	uid_t uid;     /* leased: its own, dynamic (not root: the caller's) */
	bool rootless; /* o->userns_fd >= 0 */
	int uid_lease; /* held until the proxy exits */
	struct ar_seccomp *seccomp;
	struct ar_proxy_tls *tls; /* with secrets: the sandbox CA and the upstream trust */
};

/* Detached (the OCI hook, `net up`): a session of its own, so the runtime's signals to
 * the hook's group miss it, and stdio on /dev/null, so a runtime that reads the hook's
 * output until EOF does not wait for the proxy. Once: the second call is a no-op. */
static int detach(ar_error_t *err)
{
	if (getsid(0) == getpid())
		return 0;
	if (setsid() == -1)
		return ar_error_make(err, errno, "proxy: setsid");
	ar_autoclose int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null == -1)
		return ar_error_make(err, errno, "proxy: open /dev/null");
	for (int fd = 0; fd < 3; fd++)
		if (dup2(null, fd) == -1)
			return ar_error_make(err, errno, "proxy: stdio on /dev/null");
	return 0;
}

static int die_with_parent(struct child *c, ar_error_t *err)
{
	if (c->o->detached)
		return detach(err);
	/* a process group of its own: a Ctrl-C at the terminal is for the sandbox (which
	 * agentrun forwards it to), and must not stop the proxy first */
	if (setpgid(0, 0) == -1 && errno != EPERM)
		return ar_error_make(err, errno, "proxy: setpgid");
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
		return ar_error_make(err, errno, "proxy: prctl PR_SET_PDEATHSIG");
	if (getppid() != c->parent)
		_exit(1); /* agentrun died before the line above */
	return 0;
}

/* Only what the proxy needs stays open: agentrun's namespace fds, netlink sockets and
 * pipes of the sandbox must not reach it. */
static int close_inherited(struct child *c, ar_error_t *err)
{
	int keep[] = {c->chan,	 c->cgchan,  c->o->audit_fd, c->o->log_fd,
		      c->report, c->stop_fd, c->o->userns_fd};
	size_t n = AR_ARRAY_SIZE(keep);
	for (size_t i = 1; i < n; i++) /* insertion sort, n is 7 */
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	unsigned int from = 3;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < 0 || (unsigned int)keep[i] < from)
			continue;
		if ((unsigned int)keep[i] > from &&
		    syscall(SYS_close_range, from, (unsigned int)keep[i] - 1, 0) == -1)
			return ar_error_make(err, errno, "proxy: close_range");
		from = (unsigned int)keep[i] + 1;
	}
	if (syscall(SYS_close_range, from, ~0U, 0) == -1)
		return ar_error_make(err, errno, "proxy: close_range");
	return 0;
}

/* Its own small limits: memory and pids (DESIGN §7); no cpu hierarchy, which would
 * cost a directory, two writes, a join and a removal on every start. */
static const struct ar_limits proxy_limits = {
    .pids = 16, .memory = 64 << 20, .memory_str = (char *)"64m"};

/* v1: made by agentrun beside its other start-up work (ar_net_proxy_cgroup), joined
 * here through the `tasks` files it sends (a move of ourselves takes no RCU grace
 * period); v2: made by agentrun before the fork, which moves us in. EOF: agentrun gave
 * up, and says why. */
static int enter_cgroup(struct child *c, ar_error_t *err)
{
	char b = 0;
	int fds[CG_SELF_MAX];
	size_t n = 0;
	if (c->cg == NULL || !c->cg_by_child)
		return 0;
	if (ar_recv_fds(c->cgchan, &b, fds, AR_ARRAY_SIZE(fds), &n) != 1 || b != 'c')
		_exit(1);
	close(c->cgchan);
	c->cgchan = -1;
	int r = ar_cgroup_enter_self(c->cg, fds, n, err);
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	return r == -1 ? ar_error_wrap(err, "proxy cgroup") : 0;
}

/* The atime flags of the mount src lies on: in a user namespace (not root) a bind's
 * remount must repeat them, they are locked. */
static unsigned long atime_flags(const char *src)
{
	struct statvfs sv;
	unsigned long fl = 0;
	if (statvfs(src, &sv) == -1)
		return 0;
	if (sv.f_flag & ST_NOATIME)
		fl |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		fl |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		fl |= MS_RELATIME;
	return fl;
}

static int bind_ro(const char *src, const char *name, bool dev, ar_error_t *err)
{
	char dst[64];
	unsigned long fl = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC;

	if (access(src, R_OK) == -1)
		return 0; /* what is absent, c-ares does without */
	fl |= atime_flags(src);
	snprintf(dst, sizeof(dst), PROXY_ROOT "/%s", name);
	ar_autoclose int fd = open(dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd == -1)
		return ar_error_make(err, errno, "proxy: create `%s`", dst);
	if (mount(src, dst, NULL, MS_BIND, NULL) == -1 ||
	    mount(NULL, dst, NULL, fl | (dev ? 0 : MS_NODEV), NULL) == -1)
		return ar_error_make(err, errno, "proxy: bind `%s` read-only", src);
	return 0;
}

/* A root of its own: an empty read-only tmpfs with the resolver's files. */
static int mount_view(struct child *c, ar_error_t *err)
{
	static const char *const files[][2] = {
	    {"/etc/resolv.conf", "etc/resolv.conf"},
	    {"/etc/hosts", "etc/hosts"},
	    {"/etc/nsswitch.conf", "etc/nsswitch.conf"},
	    {"/etc/host.conf", "etc/host.conf"},
	};
	if (unshare(CLONE_NEWNS) == -1 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		return ar_error_make(err, errno, "proxy: private mount namespace");
	if (mount("tmpfs", PROXY_ROOT, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755") ==
		-1 ||
	    mkdir(PROXY_ROOT "/etc", 0755) == -1 || mkdir(PROXY_ROOT "/dev", 0755) == -1)
		return ar_error_make(err, errno, "proxy: tmpfs root");
	for (size_t i = 0; i < AR_ARRAY_SIZE(files); i++)
		if (bind_ro(files[i][0], files[i][1], false, err) == -1)
			return -1;
	if (bind_ro("/dev/urandom", "dev/urandom", true, err) == -1)
		return -1;
	if (chdir(PROXY_ROOT) == -1 || syscall(SYS_pivot_root, ".", ".") == -1 ||
	    umount2(".", MNT_DETACH) == -1 || chdir("/") == -1)
		return ar_error_make(err, errno, "proxy: pivot_root");
	if (mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
		  NULL) == -1)
		return ar_error_make(err, errno, "proxy: read-only root");
	return 0;
}

/* With secrets, while the host's files are still in view: the values (into locked
 * memory left out of core dumps), the TLS module, the sandbox CA (its key made here,
 * never leaving this process) and the upstream trust store. Not dumpable from here on:
 * no core, no ptrace by the same uid. */
static int prepare_secrets(struct child *c, ar_error_t *err)
{
	if (c->o->secrets == NULL)
		return 0;
	char ca_name[AR_POLICY_NAME_MAX + 64];
	snprintf(ca_name, sizeof(ca_name), "agentrun sandbox CA %s-%d", c->o->policy->name,
		 (int)c->parent);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		return ar_error_make(err, errno, "proxy: not dumpable");
	if (ar_secrets_load(c->o->secrets, err) == -1)
		return -1;
	return ar_proxy_tls_prepare(c->o->policy->proxy.upstream_ca, c->o->secrets->upstream_ca_pem,
				    ca_name, &c->tls, err);
}

static int build_proxy(struct child *c, ar_error_t *err)
{
	const struct ar_policy *p = c->o->policy;
	struct ar_cidr priv[MAX_PRIVATE];
	struct ar_proxy_config cfg;

	ar_proxy_config_init(&cfg);
	if (p->proxy.n_allow_private > MAX_PRIVATE)
		return ar_error_make(err, 0, "proxy.allow_private: more than %d ranges",
				     MAX_PRIVATE);
	for (size_t i = 0; i < p->proxy.n_allow_private; i++)
		if (ar_cidr_parse(p->proxy.allow_private[i], &priv[i]) == -1)
			return ar_error_make(err, 0, "proxy.allow_private[%zu]: `%s` is no CIDR", i,
					     p->proxy.allow_private[i]);
	cfg.policy = p;
	cfg.listen_fds[cfg.n_listen_fds++] = c->pn.fds[0];
	if (c->pn.n_fds >= 3) { /* transparent capture: DNS UDP, DNS TCP, captured TCP */
		cfg.dns_udp_fd = c->pn.fds[1];
		cfg.dns_tcp_fd = c->pn.fds[2];
		for (size_t i = 3; i < c->pn.n_fds; i++)
			cfg.capture_fds[cfg.n_capture_fds++] = c->pn.fds[i];
	}
	cfg.audit_fd = c->o->audit_fd;
	cfg.log_fd = c->o->log_fd;
	cfg.allow_private = priv;
	cfg.n_allow_private = p->proxy.n_allow_private;
	cfg.handle_signals = true;
	cfg.stop_fd = c->stop_fd;
	c->stop_fd = -1; /* the proxy's now */
	cfg.secrets = c->o->secrets;
	cfg.tls = c->tls;
	cfg.busy_poll_us = c->o->busy_poll_us;
	return ar_proxy_create(&cfg, &c->px, err);
}

static void free_cap(cap_t *c)
{
	if (*c != NULL)
		cap_free(*c);
}

/* Before the view: the allocator reads the account databases and the leases under
 * /run/agentrun, which the view hides. */
static int lease_uid(struct child *c, ar_error_t *err)
{
	struct ar_uid_lease lease;
	c->uid = geteuid();
	if (c->rootless)
		return 0;
	/* no policy: a dynamic uid of the proxy's own, whatever the sandbox's `user` */
	if (ar_state_uid_lease(&(struct ar_uid_request){.p = NULL}, &lease, err) == -1)
		return ar_error_wrap(err, "proxy");
	c->uid = lease.uid;
	c->uid_lease = lease.fd;
	return 0;
}

static int drop_privileges(struct child *c, ar_error_t *err)
{
	const gid_t g = (gid_t)c->uid;
	const uid_t u = c->uid;

	/* the bounding set first: dropping it needs CAP_SETPCAP, which the uid change ends */
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 && errno != EINVAL)
			return ar_error_make(err, errno, "proxy: drop the bounding set");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == -1)
		return ar_error_make(err, errno, "proxy: clear the ambient set");
	/* not root: the caller's uid already, and setgroups is denied in its namespace */
	if (!c->rootless &&
	    (setgroups(1, &g) == -1 || setresgid(g, g, g) == -1 || setresuid(u, u, u) == -1))
		return ar_error_make(err, errno, "proxy: drop to uid %u", (unsigned)u);
	/* permitted and effective went with the uid change; inheritable did not */
	__attribute__((cleanup(free_cap))) cap_t none = cap_init();
	if (none == NULL || cap_set_proc(none) == -1)
		return ar_error_make(err, errno, "proxy: clear the capability sets");
	return 0;
}

/* First, since agentrun waits for it: the proxy netns, sent to agentrun with a route
 * socket opened there (SCM_RIGHTS) as soon as it exists; while agentrun wires the veth
 * into it, our listeners in it (made while privileged: IP_TRANSPARENT). */
static int make_netns_here(struct child *c, bool stay, ar_error_t *err)
{
	if (net_proxy_netns_enter(&c->pn, stay, err) == -1)
		return -1;
	int fds[2] = {c->pn.ns, c->pn.route};
	int sent = ar_send_fds(c->chan, 'n', fds, 2);
	close(c->pn.ns); /* agentrun's now: nothing of the netns stays here but the sockets */
	close(c->pn.route);
	c->pn.ns = c->pn.route = -1;
	close(c->chan);
	c->chan = -1;
	int r = net_proxy_netns_fill(c->o->policy, c->o->plan, &c->pn, err);
	if (sent == -1)
		_exit(1); /* agentrun gave up, and says why */
	return r;
}

/* Not root, in a grandchild: in the sandbox's user namespace (whose owner we are, so
 * setns gives us every capability there) the same netns work as above, its listeners
 * sent back; it exits there, never to come back to the host netns (it could not: no
 * capability over the caller's own namespaces). Its failure goes to agentrun straight
 * through the report pipe it shares with us; a hand-over that fails does not (the proxy
 * child is gone, and said why itself). */
__attribute__((noreturn)) static void netns_grandchild(struct child *c, int back)
{
	ar_auto_error ar_error_t err = NULL;

	if (setns(c->o->userns_fd, CLONE_NEWUSER) == -1)
		ar_error_make(&err, errno, "proxy: enter the sandbox's user namespace");
	else
		make_netns_here(c, true, &err);
	if (err == NULL)
		_exit(ar_send_fds(back, 'f', c->pn.fds, c->pn.n_fds) == 0 ? 0 : 1);
	if (ar_write_all(c->report, err->msg, strlen(err->msg)) == -1) {
		/* nobody to tell */
	}
	_exit(1);
}

/* The grandchild starts on the netns, and the steps up to build_proxy (the cgroup, our
 * own user and mount namespaces, seccomp) run beside it: only build_proxy needs its
 * listeners (collect_listeners). Forked before own_userns: from there it could not enter
 * the sandbox's user namespace. */
static int make_netns_in_userns(struct child *c, ar_error_t *err)
{
	int sp[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1)
		return ar_error_make(err, errno, "proxy: socketpair");
	pid_t pid = fork();
	if (pid == -1)
		return ar_error_make(err, errno, "proxy: fork");
	if (pid == 0) {
		close(sp[0]);
		netns_grandchild(c, sp[1]);
	}
	close(sp[1]);
	close(c->chan); /* the grandchild's to use */
	c->chan = -1;
	close(c->o->userns_fd); /* ours no longer: nothing later enters it */
	c->netns_pid = pid;
	c->netns_back = sp[0];
	return 0;
}

/* Not root: the grandchild's listeners, once it has made them. */
static int collect_listeners(struct child *c, ar_error_t *err)
{
	char b = 0;
	size_t n = 0;

	if (c->netns_pid == 0)
		return 0;
	int r = ar_recv_fds(c->netns_back, &b, c->pn.fds, AR_ARRAY_SIZE(c->pn.fds), &n);
	close(c->netns_back);
	c->netns_back = -1;
	TEMP_FAILURE_RETRY(waitpid(c->netns_pid, NULL, 0));
	c->netns_pid = 0;
	if (r != 1 || b != 'f')
		_exit(1); /* the grandchild told agentrun why */
	c->pn.n_fds = n;
	return 0;
}

static int make_netns(struct child *c, ar_error_t *err)
{
	return c->rootless ? make_netns_in_userns(c, err) : make_netns_here(c, false, err);
}

/* Not root: a mount namespace (mount_view) needs a user namespace of our own, where
 * the caller maps to itself and to no one else. It leaves the netns as it is (the
 * caller's: upstream sockets are made there) and gives no capability outside it. */
static int own_userns(struct child *c, ar_error_t *err)
{
	char uid_map[32], gid_map[32];
	snprintf(uid_map, sizeof(uid_map), "%u %u 1\n", (unsigned)geteuid(), (unsigned)geteuid());
	snprintf(gid_map, sizeof(gid_map), "%u %u 1\n", (unsigned)getegid(), (unsigned)getegid());
	/* setgroups before gid_map: an unprivileged gid_map needs it denied */
	const char *const maps[][2] = {{"/proc/self/uid_map", uid_map},
				       {"/proc/self/setgroups", "deny"},
				       {"/proc/self/gid_map", gid_map}};

	if (!c->rootless)
		return 0;
	if (unshare(CLONE_NEWUSER) == -1)
		return ar_error_make(err, errno, "proxy: unshare (a user namespace of its own)");
	for (size_t i = 0; i < AR_ARRAY_SIZE(maps); i++) {
		ar_autoclose int fd = open(maps[i][0], O_WRONLY | O_CLOEXEC);
		if (fd == -1 || ar_write_all(fd, maps[i][1], strlen(maps[i][1])) == -1)
			return ar_error_make(err, errno, "proxy: write %s", maps[i][0]);
	}
	return 0;
}

/* The program precompiled at build time (cmake/seccomp_bpfgen.c), valid with the
 * libseccomp it was made with; else compiled here, not in agentrun: the proxy's start
 * is on the sandbox's critical path, and this side runs beside the sandbox's setup. */
bool ar_net_proxy_seccomp_precompiled(void)
{
	const struct scmp_version *v = seccomp_version();
	return ar_seccomp_proxy_bpf_len > 0 && v != NULL &&
	       v->major == ar_seccomp_proxy_bpf_libseccomp[0] &&
	       v->minor == ar_seccomp_proxy_bpf_libseccomp[1] &&
	       v->micro == ar_seccomp_proxy_bpf_libseccomp[2];
}

static int compile_seccomp(struct child *c, ar_error_t *err)
{
	if (ar_net_proxy_seccomp_precompiled())
		return 0;
	return ar_seccomp_parse(ar_seccomp_proxy_json, ar_seccomp_proxy_json_len,
				"seccomp/proxy.json", &c->seccomp, err);
}

static int confine_syscalls(struct child *c, ar_error_t *err)
{
	struct sock_fprog prog = {.len = (unsigned short)ar_seccomp_proxy_bpf_len,
				  .filter = (struct sock_filter *)ar_seccomp_proxy_bpf};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		return ar_error_make(err, errno, "proxy: no_new_privs");
	/* the uid change made it dumpable again (fs.suid_dumpable decides): not with
	 * secrets in memory */
	if (c->o->secrets != NULL && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		return ar_error_make(err, errno, "proxy: not dumpable");
	if (c->seccomp != NULL)
		return ar_seccomp_install(c->seccomp, err);
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, ar_seccomp_proxy_bpf_flags, &prog) == -1)
		return ar_error_make(err, errno, "proxy: install seccomp/proxy.json");
	return 0;
}

static const struct {
	int (*fn)(struct child *c, ar_error_t *err);
} steps[] = {
    {die_with_parent},	 /* PDEATHSIG: a SIGKILLed agentrun takes its proxy along */
    {close_inherited},	 /* none of agentrun's namespace fds or sockets */
    {make_netns},	 /* the proxy netns, our listeners in it; for agentrun to wire (not
			    root: a grandchild makes them meanwhile) */
    {lease_uid},	 /* a dynamic uid of its own, leased for its lifetime */
    {enter_cgroup},	 /* its own small memory/pids limit */
    {own_userns},	 /* not root: what mount_view needs, nothing more */
    {prepare_secrets},	 /* values, TLS module, sandbox CA: before the view hides them
			    (after own_userns: a process not dumpable cannot write its maps) */
    {mount_view},	 /* nothing of the host's files but the resolver's */
    {compile_seccomp},	 /* the embedded profile */
    {collect_listeners}, /* not root: the grandchild's */
    {build_proxy},	 /* while the resolver's files are still readable by uid 0 */
    {drop_privileges},	 /* its leased uid, no capabilities in any set */
    {die_with_parent},	 /* again: the uid change cleared PDEATHSIG */
    {confine_syscalls},	 /* no_new_privs, seccomp/proxy.json, last */
};

/* After "ok": the sandbox CA's certificate (public), for agentrun's bundle. */
static int report_ca(struct child *c)
{
	char pem[8192];
	if (c->tls == NULL)
		return 0;
	int n = ar_proxy_tls_ca_pem(c->tls, pem, sizeof(pem));
	return n > 0 ? ar_write_all(c->report, pem, (size_t)n) : -1;
}

__attribute__((noreturn)) static void child_main(struct child *c)
{
	ar_auto_error ar_error_t err = NULL;

	for (size_t i = 0; i < AR_ARRAY_SIZE(steps); i++)
		if (steps[i].fn(c, &err) == -1) {
			const char *m = err ? err->msg : "proxy setup failed";
			if (ar_write_all(c->report, m, strlen(m)) == -1) {
				/* nobody to tell */
			}
			_exit(1);
		}
	if (ar_write_all(c->report, "ok", 2) == -1 || report_ca(c) == -1)
		_exit(1);
	close(c->report);
	int r = ar_proxy_run(c->px, &err) == -1 ? 1 : 0;
	ar_secrets_free(c->o->secrets); /* the values wiped before the exit */
	_exit(r);
}

/* Without root, where the sandbox's went: a delegated v2 subtree, or none (run's line
 * said which limits are not enforced; the proxy's are required with the sandbox's). */
static int proxy_cgroup_plan(const struct ar_net_proxy_opts *o, const struct ar_limits *lim,
			     struct ar_net_proxy *px, ar_error_t *err)
{
	struct ar_cgroup_gap gap;

	if (geteuid() == 0)
		return ar_cgroup_plan(lim, o->cgroup_name, &px->cg, err);
	if (ar_cgroup_plan_delegated(lim, o->cgroup_name, &px->cg, &gap, err) == -1)
		return -1;
	if (gap.missing == 0 || !o->policy->limits.required)
		return 0;
	ar_cgroup_destroy(px->cg, NULL);
	px->cg = NULL;
	return ar_error_make(err, 0, "%s not enforced: %s", gap.limits, gap.why);
}

/* The cgroup: planned before the fork; on v1 made after it (ar_net_proxy_cgroup) and
 * joined by the child, on v2 this side makes it and moves the child in. */
static int proxy_cgroup(const struct ar_net_proxy_opts *o, struct ar_net_proxy *px, struct child *c,
			ar_error_t *err)
{
	if (o->cgroup_name == NULL)
		return 0;
	if (proxy_cgroup_plan(o, &proxy_limits, px, err) == -1)
		return ar_error_wrap(err, "proxy cgroup");
	if (px->cg == NULL)
		return 0;
	c->cg = px->cg;
	px->cg_by_child = c->cg_by_child = ar_cgroup_self_entry(px->cg);
	if (!px->cg_by_child && ar_cgroup_make(px->cg, &proxy_limits, err) == -1)
		return ar_error_wrap(err, "proxy cgroup");
	return 0;
}

static void close_child_fds(struct child *c)
{
	if (c->stop_fd >= 0)
		close(c->stop_fd);
	c->stop_fd = -1;
}

int ar_net_proxy_start(const struct ar_net_proxy_opts *o, struct ar_net_proxy *px, ar_error_t *err)
{
	struct child c = {.o = o,
			  .rootless = o->userns_fd >= 0,
			  .parent = getpid(),
			  .chan = -1,
			  .cgchan = -1,
			  .pn = {.host = -1, .ns = -1, .route = -1},
			  .netns_back = -1,
			  .report = -1,
			  .stop_fd = -1,
			  .uid_lease = -1};
	int go[2] = {-1, -1}, rep[2] = {-1, -1}, cg[2] = {-1, -1};

	*px = (struct ar_net_proxy)AR_NET_PROXY_NONE;
	if (o->stop_with > 0 && (c.stop_fd = (int)syscall(SYS_pidfd_open, o->stop_with, 0)) == -1) {
		ar_error_make(err, errno, "proxy: pidfd of process %d", (int)o->stop_with);
		goto fail;
	}
	if (proxy_cgroup(o, px, &c, err) == -1)
		goto fail;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, go) == -1 ||
	    pipe2(rep, O_CLOEXEC) == -1 ||
	    (px->cg_by_child && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cg) == -1)) {
		ar_error_make(err, errno, "proxy: pipe");
		goto fail;
	}
	c.chan = go[0];
	c.cgchan = cg[0];
	c.report = rep[1];
	px->pid = fork();
	if (px->pid == -1) {
		ar_error_make(err, errno, "proxy: fork");
		goto fail;
	}
	if (px->pid == 0)
		child_main(&c);
	px->start = ar_state_proc_start(px->pid);
	px->report = steal_fd(&rep[0]);
	px->chan = steal_fd(&go[1]);
	px->cgchan = steal_fd(&cg[1]);
	if (px->cg != NULL && !px->cg_by_child && ar_cgroup_enter(px->cg, px->pid, err) == -1)
		goto fail;
	close(go[0]);
	close(rep[1]);
	if (cg[0] >= 0)
		close(cg[0]);
	close_child_fds(&c);
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		int *fds[] = {&go[i], &rep[i], &cg[i]};
		for (size_t k = 0; k < AR_ARRAY_SIZE(fds); k++)
			if (*fds[k] >= 0)
				close(*fds[k]);
	}
	close_child_fds(&c);
	ar_net_proxy_stop(px);
	return -1;
}

int ar_net_proxy_cgroup(struct ar_net_proxy *px, ar_error_t *err)
{
	int fds[CG_SELF_MAX];
	if (px->cgchan < 0)
		return 0;
	int n = -1;
	if (ar_cgroup_make(px->cg, &proxy_limits, err) == 0)
		n = ar_cgroup_open_self(px->cg, fds, AR_ARRAY_SIZE(fds), err);
	if (n == -1) {
		close(px->cgchan); /* the child exits */
		px->cgchan = -1;
		return ar_error_wrap(err, "proxy cgroup");
	}
	int r = ar_send_fds(px->cgchan, 'c', fds, (size_t)n);
	int e = errno;
	for (int i = 0; i < n; i++)
		close(fds[i]);
	close(px->cgchan);
	px->cgchan = -1;
	/* a child that died already tells why in its report */
	if (r == -1 && e != EPIPE && e != ECONNRESET)
		return ar_error_make(err, e, "proxy cgroup: hand over its `tasks` files");
	return 0;
}

int ar_net_proxy_netns(struct ar_net_proxy *px, int *netns, int *route, ar_error_t *err)
{
	char b = 0;
	int fds[2];
	size_t n = 0;

	int r = ar_recv_fds(px->chan, &b, fds, 2, &n);
	close(px->chan);
	px->chan = -1;
	if (r == 1 && n == 2 && b == 'n') {
		*netns = fds[0];
		*route = fds[1];
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	/* the child failed: its report says why */
	if (ar_net_proxy_ready(px, err) == -1)
		return -1;
	return ar_error_make(err, 0, "proxy: no netns came from it");
}

int ar_net_proxy_ready(struct ar_net_proxy *px, ar_error_t *err)
{
	char msg[16384];
	ssize_t n = 0, r;

	if (px->report < 0)
		return 0;
	/* "ok", then with secrets the CA certificate, then EOF (the child closes it) */
	while ((r = TEMP_FAILURE_RETRY(read(px->report, msg + n, sizeof(msg) - 1 - (size_t)n))) > 0)
		n += r;
	close(px->report);
	px->report = -1;
	msg[n] = '\0';
	if (n >= 2 && memcmp(msg, "ok", 2) == 0) {
		free(px->ca_pem);
		px->ca_pem = n > 2 ? ar_xstrdup(msg + 2) : NULL;
		return 0;
	}
	return ar_error_make(err, 0, "%s", n > 0 ? msg : "the proxy died while starting");
}

bool ar_net_proxy_exited(struct ar_net_proxy *px)
{
	if (px->pid <= 0 || px->reaped)
		return px->reaped;
	if (waitpid(px->pid, &px->status, WNOHANG) == px->pid)
		px->reaped = true;
	return px->reaped;
}

void ar_net_proxy_term(struct ar_net_proxy *px)
{
	/* a child still waiting for its cgroup exits at once */
	int *fds[] = {&px->chan, &px->cgchan};
	for (size_t i = 0; i < AR_ARRAY_SIZE(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
	if (px->pid > 0 && !px->reaped && !px->termed)
		kill(px->pid, SIGTERM);
	px->termed = true;
}

/* Once the proxy is reaped (ar_net_proxy_stop): its cgroup, made by agentrun on v1 and
 * v2 alike, goes with the handle. */
static void remove_cgroup(struct ar_net_proxy *px)
{
	ar_auto_error ar_error_t err = NULL;
	if (px->cg != NULL && ar_cgroup_destroy(px->cg, &err) == -1)
		ar_error_release(&err);
	px->cg = NULL;
}

void ar_net_proxy_stop(struct ar_net_proxy *px)
{
	if (px->pid > 0 && !px->reaped) {
		/* a pidfd turns "exited" into a poll with a timeout, without a sleep loop */
		ar_autoclose int pfd = (int)syscall(SYS_pidfd_open, px->pid, 0);
		ar_net_proxy_term(px);
		if (pfd >= 0 && !ar_net_proxy_exited(px)) {
			struct pollfd p = {.fd = pfd, .events = POLLIN};
			TEMP_FAILURE_RETRY(poll(&p, 1, 1000));
		}
		if (!ar_net_proxy_exited(px)) {
			kill(px->pid, SIGKILL);
			if (TEMP_FAILURE_RETRY(waitpid(px->pid, &px->status, 0)) == px->pid)
				px->reaped = true;
		}
	}
	ar_net_proxy_term(px);
	if (px->report >= 0)
		close(px->report);
	px->report = -1;
	free(px->ca_pem);
	px->ca_pem = NULL;
	remove_cgroup(px);
}

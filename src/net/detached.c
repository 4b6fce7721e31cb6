/* A proxy network that outlives the process that made it: the OCI hook wires a
 * container's netns and exits before the container runs; `agentrun net up` wires a
 * named netns that runsc adopts later. The same pieces as `run` (topology, confined
 * proxy child, state), with the proxy detached (own session, no PDEATHSIG) and
 * stopped later from the state alone, by pid and start time. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agentrun/cgroup.h"
#include "agentrun/net.h"
#include "agentrun/secrets.h"
#include "agentrun/util.h"
#include "internal.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

void net_remove_cgroups(const char *list, int tries)
{
	ar_autofree char *copy = ar_xstrdup(list);
	char *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		/* ours: a sandbox's, a proxy's, or the leaf agentrun moved into (v2) */
		if (strncmp(d, CGROUP_ROOT "/", sizeof(CGROUP_ROOT)) != 0 ||
		    (strstr(d, "/agentrun-") == NULL &&
		     strstr(d, "/agentrun_supervisor-") == NULL) ||
		    strstr(d, "..") != NULL)
			continue;
		/* an exited proxy stays in it until its new parent reaps it */
		for (int i = 1; rmdir(d) == -1 && errno == EBUSY && i < tries; i++)
			usleep(2000);
	}
}

static void state_init(const struct ar_net_detached_opts *o, struct ar_net_state *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", o->name);
	s->owner = o->owner;
	s->owner_start = o->owner > 0 ? ar_state_proc_start(o->owner) : 0;
	s->pid = o->pid;
	s->started = (int64_t)time(NULL);
	snprintf(s->network, sizeof(s->network), "proxy");
	snprintf(s->sandbox_ip, sizeof(s->sandbox_ip), "%s", o->plan->sandbox_ip);
	snprintf(s->proxy_ip, sizeof(s->proxy_ip), "%s", o->plan->proxy_ip);
	s->port = o->plan->port;
	s->net_index = -1; /* no allocation: the proxy netns is private (docs/oci.md) */
	snprintf(s->policy, sizeof(s->policy), "%s", o->policy_path ? o->policy_path : "");
}

/* The sandbox CA the proxy reported, appended to the container's CA bundle before the
 * container runs (the bind sees the same file). */
static int append_ca(const char *path, const char *pem, ar_error_t *err)
{
	if (pem == NULL || path == NULL)
		return ar_error_make(err, 0, "proxy: no sandbox CA came from it");
	ar_autoclose int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1 || ar_write_all(fd, pem, strlen(pem)) == -1)
		return ar_error_make(err, errno, "secrets: the CA bundle `%s`", path);
	return 0;
}

/* The container's own kubeconfig, in place (the bind sees the same file): its server
 * and context, the token's placeholder, the sandbox CA as the cluster's. */
static int write_kubeconfig(const struct ar_net_detached_opts *o, const char *pem, ar_error_t *err)
{
	ar_autobuf struct ar_buf kc = {0};
	const struct ar_secret *x = &o->secrets->s[o->secrets->n - 1]; /* the kubeconfig's */
	ar_kubeconfig_render(o->kube, x->placeholder, pem, &kc);
	ar_autoclose int fd = open(o->kubeconfig, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1 || ar_write_all(fd, kc.data, kc.len) == -1)
		return ar_error_make(err, errno, "secrets: the kubeconfig `%s`", o->kubeconfig);
	return 0;
}

static int start(const struct ar_net_detached_opts *o, int ns_fd, struct ar_net_state *s,
		 struct ar_net_proxy *px, struct ar_net_topology *t, ar_error_t *err)
{
	char cgname[AR_POLICY_NAME_MAX + 48];
	ar_autofree char *audit = ar_net_audit_path(s->name);
	if (net_mkdir_root("audit", err) == -1)
		return -1;
	ar_autoclose int audit_fd = open(audit, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (audit_fd == -1)
		return ar_error_make(err, errno, "audit: open `%s`", audit);
	snprintf(s->audit, sizeof(s->audit), "%s", audit);
	snprintf(cgname, sizeof(cgname), "agentrun-%s-proxy-%d", o->p->name, (int)getpid());
	struct ar_net_proxy_opts po = {.policy = o->p,
				       .plan = o->plan,
				       .audit_fd = audit_fd,
				       .log_fd = -1,
				       .cgroup_name = o->no_cgroups ? NULL : cgname,
				       .detached = true,
				       .stop_with = o->owner,
				       .secrets = o->secrets,
				       .userns_fd = -1};
	if (ar_net_proxy_start(&po, px, err) == -1)
		return -1;
	s->proxy_pid = px->pid;
	s->proxy_start = px->start;
	/* the same path as `run`'s, transparent capture included; the container's netns is
	 * entered by a thread of ours (ar_net_topology_wire without a route socket) */
	int proxy_ns = -1, route = -1;
	if (ar_net_proxy_cgroup(px, err) == -1 ||
	    ar_net_proxy_netns(px, &proxy_ns, &route, err) == -1 ||
	    ar_net_topology_adopt(t, o->plan, proxy_ns, route, err) == -1 ||
	    ar_net_topology_wire(t, ns_fd, -1, err) == -1 || net_capture_routes(o->p, t, err) == -1)
		return -1;
	if (ar_net_proxy_ready(px, err) == -1)
		return ar_error_wrap(err, "proxy");
	if (o->secrets != NULL && append_ca(o->ca_bundle, px->ca_pem, err) == -1)
		return -1;
	if (o->kubeconfig != NULL && write_kubeconfig(o, px->ca_pem, err) == -1)
		return -1;
	if (px->cg != NULL) /* they exist now (v1: the child made them) */
		ar_cgroup_dirs(px->cg, s->proxy_cgroup, sizeof(s->proxy_cgroup));
	if (o->owner == 0) { /* net up: the proxy's end is the netns' end */
		s->owner = px->pid;
		s->owner_start = px->start;
	}
	return ar_net_state_write(s, err);
}

int ar_net_wire_detached(const struct ar_net_detached_opts *o, int ns_fd, struct ar_net_state *out,
			 ar_error_t *err)
{
	struct ar_net_topology t = {.proxy_ns = -1, .sandbox_ns = -1};
	struct ar_net_proxy px = AR_NET_PROXY_NONE;

	if (geteuid() != 0)
		return ar_error_make(err, 0,
				     "%s: network: proxy needs root (the proxy netns and the veth "
				     "pair)",
				     o->p->origin);
	if (net_check_capture(o->p, err) == -1)
		return -1;
	ar_net_gc();
	state_init(o, out);
	int r = start(o, ns_fd, out, &px, &t, err);
	/* the proxy holds the listener, hence the proxy netns and the veth: ours go */
	ar_net_topology_close(&t);
	if (r == -1) {
		ar_net_proxy_stop(&px);
		ar_net_unwire(out);
		return -1;
	}
	/* the handle only: the cgroup is the proxy's until ar_net_unwire removes it, and
	 * this process exits soon (the hook) */
	ar_cgroup_forget(px.cg);
	px.cg = NULL;
	free(px.ca_pem);
	return 0;
}

/* SIGTERM, up to a second, then SIGKILL: through a pidfd taken while pid was still
 * the one started at `start`, so no signal reaches a recycled pid. */
static void stop_proxy(pid_t pid, uint64_t start)
{
	if (!ar_state_proc_alive(pid, start))
		return;
	ar_autoclose int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd == -1 || !ar_state_proc_alive(pid, start))
		return;
	for (int sig = SIGTERM;; sig = SIGKILL) {
		struct pollfd p = {.fd = pfd, .events = POLLIN};
		if (syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0) == -1)
			return;
		if (TEMP_FAILURE_RETRY(poll(&p, 1, 1000)) == 1 || sig == SIGKILL)
			return;
	}
}

void ar_net_unwire(const struct ar_net_state *s)
{
	struct stat st;
	stop_proxy(s->proxy_pid, s->proxy_start);
	/* The exited proxy (reparented when the hook or net up exited) stays in its cgroup
	 * until its reaper reaps it: wait up to 2 s, which a loaded machine's init may need
	 * (the hook's proxy has normally exited with its container and been reaped long
	 * before poststop; what stays, gc removes) */
	if (s->proxy_cgroup[0])
		net_remove_cgroups(s->proxy_cgroup, 1000);
	/* an audit without a single request says nothing */
	if (s->audit[0] && stat(s->audit, &st) == 0 && st.st_size == 0)
		unlink(s->audit);
	ar_net_state_remove(s->name);
}

/* Inside the new netns: lo up, the bind mount, an fd. */
static int named_side(void *data, ar_error_t *err)
{
	const char *path = data;
	if (net_lo_up(err) == -1)
		return -1;
	if (mount("/proc/thread-self/ns/net", path, NULL, MS_BIND, NULL) == -1)
		return ar_error_make(err, errno, "network: bind the netns at `%s`", path);
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return ar_error_make(err, errno, "network: open the new netns");
	return fd;
}

int ar_net_netns_create(const char *path, ar_error_t *err)
{
	ar_autoclose int host = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	ar_autoclose int file = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (host == -1)
		return ar_error_make(err, errno, "network: open this process's netns");
	if (file == -1)
		return ar_error_make(err, errno, "network: create `%s`", path);
	if (unshare(CLONE_NEWNET) == -1) {
		unlink(path);
		return ar_error_make(err, errno, "network: unshare (the named netns)");
	}
	int fd = named_side((void *)path, err);
	if (setns(host, CLONE_NEWNET) == -1)
		abort(); /* every later socket would be made in the wrong netns */
	if (fd == -1)
		ar_net_netns_remove(path);
	return fd;
}

void ar_net_netns_remove(const char *path)
{
	umount2(path, MNT_DETACH);
	unlink(path);
}

/* One sandbox's network and state, in the order `run` needs them: gc of dead
 * sandboxes, a unique name, the /30, the proxy netns and listener, the audit file, the
 * proxy process, the state; after the clone the veth into the sandbox's netns. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agentrun/capture.h"
#include "agentrun/dns.h"
#include "agentrun/cgroup.h"
#include "agentrun/log.h"
#include "agentrun/proxy.h"
#include "agentrun/rules.h"
#include "agentrun/net.h"
#include "agentrun/util.h"
#include "internal.h"

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int open_append(const char *path, ar_error_t *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd == -1)
		return ar_error_make(err, errno, "open `%s`", path);
	return fd;
}

/* Before the clone: the files, so a bad --audit or --proxy-log fails before anything
 * runs. */
static int open_files(struct ar_net *n, const struct ar_net_opts *o, ar_error_t *err)
{
	ar_autofree char *audit =
	    o->audit_path ? ar_xstrdup(o->audit_path) : ar_net_audit_path(n->state.name);

	if (o->audit_path == NULL && net_mkdir_root("audit", err) == -1)
		return -1;
	if ((n->audit_fd = open_append(audit, err)) == -1)
		return ar_error_wrap(err, "audit");
	snprintf(n->state.audit, sizeof(n->state.audit), "%s", audit);
	n->audit_default = o->audit_path == NULL;
	if (o->proxy_log && (n->log_fd = open_append(o->proxy_log, err)) == -1)
		return ar_error_wrap(err, "--proxy-log");
	/* agentrun's stderr: a terminal or a pipe is reopened, an open file description of
	 * the proxy's own, so that the proxy may make its log writes non-blocking without
	 * doing so to what the command writes to; a regular file (where O_NONBLOCK means
	 * nothing, and a second offset would overwrite) and a socket are shared */
	struct stat st;
	if (n->log_fd == -1 && fstat(2, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
		n->log_fd = open("/proc/self/fd/2", O_WRONLY | O_CLOEXEC);
	if (n->log_fd == -1)
		n->log_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
	return 0;
}

/* One line at the start of a learn run: what it lets through, what it still refuses,
 * where the observation goes (docs/learn.md). */
static void learn_notice(const struct ar_net *n)
{
	if (n->p->mode != AR_MODE_LEARN)
		return;
	fprintf(stderr,
		"agentrun: learn mode: names outside allowed_hosts are let through and audited "
		"as learned in %s; still refused: private and metadata addresses outside "
		"proxy.allow_private, address literals, SNI or Host mismatches, labels over %d "
		"characters, more than %d random-looking names under one parent; then `agentrun "
		"audit %s --propose%s%s`\n",
		n->state.audit, AR_DNS_LEARN_LABEL_MAX, AR_DNS_LEARN_FLOOD, n->state.name,
		n->state.policy[0] ? " --policy " : "", n->state.policy);
}

/* The /30 only: the namespaces and the proxy come after the clone (ar_net_attach), so
 * the sandbox inherits none of their descriptors and they are made while it builds its
 * root. */
static int start_network(struct ar_net *n, const struct ar_net_opts *o, ar_error_t *err)
{
	struct ar_net_range range;

	if (ar_net_range_current(&range, err) == -1 || net_check_capture(n->p, err) == -1 ||
	    ar_capture_pool_check(n->p->proxy.dns_pool, range.base, range.prefix, err) == -1 ||
	    ar_net_alloc(&range, n->p->proxy.port, &n->plan, err) == -1)
		return -1;
	n->allocated = true;
	n->state.net_index = n->plan.index;
	snprintf(n->state.sandbox_ip, sizeof(n->state.sandbox_ip), "%s", n->plan.sandbox_ip);
	snprintf(n->state.proxy_ip, sizeof(n->state.proxy_ip), "%s", n->plan.proxy_ip);
	n->state.port = n->plan.port;
	if (open_files(n, o, err) == -1)
		return -1;
	learn_notice(n);
	return 0;
}

/* Transparent capture (docs/network.md): the sandbox's resolv.conf names the proxy's
 * address, where the DNS stub answers. A sealed memfd: nothing on the host's disk,
 * gone with agentrun; the sandbox's mount code binds a copy of it. */
static int make_resolv(struct ar_net *n, ar_error_t *err)
{
	char text[128];
	int len = snprintf(text, sizeof(text),
			   "# agentrun: the DNS stub of the proxy (network: proxy, "
			   "transparent)\nnameserver %s\n",
			   n->plan.proxy_ip);
	n->resolv_fd = ar_sealed_memfd("resolv.conf", text, (size_t)len);
	if (n->resolv_fd == -1)
		return ar_error_make(err, errno, "network: the sandbox's resolv.conf");
	return 0;
}

int net_capture_routes(const struct ar_policy *p, struct ar_net_topology *t, ar_error_t *err)
{
	if (!p->proxy.transparent)
		return 0;
	if (ar_capture_add_sandbox_route(t->nl_sandbox, t->plan.proxy, err) == -1)
		return ar_error_wrap(err, "transparent capture");
	return 0;
}

static int start_proxy(struct ar_net *n, int userns, ar_error_t *err)
{
	char cgname[AR_POLICY_NAME_MAX + 48];

	snprintf(cgname, sizeof(cgname), "agentrun-%s-proxy-%d", n->p->name, (int)getpid());
	struct ar_net_proxy_opts po = {
	    .policy = n->p,
	    .plan = &n->plan,
	    .audit_fd = n->audit_fd,
	    .log_fd = n->log_fd,
	    .cgroup_name = n->no_cgroups ? NULL : cgname,
	    /* it stops when the sandbox's init exits, as agentrun wakes to it: its exit
	     * then runs beside agentrun's teardown instead of after a SIGTERM from it */
	    .stop_with = n->state.pid,
	    .secrets = n->secrets,
	    .userns_fd = userns,
	    .busy_poll_us = n->busy_poll_us,
	};
	if (ar_net_proxy_start(&po, &n->proxy, err) == -1)
		return -1;
	n->state.proxy_pid = n->proxy.pid;
	n->state.proxy_start = n->proxy.start;
	return 0;
}

int ar_net_start(struct ar_net *n, const struct ar_policy *p, const struct ar_net_opts *o,
		 ar_error_t *err)
{
	*n = (struct ar_net){.p = p,
			     .topo = {.proxy_ns = -1, .sandbox_ns = -1},
			     .proxy = AR_NET_PROXY_NONE,
			     .audit_fd = -1,
			     .log_fd = -1,
			     .resolv_fd = -1,
			     .bundle_fd = -1,
			     .kubeconfig_fd = -1,
			     .no_cgroups = o->no_cgroups,
			     .busy_poll_us = o->busy_poll_us};
	n->state.net_index = -1;
	ar_net_gc(); /* the caller's own: root's, or this user's */
	snprintf(n->state.name, sizeof(n->state.name), "%s-%d", p->name, (int)getpid());
	n->state.owner = getpid();
	n->state.owner_start = ar_state_proc_start(getpid());
	n->state.started = (int64_t)time(NULL);
	snprintf(n->state.network, sizeof(n->state.network), "%s",
		 p->network == AR_NETWORK_PROXY ? "proxy" : "none");
	/* "?" (not a path) when it does not fit: check --name then asks for --policy */
	const char *policy = o->policy_path ? o->policy_path : "";
	snprintf(n->state.policy, sizeof(n->state.policy), "%s",
		 strlen(policy) < sizeof(n->state.policy) ? policy : "?");
	if (net_secrets_check(n, err) == -1)
		goto fail;
	if (p->network == AR_NETWORK_PROXY && start_network(n, o, err) == -1)
		goto fail;
	if (net_secrets_bundle(n, err) == -1)
		goto fail;
	if (p->network == AR_NETWORK_PROXY && p->proxy.transparent && make_resolv(n, err) == -1)
		goto fail;
	return 0;
fail:
	ar_net_stop(n);
	return -1;
}

/* The proxy netns the proxy child makes, the sandbox's its init makes (each beside the
 * other's, and beside the cgroup work), then the veth between them. */
static int attach_network(struct ar_net *n, const struct ar_net_sandbox *sb, ar_error_t *err)
{
	int proxy_ns = -1, route = -1;
	if (ar_net_proxy_netns(&n->proxy, &proxy_ns, &route, err) == -1)
		return -1;
	if (ar_net_topology_adopt(&n->topo, &n->plan, proxy_ns, route, err) == -1)
		return -1;
	ar_autoclose int fd = sb->netns(sb->arg, &route, err);
	if (fd == -1 || ar_net_topology_wire(&n->topo, fd, route, err) == -1)
		return -1;
	return net_capture_routes(n->p, &n->topo, err);
}

struct beside_job {
	struct ar_net_proxy *proxy;
	int (*fn)(void *arg, ar_error_t *err);
	void *arg;
	ar_error_t err;
	int ret;
};

/* The proxy's cgroup (it waits for it), then the caller's own work. */
static int beside(struct beside_job *j)
{
	if (ar_net_proxy_cgroup(j->proxy, &j->err) == -1)
		return -1;
	return j->fn ? j->fn(j->arg, &j->err) : 0;
}

static void *beside_thread(void *p)
{
	struct beside_job *j = p;
	j->ret = beside(j);
	return NULL;
}

int ar_net_attach(struct ar_net *n, const struct ar_net_sandbox *sb, ar_error_t *err)
{
	n->state.pid = sb->pid;
	if (n->p->network != AR_NETWORK_PROXY)
		return sb->beside ? sb->beside(sb->arg, err) : 0;
	/* the proxy first: its setup runs beside the proxy netns' creation */
	if (start_proxy(n, sb->userns, err) == -1)
		return -1;
	close_fd(&n->audit_fd); /* the proxy has its copies now */
	close_fd(&n->log_fd);
	/* after the fork: no thread of ours is running when the proxy is forked */
	struct beside_job j = {&n->proxy, sb->beside, sb->arg, NULL, 0};
	pthread_t t;
	bool threaded = pthread_create(&t, NULL, beside_thread, &j) == 0;
	if (!threaded)
		j.ret = beside(&j);
	int r = attach_network(n, sb, err);
	if (threaded)
		pthread_join(t, NULL);
	if (j.ret == -1 && r == 0) {
		*err = j.err;
		j.err = NULL;
		r = -1;
	}
	ar_error_release(&j.err);
	return r;
}

/* network: none: a cgroup no later run would sweep (cgroup.h) is gc's to find; the
 * record is best effort (a user without a state directory still runs). */
static void record_cgroup(struct ar_net *n, const struct ar_cgroup *cg)
{
	ar_auto_error ar_error_t err = NULL;

	if (!ar_cgroup_unswept(cg))
		return;
	ar_cgroup_dirs(cg, n->state.cgroup, sizeof(n->state.cgroup));
	if (ar_net_state_write(&n->state, &err) == -1)
		ar_debug("network: none: no state for gc (%s)", err->msg);
	else
		n->state_written = true;
}

int ar_net_ready(struct ar_net *n, const struct ar_cgroup *cg, ar_error_t *err)
{
	/* the state is written once, for the sandboxes that hold something gc must find:
	 * a /30, a proxy, a cgroup no run sweeps (otherwise network: none keeps none: its
	 * start stays a clone and an exec) */
	if (n->p->network != AR_NETWORK_PROXY) {
		record_cgroup(n, cg);
		return 0;
	}
	/* every hierarchy's directory, so gc removes them all (v1: memory, pids, cpu); while
	 * the proxy finishes its own setup */
	ar_cgroup_dirs(cg, n->state.cgroup, sizeof(n->state.cgroup));
	ar_cgroup_dirs(n->proxy.cg, n->state.proxy_cgroup, sizeof(n->state.proxy_cgroup));
	if (ar_net_proxy_ready(&n->proxy, err) == -1)
		return ar_error_wrap(err, "proxy");
	if (net_secrets_ready(n, err) == -1)
		return -1;
	n->state_written = true;
	return ar_net_state_write(&n->state, err);
}

int ar_net_resolv_fd(const struct ar_net *n)
{
	return n->resolv_fd;
}

const char *ar_net_proxy_url(const struct ar_net *n)
{
	return n->allocated ? n->plan.proxy_url : NULL;
}

bool ar_net_proxy_died(struct ar_net *n)
{
	return n->proxy.pid > 0 && ar_net_proxy_exited(&n->proxy);
}

void ar_net_stop(struct ar_net *n)
{
	if (n->p == NULL)
		return; /* never started */
	/* the proxy exits (flushing its audit) while the rest goes */
	ar_net_proxy_term(&n->proxy);
	ar_net_topology_close(&n->topo);
	close_fd(&n->audit_fd);
	close_fd(&n->log_fd);
	close_fd(&n->resolv_fd);
	if (n->allocated)
		ar_net_release(&n->plan);
	n->allocated = false;
	/* while the proxy exits: a kill -9 from here on leaves only cgroups named for a dead
	 * agentrun, which the next cgroup made beside them sweeps (ar_cgroup_sweep) */
	net_secrets_stop(n);
	if (n->state_written)
		ar_net_state_remove(n->state.name);
	n->state_written = false;
	ar_net_proxy_stop(&n->proxy);
	/* an audit without a single request (a failed start, no traffic) says nothing; only
	 * now, when the proxy has written all it will */
	struct stat st;
	if (n->audit_default && stat(n->state.audit, &st) == 0 && st.st_size == 0)
		unlink(n->state.audit);
	n->audit_default = false;
}

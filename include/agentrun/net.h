/* The proxy network (DESIGN §7, docs/network.md): a proxy-only network namespace
 * joined to the sandbox's by a veth pair, a /30 per sandbox, and one confined proxy
 * process per sandbox in the host netns holding a listener made inside the proxy
 * netns. The host netns gains nothing.
 *
 * The pieces are separate so other callers reuse them:
 *   - the address plan (pure) and its allocation (a lock plus one link per /30);
 *   - the topology: the proxy child makes the proxy netns (and its listeners in it)
 *     and sends it with a route socket (ar_net_proxy_netns), ar_net_topology_adopt
 *     takes them, ar_net_topology_wire joins ANY sandbox netns given as an fd to it
 *     (the one run's sandbox sends, a runc container's, a named netns under
 *     /run/netns) with the veth created in place; the netlink sockets and ifindexes
 *     stay open in the struct for later steps in either netns (transparent capture
 *     adds its route there);
 *   - the proxy child (fork, confine, serve);
 *   - the state directory AR_STATE_ROOT/NAME/ (agentrun/state.h: root's
 *     /run/agentrun, a user's under $XDG_RUNTIME_DIR), gc and the listing `ps` shows. */
#ifndef AGENTRUN_NET_H
#define AGENTRUN_NET_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentrun/capture.h"
#include "agentrun/error.h"
#include "agentrun/policy.h"
#include "agentrun/state.h"
#include "agentrun/secrets.h"

#define AR_NET_DEFAULT_RANGE "10.254.0.0/16"
#define AR_NET_RANGE_ENV     "AGENTRUN_NET_RANGE" /* overrides the range */
#define AR_NET_SANDBOX_IF    "eth0"
#define AR_NET_PROXY_IF	     "veth0"

/* ---- The address plan of one sandbox (pure, src/net/plan.c). ---- */

struct ar_net_plan {
	uint32_t index;		/* which /30 of the range */
	struct in_addr proxy;	/* first address: the peer end and the listener */
	struct in_addr sandbox; /* second address: eth0 */
	int port;
	char proxy_ip[INET_ADDRSTRLEN];
	char sandbox_ip[INET_ADDRSTRLEN];
	char proxy_url[48]; /* http://10.254.N.1:PORT */
};

struct ar_net_range {
	uint32_t base; /* host order, aligned to the prefix */
	int prefix;    /* 8..30 */
};

/* "10.254.0.0/16" -> a range of /30s. Errors name the text. */
int ar_net_range_parse(const char *text, struct ar_net_range *out, ar_error_t *err);
/* How many /30s the range holds. */
uint32_t ar_net_range_count(const struct ar_net_range *r);
/* The plan of the index-th /30 (index < count). */
void ar_net_plan_at(const struct ar_net_range *r, uint32_t index, int port,
		    struct ar_net_plan *out);
/* The plan whose sandbox address is `sandbox`; -1 when no /30 of the range has it
 * as its second address. */
int ar_net_plan_of(const struct ar_net_range *r, struct in_addr sandbox, int port,
		   struct ar_net_plan *out);
/* The range in force: $AGENTRUN_NET_RANGE, else AR_NET_DEFAULT_RANGE. */
int ar_net_range_current(struct ar_net_range *out, ar_error_t *err);

/* ---- Allocation (src/net/alloc.c): under an flock of AR_STATE_ROOT/net, one
 * symlink net/INDEX -> "PID.STARTTIME" per /30 in use; a link whose owner is gone is
 * taken over. ---- */

int ar_net_alloc(const struct ar_net_range *r, int port, struct ar_net_plan *out, ar_error_t *err);
void ar_net_release(const struct ar_net_plan *plan);

/* ---- The topology (src/net/topology.c). ---- */

struct nl_sock;

struct ar_net_topology {
	int proxy_ns;		    /* the proxy netns: alive while this fd, or a listener, is */
	int sandbox_ns;		    /* set by ar_net_topology_wire */
	struct nl_sock *nl_proxy;   /* a route socket opened inside the proxy netns */
	struct nl_sock *nl_sandbox; /* ... and inside the sandbox netns (wire) */
	int proxy_ifindex;	    /* veth0 in the proxy netns */
	int sandbox_ifindex;	    /* eth0 in the sandbox netns */
	struct ar_net_plan plan;
};

/* The proxy netns the proxy child made (ar_net_proxy_netns: lo up, IPv6 off for new
 * links, its listeners in it) and a route socket opened there; both taken. */
int ar_net_topology_adopt(struct ar_net_topology *t, const struct ar_net_plan *plan, int proxy_ns,
			  int route, ar_error_t *err);
/* unshare(CLONE_NEWNET) for the calling thread; the error names `which` and, at the
 * limit, user.max_net_namespaces. */
int ar_net_unshare(const char *which, ar_error_t *err);
/* In a sandbox netns, by a process in it (run's sandbox init): IPv6 off for the links
 * made from now on, and a route socket of that netns for ar_net_topology_wire. */
int ar_net_sandbox_side(ar_error_t *err);
/* Join the netns behind sandbox_ns_fd (not owned) to the proxy netns: eth0 created
 * there with its peer created directly in the proxy netns, both with their /30
 * address, up, no IPv6, no default route. route: ar_net_sandbox_side's socket (taken),
 * or -1 to make the same on a thread that enters the netns. */
int ar_net_topology_wire(struct ar_net_topology *t, int sandbox_ns_fd, int route, ar_error_t *err);
/* Close everything; the kernel removes the veth when the sandbox netns goes, and the
 * proxy netns when its last holder (fd, listener) goes. */
void ar_net_topology_close(struct ar_net_topology *t);
/* To run something inside a netns given as an fd: ar_capture_in_netns (capture.h). */

/* ---- The proxy child (src/net/proxychild.c). ---- */

struct ar_cgroup;

struct ar_net_proxy {
	pid_t pid;
	struct ar_cgroup *cg; /* its own cgroup, or NULL */
	bool cg_by_child;     /* v1: cg is a plan the child made and joined itself */
	bool termed;	      /* SIGTERM sent */
	uint64_t start;
	int report; /* read end: "ok" or an error message once confined and serving */
	int chan;   /* the proxy netns comes through here (ar_net_proxy_netns) */
	int cgchan; /* v1: its cgroup's `tasks` files go through here (ar_net_proxy_cgroup) */
	int status; /* wait status once reaped */
	bool reaped;
	char *ca_pem; /* with secrets: the sandbox CA's certificate it reported, or NULL */
};

/* No proxy (yet): every descriptor -1. */
#define AR_NET_PROXY_NONE                                                                          \
	{                                                                                          \
		.pid = -1, .report = -1, .chan = -1, .cgchan = -1                                  \
	}

struct ar_net_proxy_opts {
	const struct ar_policy *policy;
	const struct ar_net_plan *plan; /* the /30: its listener's address and port */
	int audit_fd;			/* O_APPEND, or -1 */
	int log_fd;			/* decision lines, or -1 */
	const char *cgroup_name;	/* its own cgroup ("agentrun-NAME-proxy-PID"), or NULL */
	bool detached;	 /* no PDEATHSIG: a session of its own, stdio on /dev/null, outlives
			  * its parent (the OCI hook, `net up`); stopped by pid + start time */
	pid_t stop_with; /* > 0: the proxy exits when this process does (the container's
			  * init, through a pidfd), so a runtime that waits for all its
			  * children (crun run, a subreaper) is not kept waiting */
	/* The policy's secrets with their placeholders (ar_secrets_new), or NULL: the
	 * child reads the values, makes the sandbox CA and reports its certificate. */
	struct ar_secrets *secrets;
	int userns_fd;	  /* not root: the sandbox's user namespace, which then owns the
			   * proxy netns too (docs/rootless.md); -1 as root */
	int busy_poll_us; /* ar_proxy_config's: 0 = the default, negative = never */
};

/* Fork the proxy: it makes the proxy netns first (lo up, IPv6 off for new links, its
 * listener on the plan's first address, IP_FREEBIND since the address comes with the
 * veth, and with transparent capture the capture's listeners and policy routing), and
 * back in the host netns it dies with this process (PDEATHSIG), moves into its own
 * small cgroup, sees only resolv.conf/hosts, drops to a dynamic uid of its own (leased
 * from the sandbox's allocator for its lifetime, src/net/uid.c) with no
 * capabilities, sets no_new_privs, installs seccomp/proxy.json and serves. */
int ar_net_proxy_start(const struct ar_net_proxy_opts *o, struct ar_net_proxy *px, ar_error_t *err);
/* v1: make the proxy's planned cgroup and send the child the files through which it
 * joins (before it allocates anything but its netns); nothing on v2 (the parent moved it
 * at the start) or without cgroups. Run beside other work (the child waits for it only
 * after its netns). On failure the child is told to exit. */
int ar_net_proxy_cgroup(struct ar_net_proxy *px, ar_error_t *err);
/* The proxy netns and a route socket opened in it, once the child has made them (then
 * the caller's: ar_net_topology_adopt); -1 with the child's own message when it could
 * not. */
int ar_net_proxy_netns(struct ar_net_proxy *px, int *netns, int *route, ar_error_t *err);
/* Wait for the child's report: 0 when it serves, -1 with its message. */
int ar_net_proxy_ready(struct ar_net_proxy *px, ar_error_t *err);
/* Reap without blocking: true when it has exited (px->status says how). */
bool ar_net_proxy_exited(struct ar_net_proxy *px);
/* SIGTERM, wait up to a second, then SIGKILL. Idempotent. */
void ar_net_proxy_stop(struct ar_net_proxy *px);
/* SIGTERM, without waiting (ar_net_proxy_stop waits): its exit runs beside other
 * teardown. */
void ar_net_proxy_term(struct ar_net_proxy *px);

/* ---- State, gc, ps (src/net/state.c). ---- */

struct ar_net_state {
	char name[AR_POLICY_NAME_MAX + 16]; /* NAME-PID */
	pid_t owner;			    /* agentrun */
	uint64_t owner_start;
	pid_t pid; /* the sandbox's PID 1 */
	pid_t proxy_pid;
	uint64_t proxy_start;
	int64_t started; /* unix seconds */
	char network[8]; /* "proxy" or "none" */
	char sandbox_ip[INET_ADDRSTRLEN];
	char proxy_ip[INET_ADDRSTRLEN];
	int port;
	int64_t net_index; /* -1: none */
	char audit[256];
	char policy[256]; /* the policy file run was given, or "" */
	char
	    cgroup[1024]; /* the sandbox's cgroup directories (v1: one per hierarchy), ':'-joined */
	char proxy_cgroup[1024]; /* the proxy's, the same way */
};

/* AR_STATE_ROOT/NAME, made (0700) and written; errors name the path. */
int ar_net_state_write(const struct ar_net_state *s, ar_error_t *err);
int ar_net_state_read(const char *name, struct ar_net_state *s, ar_error_t *err);
/* Remove the directory and what is in it (the audit only when it lives there and
 * `keep_audit` is false). */
void ar_net_state_remove(const char *name);
/* The state directory path of NAME (static buffer). */
const char *ar_net_state_dir(const char *name);
/* The live sandbox whose netns pid is in (its init, its command or any process in
 * it): 0 and *out, or -1. */
int ar_net_state_find_pid(pid_t pid, struct ar_net_state *out);
/* The sandbox's command: the first child of its init (the init itself when it has
 * none yet). */
pid_t ar_net_state_command_pid(const struct ar_net_state *s);
/* Visit every state directory (live or not). */
/* Is sandbox a sandbox of policy (POLICY-DIGITS)? */
bool ar_net_state_of_policy(const char *sandbox, const char *policy);
/* The newest live sandbox of policy NAME (NAME-PID) into *out; returns how many are live. */
size_t ar_net_state_newest_live(const char *policy, struct ar_net_state *out);
int ar_net_state_foreach(int (*fn)(const struct ar_net_state *s, void *data), void *data);
/* Remove what is left of sandboxes whose agentrun is gone: their proxy, the cgroups
 * their state names, address and state (ar_cgroup_sweep does the rest of the cgroups). Touches
 * nothing whose owner is alive. Returns how many. */
int ar_net_gc(void);
/* Where finished audits are kept: AR_STATE_ROOT/audit/NAME.jsonl. */
char *ar_net_audit_path(const char *name);
/* `agentrun audit ARG`: a file path as given; else the audit of sandbox ARG (live:
 * its state names it; finished: audit/ARG.jsonl); else the newest of the sandboxes
 * of policy ARG (audit/ARG-PID.jsonl), with a note saying so when there are several. */
char *ar_net_audit_resolve(const char *arg, char **note, ar_error_t *err);

/* ---- One sandbox's network and state, as `run` uses them (src/net/net.c). ---- */

struct ar_net_opts {
	const char *policy_path; /* recorded in the state, may be NULL */
	const char *audit_path;	 /* --audit FILE, else AR_STATE_ROOT/audit/NAME.jsonl */
	const char *proxy_log;	 /* --proxy-log FILE, else agentrun's stderr */
	bool no_cgroups;	 /* no cgroup for the proxy either */
	int busy_poll_us;	 /* --proxy-busy-poll: 0 = the default, negative = never */
};

struct ar_net {
	const struct ar_policy *p;
	struct ar_net_state state;
	bool state_written;
	bool allocated;
	bool audit_default; /* the audit is ours to remove when it stayed empty */
	bool no_cgroups;
	int busy_poll_us; /* the proxy's (ar_net_opts) */
	int audit_fd;	  /* opened before the clone, handed to the proxy after it */
	int log_fd;
	struct ar_net_plan plan; /* network: proxy */
	struct ar_net_topology topo;
	struct ar_net_proxy proxy;
	int resolv_fd; /* the sandbox's /etc/resolv.conf (a sealed memfd), or -1 */
	/* secrets (docs/secrets.md): the placeholders, and the sandbox's CA bundle (the
	 * host's roots, then the sandbox CA once the proxy made it) in the state directory */
	struct ar_secrets *secrets;
	char *bundle;	     /* its path, or NULL */
	char *bundle_target; /* where the sandbox sees it: the distribution's path */
	int bundle_fd;
	/* the kubeconfig (network: proxy): its server and context (the token is not kept),
	 * and the sandbox's copy in the state directory */
	struct ar_kubeconfig kube;
	char *kubeconfig;
	int kubeconfig_fd;
};

/* Before the clone: gc, the unique name, and for `network: proxy` the /30 and the audit
 * and log files. On failure everything made so far is undone (ar_net_stop is still
 * safe). */
int ar_net_start(struct ar_net *n, const struct ar_policy *p, const struct ar_net_opts *o,
		 ar_error_t *err);
/* What ar_net_attach is given of the sandbox: its init's PID (for the state), its netns
 * (which the init unshares itself, beside this side's work: netns(arg, &route) returns
 * an fd of it, waiting until it exists, and the route socket the init opened there
 * (ar_net_sandbox_side), or -1 with err), and beside (may be NULL), the caller's own
 * work, independent of the network's (run: the v1 cgroups). */
struct ar_net_sandbox {
	pid_t pid;
	int userns; /* not root: an fd of the sandbox's user namespace, else -1 */
	int (*netns)(void *arg, int *route, ar_error_t *err);
	int (*beside)(void *arg, ar_error_t *err);
	void *arg;
};
/* After the clone, while the sandbox builds its root: the proxy process, the proxy netns
 * with its listener, then the veth into the sandbox's netns. beside runs on a thread of
 * its own once the proxy is forked, beside the netns and veth work that waits on the
 * kernel, and its error is the result when the network's succeeded. */
int ar_net_attach(struct ar_net *n, const struct ar_net_sandbox *sb, ar_error_t *err);
/* Before the command is released (other setup may run between the two, beside the
 * proxy's own start): wait until the proxy serves, and write the state (network:
 * proxy only; cgroup_dir, the sandbox's cgroup, is recorded for gc). */
int ar_net_ready(struct ar_net *n, const struct ar_cgroup *cg, ar_error_t *err);
/* The proxy URL for the environment, NULL without the proxy network. */
const char *ar_net_proxy_url(const struct ar_net *n);
/* With transparent capture: a sealed memfd holding the sandbox's /etc/resolv.conf
 * (nameserver = the proxy's address: the DNS stub), else -1. Owned by n. */
int ar_net_resolv_fd(const struct ar_net *n);
/* With secrets: the placeholders, and the CA bundle's host path and sandbox path
 * (NULL without secrets). */
const struct ar_secrets *ar_net_secrets(const struct ar_net *n);
const char *ar_net_ca_bundle(const struct ar_net *n, const char **target);
/* The sandbox's kubeconfig (placeholder token, the sandbox CA), or NULL. */
const char *ar_net_kubeconfig(const struct ar_net *n);
/* Has the proxy died? (-1 when there is none.) Reaps it. */
bool ar_net_proxy_died(struct ar_net *n);
/* Stop the proxy, close the namespaces, release the /30, remove the state. Idempotent. */
void ar_net_stop(struct ar_net *n);

/* ---- A detached proxy network (src/net/detached.c): the OCI hook and `net up` wire a
 * netns they do not own to a proxy that outlives them. ---- */

struct ar_net_detached_opts {
	const struct ar_policy *p;
	const char *name;	 /* the state name (NAME-SUFFIX) */
	const char *policy_path; /* recorded, may be NULL */
	pid_t owner;		 /* whose end ends it (gc): the container; 0: the proxy */
	pid_t pid;		 /* shown by ps: the container's process, or 0 */
	const struct ar_net_plan *plan;
	bool no_cgroups;
	/* secrets (the OCI hook): the set with the container's placeholders, and the file
	 * the container binds as its CA bundle, which gets the sandbox CA appended */
	struct ar_secrets *secrets;
	const char *ca_bundle;
	/* with a kubeconfig (its token the set's last secret): the file the container binds
	 * as its kubeconfig, written with the placeholder and the sandbox CA; NULL: none */
	const char *kubeconfig;
	const struct ar_kubeconfig *kube;
};

/* Wire the netns behind ns_fd (empty but lo) to a fresh proxy netns served by a
 * detached, confined proxy for o->p, and write the state o->name (*out). On failure
 * nothing is left: the proxy is stopped, the proxy netns goes with it and the veth
 * with the proxy netns. */
int ar_net_wire_detached(const struct ar_net_detached_opts *o, int ns_fd, struct ar_net_state *out,
			 ar_error_t *err);
/* Undo it from the state alone (another process, later): stop the proxy by pid and
 * start time (never a recycled pid), remove its cgroups, an audit that stayed empty,
 * the state. */
void ar_net_unwire(const struct ar_net_state *s);

/* `agentrun net up`: a new netns with lo up, bind-mounted at `path` (a new file): an
 * fd of it. Nothing is left on failure. ar_net_netns_remove unmounts and unlinks. */
int ar_net_netns_create(const char *path, ar_error_t *err);
void ar_net_netns_remove(const char *path);

#endif

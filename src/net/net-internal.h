/* Shared by the files of src/net/ only. */
#ifndef AGENTRUN_NET_INTERNAL_H
#define AGENTRUN_NET_INTERNAL_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "agentrun/error.h"
#include "agentrun/proxy.h"

#define AR_NET_PROXY_MAX_FDS (AR_PROXY_MAX_CAPTURE + 3)

/* mkdir AR_NET_STATE_ROOT (0711) and, when sub is set, AR_NET_STATE_ROOT/sub (0700). */
int net_mkdir_root(const char *sub, ar_error_t *err);
/* secrets.c: placeholders and sources; the CA bundle; its completion; its removal */
int net_secrets_check(struct ar_net *n, ar_error_t *err);
int net_secrets_bundle(struct ar_net *n, ar_error_t *err);
int net_secrets_ready(struct ar_net *n, ar_error_t *err);
void net_secrets_stop(struct ar_net *n);
#define NET_CA_BUNDLE_FILE  "ca-bundle.pem"
#define NET_KUBECONFIG_FILE "kubeconfig"

/* AR_NET_STATE_ROOT/net opened and flock'ed (exclusive); close to unlock. */
int net_lock_entries(ar_error_t *err);
/* Is the owner of the allocation entry `name` in dirfd alive? */
bool net_entry_live(int dirfd, const char *name);

/* rmdir the proxy cgroup directories of a state's proxy_cgroup (one, or ':'-joined),
 * agentrun's only; up to `tries` times, 2 ms apart, while its exited proxy is not yet
 * reaped (what stays, ar_cgroup_sweep removes later). */
void net_remove_cgroups(const char *list, int tries);

/* A dynamic uid (= gid) for one proxy, leased from the sandbox's allocator: the
 * locked lease fd (held for as long as the proxy lives) and *uid; -1 on error. */
int net_proxy_uid_lease(uid_t *uid, ar_error_t *err);

/* What the proxy child makes in a fresh netns of its own, while privileged
 * (topology.c). enter: unshare it, IPv6 off for the links made from now on, and a
 * route socket there: ns and route, what agentrun needs to wire the veth (on failure
 * the thread is back in its own netns). fill, called after enter succeeded, while
 * agentrun wires: lo up, the proxy's own sockets in fds (its listener, then with
 * transparent capture DNS UDP, DNS TCP and the captured TCP listeners) and, with
 * capture, the rule and routes that make every packet from the sandbox local there;
 * the thread is back in its own netns after, whatever happened, unless enter was told
 * to `stay` (a process that ends there: it could not come back). */
struct net_proxy_netns {
	int host, ns, route;
	int fds[AR_NET_PROXY_MAX_FDS];
	size_t n_fds;
};
struct ar_policy;
struct ar_net_plan;
int net_proxy_netns_enter(struct net_proxy_netns *out, bool stay, ar_error_t *err);
int net_proxy_netns_fill(const struct ar_policy *p, const struct ar_net_plan *plan,
			 struct net_proxy_netns *pn, ar_error_t *err);
void net_proxy_netns_close(struct net_proxy_netns *pn);
/* Before anything exists, with transparent capture: the capture's ports (at most
 * AR_PROXY_MAX_CAPTURE) leave proxy.port to the explicit listener. */
int net_check_capture(const struct ar_policy *p, ar_error_t *err);
/* After the veth, with transparent capture: the sandbox routes everything to the proxy
 * netns. */
struct ar_net_topology;
int net_capture_routes(const struct ar_policy *p, struct ar_net_topology *t, ar_error_t *err);

/* lo up in the current netns. */
int net_lo_up(ar_error_t *err);

/* The embedded seccomp/proxy.json (generated at build time). */
extern const char ar_seccomp_proxy_json[];
extern const size_t ar_seccomp_proxy_json_len;
/* ... compiled to BPF at build time (cmake/seccomp_bpfgen.c): len 0 when the profile
 * depends on the kernel version; valid with the libseccomp of that version only. */

extern const struct sock_filter ar_seccomp_proxy_bpf[];
extern const size_t ar_seccomp_proxy_bpf_len;
extern const unsigned int ar_seccomp_proxy_bpf_flags;
extern const unsigned int ar_seccomp_proxy_bpf_libseccomp[3];
/* Does the proxy child install that program (else it compiles the profile)? */
bool ar_net_proxy_seccomp_precompiled(void);

#endif

/* Shared by the files of src/net/ only. */
#ifndef AGENTRUN_NET_INTERNAL_H
#define AGENTRUN_NET_INTERNAL_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "agentrun/error.h"

/* mkdir AR_NET_STATE_ROOT (0711) and, when sub is set, AR_NET_STATE_ROOT/sub (0700). */
int net_mkdir_root(const char *sub, ar_error_t *err);
/* AR_NET_STATE_ROOT/net opened and flock'ed (exclusive); close to unlock. */
int net_lock_entries(ar_error_t *err);
/* Is the owner of the allocation entry `name` in dirfd alive? */
bool net_entry_live(int dirfd, const char *name);

/* rmdir the proxy cgroup directories of a state's proxy_cgroup (one, or ':'-joined),
 * agentrun's only; up to `tries` times, 2 ms apart, while its exited proxy is not yet
 * reaped (what stays, ar_cgroup_sweep removes later). */
void net_remove_cgroups(const char *list, int tries);

/* Every directory of the cgroup any_dir names (its last component,
 * "agentrun-..."): in each hierarchy, under this process's own cgroup there, which
 * differ on v1 (the cgroup manager makes one per hierarchy). ':'-joined into out;
 * what does not fit is left to ar_cgroup_sweep. */
void net_cgroup_dirs(const char *any_dir, char *out, size_t size);

/* A dynamic uid (= gid) for one proxy, leased from the sandbox's allocator: the
 * locked lease fd (held for as long as the proxy lives) and *uid; -1 on error. */
int net_proxy_uid_lease(uid_t *uid, ar_error_t *err);

/* In the proxy netns, while privileged (IP_TRANSPARENT): with transparent capture its
 * listeners (DNS, 80, 443, every rule's port), then every socket, the proxy's listener
 * first, to the proxy in one message. */
struct ar_net_topology;
struct ar_net_proxy;
struct ar_policy;
int net_hand_over(const struct ar_policy *p, struct ar_net_topology *t, struct ar_net_proxy *px,
		  ar_error_t *err);
/* After the veth, with transparent capture: every packet from the sandbox is local to
 * the proxy netns (rule + routes there), and the sandbox routes everything to it. */
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

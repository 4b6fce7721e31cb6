/* The proxy's uid: a dynamic uid/gid leased from the sandbox's allocator
 * (src/sandbox/uidalloc.c, systemd's DynamicUser range 61184-65519), one per proxy, so
 * that no two proxies, no sandbox and no host account share the kernel's per-user
 * quotas (processes, pipe buffers, inotify, pending signals). The lease is an flock
 * the proxy process holds for its whole life: it ends with the proxy, however the
 * proxy ends (teardown, poststop, `net down`, gc's kill, a crash), with nothing to
 * release by hand.
 *
 * The allocator's entry point takes the launcher's run context; this is its only
 * caller outside src/sandbox/, with a context that asks for nothing but a lease (no
 * `user` in the policy, no user namespace). */
#define _GNU_SOURCE
#include <string.h>
#include <unistd.h>

#include "../sandbox/sandbox-internal.h"
#include "net-internal.h"

int net_proxy_uid_lease(uid_t *uid, ar_error_t *err)
{
	struct ar_policy p = {.origin = "proxy"};
	struct sandbox sb = {.p = &p, .uid_lease = -1};

	if (sandbox_uid_alloc(&sb, err) == -1)
		return ar_error_wrap(err, "proxy");
	if (sb.uid_lease < 0)
		return ar_error_make(err, 0, "proxy: no dynamic uid leased");
	*uid = sb.uid;
	return sb.uid_lease;
}

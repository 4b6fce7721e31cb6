/* The hook's network step, in one place so the proxy netns code (src/net, issue 8)
 * connects here and nowhere else: for `network: proxy` it will create the proxy netns
 * and the veth into the container's netns (/proc/PID/ns/net), start the proxy for the
 * policy, and record what poststop must remove. Until then a proxy policy fails
 * clearly rather than run a container without its proxy. */
#include "agentrun/hook.h"

int hook_wire_network(const struct ar_policy *p, const struct ar_oci_state *s, ar_error_t *err)
{
	(void)s;
	if (p->network == AR_NETWORK_NONE)
		return 0; /* the runtime's fresh netns has only lo: that is network none */
	return ar_error_make(err, 0, "network: proxy wiring is not available in this build");
}

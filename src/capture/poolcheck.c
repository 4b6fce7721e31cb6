/* The synthetic range against the network range `run` takes /30s from: the policy
 * check knows the default range only, and $AGENTRUN_NET_RANGE may move it onto the
 * pool. An overlap would make a sandbox's own veth addresses synthetic (local, and
 * mapped to names) in the proxy netns. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/socket.h>

#include "agentrun/capture.h"
#include "agentrun/rules.h"

int ar_capture_pool_check(const char *pool, uint32_t base, int prefix, ar_error_t *err)
{
	struct ar_cidr c;
	if (pool == NULL)
		pool = AR_DNS_POOL_DEFAULT;
	if (ar_cidr_parse(pool, &c) == -1 || c.family != AF_INET)
		return ar_error_make(err, 0, "proxy.dns_pool: \"%s\" is no IPv4 CIDR range", pool);
	uint32_t a = (uint32_t)c.addr[0] << 24 | (uint32_t)c.addr[1] << 16 |
		     (uint32_t)c.addr[2] << 8 | c.addr[3];
	int bits = c.prefix < prefix ? c.prefix : prefix;
	uint32_t mask = bits == 0 ? 0 : 0xffffffffu << (32 - bits);
	if (((a ^ base) & mask) != 0)
		return 0;
	return ar_error_make(err, 0,
			     "proxy.dns_pool: \"%s\" overlaps the network range in force "
			     "(%u.%u.%u.%u/%d, $AGENTRUN_NET_RANGE or the default), where the "
			     "sandboxes' /30s come from",
			     pool, base >> 24, (base >> 16) & 255, (base >> 8) & 255, base & 255,
			     prefix);
}

/* proxy.dns_pool: the range transparent capture's DNS stub hands synthetic addresses
 * out of (docs/network.md). A synthetic address is local to the proxy netns and names
 * an allowed host there, so the range may hold nothing a sandbox could reach or mean
 * otherwise: not the /30s the sandboxes' veths take, not the real private ranges the
 * proxy may dial (proxy.allow_private), not loopback, link-local, multicast or the
 * addresses no host has. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "agentrun/policy.h"
#include "agentrun/rules.h"
#include "agentrun/util.h"
#include "internal.h"

/* Ranges a pool may not overlap, and why (the default network range is
 * AR_NET_DEFAULT_RANGE of net.h; run checks the one in force again). */
static const struct {
	const char *cidr, *why;
} reserved[] = {
    {"0.0.0.0/8", "\"this network\""},
    {"127.0.0.0/8", "loopback, the sandbox's own"},
    {"169.254.0.0/16", "link-local (cloud metadata lives there)"},
    {"224.0.0.0/3", "multicast and the reserved 240.0.0.0/4"},
    {"10.254.0.0/16", "the network range the sandboxes' /30s come from"},
};

static uint32_t v4(const struct ar_cidr *c)
{
	return (uint32_t)c->addr[0] << 24 | (uint32_t)c->addr[1] << 16 | (uint32_t)c->addr[2] << 8 |
	       c->addr[3];
}

bool policy_ranges_overlap(const struct ar_cidr *a, const struct ar_cidr *b)
{
	int bits = a->prefix < b->prefix ? a->prefix : b->prefix;
	uint32_t mask = bits == 0 ? 0 : 0xffffffffu << (32 - bits);
	return a->family == AF_INET && b->family == AF_INET && ((v4(a) ^ v4(b)) & mask) == 0;
}

static int pool_err(ar_error_t *err, const struct ar_policy *p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int pool_err(ar_error_t *err, const struct ar_policy *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	policy_verror(err, p->origin ? p->origin : "<policy>", "proxy.dns_pool", fmt, ap);
	va_end(ap);
	return -1;
}

int policy_check_dns_pool(const struct ar_policy *p, ar_error_t *err)
{
	const char *s = p->proxy.dns_pool;
	struct ar_cidr pool, r;
	if (s == NULL)
		return 0;
	if (ar_cidr_parse(s, &pool) == -1 || pool.family != AF_INET || strchr(s, '/') == NULL)
		return pool_err(err, p,
				"must be an IPv4 CIDR range such as \"198.18.0.0/15\", got "
				"\"%s\"",
				s);
	if (pool.prefix < 8 || pool.prefix > 30)
		return pool_err(err, p, "\"%s\": the prefix must be /8 to /30", s);
	uint32_t mask = 0xffffffffu << (32 - pool.prefix);
	if ((v4(&pool) & ~mask) != 0)
		return pool_err(err, p, "\"%s\": host bits set (give the network address)", s);
	for (size_t i = 0; i < AR_ARRAY_SIZE(reserved); i++) {
		if (ar_cidr_parse(reserved[i].cidr, &r) == 0 && policy_ranges_overlap(&pool, &r))
			return pool_err(err, p, "\"%s\" overlaps %s, %s", s, reserved[i].cidr,
					reserved[i].why);
	}
	for (size_t i = 0; i < p->proxy.n_allow_private; i++) {
		if (ar_cidr_parse(p->proxy.allow_private[i], &r) == 0 &&
		    policy_ranges_overlap(&pool, &r))
			return pool_err(err, p,
					"\"%s\" overlaps proxy.allow_private[%zu] \"%s\": a "
					"synthetic address would hide a real one",
					s, i, p->proxy.allow_private[i]);
	}
	return 0;
}

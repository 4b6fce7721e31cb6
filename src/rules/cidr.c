/* CIDR ranges ("10.0.0.0/8", "fd00::/8", "127.0.0.1"): the operator's private-range
 * exceptions (--allow-private, proxy.allow_private), parsed once, matched on raw
 * address bytes. Here, beside the host rules, so the policy reader can validate them
 * without the proxy. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#include "agentrun/rules.h"

bool ar_addr_prefix_match(const uint8_t *a, const uint8_t *net, int bits)
{
	int full = bits / 8, rest = bits % 8;
	if (memcmp(a, net, (size_t)full) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (net[full] & mask);
}

static int parse_prefix(const char *p, int max)
{
	int v = 0;
	if (*p == '\0' || strlen(p) > 3)
		return -1;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v > max ? -1 : v;
}

int ar_cidr_parse(const char *s, struct ar_cidr *out)
{
	char host[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(s, '/');
	size_t hlen = slash ? (size_t)(slash - s) : strlen(s);
	if (hlen == 0 || hlen >= sizeof(host))
		return -1;
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, host, out->addr) == 1)
		out->family = AF_INET;
	else if (inet_pton(AF_INET6, host, out->addr) == 1)
		out->family = AF_INET6;
	else
		return -1;
	int max = out->family == AF_INET ? 32 : 128;
	out->prefix = slash ? parse_prefix(slash + 1, max) : max;
	return out->prefix < 0 ? -1 : 0;
}

bool ar_cidr_contains(const struct ar_cidr *c, int family, const void *addr)
{
	if (c->family != family)
		return false;
	return ar_addr_prefix_match(addr, c->addr, c->prefix);
}

/* The address plan, in one place: a range (default 10.254.0.0/16) cut into /30s, the
 * first address of each for the proxy end and the listener, the second for the
 * sandbox's eth0. Pure; run, check and the docs take the numbers from here. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/net.h"
#include "agentrun/util.h"

int ar_net_range_parse(const char *text, struct ar_net_range *out, ar_error_t *err)
{
	char ip[INET_ADDRSTRLEN];
	const char *slash = strchr(text, '/');
	struct in_addr a;
	int64_t prefix;

	if (slash == NULL || (size_t)(slash - text) >= sizeof(ip))
		goto bad;
	memcpy(ip, text, (size_t)(slash - text));
	ip[slash - text] = '\0';
	if (inet_pton(AF_INET, ip, &a) != 1 || ar_parse_int(slash + 1, 8, 30, &prefix) == -1)
		goto bad;
	uint32_t mask = prefix == 0 ? 0 : ~0u << (32 - prefix);
	out->base = ntohl(a.s_addr) & mask;
	out->prefix = (int)prefix;
	if (out->base != ntohl(a.s_addr))
		return ar_error_make(
		    err, 0, "network range `%s`: host bits set (did you mean %s/%d?)", text,
		    inet_ntoa((struct in_addr){htonl(out->base)}), out->prefix);
	return 0;
bad:
	return ar_error_make(err, 0,
			     "network range `%s`: expected an IPv4 CIDR from /8 to /30 "
			     "(10.254.0.0/16)",
			     text);
}

uint32_t ar_net_range_count(const struct ar_net_range *r)
{
	return 1u << (30 - r->prefix);
}

void ar_net_plan_at(const struct ar_net_range *r, uint32_t index, int port, struct ar_net_plan *out)
{
	uint32_t net = r->base + 4 * index;

	memset(out, 0, sizeof(*out));
	out->index = index;
	out->port = port;
	out->proxy.s_addr = htonl(net + 1);
	out->sandbox.s_addr = htonl(net + 2);
	inet_ntop(AF_INET, &out->proxy, out->proxy_ip, sizeof(out->proxy_ip));
	inet_ntop(AF_INET, &out->sandbox, out->sandbox_ip, sizeof(out->sandbox_ip));
	snprintf(out->proxy_url, sizeof(out->proxy_url), "http://%s:%d", out->proxy_ip, port);
}

int ar_net_range_current(struct ar_net_range *out, ar_error_t *err)
{
	const char *env = getenv(AR_NET_RANGE_ENV);
	if (ar_net_range_parse(env && *env ? env : AR_NET_DEFAULT_RANGE, out, err) == -1)
		return env && *env ? ar_error_wrap(err, "%s", AR_NET_RANGE_ENV) : -1;
	return 0;
}

int ar_net_plan_of(const struct ar_net_range *r, struct in_addr sandbox, int port,
		   struct ar_net_plan *out)
{
	uint32_t a = ntohl(sandbox.s_addr);
	uint32_t mask = ~0u << (32 - r->prefix);
	if ((a & mask) != r->base || (a & 3) != 2)
		return -1;
	ar_net_plan_at(r, (a - r->base) / 4, port, out);
	return 0;
}

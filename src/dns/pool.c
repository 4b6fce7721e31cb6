/* The synthetic address pool: each allowed name the sandbox resolves gets the next
 * address of a private range (198.18.0.0/15 by default, RFC 2544's benchmarking
 * range, which no real service uses), and the proxy maps a connection to it back to
 * the name. Addresses are handed out in order and never reused, so a name keeps its
 * address for the sandbox's life and an address never changes meaning under a client
 * that cached it. Bounded: when the pool is full, new names are refused. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/dns.h"
#include "agentrun/util.h"

struct ar_dns_pool {
	uint32_t base; /* host order; index i has address base + 1 + i */
	uint32_t mask;
	size_t max;	 /* names the pool may hold */
	size_t cap;	 /* names allocated */
	size_t n;	 /* names handed out */
	char **names;	 /* by index */
	uint32_t *slots; /* open addressing: index + 1, 0 = empty; nslots a power of two */
	size_t nslots;
	char range[INET_ADDRSTRLEN + 4];
};

static uint32_t hash_name(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *s != '\0'; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static int parse_range(const char *cidr, uint32_t *base, int *prefix, ar_error_t *err)
{
	struct ar_cidr c;
	if (ar_cidr_parse(cidr, &c) == -1 || c.family != AF_INET)
		return ar_error_make(err, 0,
				     "synthetic address pool \"%s\": not an IPv4 CIDR range", cidr);
	if (c.prefix > 30 || c.prefix < 8)
		return ar_error_make(
		    err, 0, "synthetic address pool \"%s\": the prefix must be /8 to /30", cidr);
	uint32_t a = (uint32_t)c.addr[0] << 24 | (uint32_t)c.addr[1] << 16 |
		     (uint32_t)c.addr[2] << 8 | c.addr[3];
	uint32_t mask = 0xffffffffu << (32 - c.prefix);
	if ((a & ~mask) != 0)
		return ar_error_make(err, 0,
				     "synthetic address pool \"%s\": host bits set (did you mean "
				     "the network address?)",
				     cidr);
	*base = a;
	*prefix = c.prefix;
	return 0;
}

int ar_dns_pool_create(const char *cidr, size_t max_names, struct ar_dns_pool **out,
		       ar_error_t *err)
{
	uint32_t base = 0;
	int prefix = 32;
	if (cidr == NULL)
		cidr = AR_DNS_POOL_DEFAULT;
	if (parse_range(cidr, &base, &prefix, err) == -1)
		return -1;
	size_t usable = ((size_t)1 << (32 - prefix)) - 2; /* not the first, not the last */
	if (max_names == 0)
		max_names = AR_DNS_POOL_MAX_NAMES;
	struct ar_dns_pool *p = ar_xcalloc(1, sizeof(*p));
	p->base = base;
	p->mask = 0xffffffffu << (32 - prefix);
	p->max = max_names < usable ? max_names : usable;
	p->nslots = 64;
	p->slots = ar_xcalloc(p->nslots, sizeof(p->slots[0]));
	struct in_addr a = {htonl(base)};
	inet_ntop(AF_INET, &a, p->range, sizeof(p->range));
	snprintf(p->range + strlen(p->range), sizeof(p->range) - strlen(p->range), "/%d", prefix);
	*out = p;
	return 0;
}

/* The slot holding name, or the empty slot where it would go. */
static size_t find_slot(const struct ar_dns_pool *p, const char *name)
{
	size_t mask = p->nslots - 1, i = hash_name(name) & mask;
	while (p->slots[i] != 0 && strcmp(p->names[p->slots[i] - 1], name) != 0)
		i = (i + 1) & mask;
	return i;
}

/* Grow so that the table stays at most half full: probes stay short. The table
 * grows with the names actually resolved, not with the pool's bound. */
static void grow(struct ar_dns_pool *p)
{
	if (p->n == p->cap) {
		p->cap = p->cap != 0 ? 2 * p->cap : 32;
		p->names = ar_xrealloc(p->names, p->cap * sizeof(p->names[0]));
	}
	if (2 * (p->n + 1) <= p->nslots)
		return;
	free(p->slots);
	p->nslots *= 2;
	p->slots = ar_xcalloc(p->nslots, sizeof(p->slots[0]));
	for (size_t k = 0; k < p->n; k++)
		p->slots[find_slot(p, p->names[k])] = (uint32_t)k + 1;
}

int ar_dns_pool_get(struct ar_dns_pool *p, const char *name, struct in_addr *out)
{
	size_t len = strnlen(name, AR_HOST_MAX);
	if (len == 0 || len >= AR_HOST_MAX)
		return -1;
	size_t i = find_slot(p, name);
	if (p->slots[i] == 0) {
		if (p->n == p->max)
			return -1;
		grow(p);
		i = find_slot(p, name);
		p->names[p->n] = ar_xstrndup(name, len);
		p->slots[i] = (uint32_t)++p->n;
	}
	out->s_addr = htonl(p->base + p->slots[i]);
	return 0;
}

const char *ar_dns_pool_name(const struct ar_dns_pool *p, struct in_addr addr)
{
	uint32_t a = ntohl(addr.s_addr);
	if (a <= p->base || a - p->base > p->n)
		return NULL;
	return p->names[a - p->base - 1];
}

bool ar_dns_pool_contains(const struct ar_dns_pool *p, struct in_addr addr)
{
	return (ntohl(addr.s_addr) & p->mask) == p->base;
}

void ar_dns_target(const struct ar_dns_pool *p, const struct ar_rules *rules, struct in_addr dst,
		   int port, struct ar_dns_target *out)
{
	char a[INET_ADDRSTRLEN];
	struct ar_host h;
	memset(out, 0, sizeof(*out));
	inet_ntop(AF_INET, &dst, a, sizeof(a));
	if (!ar_dns_pool_contains(p, dst)) {
		out->kind = AR_DNS_TARGET_LITERAL;
		snprintf(out->decision.reason, sizeof(out->decision.reason),
			 "%s:%d is not a synthetic address: decided by the name it carries", a,
			 port);
		return;
	}
	out->name = ar_dns_pool_name(p, dst);
	if (out->name == NULL || ar_host_canonicalize(out->name, &h, NULL) == -1) {
		out->kind = AR_DNS_TARGET_UNKNOWN;
		out->name = NULL;
		snprintf(out->decision.reason, sizeof(out->decision.reason),
			 "%s:%d is a synthetic address that was never handed out", a, port);
		return;
	}
	out->kind = AR_DNS_TARGET_NAME;
	ar_rules_decide(rules, &h, port, &out->decision);
}

bool ar_dns_same_name(const char *sent, const char *name)
{
	struct ar_host a, b;
	return sent != NULL && name != NULL && ar_host_canonicalize(sent, &a, NULL) == 0 &&
	       ar_host_canonicalize(name, &b, NULL) == 0 && a.family == 0 && b.family == 0 &&
	       strcmp(a.name, b.name) == 0;
}

size_t ar_dns_pool_size(const struct ar_dns_pool *p)
{
	return p->n;
}

const char *ar_dns_pool_range(const struct ar_dns_pool *p)
{
	return p->range;
}

void ar_dns_pool_free(struct ar_dns_pool *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->names[i]);
	free(p->names);
	free(p->slots);
	free(p);
}

void ar_cleanup_dns_poolp(struct ar_dns_pool **p)
{
	ar_dns_pool_free(*p);
	*p = NULL;
}

/* Host rules (DESIGN §4): parse and canonicalise once into an immutable object;
 * deciding is a pure function. */
#ifndef AGENTRUN_RULES_H
#define AGENTRUN_RULES_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentrun/error.h"

#define AR_HOST_MAX 256

struct ar_rules;

struct ar_decision {
	bool allowed;
	const char *rule; /* the matching rule as written (owned by the rules object), or NULL */
	char reason[AR_HOST_MAX + 64]; /* "matches rule X" / "HOST:PORT is not in the allow-list" */
};

/* A canonical host: lowercase name without trailing dot, or an IP literal
 * in its canonical text form (IPv4 dotted quad, IPv6 RFC 5952 without brackets;
 * ::ffff:a.b.c.d becomes a.b.c.d). */
struct ar_host {
	char name[AR_HOST_MAX];
	int family; /* 0 for a name, AF_INET or AF_INET6 for a literal */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} addr;
};

/* Canonicalise a host as a client wrote it (brackets allowed around IPv6).
 * Accepts every inet_aton spelling of IPv4. Returns 0 or -1 with *err naming it. */
int ar_host_canonicalize(const char *in, struct ar_host *out, ar_error_t *err);
/* The same over a buffer that need not be NUL-terminated (a header value);
 * a NUL byte inside is rejected like any control character. */
int ar_host_canonicalize_n(const char *in, size_t len, struct ar_host *out, ar_error_t *err);
/* Split an authority "host:port", "[v6]:port" or "host" (CONNECT target, Host header).
 * host receives the host part as written (brackets kept, so it can be passed to
 * ar_host_canonicalize); without a port *port = default_port, and default_port <= 0
 * makes a missing port an error. A bare IPv6 address without brackets is an error. */
int ar_host_split_port(const char *authority, char *host, size_t hostlen, int *port,
		       int default_port, ar_error_t *err);
/* Format a canonical host and port for logs and reasons: "name:443", "[::1]:443". */
void ar_host_format(const struct ar_host *host, int port, char *buf, size_t buflen);

/* Compile rules; errors name the offending rule (over-broad or embedded wildcard,
 * bad port, bad host). `what` names the source in messages ("--allow", "p.json: allowed_hosts[2]").
 */
int ar_rules_compile(char *const *rules, size_t n, const char *what, struct ar_rules **out,
		     ar_error_t *err);
/* Pure decision on an already canonical host. */
void ar_rules_decide(const struct ar_rules *r, const struct ar_host *host, int port,
		     struct ar_decision *out);
/* Convenience: canonicalise then decide; a host that cannot be canonicalised is denied
 * with the reason saying so. */
void ar_rules_decide_str(const struct ar_rules *r, const char *host, int port,
			 struct ar_decision *out);
size_t ar_rules_count(const struct ar_rules *r);
const char *ar_rules_text(const struct ar_rules *r, size_t i);
/* Does the rule at index i name an IP literal (so it may allow that exact address
 * even when it is in a private range)? */
bool ar_rules_is_literal(const struct ar_rules *r, size_t i);
void ar_rules_free(struct ar_rules *r);
void ar_cleanup_rulesp(struct ar_rules **r);
#define ar_autorules __attribute__((cleanup(ar_cleanup_rulesp)))

/* A CIDR range (--allow-private, proxy.allow_private): src/rules/cidr.c. */
struct ar_cidr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	int prefix;
};
/* "10.0.0.0/8", "fd00::/8", "127.0.0.1" (a host route). Returns 0 or -1. */
int ar_cidr_parse(const char *s, struct ar_cidr *out);
/* Is the address (family AF_INET/AF_INET6, raw bytes) inside the range? */
bool ar_cidr_contains(const struct ar_cidr *c, int family, const void *addr);
/* Do the first `bits` bits of a and net agree? */
bool ar_addr_prefix_match(const uint8_t *a, const uint8_t *net, int bits);

/* ---- Address classes (src/rules/addr.c), pure: refused for name rules unless the
 * policy's proxy.allow_private (--allow-private) covers them; the proxy, its DNS stub
 * and audit --propose ask. ---- */
enum ar_addr_class {
	AR_ADDR_PUBLIC,
	AR_ADDR_LOOPBACK,
	AR_ADDR_PRIVATE,
	AR_ADDR_LINK_LOCAL,
	AR_ADDR_CGNAT,
	AR_ADDR_MULTICAST,
	AR_ADDR_THIS_NETWORK, /* 0.0.0.0/8, :: */
	AR_ADDR_BROADCAST,
	AR_ADDR_METADATA,      /* 169.254.169.254, fd00:ec2::254, 100.100.100.200 */
	AR_ADDR_RESERVED,      /* 240.0.0.0/4, 192.0.0.0/24, 100::/64 */
	AR_ADDR_DOCUMENTATION, /* 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32 */
	AR_ADDR_BENCHMARK,     /* 198.18.0.0/15, 2001:2::/48 */
	AR_ADDR_ULA,	       /* fc00::/7 */
	AR_ADDR_SITE_LOCAL,    /* fec0::/10 (deprecated) */
};
/* IPv6 forms that embed an IPv4 address (::/96, ::ffff:0:0/96, ::ffff:0:0:0/96,
 * 64:ff9b::/96, 64:ff9b:1::/48, 2002::/16, Teredo 2001::/32) get the class of the
 * embedded address when that one is refused. */
enum ar_addr_class ar_rules_addr_classify(int family, const void *addr);
const char *ar_rules_addr_class_name(enum ar_addr_class c);

#endif

/* Address ranges: the classifier behind "refused for name rules" (DESIGN §5) and the
 * --allow-private CIDR lists. Pure functions over raw address bytes. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "agentrun/rules.h"
#include "agentrun/util.h"

struct range {
	uint8_t net[16];
	int bits;
	enum ar_addr_class cls;
};

/* The refused IPv4 ranges (docs/proxy.md has this table). Order matters: the
 * metadata hosts sit inside link-local and CGNAT. */
static const struct range v4_ranges[] = {
    {{169, 254, 169, 254}, 32, AR_ADDR_METADATA},
    {{100, 100, 100, 200}, 32, AR_ADDR_METADATA},
    {{255, 255, 255, 255}, 32, AR_ADDR_BROADCAST},
    {{127}, 8, AR_ADDR_LOOPBACK},
    {{10}, 8, AR_ADDR_PRIVATE},
    {{172, 16}, 12, AR_ADDR_PRIVATE},
    {{192, 168}, 16, AR_ADDR_PRIVATE},
    {{169, 254}, 16, AR_ADDR_LINK_LOCAL},
    {{100, 64}, 10, AR_ADDR_CGNAT},
    {{224}, 4, AR_ADDR_MULTICAST},
    {{0}, 8, AR_ADDR_THIS_NETWORK},
    {{240}, 4, AR_ADDR_RESERVED},
    {{192, 0, 0}, 24, AR_ADDR_RESERVED}, /* IETF protocol assignments (DS-Lite, ...) */
    {{192, 0, 2}, 24, AR_ADDR_DOCUMENTATION},
    {{198, 51, 100}, 24, AR_ADDR_DOCUMENTATION},
    {{203, 0, 113}, 24, AR_ADDR_DOCUMENTATION},
    {{198, 18}, 15, AR_ADDR_BENCHMARK},
};

/* Exact IPv6 addresses, looked at before the embedded IPv4 forms (:: and ::1 are
 * inside ::/96). */
static const struct range v6_exact[] = {
    {{0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02}, 128, AR_ADDR_METADATA},
    {{[15] = 1}, 128, AR_ADDR_LOOPBACK},
    {{0}, 128, AR_ADDR_THIS_NETWORK},
};

static const struct range v6_ranges[] = {
    {{0xfc}, 7, AR_ADDR_ULA},
    {{0xfe, 0xc0}, 10, AR_ADDR_SITE_LOCAL},
    {{0xfe, 0x80}, 10, AR_ADDR_LINK_LOCAL},
    {{0xff}, 8, AR_ADDR_MULTICAST},
    {{0x20, 0x01, 0x0d, 0xb8}, 32, AR_ADDR_DOCUMENTATION},
    {{0x20, 0x01, 0x00, 0x02, 0x00, 0x00}, 48, AR_ADDR_BENCHMARK},
    {{0x01}, 64, AR_ADDR_RESERVED}, /* 100::/64, discard-only */
};

/* IPv6 forms that carry an IPv4 address a gateway, a tunnel or the kernel will reach:
 * the prefix and where the four IPv4 bytes sit (Teredo's client address is inverted).
 * A prefix can appear with several layouts (RFC 6052 local-use NAT64 allows any prefix
 * length in 64:ff9b:1::/48): each is judged, and any refused one refuses the address. */
static const struct embed {
	uint8_t net[16];
	int bits;
	uint8_t at[4];
	uint8_t invert;
	bool guess; /* one of several layouts: zero padding (0.0.0.0/8) is not a verdict */
} v6_embeds[] = {
    {{[10] = 0xff, [11] = 0xff}, 96, {12, 13, 14, 15}, 0, false},	   /* IPv4-mapped */
    {{[8] = 0xff, [9] = 0xff}, 96, {12, 13, 14, 15}, 0, false},		   /* IPv4-translated */
    {{0}, 96, {12, 13, 14, 15}, 0, false},				   /* IPv4-compatible */
    {{0x00, 0x64, 0xff, 0x9b}, 96, {12, 13, 14, 15}, 0, false},		   /* NAT64 well-known */
    {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, {6, 7, 9, 10}, 0, true},	   /* NAT64 local /48 */
    {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, {7, 9, 10, 11}, 0, true},   /* ... /56 */
    {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, {9, 10, 11, 12}, 0, true},  /* ... /64 */
    {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, {12, 13, 14, 15}, 0, true}, /* ... /96 */
    {{0x20, 0x02}, 16, {2, 3, 4, 5}, 0, false},				   /* 6to4 */
    {{0x20, 0x01, 0x00, 0x00}, 32, {4, 5, 6, 7}, 0, false},		   /* Teredo server */
    {{0x20, 0x01, 0x00, 0x00}, 32, {12, 13, 14, 15}, 0xff, false},	   /* Teredo client */
};

static enum ar_addr_class match(const struct range *t, size_t n, const uint8_t *a)
{
	for (size_t i = 0; i < n; i++)
		if (ar_addr_prefix_match(a, t[i].net, t[i].bits))
			return t[i].cls;
	return AR_ADDR_PUBLIC;
}

static enum ar_addr_class classify_embedded(const uint8_t *a)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(v6_embeds); i++) {
		const struct embed *e = &v6_embeds[i];
		if (!ar_addr_prefix_match(a, e->net, e->bits))
			continue;
		uint8_t v4[4];
		for (int k = 0; k < 4; k++)
			v4[k] = a[e->at[k]] ^ e->invert;
		enum ar_addr_class c = match(v4_ranges, AR_ARRAY_SIZE(v4_ranges), v4);
		if (c != AR_ADDR_PUBLIC && !(e->guess && c == AR_ADDR_THIS_NETWORK))
			return c;
	}
	return AR_ADDR_PUBLIC;
}

enum ar_addr_class ar_rules_addr_classify(int family, const void *addr)
{
	const uint8_t *a = addr;
	if (family == AF_INET)
		return match(v4_ranges, AR_ARRAY_SIZE(v4_ranges), a);
	enum ar_addr_class c = match(v6_exact, AR_ARRAY_SIZE(v6_exact), a);
	if (c == AR_ADDR_PUBLIC)
		c = classify_embedded(a);
	if (c == AR_ADDR_PUBLIC)
		c = match(v6_ranges, AR_ARRAY_SIZE(v6_ranges), a);
	return c;
}

static const char *const class_names[] = {
    [AR_ADDR_PUBLIC] = "public",
    [AR_ADDR_LOOPBACK] = "loopback",
    [AR_ADDR_PRIVATE] = "private",
    [AR_ADDR_LINK_LOCAL] = "link-local",
    [AR_ADDR_CGNAT] = "CGNAT",
    [AR_ADDR_MULTICAST] = "multicast",
    [AR_ADDR_THIS_NETWORK] = "this-network",
    [AR_ADDR_BROADCAST] = "broadcast",
    [AR_ADDR_METADATA] = "metadata",
    [AR_ADDR_RESERVED] = "reserved",
    [AR_ADDR_DOCUMENTATION] = "documentation",
    [AR_ADDR_BENCHMARK] = "benchmarking",
    [AR_ADDR_ULA] = "unique-local",
    [AR_ADDR_SITE_LOCAL] = "site-local",
};

const char *ar_rules_addr_class_name(enum ar_addr_class c)
{
	if ((size_t)c < AR_ARRAY_SIZE(class_names) && class_names[c])
		return class_names[c];
	return "unknown";
}

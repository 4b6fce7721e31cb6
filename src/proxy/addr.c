/* Address ranges: the classifier behind "refused for name rules" (DESIGN §5) and the
 * --allow-private CIDR lists. Pure functions over raw address bytes. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "agentrun/proxy.h"

struct range {
	uint8_t net[16];
	int bits;
	enum ar_addr_class cls;
};

/* Order matters: the metadata hosts sit inside link-local and CGNAT. */
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
};

static const struct range v6_ranges[] = {
    {{0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02}, 128, AR_ADDR_METADATA},
    {{[15] = 1}, 128, AR_ADDR_LOOPBACK},
    {{0}, 128, AR_ADDR_THIS_NETWORK},
    {{0xfc}, 7, AR_ADDR_PRIVATE},
    {{0xfe, 0xc0}, 10, AR_ADDR_PRIVATE}, /* deprecated site-local */
    {{0xfe, 0x80}, 10, AR_ADDR_LINK_LOCAL},
    {{0xff}, 8, AR_ADDR_MULTICAST},
};

static enum ar_addr_class classify_v4(const uint8_t *a)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(v4_ranges); i++)
		if (ar_addr_prefix_match(a, v4_ranges[i].net, v4_ranges[i].bits))
			return v4_ranges[i].cls;
	return AR_ADDR_PUBLIC;
}

enum ar_addr_class ar_proxy_addr_classify(int family, const void *addr)
{
	const uint8_t *a = addr;
	if (family == AF_INET)
		return classify_v4(a);
	/* IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96) carry an IPv4 address
	 * the kernel or a gateway will reach: judge that address */
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
	static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};
	if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0)
		return classify_v4(a + 12);
	for (size_t i = 0; i < AR_ARRAY_SIZE(v6_ranges); i++)
		if (ar_addr_prefix_match(a, v6_ranges[i].net, v6_ranges[i].bits))
			return v6_ranges[i].cls;
	return AR_ADDR_PUBLIC;
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
};

const char *ar_proxy_addr_class_name(enum ar_addr_class c)
{
	if ((size_t)c < AR_ARRAY_SIZE(class_names) && class_names[c])
		return class_names[c];
	return "unknown";
}

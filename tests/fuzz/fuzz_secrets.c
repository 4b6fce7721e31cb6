/* Target "secrets": the substitution and leak detection of src/secrets over what a
 * sandbox sends. The first byte picks which of two secrets the host may receive; the
 * rest is a request head. Invariants: a bound secret's exact placeholder never survives
 * the rewrite; with every secret bound nothing is refused; masking leaves no value; the
 * body scan over two pieces finds what one search over the whole finds; base64 round
 * trips. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "agentrun/secrets.h"
#include "agentrun/util.h"
#include "fuzz.h"

static struct ar_secret set_s[2] = {
    {.name = "API_KEY",
     .placeholder = "agentrun-secret-API_KEY-0123456789abcdef0123456789abcdef",
     .value = "sk-real-value-1"},
    {.name = "GH_TOKEN",
     .placeholder = "agentrun-secret-GH_TOKEN-fedcba9876543210fedcba9876543210",
     .value = "ghp_realvalue2"},
};
static struct ar_secrets set = {.origin = "fuzz", .n = 2, .s = set_s};

static void init(void)
{
	for (size_t i = 0; i < 2; i++) {
		set_s[i].plen = strlen(set_s[i].placeholder);
		set_s[i].vlen = strlen(set_s[i].value);
	}
}

static void check_rewrite(uint64_t bound, const char *head, size_t len)
{
	ar_autobuf struct ar_buf out = {0};
	uint64_t used = 0;
	uint64_t refused = ar_secrets_rewrite_head(&set, bound, head, len, &out, &used);
	AR_FUZZ_CHECK((refused & bound) == 0 && (used & ~bound) == 0, "masks %llx %llx",
		      (unsigned long long)refused, (unsigned long long)used);
	if (bound == 3)
		AR_FUZZ_CHECK(refused == 0, "refused with every secret bound");
	for (size_t i = 0; refused == 0 && i < 2; i++)
		if (bound & (1u << i))
			AR_FUZZ_CHECK(out.data == NULL ||
					  memmem(out.data, out.len, set_s[i].placeholder,
						 set_s[i].plen) == NULL,
				      "placeholder %zu survived", i);
}

static void check_mask(const char *buf, size_t len)
{
	ar_autobuf struct ar_buf out = {0};
	if (!ar_secrets_mask(&set, buf, len, &out))
		return;
	for (size_t i = 0; i < 2; i++)
		AR_FUZZ_CHECK(memmem(out.data, out.len, set_s[i].value, set_s[i].vlen) == NULL,
			      "value %zu survived masking", i);
}

static void check_scan(const char *buf, size_t len, size_t cut)
{
	struct ar_secrets_scan st;
	memset(&st, 0, sizeof(st));
	uint64_t a = ar_secrets_scan_feed(&set, &st, buf, cut);
	a |= ar_secrets_scan_feed(&set, &st, buf + cut, len - cut);
	uint64_t b = ar_secrets_find(&set, buf, len);
	AR_FUZZ_CHECK((a & b) == b, "scan %llx, whole %llx", (unsigned long long)a,
		      (unsigned long long)b);
}

static void check_base64(const char *buf, size_t len)
{
	ar_autobuf struct ar_buf e = {0}, d = {0};
	ar_base64_encode((const unsigned char *)buf, len, &e);
	AR_FUZZ_CHECK(ar_base64_decode(e.data ? e.data : "", e.len, &d) == 0, "decode failed");
	AR_FUZZ_CHECK(d.len == len && (len == 0 || memcmp(d.data, buf, len) == 0), "round trip");
	ar_autobuf struct ar_buf junk = {0};
	(void)ar_base64_decode(buf, len, &junk);
}

void ar_fuzz_secrets(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready++)
		init();
	if (size < 1)
		return;
	uint64_t bound = data[0] & 3;
	ar_autofree char *head = ar_fuzz_dup(data + 1, size - 1);
	size_t len = size - 1;
	check_rewrite(bound, head, len);
	check_mask(head, len);
	check_scan(head, len, len ? data[0] % (len + 1) : 0);
	check_base64(head, len);
	ar_autofree char *name = ar_xstrndup(head, len);
	(void)ar_secrets_find_name(&set, name);
}

/* Target "tls": the ClientHello reader behind proxy.sni (src/proxy/tls.c). The client
 * in the sandbox writes these bytes. The proxy calls the reader again as more bytes
 * arrive and acts on the first answer that is not "more", so that answer must not
 * change when more bytes follow: every prefix of the input answers "more" or exactly
 * what the whole input answers. A found name is a NUL-free string that fits. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "agentrun/proxy.h"
#include "agentrun/util.h"
#include "fuzz.h"

#define NAME_SIZE 256

static int sni(const uint8_t *data, size_t len, size_t size, char *out)
{
	/* exact-size copy so a read past len is caught */
	ar_autofree uint8_t *buf = (uint8_t *)ar_fuzz_dup(data, len);
	memset(out, 0x5a, size);
	int r = ar_proxy_client_hello_sni(buf, len, out, size);
	AR_FUZZ_CHECK(r >= AR_SNI_MALFORMED && r <= AR_SNI_FOUND, "result %d", r);
	if (r == AR_SNI_FOUND) {
		size_t n = strnlen(out, size);
		AR_FUZZ_CHECK(n > 0 && n < size, "name of %zu bytes in a %zu-byte buffer", n, size);
	}
	return r;
}

void ar_fuzz_tls(const uint8_t *data, size_t size)
{
	char whole[NAME_SIZE], part[NAME_SIZE], small[8];
	int r = sni(data, size, sizeof(whole), whole);

	/* a short buffer may refuse a long name, never overflow or invent one */
	int rs = sni(data, size, sizeof(small), small);
	AR_FUZZ_CHECK(rs == r || (r == AR_SNI_FOUND && rs == AR_SNI_MALFORMED),
		      "small buffer %d vs %d", rs, r);
	if (rs == AR_SNI_FOUND)
		AR_FUZZ_CHECK(strcmp(small, whole) == 0, "small-buffer name %s vs %s", small,
			      whole);

	/* prefixes: every length up to 64, then sixteen points spread over the rest */
	for (size_t k = 0; k < 64 + 16; k++) {
		size_t len = k < 64 ? k : size * (k - 63) / 17;
		if (len >= size)
			continue;
		int rp = sni(data, len, sizeof(part), part);
		if (rp == AR_SNI_MORE)
			continue;
		AR_FUZZ_CHECK(rp == r, "prefix of %zu bytes answers %d, all %zu bytes %d", len, rp,
			      size, r);
		if (rp == AR_SNI_FOUND)
			AR_FUZZ_CHECK(strcmp(part, whole) == 0, "prefix name %s vs %s", part,
				      whole);
	}
}

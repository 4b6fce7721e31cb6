/* The TLS ClientHello reader behind proxy.sni (DESIGN §5): finds the server_name a
 * client asks for in the first bytes of a CONNECT tunnel. A pure function over a
 * buffer; it reassembles a ClientHello split over several handshake records. */
#define _GNU_SOURCE
#include <string.h>

#include "agentrun/proxy.h"

#define HS_MAX 16384 /* a ClientHello larger than this is not worth waiting for */

struct rd {
	const uint8_t *p;
	size_t len, off;
};

static bool take(struct rd *r, size_t n, const uint8_t **out)
{
	if (r->len - r->off < n)
		return false;
	if (out)
		*out = r->p + r->off;
	r->off += n;
	return true;
}

static bool u8(struct rd *r, size_t *v)
{
	const uint8_t *b;
	if (!take(r, 1, &b))
		return false;
	*v = b[0];
	return true;
}

static bool u16(struct rd *r, size_t *v)
{
	const uint8_t *b;
	if (!take(r, 2, &b))
		return false;
	*v = (size_t)b[0] << 8 | b[1];
	return true;
}

/* server_name extension body: the first host_name entry. */
static int read_sni(const uint8_t *p, size_t len, char *out, size_t size)
{
	struct rd r = {p, len, 0};
	size_t list, type, n;
	const uint8_t *name;
	if (!u16(&r, &list) || list != len - 2)
		return AR_SNI_MALFORMED;
	while (r.off < len) {
		if (!u8(&r, &type) || !u16(&r, &n) || !take(&r, n, &name))
			return AR_SNI_MALFORMED;
		if (type != 0)
			continue;
		if (n == 0 || n >= size || memchr(name, '\0', n) != NULL)
			return AR_SNI_MALFORMED;
		memcpy(out, name, n);
		out[n] = '\0';
		return AR_SNI_FOUND;
	}
	return AR_SNI_NONE;
}

/* The ClientHello body (after the 4-byte handshake header). */
static int read_hello(const uint8_t *p, size_t len, char *out, size_t size)
{
	struct rd r = {p, len, 0};
	size_t n, ext_len;
	if (!take(&r, 2 + 32, NULL) || !u8(&r, &n) || !take(&r, n, NULL) || !u16(&r, &n) ||
	    !take(&r, n, NULL) || !u8(&r, &n) || !take(&r, n, NULL))
		return AR_SNI_MALFORMED;
	if (r.off == len)
		return AR_SNI_NONE; /* no extensions at all */
	if (!u16(&r, &ext_len) || ext_len != len - r.off)
		return AR_SNI_MALFORMED;
	while (r.off < len) {
		size_t type;
		const uint8_t *body;
		if (!u16(&r, &type) || !u16(&r, &n) || !take(&r, n, &body))
			return AR_SNI_MALFORMED;
		if (type == 0)
			return read_sni(body, n, out, size);
	}
	return AR_SNI_NONE;
}

int ar_proxy_client_hello_sni(const uint8_t *buf, size_t len, char *out, size_t size)
{
	uint8_t hs[HS_MAX + 4];
	size_t have = 0, off = 0;
	/* gather handshake bytes from consecutive records until the message is whole */
	for (;;) {
		if (have >= 4) {
			size_t need = (size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3];
			if (hs[0] != 1 || need > HS_MAX)
				return AR_SNI_NOT_TLS;
			if (have >= need + 4)
				return read_hello(hs + 4, need, out, size);
		}
		if (len - off < 5)
			return AR_SNI_MORE;
		const uint8_t *rec = buf + off;
		size_t rlen = (size_t)rec[3] << 8 | rec[4];
		if (rec[0] != 22 || rec[1] != 3 || rlen == 0 || rlen > 16384 + 2048)
			return AR_SNI_NOT_TLS;
		if (len - off - 5 < rlen)
			return AR_SNI_MORE;
		if (have + rlen > sizeof(hs))
			return AR_SNI_NOT_TLS;
		memcpy(hs + have, rec + 5, rlen);
		have += rlen;
		off += 5 + rlen;
	}
}

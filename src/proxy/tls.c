/* The TLS ClientHello reader behind proxy.sni (DESIGN §5): finds the server_name a
 * client asks for in the first bytes of a CONNECT tunnel. A pure function over a
 * buffer; it reassembles a ClientHello split over several handshake records (up to
 * AR_SNI_HELLO_MAX) and refuses, rather than skips, whatever it cannot read. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "agentrun/proxy.h"

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

/* Gather the handshake message from consecutive handshake records into hs. Every
 * shape an OpenSSL server would accept but a lax reader could skip (an empty record,
 * another record type first, a record past the plaintext limit) is MALFORMED, so
 * nothing that starts as TLS is ever waved through unread. */
static int gather(const uint8_t *buf, size_t len, uint8_t *hs, size_t *hs_len, const char **why)
{
	size_t have = 0, off = 0;
	for (;;) {
		if (have >= 4) {
			size_t need = (size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3];
			if (hs[0] != 1)
				return *why = "handshake message is not a ClientHello",
				       AR_SNI_MALFORMED;
			if (need > AR_SNI_HELLO_MAX)
				return *why = "ClientHello larger than 64 KiB", AR_SNI_MALFORMED;
			if (have >= need + 4) {
				*hs_len = need;
				return AR_SNI_FOUND;
			}
		}
		if (len - off < 5)
			return AR_SNI_MORE;
		const uint8_t *rec = buf + off;
		size_t rlen = (size_t)rec[3] << 8 | rec[4];
		if (rec[0] != 22 || rec[1] != 3)
			return *why = "record is not a TLS handshake record", AR_SNI_MALFORMED;
		if (rlen == 0)
			return *why = "empty handshake record", AR_SNI_MALFORMED;
		if (rlen > 16384)
			return *why = "handshake record longer than 16 KiB", AR_SNI_MALFORMED;
		if (len - off - 5 < rlen)
			return AR_SNI_MORE;
		size_t room = AR_SNI_HELLO_MAX + 4 - have;
		memcpy(hs + have, rec + 5, rlen < room ? rlen : room);
		have += rlen < room ? rlen : room;
		off += 5 + rlen;
	}
}

int ar_proxy_client_hello_parse(const uint8_t *buf, size_t len, char *out, size_t size,
				const char **why)
{
	const char *scratch;
	if (why == NULL)
		why = &scratch;
	*why = NULL;
	/* only a first byte that is not a handshake record type makes the tunnel "not TLS" */
	if (len == 0)
		return AR_SNI_MORE;
	if (buf[0] != 22)
		return *why = "not a TLS handshake", AR_SNI_NOT_TLS;
	if (len >= 2 && buf[1] != 3)
		return *why = "record is not a TLS handshake record", AR_SNI_MALFORMED;
	uint8_t *hs = malloc(AR_SNI_HELLO_MAX + 4);
	if (hs == NULL)
		return *why = "out of memory", AR_SNI_MALFORMED;
	size_t hs_len = 0;
	int r = gather(buf, len, hs, &hs_len, why);
	if (r == AR_SNI_FOUND) {
		r = read_hello(hs + 4, hs_len, out, size);
		if (r == AR_SNI_MALFORMED)
			*why = "ClientHello does not parse";
	}
	free(hs);
	return r;
}

int ar_proxy_client_hello_sni(const uint8_t *buf, size_t len, char *out, size_t size)
{
	return ar_proxy_client_hello_parse(buf, len, out, size, NULL);
}

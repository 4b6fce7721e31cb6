/* Looking at requests for placeholders, putting values in, masking them out: pure
 * functions over caller buffers (tests/unit/secrets, tests/fuzz/fuzz_secrets.c). */
#define _GNU_SOURCE
#include <string.h>
#include <strings.h>

#include "agentrun/secrets.h"

static bool prefix_at(const char *p, size_t left)
{
	return left >= AR_SECRET_PREFIX_LEN &&
	       strncasecmp(p, AR_SECRET_PREFIX, AR_SECRET_PREFIX_LEN) == 0;
}

/* Case-insensitive: a client (or an injection) may change the case of a host name. */
static uint64_t find_raw(const struct ar_secrets *s, const char *buf, size_t len)
{
	uint64_t mask = 0;
	for (size_t i = 0; i + AR_SECRET_PREFIX_LEN <= len; i++) {
		if ((buf[i] | 0x20) != 'a' || !prefix_at(buf + i, len - i))
			continue;
		for (size_t k = 0; k < s->n; k++) {
			const struct ar_secret *x = &s->s[k];
			if (len - i >= x->plen &&
			    strncasecmp(buf + i, x->placeholder, x->plen) == 0)
				mask |= 1ULL << k;
		}
	}
	return mask;
}

/* %XX decoded (bytes that do not form an escape stay as they are). */
static void percent_decode(const char *in, size_t len, struct ar_buf *out)
{
	for (size_t i = 0; i < len; i++) {
		int hi, lo;
		if (in[i] == '%' && i + 2 < len && (hi = ar_hexval(in[i + 1])) >= 0 &&
		    (lo = ar_hexval(in[i + 2])) >= 0) {
			ar_buf_putc(out, (char)(hi * 16 + lo));
			i += 2;
		} else {
			ar_buf_putc(out, in[i]);
		}
	}
}

uint64_t ar_secrets_find(const struct ar_secrets *s, const char *buf, size_t len)
{
	if (s == NULL || s->n == 0)
		return 0;
	uint64_t mask = find_raw(s, buf, len);
	if (memchr(buf, '%', len) != NULL) {
		ar_autobuf struct ar_buf d = {0};
		percent_decode(buf, len, &d);
		mask |= find_raw(s, d.data, d.len);
	}
	return mask;
}

uint64_t ar_secrets_find_name(const struct ar_secrets *s, const char *name)
{
	if (s == NULL || s->n == 0)
		return 0;
	ar_autobuf struct ar_buf d = {0};
	for (const char *p = name; *p; p++)
		if (*p != '.')
			ar_buf_putc(&d, *p);
	return ar_secrets_find(s, d.data ? d.data : "", d.len);
}

/* Every placeholder of a secret in `mask` replaced by its value (exact case: what a
 * client built from the variable). */
static void subst(const struct ar_secrets *s, uint64_t mask, const char *in, size_t len,
		  struct ar_buf *out)
{
	size_t from = 0;
	for (size_t i = 0; mask && i + AR_SECRET_PREFIX_LEN <= len;) {
		const char *hit = memmem(in + i, len - i, AR_SECRET_PREFIX, AR_SECRET_PREFIX_LEN);
		if (hit == NULL)
			break;
		i = (size_t)(hit - in);
		size_t k;
		for (k = 0; k < s->n; k++) {
			const struct ar_secret *x = &s->s[k];
			if ((mask & (1ULL << k)) && x->value && len - i >= x->plen &&
			    memcmp(in + i, x->placeholder, x->plen) == 0)
				break;
		}
		if (k == s->n) {
			i++;
			continue;
		}
		ar_buf_append(out, in + from, i - from);
		ar_buf_append(out, s->s[k].value, s->s[k].vlen);
		i += s->s[k].plen;
		from = i;
	}
	ar_buf_append(out, in + from, len - from);
}

/* "Authorization: Basic TOKEN": *tok is TOKEN's span (the spaces around it trimmed). */
static bool basic_credentials(const char *line, size_t len, size_t *tok, size_t *tok_len)
{
	static const char name[] = "authorization:";
	size_t n = sizeof(name) - 1, p;
	if (len < n || strncasecmp(line, name, n) != 0)
		return false;
	for (p = n; p < len && (line[p] == ' ' || line[p] == '\t'); p++)
		;
	if (len - p < 6 || strncasecmp(line + p, "basic", 5) != 0 ||
	    (line[p + 5] != ' ' && line[p + 5] != '\t'))
		return false;
	for (p += 6; p < len && (line[p] == ' ' || line[p] == '\t'); p++)
		;
	size_t e = len;
	while (e > p && (line[e - 1] == ' ' || line[e - 1] == '\t'))
		e--;
	*tok = p;
	*tok_len = e - p;
	return true;
}

/* One head line. Returns the secrets found in it. */
static uint64_t rewrite_line(const struct ar_secrets *s, uint64_t bound, const char *line,
			     size_t len, struct ar_buf *out)
{
	uint64_t found = ar_secrets_find(s, line, len);
	size_t tok, tlen;
	ar_autobuf struct ar_buf dec = {0};
	if (basic_credentials(line, len, &tok, &tlen) &&
	    ar_base64_decode(line + tok, tlen, &dec) == 0) {
		uint64_t inner = ar_secrets_find(s, dec.data ? dec.data : "", dec.len);
		found |= inner;
		if (inner & bound) {
			ar_autobuf struct ar_buf plain = {0};
			subst(s, bound, dec.data, dec.len, &plain);
			ar_buf_append(out, line, tok);
			ar_base64_encode((const unsigned char *)plain.data, plain.len, out);
			explicit_bzero(plain.data, plain.len);
			return found;
		}
	}
	subst(s, bound, line, len, out);
	return found;
}

uint64_t ar_secrets_rewrite_head(const struct ar_secrets *s, uint64_t bound, const char *head,
				 size_t len, struct ar_buf *out, uint64_t *used)
{
	uint64_t found = 0;
	size_t p = 0;
	*used = 0;
	if (s == NULL || s->n == 0) {
		ar_buf_append(out, head, len);
		return 0;
	}
	while (p < len) {
		const char *cr = memmem(head + p, len - p, "\r\n", 2);
		size_t eol = cr ? (size_t)(cr - head) : len;
		found |= rewrite_line(s, bound, head + p, eol - p, out);
		if (cr == NULL)
			break;
		ar_buf_append(out, "\r\n", 2);
		p = eol + 2;
	}
	*used = found & bound;
	return found & ~bound;
}

bool ar_secrets_mask(const struct ar_secrets *s, const char *in, size_t len, struct ar_buf *out)
{
	bool any = false;
	for (size_t k = 0; s != NULL && k < s->n; k++)
		if (s->s[k].value && s->s[k].vlen >= 4 &&
		    memmem(in, len, s->s[k].value, s->s[k].vlen) != NULL)
			any = true;
	if (!any)
		return false;
	size_t from = 0;
	for (size_t i = 0; i < len;) {
		size_t k;
		for (k = 0; k < s->n; k++) {
			const struct ar_secret *x = &s->s[k];
			if (x->value && x->vlen >= 4 && len - i >= x->vlen &&
			    memcmp(in + i, x->value, x->vlen) == 0)
				break;
		}
		if (k == s->n) {
			i++;
			continue;
		}
		ar_buf_append(out, in + from, i - from);
		ar_buf_append(out, s->s[k].placeholder, s->s[k].plen);
		i += s->s[k].vlen;
		from = i;
	}
	ar_buf_append(out, in + from, len - from);
	return true;
}

/* The longest span a placeholder can take in a body, percent-encoded. */
static size_t window(const struct ar_secrets *s)
{
	size_t w = 0;
	for (size_t k = 0; k < s->n; k++)
		if (s->s[k].plen * 3 > w)
			w = s->s[k].plen * 3;
	return w;
}

uint64_t ar_secrets_scan_feed(const struct ar_secrets *s, struct ar_secrets_scan *st,
			      const char *buf, size_t len)
{
	if (s == NULL || s->n == 0 || len == 0)
		return 0;
	size_t w = window(s) - 1;
	if (w > sizeof(st->tail) - 1)
		w = sizeof(st->tail) - 1;
	uint64_t found = ar_secrets_find(s, buf, len);
	/* the seam: the previous tail and the start of this buffer */
	char seam[sizeof(st->tail) * 2];
	size_t head = len < w ? len : w;
	memcpy(seam, st->tail, st->carry);
	memcpy(seam + st->carry, buf, head);
	found |= ar_secrets_find(s, seam, st->carry + head);
	/* the new tail: the last w bytes of tail + buf */
	size_t total = st->carry + len;
	size_t keep = total < w ? total : w;
	if (len >= keep) {
		memcpy(st->tail, buf + len - keep, keep);
	} else {
		size_t from_tail = keep - len;
		memmove(st->tail, st->tail + st->carry - from_tail, from_tail);
		memcpy(st->tail + from_tail, buf, len);
	}
	st->carry = keep;
	st->scanned += len;
	return found;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void ar_base64_encode(const unsigned char *in, size_t len, struct ar_buf *out)
{
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		char q[4] = {b64[v >> 18], b64[(v >> 12) & 63],
			     i + 1 < len ? b64[(v >> 6) & 63] : '=',
			     i + 2 < len ? b64[v & 63] : '='};
		ar_buf_append(out, q, 4);
	}
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;
	return p ? (int)(p - b64) : -1;
}

int ar_base64_decode(const char *in, size_t len, struct ar_buf *out)
{
	if (len % 4 != 0)
		return -1;
	for (size_t i = 0; i < len; i += 4) {
		int v[4];
		for (int k = 0; k < 4; k++) {
			bool pad = in[i + k] == '=' && i + 4 == len && k >= 2;
			v[k] = pad ? 0 : b64_val(in[i + k]);
			if (v[k] < 0 || (k == 2 && pad && in[i + 3] != '='))
				return -1;
		}
		uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
			     (uint32_t)v[3];
		ar_buf_putc(out, (char)(x >> 16));
		if (in[i + 2] != '=')
			ar_buf_putc(out, (char)(x >> 8));
		if (in[i + 3] != '=')
			ar_buf_putc(out, (char)x);
	}
	return 0;
}

/* Growable buffer and the quoting helpers built on it. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/util.h"

void ar_buf_reserve(struct ar_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	b->data = ar_xrealloc(b->data, cap);
	b->cap = cap;
	b->data[b->len] = '\0';
}

void ar_buf_append(struct ar_buf *b, const void *data, size_t len)
{
	ar_buf_reserve(b, len);
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

void ar_buf_puts(struct ar_buf *b, const char *s)
{
	ar_buf_append(b, s, strlen(s));
}

void ar_buf_putc(struct ar_buf *b, char c)
{
	ar_buf_append(b, &c, 1);
}

void ar_buf_put_u64(struct ar_buf *b, uint64_t v)
{
	char t[20];
	size_t i = sizeof(t);
	do
		t[--i] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	ar_buf_append(b, t + i, sizeof(t) - i);
}

void ar_buf_put_i64(struct ar_buf *b, int64_t v)
{
	if (v < 0) {
		ar_buf_putc(b, '-');
		ar_buf_put_u64(b, (uint64_t)0 - (uint64_t)v);
		return;
	}
	ar_buf_put_u64(b, (uint64_t)v);
}

void ar_buf_vprintf(struct ar_buf *b, const char *fmt, va_list ap)
{
	/* one pass into the room there is; a second only when it did not fit */
	va_list copy;
	va_copy(copy, ap);
	size_t room = b->cap > b->len ? b->cap - b->len : 0;
	int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, copy);
	va_end(copy);
	if (n < 0)
		abort();
	if ((size_t)n >= room) {
		ar_buf_reserve(b, (size_t)n);
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	}
	b->len += (size_t)n;
}

void ar_buf_printf(struct ar_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ar_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void ar_buf_reset(struct ar_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void ar_buf_free(struct ar_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

char *ar_buf_steal(struct ar_buf *b)
{
	ar_buf_reserve(b, 0);
	char *d = b->data;
	b->data = NULL;
	b->len = b->cap = 0;
	return d;
}

void ar_cleanup_bufp(struct ar_buf *b)
{
	ar_buf_free(b);
}

static bool shell_safe(unsigned char c)
{
	return isalnum(c) || strchr("_./:=@%+,-", c) != NULL;
}

void ar_shell_quote(struct ar_buf *out, const char *s)
{
	bool bare = *s != '\0';
	for (const unsigned char *p = (const unsigned char *)s; *p && bare; p++)
		bare = shell_safe(*p);
	if (bare) {
		ar_buf_puts(out, s);
		return;
	}
	ar_buf_putc(out, '\'');
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			ar_buf_puts(out, "'\\''");
		else
			ar_buf_putc(out, *p);
	}
	ar_buf_putc(out, '\'');
}

/* Length of a valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *p)
{
	if (p[0] < 0x80)
		return 1;
	size_t n;
	unsigned int min;
	if ((p[0] & 0xe0) == 0xc0) {
		n = 2;
		min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 3;
		min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		n = 4;
		min = 0x10000;
	} else
		return 0;
	unsigned int cp = p[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void ar_json_quote(struct ar_buf *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	ar_buf_putc(out, '"');
	while (*p) {
		unsigned char c = *p;
		if (c == '"' || c == '\\') {
			ar_buf_putc(out, '\\');
			ar_buf_putc(out, (char)c);
			p++;
		} else if (c == '\n') {
			ar_buf_puts(out, "\\n");
			p++;
		} else if (c == '\r') {
			ar_buf_puts(out, "\\r");
			p++;
		} else if (c == '\t') {
			ar_buf_puts(out, "\\t");
			p++;
		} else if (c < 0x20 || c == 0x7f) {
			ar_buf_printf(out, "\\u%04x", c);
			p++;
		} else {
			size_t n = utf8_len(p);
			if (n == 0) {
				/* an invalid byte becomes U+FFFD so the line stays valid JSON */
				ar_buf_puts(out, "\\ufffd");
				p++;
			} else {
				ar_buf_append(out, p, n);
				p += n;
			}
		}
	}
	ar_buf_putc(out, '"');
}

char *ar_printable(const char *s, size_t max)
{
	struct ar_buf b = {0};

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (b.len >= max) {
			ar_buf_puts(&b, "...");
			break;
		}
		if (*p == '\n')
			ar_buf_puts(&b, "\\n");
		else if (*p == '\t')
			ar_buf_puts(&b, "\\t");
		else if (*p < 0x20 || *p == 0x7f)
			ar_buf_printf(&b, "\\x%02x", *p);
		else
			ar_buf_putc(&b, (char)*p);
	}
	ar_buf_reserve(&b, 0);
	return ar_buf_steal(&b);
}

/* Host canonicalisation (DESIGN §4), shared by the rules and the proxy (Host headers,
 * CONNECT targets, URLs). Pure string code: no DNS, no I/O. Every spelling a resolver
 * would read as an address (inet_aton forms, ::ffff:a.b.c.d) becomes one canonical
 * address, so a rule can never be bypassed by writing the same target differently. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "agentrun/rules.h"
#include "agentrun/util.h"
#include "internal.h"

#define NAME_MAX_LEN  253
#define LABEL_MAX_LEN 63
#define V6_TEXT_MAX   45 /* INET6_ADDRSTRLEN - 1 */

static bool is_hex_prefix(const char *s, size_t len)
{
	return len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

bool ar_rules_ends_in_number(const char *s, size_t len)
{
	size_t start = len;
	while (start > 0 && s[start - 1] != '.')
		start--;
	const char *l = s + start;
	size_t n = len - start;
	if (n == 0)
		return false;
	size_t i = 0;
	int base = 10;
	if (is_hex_prefix(l, n)) {
		i = 2;
		base = 16;
	}
	for (; i < n; i++) {
		int d = ar_hexval(l[i]);
		if (d < 0 || d >= base)
			return false;
	}
	return true;
}

/* One inet_aton part: decimal, 0-prefixed octal or 0x-prefixed hex. */
static int parse_v4_part(const char *s, size_t len, uint64_t *out)
{
	int base = 10;
	if (is_hex_prefix(s, len)) {
		base = 16;
		s += 2;
		len -= 2;
	} else if (len >= 2 && s[0] == '0') {
		base = 8;
		s++;
		len--;
	}
	if (len == 0)
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		int d = ar_hexval(s[i]);
		if (d < 0 || d >= base)
			return -1;
		v = v * (uint64_t)base + (uint64_t)d;
		if (v > 0xffffffffULL)
			return -1;
	}
	*out = v;
	return 0;
}

/* inet_aton's grammar (a, a.b, a.b.c, a.b.c.d; the last part fills the remaining
 * bytes) without its trailing-garbage tolerance. */
static int parse_v4(const char *s, size_t len, struct in_addr *out)
{
	uint64_t parts[4];
	size_t np = 0, i = 0;
	for (;;) {
		size_t j = i;
		while (j < len && s[j] != '.')
			j++;
		if (np == AR_ARRAY_SIZE(parts))
			return -1;
		if (parse_v4_part(s + i, j - i, &parts[np++]) == -1)
			return -1;
		if (j == len)
			break;
		i = j + 1;
	}
	uint32_t v = 0;
	for (size_t k = 0; k + 1 < np; k++) {
		if (parts[k] > 255)
			return -1;
		v |= (uint32_t)parts[k] << (24 - 8 * k);
	}
	if (parts[np - 1] > (0xffffffffULL >> (8 * (np - 1))))
		return -1;
	v |= (uint32_t)parts[np - 1];
	out->s_addr = htonl(v);
	return 0;
}

/* RFC 5952: lowercase, no leading zeros, the longest run (first on a tie) of two or
 * more zero groups as "::". Written out here because glibc's inet_ntop prints some
 * addresses in mixed dotted form (::0.1.0.2), which is not canonical. */
static void format_v6(const struct in6_addr *a, char *out, size_t outlen)
{
	unsigned w[8];
	int best = -1, bestlen = 0;
	for (int i = 0; i < 8; i++)
		w[i] = (unsigned)a->s6_addr[2 * i] << 8 | a->s6_addr[2 * i + 1];
	for (int i = 0; i < 8;) {
		int j = i;
		while (j < 8 && w[j] == 0)
			j++;
		if (j - i > bestlen) {
			best = i;
			bestlen = j - i;
		}
		i = j > i ? j : i + 1;
	}
	if (bestlen < 2)
		best = -1;
	size_t p = 0;
	out[0] = '\0';
	for (int i = 0; i < 8 && p < outlen; i++) {
		if (i == best) {
			p += (size_t)snprintf(out + p, outlen - p, "::");
			i += bestlen - 1;
			continue;
		}
		bool colon = i > 0 && i != best + bestlen;
		p += (size_t)snprintf(out + p, outlen - p, "%s%x", colon ? ":" : "", w[i]);
	}
}

int ar_rules_canon_v6(const char *in, size_t len, struct ar_host *out, const char **why)
{
	char buf[V6_TEXT_MAX + 1];
	memset(out, 0, sizeof(*out));
	if (memchr(in, '%', len) != NULL) {
		*why = "an IPv6 zone id is not allowed";
		return -1;
	}
	if (len == 0 || len > V6_TEXT_MAX) {
		*why = "invalid IPv6 address";
		return -1;
	}
	memcpy(buf, in, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET6, buf, &out->addr.v6) != 1) {
		*why = "invalid IPv6 address";
		return -1;
	}
	if (IN6_IS_ADDR_V4MAPPED(&out->addr.v6)) {
		struct in_addr v4;
		memcpy(&v4, &out->addr.v6.s6_addr[12], sizeof(v4));
		memset(&out->addr, 0, sizeof(out->addr));
		out->addr.v4 = v4;
		out->family = AF_INET;
		inet_ntop(AF_INET, &out->addr.v4, out->name, sizeof(out->name));
		return 0;
	}
	out->family = AF_INET6;
	format_v6(&out->addr.v6, out->name, sizeof(out->name));
	return 0;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Lowercase and check a name (trailing dot already removed). */
static int canon_name(const char *in, size_t len, struct ar_host *out, const char **why)
{
	if (len > NAME_MAX_LEN) {
		*why = "host name longer than 253 characters";
		return -1;
	}
	size_t label = 0;
	for (size_t i = 0; i < len; i++) {
		char c = in[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c == '.') {
			if (label == 0) {
				*why = "empty label in host name";
				return -1;
			}
			label = 0;
		} else if (!name_char(c)) {
			*why = "invalid character in host name (letters, digits, '-', '_' and '.')";
			return -1;
		} else if (++label > LABEL_MAX_LEN) {
			*why = "host name label longer than 63 characters";
			return -1;
		}
		out->name[i] = c;
	}
	if (label == 0) {
		*why = "empty label in host name";
		return -1;
	}
	out->name[len] = '\0';
	out->family = 0;
	return 0;
}

static int canon_bracketed(const char *in, size_t len, struct ar_host *out, const char **why)
{
	if (in[len - 1] != ']') {
		const char *rb = memchr(in, ']', len);
		*why = rb != NULL && rb[1] == ':' ? "a port is not allowed here"
						  : "unterminated '[' in host";
		return -1;
	}
	if (ar_rules_canon_v6(in + 1, len - 2, out, why) == -1)
		return -1;
	return 0;
}

int ar_rules_canon(const char *in, size_t len, struct ar_host *out, const char **why)
{
	memset(out, 0, sizeof(*out));
	if (len == 0) {
		*why = "empty host";
		return -1;
	}
	if (len >= AR_HOST_MAX) {
		*why = "host longer than 255 characters";
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c <= ' ' || c == 0x7f) {
			*why = "whitespace or a control character in host";
			return -1;
		}
	}
	if (in[0] == '[')
		return canon_bracketed(in, len, out, why);
	const char *colon = memchr(in, ':', len);
	if (colon != NULL) {
		if (memchr(colon + 1, ':', len - (size_t)(colon + 1 - in)) == NULL) {
			*why = "a port is not allowed here";
			return -1;
		}
		return ar_rules_canon_v6(in, len, out, why);
	}
	if (in[len - 1] == '.')
		len--;
	if (len == 0) {
		*why = "empty host";
		return -1;
	}
	if (ar_rules_ends_in_number(in, len)) {
		if (parse_v4(in, len, &out->addr.v4) == -1) {
			*why = "invalid IPv4 address";
			return -1;
		}
		out->family = AF_INET;
		inet_ntop(AF_INET, &out->addr.v4, out->name, sizeof(out->name));
		return 0;
	}
	return canon_name(in, len, out, why);
}

void ar_rules_escape(const char *s, size_t len, char *buf, size_t bufsz)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	if (bufsz == 0)
		return;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char tmp[4];
		size_t n = 0;
		if (c == '"' || c == '\\') {
			tmp[n++] = '\\';
			tmp[n++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			tmp[n++] = '\\';
			tmp[n++] = 'x';
			tmp[n++] = hex[c >> 4];
			tmp[n++] = hex[c & 15];
		} else {
			tmp[n++] = (char)c;
		}
		/* keep room for "..." and the NUL */
		if (o + n + 4 > bufsz) {
			if (o + 4 <= bufsz)
				memcpy(buf + o, "...", 3), o += 3;
			break;
		}
		memcpy(buf + o, tmp, n);
		o += n;
	}
	buf[o] = '\0';
}

int ar_rules_parse_port(const char *s, size_t len)
{
	if (len == 0 || len > 5)
		return -1;
	int v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v >= 1 && v <= 65535 ? v : -1;
}

int ar_host_canonicalize_n(const char *in, size_t len, struct ar_host *out, ar_error_t *err)
{
	const char *why = NULL;
	char esc[AR_HOST_MAX + 16];
	if (in == NULL)
		return ar_error_make(err, 0, "invalid host: missing");
	if (ar_rules_canon(in, len, out, &why) == 0)
		return 0;
	/* an overlong host is shown only by its start */
	ar_rules_escape(in, len, esc, len >= AR_HOST_MAX ? 68 : sizeof(esc));
	return ar_error_make(err, 0, "invalid host \"%s\": %s", esc, why);
}

int ar_host_canonicalize(const char *in, struct ar_host *out, ar_error_t *err)
{
	/* one past the limit is enough to know it is too long */
	return ar_host_canonicalize_n(in, in != NULL ? strnlen(in, AR_HOST_MAX + 1) : 0, out, err);
}

static int split_error(const char *authority, size_t len, const char *why, ar_error_t *err)
{
	char esc[AR_HOST_MAX + 16];
	ar_rules_escape(authority, len, esc, sizeof(esc));
	return ar_error_make(err, 0, "invalid authority \"%s\": %s", esc, why);
}

int ar_host_split_port(const char *authority, char *host, size_t hostlen, int *port,
		       int default_port, ar_error_t *err)
{
	size_t len = strnlen(authority, 2 * AR_HOST_MAX);
	const char *end = authority + len, *hend, *pstart = NULL;
	if (len == 0)
		return split_error(authority, len, "empty", err);
	if (len == 2 * AR_HOST_MAX)
		return split_error(authority, len, "too long", err);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)authority[i] <= ' ' || authority[i] == 0x7f)
			return split_error(authority, len, "whitespace or a control character",
					   err);
	if (authority[0] == '[') {
		const char *rb = memchr(authority, ']', len);
		if (rb == NULL)
			return split_error(authority, len, "unterminated '['", err);
		hend = rb + 1;
		if (hend < end && *hend != ':')
			return split_error(authority, len, "unexpected text after ']'", err);
	} else {
		hend = memchr(authority, ':', len);
		if (hend != NULL && memchr(hend + 1, ':', (size_t)(end - hend - 1)) != NULL)
			return split_error(authority, len,
					   "an IPv6 address must be in brackets, as [ADDR]:PORT",
					   err);
		if (hend == NULL)
			hend = end;
	}
	if (hend < end)
		pstart = hend + 1;
	if (hend == authority)
		return split_error(authority, len, "empty host", err);
	int p = default_port;
	if (pstart != NULL) {
		p = ar_rules_parse_port(pstart, (size_t)(end - pstart));
		if (p == -1)
			return split_error(authority, len, "bad port (expected 1-65535)", err);
	} else if (default_port <= 0) {
		return split_error(authority, len, "missing port", err);
	}
	if ((size_t)(hend - authority) >= hostlen)
		return split_error(authority, len, "host too long", err);
	memcpy(host, authority, (size_t)(hend - authority));
	host[hend - authority] = '\0';
	*port = p;
	return 0;
}

void ar_host_format(const struct ar_host *host, int port, char *buf, size_t buflen)
{
	if (host->family == AF_INET6)
		snprintf(buf, buflen, "[%s]:%d", host->name, port);
	else
		snprintf(buf, buflen, "%s:%d", host->name, port);
}

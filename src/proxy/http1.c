/* HTTP/1.x head parsing, request rewriting and chunked framing (see http1.h).
 * Everything here is a pure function over the caller's buffer. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "agentrun/http1.h"

/* RFC 9110 §5.6.2 token characters. */
static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Field-value and reason-phrase bytes: VCHAR, obs-text, SP, HTAB. */
static bool is_vchar(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* A header or trailer name character: a token character other than `_`, which CGI and
 * WSGI origins fold into `-` (so `Transfer_Encoding` would become a second
 * Transfer-Encoding behind the proxy). */
static bool field_name_char(unsigned char c)
{
	return c != '_' && is_tchar(c);
}

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

static bool span_ieq(const char *buf, struct ar_h1_span s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len == n && strncasecmp(buf + s.off, lit, n) == 0;
}

static struct ar_h1_span mkspan(size_t off, size_t len)
{
	return (struct ar_h1_span){(uint32_t)off, (uint32_t)len};
}

enum ar_h1_scan_result ar_h1_scan_head(struct ar_h1_scan *s, const char *buf, size_t len,
				       size_t *head_end)
{
	size_t i = s->pos;
	unsigned max = s->max_fields ? s->max_fields : AR_H1_MAX_FIELDS;
	/* RFC 9112 §2.2: ignore empty lines before the start line (clients send a stray
	 * CRLF after a body) */
	if (s->lines == 0) {
		while (i == s->start && i + 1 < len && buf[i] == '\r' && buf[i + 1] == '\n') {
			i += 2;
			s->start = i;
		}
		if (i == s->start && i < len && buf[i] == '\r' && i + 1 == len) {
			s->pos = i;
			return AR_H1_SCAN_MORE;
		}
	}
	for (; i < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (i == s->start || buf[i - 1] != '\r')
			return AR_H1_SCAN_BARE_LF;
		s->lines++;
		if (i >= s->start + 3 && buf[i - 2] == '\n') {
			*head_end = i + 1;
			s->pos = i + 1;
			if (i + 1 - s->start > AR_H1_MAX_HEAD)
				return AR_H1_SCAN_TOO_BIG;
			if (s->lines - 2 > max)
				return AR_H1_SCAN_TOO_MANY;
			return AR_H1_SCAN_DONE;
		}
		if (s->lines - 1 > max)
			return AR_H1_SCAN_TOO_MANY;
	}
	s->pos = i;
	if (len - s->start > AR_H1_MAX_HEAD)
		return AR_H1_SCAN_TOO_BIG;
	return AR_H1_SCAN_MORE;
}

static bool host_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

static int parse_port(const char *s, size_t len, int *port)
{
	if (len == 0 || len > 5)
		return -1;
	int v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return -1;
	*port = v;
	return 0;
}

int ar_h1_split_authority(const char *s, size_t len, char *host, size_t host_size, int *port,
			  bool *is_v6, int default_port)
{
	size_t hlen, rest;
	const char *h;
	*is_v6 = false;
	if (len > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', len);
		if (close == NULL)
			return -1;
		h = s + 1;
		hlen = (size_t)(close - h);
		/* brackets hold an IPv6 address and nothing else ([127.0.0.1], [2130706433]) */
		char a6[INET6_ADDRSTRLEN];
		struct in6_addr scratch;
		if (hlen == 0 || hlen >= sizeof(a6))
			return -1;
		memcpy(a6, h, hlen);
		a6[hlen] = '\0';
		if (inet_pton(AF_INET6, a6, &scratch) != 1)
			return -1;
		rest = (size_t)(close + 1 - s);
		*is_v6 = true;
	} else {
		h = s;
		for (hlen = 0; hlen < len && s[hlen] != ':'; hlen++)
			if (!host_char((unsigned char)s[hlen]))
				return -1;
		rest = hlen;
	}
	if (hlen == 0 || hlen >= host_size)
		return -1;
	if (rest == len) {
		if (default_port < 0)
			return -1;
		*port = default_port;
	} else if (s[rest] != ':' || parse_port(s + rest + 1, len - rest - 1, port) == -1) {
		return -1;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	return 0;
}

static int fail(struct ar_h1_error *e, int status, const char *reason)
{
	e->status = status;
	e->reason = reason;
	return -1;
}

/* "HTTP/1.0" or "HTTP/1.1" */
static int parse_version(const char *p, size_t len, int *minor)
{
	if (len != 8 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1'))
		return -1;
	*minor = p[7] - '0';
	return 0;
}

static int parse_request_line(const char *buf, size_t eol, struct ar_h1_request *req,
			      struct ar_h1_error *e)
{
	size_t i = 0;
	while (i < eol && is_tchar((unsigned char)buf[i]))
		i++;
	if (i == 0 || i >= eol || buf[i] != ' ')
		return fail(e, 400, "malformed request line");
	req->method = mkspan(0, i);
	size_t t = ++i;
	while (i < eol && buf[i] != ' ') {
		if ((unsigned char)buf[i] <= 0x20 || (unsigned char)buf[i] == 0x7f)
			return fail(e, 400, "invalid character in request target");
		i++;
	}
	if (i == t || i >= eol)
		return fail(e, 400, "malformed request line");
	req->target = mkspan(t, i - t);
	if (parse_version(buf + i + 1, eol - i - 1, &req->minor) == -1)
		return fail(e, 400, "unsupported HTTP version (HTTP/1.0 and HTTP/1.1 only)");
	req->is_connect = span_ieq(buf, req->method, "CONNECT") &&
			  memcmp(buf + req->method.off, "CONNECT", 7) == 0;
	req->is_head = req->method.len == 4 && memcmp(buf + req->method.off, "HEAD", 4) == 0;
	return 0;
}

/* One field line buf[p..eol) (eol at the CR). */
static int parse_field(const char *buf, size_t p, size_t eol, struct ar_h1_field *f,
		       struct ar_h1_error *e)
{
	if (is_ows(buf[p]))
		return fail(e, 400, "obsolete line folding in header");
	size_t i = p;
	while (i < eol && is_tchar((unsigned char)buf[i]))
		i++;
	if (i < eol && is_ows(buf[i]))
		return fail(e, 400, "whitespace before colon in header");
	if (i == p || i >= eol || buf[i] != ':')
		return fail(e, 400, "invalid header name");
	f->name = mkspan(p, i - p);
	i++;
	while (i < eol && is_ows(buf[i]))
		i++;
	size_t end = eol;
	while (end > i && is_ows(buf[end - 1]))
		end--;
	for (size_t k = i; k < end; k++)
		if (!is_vchar((unsigned char)buf[k]))
			return fail(e, 400, "invalid character in header value");
	f->value = mkspan(i, end - i);
	return 0;
}

/* Iterate a comma-separated list in a field value: returns the next element span
 * (OWS trimmed, possibly empty) and advances *pos; false at the end. */
static bool next_element(const char *buf, struct ar_h1_span v, size_t *pos, struct ar_h1_span *el)
{
	size_t end = (size_t)v.off + v.len;
	if (*pos > end)
		return false;
	size_t i = *pos;
	while (i < end && is_ows(buf[i]))
		i++;
	size_t s = i;
	while (i < end && buf[i] != ',')
		i++;
	size_t t = i;
	while (t > s && is_ows(buf[t - 1]))
		t--;
	*el = mkspan(s, t - s);
	*pos = i + 1;
	return true;
}

static bool all_tchar(const char *buf, struct ar_h1_span s)
{
	for (uint32_t i = 0; i < s.len; i++)
		if (!is_tchar((unsigned char)buf[s.off + i]))
			return false;
	return s.len > 0;
}

/* Transfer-Encoding: a token list; chunked must be the last coding, and only once. */
static int te_is_chunked(const char *buf, struct ar_h1_span v, bool *chunked)
{
	size_t pos = v.off;
	struct ar_h1_span el;
	bool any = false;
	*chunked = false;
	while (next_element(buf, v, &pos, &el)) {
		if (el.len == 0)
			continue;
		if (!all_tchar(buf, el))
			return -1;
		if (*chunked)
			return -1; /* a coding after chunked */
		*chunked = span_ieq(buf, el, "chunked");
		any = true;
	}
	return any ? 0 : -1;
}

static int parse_content_length(const char *buf, struct ar_h1_span v, uint64_t *out)
{
	if (v.len == 0 || v.len > 18)
		return -1;
	uint64_t n = 0;
	for (uint32_t i = 0; i < v.len; i++) {
		char c = buf[v.off + i];
		if (c < '0' || c > '9')
			return -1;
		n = n * 10 + (uint64_t)(c - '0');
	}
	*out = n;
	return 0;
}

enum field_kind {
	F_OTHER,
	F_CONTENT_LENGTH,
	F_TRANSFER_ENCODING,
	F_HOST,
	F_CONNECTION,
	F_PCONN,
	F_UPGRADE
};

static const struct {
	const char *name;
	enum field_kind kind;
} known_fields[] = {
    {"content-length", F_CONTENT_LENGTH},
    {"transfer-encoding", F_TRANSFER_ENCODING},
    {"host", F_HOST},
    {"connection", F_CONNECTION},
    {"proxy-connection", F_PCONN},
    {"upgrade", F_UPGRADE},
};

static enum field_kind field_kind(const char *buf, struct ar_h1_span name)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(known_fields); i++)
		if (span_ieq(buf, name, known_fields[i].name))
			return known_fields[i].kind;
	return F_OTHER;
}

struct field_facts {
	int n_cl, n_te, n_host;
	bool chunked, keep_alive, close;
	bool upgrade_token, upgrade_field; /* Connection: upgrade, and an Upgrade field */
	struct ar_h1_span host;
};

static int connection_tokens(const char *buf, struct ar_h1_span v, struct ar_h1_request *req,
			     struct field_facts *ff, bool record, struct ar_h1_error *e)
{
	size_t pos = v.off;
	struct ar_h1_span el;
	while (next_element(buf, v, &pos, &el)) {
		if (el.len == 0)
			continue;
		if (!all_tchar(buf, el))
			return fail(e, 400, "invalid Connection header");
		/* dropping these would change the framing or the target upstream: smuggling */
		if (span_ieq(buf, el, "content-length") || span_ieq(buf, el, "transfer-encoding") ||
		    span_ieq(buf, el, "host"))
			return fail(e, 400,
				    "Connection header names Content-Length, "
				    "Transfer-Encoding or Host");
		if (span_ieq(buf, el, "close"))
			ff->close = true;
		else if (span_ieq(buf, el, "keep-alive"))
			ff->keep_alive = true;
		else if (span_ieq(buf, el, "upgrade"))
			ff->upgrade_token = true;
		if (!record)
			continue;
		if (req->n_conn_tokens == AR_H1_MAX_CONN_TOKENS)
			return fail(e, 400, "too many names in the Connection header");
		req->conn_tokens[req->n_conn_tokens++] = el;
	}
	return 0;
}

static int note_field(const char *buf, const struct ar_h1_field *f, struct ar_h1_request *req,
		      struct field_facts *ff, struct ar_h1_error *e)
{
	switch (field_kind(buf, f->name)) {
	case F_CONTENT_LENGTH:
		if (++ff->n_cl > 1)
			return fail(e, 400, "duplicate Content-Length");
		if (parse_content_length(buf, f->value, &req->content_length) == -1)
			return fail(e, 400, "invalid Content-Length");
		return 0;
	case F_TRANSFER_ENCODING:
		/* several TE fields would be one list; refusing them is simpler and safe */
		if (++ff->n_te > 1)
			return fail(e, 400, "duplicate Transfer-Encoding");
		/* exactly "chunked": a coding list is a parser differential waiting to happen,
		 * and the proxy would have to decode it to find the end (RFC 9112 §6.1: 501) */
		if (!span_ieq(buf, f->value, "chunked"))
			return fail(e, 501, "unsupported Transfer-Encoding (only chunked)");
		ff->chunked = true;
		return 0;
	case F_HOST:
		if (++ff->n_host > 1)
			return fail(e, 400, "duplicate Host header");
		ff->host = f->value;
		return 0;
	case F_CONNECTION:
		return connection_tokens(buf, f->value, req, ff, true, e);
	case F_PCONN:
		return connection_tokens(buf, f->value, req, ff, false, e);
	case F_UPGRADE:
		ff->upgrade_field = true;
		return 0;
	case F_OTHER:
		return 0;
	}
	return 0;
}

static bool host_eq(const char *a, size_t alen, const char *b, size_t blen)
{
	if (alen > 0 && a[alen - 1] == '.')
		alen--;
	if (blen > 0 && b[blen - 1] == '.')
		blen--;
	return alen == blen && strncasecmp(a, b, alen) == 0;
}

/* absolute-form http://authority/path?query */
static int parse_absolute(const char *buf, struct ar_h1_request *req, struct ar_h1_error *e)
{
	const char *t = buf + req->target.off;
	size_t len = req->target.len;
	if (t[0] == '/' || (len == 1 && t[0] == '*'))
		return fail(e, 400, "relative URL: a proxy request needs an absolute http:// URL");
	const char *sep = memmem(t, len, "://", 3);
	if (sep == NULL)
		return fail(e, 400, "malformed URL: an absolute http:// URL is required");
	if (sep - t != 4 || strncasecmp(t, "http", 4) != 0)
		return fail(e, 400, "only http:// URLs can be forwarded (use CONNECT for https)");
	size_t a = (size_t)(sep - t) + 3, p = a;
	while (p < len && t[p] != '/' && t[p] != '?' && t[p] != '#')
		p++;
	if (memchr(t + a, '@', p - a) != NULL)
		return fail(e, 400, "user information in URL is not allowed");
	if (memchr(t + p, '#', len - p) != NULL)
		return fail(e, 400, "fragment in URL");
	if (ar_h1_split_authority(t + a, p - a, req->host, sizeof(req->host), &req->port,
				  &req->host_is_v6, 80) == -1)
		return fail(e, 400, "invalid host or port in URL");
	req->path = mkspan(req->target.off + p, len - p);
	req->path_needs_slash = p < len && t[p] == '?';
	return 0;
}

static int check_host_field(const char *buf, const struct field_facts *ff,
			    struct ar_h1_request *req, struct ar_h1_error *e)
{
	char h[AR_H1_HOST_MAX];
	int port;
	bool v6;
	if (ff->n_host == 0)
		return 0;
	if (ar_h1_split_authority(buf + ff->host.off, ff->host.len, h, sizeof(h), &port, &v6,
				  req->is_connect || req->origin_form ? req->port : 80) == -1)
		return fail(e, 400, "invalid Host header");
	if (!host_eq(h, strlen(h), req->host, strlen(req->host)) || port != req->port)
		return fail(e, 400, "Host header disagrees with the request URL");
	return 0;
}

static int parse_fields(const char *buf, size_t len, size_t p, struct ar_h1_request *req,
			struct field_facts *ff, struct ar_h1_error *e)
{
	for (;;) {
		const char *cr = memchr(buf + p, '\r', len - p);
		if (cr == NULL || (size_t)(cr - buf) + 1 >= len || cr[1] != '\n')
			return fail(e, 400, "malformed header line");
		size_t eol = (size_t)(cr - buf);
		if (eol == p)
			return 0;
		if (req->n_fields == AR_H1_MAX_FIELDS)
			return fail(e, 431, "too many header lines");
		struct ar_h1_field *f = &req->fields[req->n_fields];
		if (parse_field(buf, p, eol, f, e) == -1)
			return -1;
		if (memchr(buf + f->name.off, '_', f->name.len) != NULL)
			return fail(e, 400, "underscore in header name");
		if (note_field(buf, f, req, ff, e) == -1)
			return -1;
		req->n_fields++;
		p = eol + 2;
	}
}

/* origin-form /path?query on a connection to one origin (a terminated CONNECT, captured
 * plain HTTP): the target is that origin */
static int parse_origin(const char *buf, const struct ar_h1_origin *o, struct ar_h1_request *req,
			struct ar_h1_error *e)
{
	const char *t = buf + req->target.off;
	if (req->is_connect)
		return fail(e, 400,
			    "CONNECT on a connection to one origin (terminated or captured)");
	if (req->target.len == 0 || t[0] != '/')
		return fail(e, 400,
			    "a request on a connection to one origin (terminated or "
			    "captured) needs an origin-form target (/path)");
	if (memchr(t, '#', req->target.len) != NULL)
		return fail(e, 400, "fragment in URL");
	snprintf(req->host, sizeof(req->host), "%s", o->host);
	req->port = o->port;
	req->host_is_v6 = o->is_v6;
	req->path = req->target;
	req->origin_form = true;
	return 0;
}

int ar_h1_parse_request(const char *buf, size_t len, struct ar_h1_request *req,
			struct ar_h1_error *e)
{
	return ar_h1_parse_request_at(buf, len, NULL, req, e);
}

int ar_h1_parse_request_at(const char *buf, size_t len, const struct ar_h1_origin *o,
			   struct ar_h1_request *req, struct ar_h1_error *e)
{
	memset(req, 0, offsetof(struct ar_h1_request, fields));
	req->n_conn_tokens = 0;
	if (len > AR_H1_MAX_HEAD)
		return fail(e, 431, "request headers too large");
	const char *cr = memchr(buf, '\r', len);
	if (cr == NULL || (size_t)(cr - buf) + 1 >= len || cr[1] != '\n')
		return fail(e, 400, "malformed request line");
	size_t eol = (size_t)(cr - buf);
	if (parse_request_line(buf, eol, req, e) == -1)
		return -1;
	struct field_facts ff = {0};
	if (parse_fields(buf, len, eol + 2, req, &ff, e) == -1)
		return -1;
	if (ff.n_te && ff.n_cl)
		return fail(e, 400, "both Transfer-Encoding and Content-Length");
	if (ff.n_te && req->minor == 0)
		return fail(e, 400, "Transfer-Encoding in an HTTP/1.0 request");
	if (o != NULL) {
		if (parse_origin(buf, o, req, e) == -1)
			return -1;
	} else if (req->is_connect) {
		if (ar_h1_split_authority(buf + req->target.off, req->target.len, req->host,
					  sizeof(req->host), &req->port, &req->host_is_v6,
					  -1) == -1)
			return fail(e, 400, "CONNECT target must be host:port");
	} else if (parse_absolute(buf, req, e) == -1) {
		return -1;
	}
	if (check_host_field(buf, &ff, req, e) == -1)
		return -1;
	req->has_host_field = ff.n_host > 0;
	if (ff.chunked)
		req->framing = AR_H1_BODY_CHUNKED;
	else if (ff.n_cl && req->content_length > 0)
		req->framing = AR_H1_BODY_LENGTH;
	else
		req->framing = AR_H1_BODY_NONE;
	req->conn_close = req->minor == 0 ? !ff.keep_alive : ff.close;
	req->upgrade = ff.upgrade_token && ff.upgrade_field && req->minor == 1 &&
		       req->framing == AR_H1_BODY_NONE;
	return 0;
}

static const char *const hop_by_hop[] = {
    "connection", "keep-alive", "proxy-authorization", "proxy-connection", "te",
    "trailer",	  "upgrade",
};

/* Fields the proxy drops unless told to pass them: a client's claims about where the
 * request came from, which an origin could believe. */
static const char *const forwarded_fields[] = {"forwarded", "x-forwarded-for"};

static bool is_forwarded(const char *buf, struct ar_h1_span name)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(forwarded_fields); i++)
		if (span_ieq(buf, name, forwarded_fields[i]))
			return true;
	return false;
}

static bool is_hop_by_hop(const char *buf, const struct ar_h1_request *req, struct ar_h1_span name)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(hop_by_hop); i++)
		if (span_ieq(buf, name, hop_by_hop[i]))
			return true;
	for (size_t i = 0; i < req->n_conn_tokens; i++) {
		struct ar_h1_span t = req->conn_tokens[i];
		if (t.len == name.len && strncasecmp(buf + t.off, buf + name.off, t.len) == 0)
			return true;
	}
	return false;
}

void ar_h1_write_request(const char *buf, const struct ar_h1_request *req, unsigned flags,
			 struct ar_buf *out)
{
	ar_buf_append(out, buf + req->method.off, req->method.len);
	ar_buf_putc(out, ' ');
	if (req->path.len == 0 || req->path_needs_slash)
		ar_buf_putc(out, '/');
	ar_buf_append(out, buf + req->path.off, req->path.len);
	ar_buf_puts(out, req->minor ? " HTTP/1.1\r\n" : " HTTP/1.0\r\n");
	for (size_t i = 0; i < req->n_fields; i++) {
		const struct ar_h1_field *f = &req->fields[i];
		bool keep = (flags & AR_H1_PASS_UPGRADE) && span_ieq(buf, f->name, "upgrade");
		if (!keep && is_hop_by_hop(buf, req, f->name))
			continue;
		if (!(flags & AR_H1_PASS_FORWARDED) && is_forwarded(buf, f->name))
			continue;
		ar_buf_append(out, buf + f->name.off, f->name.len);
		ar_buf_append(out, ": ", 2);
		ar_buf_append(out, buf + f->value.off, f->value.len);
		ar_buf_append(out, "\r\n", 2);
	}
	if (!req->has_host_field) {
		ar_buf_printf(out, req->host_is_v6 ? "Host: [%s]" : "Host: %s", req->host);
		if (req->port != (req->origin_form ? 443 : 80))
			ar_buf_printf(out, ":%d", req->port);
		ar_buf_append(out, "\r\n", 2);
	}
	if (flags & AR_H1_PASS_UPGRADE)
		ar_buf_puts(out, "Connection: Upgrade\r\n");
	/* RFC 9110 §7.6.3; a client's own Via lines stay before it, as the list's start */
	ar_buf_puts(out, req->minor ? "Via: 1.1 agentrun\r\n\r\n" : "Via: 1.0 agentrun\r\n\r\n");
}

static int parse_status_line(const char *buf, size_t eol, struct ar_h1_response *r)
{
	if (eol < 12 || parse_version(buf, 8, &r->minor) == -1 || buf[8] != ' ')
		return -1;
	int st = 0;
	for (int i = 9; i < 12; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return -1;
		st = st * 10 + (buf[i] - '0');
	}
	if (st < 100 || (eol > 12 && buf[12] != ' '))
		return -1;
	for (size_t i = 13; i < eol; i++)
		if (!is_vchar((unsigned char)buf[i]))
			return -1;
	r->status = st;
	return 0;
}

struct resp_facts {
	int n_cl;
	bool te, chunked, close, keep_alive;
	uint64_t cl;
};

static int note_response_field(const char *buf, const struct ar_h1_field *f, struct resp_facts *rf)
{
	switch (field_kind(buf, f->name)) {
	case F_CONTENT_LENGTH: {
		uint64_t v;
		if (parse_content_length(buf, f->value, &v) == -1 || (rf->n_cl && v != rf->cl))
			return -1;
		rf->cl = v;
		rf->n_cl++;
		return 0;
	}
	case F_TRANSFER_ENCODING:
		if (rf->te || te_is_chunked(buf, f->value, &rf->chunked) == -1)
			return -1;
		rf->te = true;
		return 0;
	case F_CONNECTION: {
		struct ar_h1_request dummy;
		struct field_facts ff = {0};
		struct ar_h1_error e;
		dummy.n_conn_tokens = 0;
		if (connection_tokens(buf, f->value, &dummy, &ff, false, &e) == -1)
			return -1;
		rf->close |= ff.close;
		rf->keep_alive |= ff.keep_alive;
		return 0;
	}
	default:
		return 0;
	}
}

int ar_h1_parse_response(const char *buf, size_t len, bool request_was_head,
			 struct ar_h1_response *r, const char **reason)
{
	memset(r, 0, sizeof(*r));
	const char *cr = memchr(buf, '\r', len);
	if (cr == NULL || (size_t)(cr - buf) + 1 >= len || cr[1] != '\n' ||
	    parse_status_line(buf, (size_t)(cr - buf), r) == -1) {
		*reason = "malformed status line from upstream";
		return -1;
	}
	struct resp_facts rf = {0};
	size_t p = (size_t)(cr - buf) + 2;
	for (;;) {
		cr = memchr(buf + p, '\r', len - p);
		if (cr == NULL || (size_t)(cr - buf) + 1 >= len || cr[1] != '\n')
			break;
		size_t eol = (size_t)(cr - buf);
		if (eol == p) {
			p = len + 1;
			break;
		}
		struct ar_h1_field f;
		struct ar_h1_error e;
		if (parse_field(buf, p, eol, &f, &e) == -1 ||
		    note_response_field(buf, &f, &rf) == -1)
			break;
		p = eol + 2;
	}
	if (p != len + 1) {
		*reason = "malformed header from upstream";
		return -1;
	}
	if (request_was_head || r->status < 200 || r->status == 204 || r->status == 304)
		r->framing = AR_H1_BODY_NONE;
	else if (rf.te)
		r->framing = rf.chunked ? AR_H1_BODY_CHUNKED : AR_H1_BODY_CLOSE;
	else if (rf.n_cl)
		r->framing = rf.cl ? AR_H1_BODY_LENGTH : AR_H1_BODY_NONE;
	else
		r->framing = AR_H1_BODY_CLOSE;
	r->content_length = rf.te ? 0 : rf.cl;
	r->conn_close = rf.close || (r->minor == 0 && !rf.keep_alive) ||
			r->framing == AR_H1_BODY_CLOSE || (rf.te && rf.n_cl);
	return 0;
}

enum {
	C_SIZE, /* first hex digit of a chunk size */
	C_SIZE_MORE,
	C_EXT, /* chunk extension up to CR */
	C_SIZE_LF,
	C_DATA,
	C_DATA_CR,
	C_DATA_LF,
	C_TRAILER_START,
	C_TRAILER_NAME,
	C_TRAILER_VALUE,
	C_TRAILER_LF,
	C_FINAL_LF,
	C_DONE,
};

static int chunk_size_byte(struct ar_h1_chunked *c, unsigned char ch)
{
	int h = ar_hexval(ch);
	if (h >= 0) {
		if (++c->digits > 15)
			return -1; /* sizes past 2^60 are an attack, not a body */
		c->remaining = c->remaining * 16 + (uint64_t)h;
		c->state = C_SIZE_MORE;
		return 0;
	}
	if (c->state == C_SIZE)
		return -1;
	if (ch == ';')
		c->state = C_EXT;
	else if (ch == '\r')
		c->state = C_SIZE_LF;
	else
		return -1;
	return 0;
}

static int trailer_byte(struct ar_h1_chunked *c, unsigned char ch);

/* Fields that may not travel in a trailer section (RFC 9110 §6.5.1): framing, routing,
 * connection management. */
static const char *const trailer_forbidden[] = {
    "content-length", "transfer-encoding", "host", "connection", "keep-alive", "te",
    "trailer",	      "upgrade",
};

static bool trailer_name_ok(const struct ar_h1_chunked *c)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(trailer_forbidden); i++) {
		size_t n = strlen(trailer_forbidden[i]);
		if (c->tname_len == n && memcmp(c->tname, trailer_forbidden[i], n) == 0)
			return false;
	}
	return c->tname_len > 0;
}

static int chunk_byte(struct ar_h1_chunked *c, unsigned char ch)
{
	switch (c->state) {
	case C_SIZE:
	case C_SIZE_MORE:
		return chunk_size_byte(c, ch);
	case C_EXT:
		if (ch == '\r')
			c->state = C_SIZE_LF;
		else if (!is_vchar(ch))
			return -1;
		return 0;
	case C_SIZE_LF:
		if (ch != '\n')
			return -1;
		c->state = c->remaining ? C_DATA : C_TRAILER_START;
		return 0;
	case C_DATA_CR:
		c->state = C_DATA_LF;
		return ch == '\r' ? 0 : -1;
	case C_DATA_LF:
		c->state = C_SIZE;
		c->digits = 0;
		c->remaining = 0;
		return ch == '\n' ? 0 : -1;
	case C_TRAILER_START:
		c->state = ch == '\r' ? C_FINAL_LF : C_TRAILER_NAME;
		c->tname_len = 0;
		if (ch == '\r')
			return 0;
		return field_name_char(ch) ? trailer_byte(c, ch) : -1;
	default:
		return trailer_byte(c, ch);
	}
}

/* A trailer line is a field line (RFC 9112 §7.1.2): a token, a colon right after it,
 * a value of visible characters. Anything else, such as a request line smuggled into
 * the trailer section, is bad framing. */
static int trailer_byte(struct ar_h1_chunked *c, unsigned char ch)
{
	if (++c->trailer > AR_H1_MAX_TRAILER)
		return -1;
	switch (c->state) {
	case C_TRAILER_NAME:
		if (ch == ':') {
			c->state = C_TRAILER_VALUE;
			return trailer_name_ok(c) ? 0 : -1;
		}
		if (c->tname_len < sizeof(c->tname))
			c->tname[c->tname_len] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
		if (c->tname_len < UINT8_MAX)
			c->tname_len++;
		return field_name_char(ch) ? 0 : -1;
	case C_TRAILER_VALUE:
		if (ch == '\r')
			c->state = C_TRAILER_LF;
		else if (!is_vchar(ch))
			return -1;
		return 0;
	case C_TRAILER_LF:
		c->state = C_TRAILER_START;
		return ch == '\n' ? 0 : -1;
	case C_FINAL_LF:
		c->state = C_DONE;
		return ch == '\n' ? 0 : -1;
	default:
		return -1;
	}
}

enum ar_h1_chunked_result ar_h1_chunked_feed(struct ar_h1_chunked *c, const char *buf, size_t len,
					     size_t *consumed)
{
	size_t i = 0;
	while (i < len) {
		if (c->state == C_DATA) {
			size_t n = len - i;
			if (n > c->remaining)
				n = (size_t)c->remaining;
			c->remaining -= n;
			i += n;
			if (c->remaining == 0)
				c->state = C_DATA_CR;
			continue;
		}
		if (c->state == C_DONE)
			break;
		if (chunk_byte(c, (unsigned char)buf[i]) == -1) {
			*consumed = i;
			return AR_H1_CHUNKED_BAD;
		}
		i++;
	}
	*consumed = i;
	return c->state == C_DONE ? AR_H1_CHUNKED_DONE : AR_H1_CHUNKED_MORE;
}

void ar_h1m_init(struct ar_h1m *m, enum ar_h1_framing framing, uint64_t content_length)
{
	memset(m, 0, sizeof(*m));
	m->framing = (uint8_t)framing;
	m->remaining = framing == AR_H1_BODY_LENGTH ? content_length : 0;
	m->done =
	    framing == AR_H1_BODY_NONE || (framing == AR_H1_BODY_LENGTH && content_length == 0);
}

enum ar_h1m_result ar_h1m_feed(struct ar_h1m *m, const char *buf, size_t len, size_t *used)
{
	*used = 0;
	if (m->done)
		return AR_H1M_DONE;
	switch (m->framing) {
	case AR_H1_BODY_LENGTH:
		*used = len < m->remaining ? len : (size_t)m->remaining;
		m->remaining -= *used;
		m->done = m->remaining == 0;
		break;
	case AR_H1_BODY_CHUNKED: {
		enum ar_h1_chunked_result r = ar_h1_chunked_feed(&m->chunk, buf, len, used);
		if (r == AR_H1_CHUNKED_BAD)
			return AR_H1M_BAD;
		m->done = r == AR_H1_CHUNKED_DONE;
		break;
	}
	default: /* close-delimited: everything until EOF */
		*used = len;
		break;
	}
	return m->done ? AR_H1M_DONE : AR_H1M_MORE;
}

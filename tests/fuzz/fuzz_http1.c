/* Target "http1": the proxy's HTTP/1 parsers (DESIGN §5) on bytes as a client or an
 * origin might send them. The whole input is scanned for a head, once in one call and
 * once fed a byte at a time (the proxy sees arbitrary read boundaries: both must
 * agree); the head is parsed as a request and as a response, the request is rewritten
 * for upstream, and the bytes after the head go through the chunked tracker, again
 * whole and byte by byte.
 *
 * The rewritten request must still be one well-formed head, without hop-by-hop
 * fields, and with the framing the proxy will use to forward the body: a request
 * whose Content-Length or Transfer-Encoding is dropped while its body is still sent
 * is request smuggling. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agentrun/http1.h"
#include "agentrun/util.h"
#include "fuzz.h"

static enum ar_h1_scan_result scan_whole(const char *buf, size_t len, struct ar_h1_scan *s,
					 size_t *end)
{
	memset(s, 0, sizeof(*s));
	return ar_h1_scan_head(s, buf, len, end);
}

static enum ar_h1_scan_result scan_bytewise(const char *buf, size_t len, struct ar_h1_scan *s,
					    size_t *end)
{
	enum ar_h1_scan_result r = AR_H1_SCAN_MORE;
	memset(s, 0, sizeof(*s));
	for (size_t have = 1; have <= len && r == AR_H1_SCAN_MORE; have++)
		r = ar_h1_scan_head(s, buf, have, end);
	return r;
}

static void check_span(struct ar_h1_span s, size_t len, const char *what)
{
	AR_FUZZ_CHECK((size_t)s.off + s.len <= len, "%s span %u+%u past %zu", what, s.off, s.len,
		      len);
}

static bool is_hop_name(const char *name, size_t n)
{
	static const char *const hop[] = {"connection",	      "keep-alive", "proxy-authorization",
					  "proxy-connection", "te",	    "trailer",
					  "upgrade"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(hop); i++)
		if (strlen(hop[i]) == n && strncasecmp(name, hop[i], n) == 0)
			return true;
	return false;
}

/* Walk the rewritten head's field lines: no hop-by-hop names; count the framing
 * fields. */
static void rewritten_fields(const struct ar_buf *out, unsigned flags, int *n_cl, int *n_te,
			     int *n_host)
{
	const char *p = strstr(out->data, "\r\n") + 2;
	*n_cl = *n_te = *n_host = 0;
	while (strncmp(p, "\r\n", 2) != 0) {
		const char *colon = strchr(p, ':');
		const char *eol = strstr(p, "\r\n");
		AR_FUZZ_CHECK(colon != NULL && eol != NULL && colon < eol, "bad rewritten line");
		size_t n = (size_t)(colon - p);
		AR_FUZZ_CHECK(!is_hop_name(p, n), "hop-by-hop field %.*s forwarded", (int)n, p);
		AR_FUZZ_CHECK((flags & AR_H1_PASS_FORWARDED) ||
				  !((n == 9 && strncasecmp(p, "forwarded", 9) == 0) ||
				    (n == 15 && strncasecmp(p, "x-forwarded-for", 15) == 0)),
			      "client's %.*s forwarded", (int)n, p);
		*n_cl += n == 14 && strncasecmp(p, "content-length", 14) == 0;
		*n_te += n == 17 && strncasecmp(p, "transfer-encoding", 17) == 0;
		*n_host += n == 4 && strncasecmp(p, "host", 4) == 0;
		p = eol + 2;
	}
}

static void check_rewrite(const char *head, const struct ar_h1_request *req)
{
	ar_autobuf struct ar_buf out = {0};
	struct ar_h1_scan s;
	size_t end = 0;
	int n_cl, n_te, n_host;

	unsigned flags = req->n_fields & 1 ? AR_H1_PASS_FORWARDED : 0;
	ar_h1_write_request(head, req, flags, &out);
	AR_FUZZ_CHECK(out.len > 0 && strlen(out.data) == out.len, "rewritten head has a NUL");
	/* one head, ending where the buffer ends; the added Host and Via fields may take a
	 * head that used every allowed line past the limit */
	enum ar_h1_scan_result r = scan_whole(out.data, out.len, &s, &end);
	AR_FUZZ_CHECK((r == AR_H1_SCAN_DONE && s.start == 0 && end == out.len) ||
			  (r == AR_H1_SCAN_TOO_MANY && req->n_fields >= AR_H1_MAX_FIELDS - 1),
		      "rewritten head is not one head (%d): %s", r, out.data);
	rewritten_fields(&out, flags, &n_cl, &n_te, &n_host);
	AR_FUZZ_CHECK(out.len > 12 &&
			  memcmp(out.data + out.len - 12, "agentrun\r\n\r\n", 12) == 0 &&
			  strstr(out.data, "\r\nVia: 1.") != NULL,
		      "no Via field last: %s", out.data);
	AR_FUZZ_CHECK(req->framing != AR_H1_BODY_LENGTH || n_cl == 1,
		      "body of %llu bytes forwarded without its Content-Length",
		      (unsigned long long)req->content_length);
	AR_FUZZ_CHECK(req->framing != AR_H1_BODY_CHUNKED || n_te == 1,
		      "chunked body forwarded without Transfer-Encoding");
	AR_FUZZ_CHECK(req->framing == AR_H1_BODY_CHUNKED || n_te == 0,
		      "Transfer-Encoding forwarded for a body the proxy does not frame as chunked");
	AR_FUZZ_CHECK(n_host == 1, "%d Host fields upstream", n_host);
}

static void fuzz_request(const char *head, size_t len)
{
	struct ar_h1_request *req = ar_xmalloc(sizeof(*req));
	struct ar_h1_error e = {0};

	if (ar_h1_parse_request(head, len, req, &e) == -1) {
		AR_FUZZ_CHECK((e.status == 400 || e.status == 431 || e.status == 501) &&
				  e.reason != NULL && ar_fuzz_is_one_line(e.reason),
			      "request error %d", e.status);
		free(req);
		return;
	}
	check_span(req->method, len, "method");
	check_span(req->target, len, "target");
	AR_FUZZ_CHECK(req->minor == 0 || req->minor == 1, "minor %d", req->minor);
	AR_FUZZ_CHECK(req->n_fields <= AR_H1_MAX_FIELDS, "%u fields", req->n_fields);
	for (size_t i = 0; i < req->n_fields; i++) {
		check_span(req->fields[i].name, len, "name");
		check_span(req->fields[i].value, len, "value");
	}
	AR_FUZZ_CHECK(req->host[0] != '\0' && strlen(req->host) < sizeof(req->host), "host");
	AR_FUZZ_CHECK(req->port >= 1 && req->port <= 65535, "port %d", req->port);
	AR_FUZZ_CHECK(req->framing != AR_H1_BODY_CLOSE, "a request framed by close");
	AR_FUZZ_CHECK(req->framing != AR_H1_BODY_LENGTH || req->content_length > 0, "length 0");
	if (!req->is_connect) {
		check_span(req->path, len, "path");
		AR_FUZZ_CHECK(req->path.off >= req->target.off &&
				  req->path.off + req->path.len <=
				      req->target.off + req->target.len,
			      "path outside the target");
		check_rewrite(head, req);
	}
	free(req);
}

static void fuzz_response(const char *head, size_t len, bool was_head)
{
	struct ar_h1_response r;
	const char *reason = NULL;

	if (ar_h1_parse_response(head, len, was_head, &r, &reason) == -1) {
		AR_FUZZ_CHECK(reason != NULL && ar_fuzz_is_one_line(reason), "response reason");
		return;
	}
	AR_FUZZ_CHECK(r.status >= 100 && r.status <= 999, "status %d", r.status);
	AR_FUZZ_CHECK(!was_head || r.framing == AR_H1_BODY_NONE, "HEAD response with a body");
	AR_FUZZ_CHECK(r.framing != AR_H1_BODY_CLOSE || r.conn_close, "close framing kept alive");
	AR_FUZZ_CHECK(r.framing != AR_H1_BODY_LENGTH || r.content_length > 0, "length 0");
}

static void fuzz_chunked(const char *buf, size_t len)
{
	struct ar_h1_chunked whole = {0}, step = {0};
	size_t c_whole = 0, c_step = 0, at = 0;
	enum ar_h1_chunked_result r_whole = ar_h1_chunked_feed(&whole, buf, len, &c_whole);
	enum ar_h1_chunked_result r_step = AR_H1_CHUNKED_MORE;

	if (r_whole == AR_H1_CHUNKED_MORE)
		c_whole = len;
	AR_FUZZ_CHECK(c_whole <= len, "consumed %zu of %zu", c_whole, len);
	AR_FUZZ_CHECK(r_whole != AR_H1_CHUNKED_BAD || c_whole < len, "bad past the end");
	for (; at < len && r_step == AR_H1_CHUNKED_MORE; at++) {
		size_t c = 0;
		r_step = ar_h1_chunked_feed(&step, buf + at, 1, &c);
		c_step = at + (r_step == AR_H1_CHUNKED_MORE ? 1 : c);
	}
	AR_FUZZ_CHECK(r_step == r_whole && (len == 0 || c_step == c_whole),
		      "chunked whole %d at %zu, byte by byte %d at %zu", r_whole, c_whole, r_step,
		      c_step);
}

/* The message framing (ar_h1m) as the proxy runs it: fed in two pieces split at every
 * 7th byte, it must end where one whole feed ends, and never claim bytes past the end. */
static void fuzz_h1m(const char *buf, size_t len, enum ar_h1_framing f, uint64_t cl)
{
	struct ar_h1m whole, parts;
	size_t u_whole = 0, u_parts = 0;
	ar_h1m_init(&whole, f, cl);
	enum ar_h1m_result rw = ar_h1m_feed(&whole, buf, len, &u_whole);
	AR_FUZZ_CHECK(u_whole <= len, "h1m used %zu of %zu", u_whole, len);
	AR_FUZZ_CHECK(f != AR_H1_BODY_LENGTH || rw == AR_H1M_BAD ||
			  u_whole == (cl < len ? cl : len),
		      "length body used %zu", u_whole);
	for (size_t cut = 0; cut <= len; cut += 7) {
		size_t a = 0, b = 0;
		ar_h1m_init(&parts, f, cl);
		enum ar_h1m_result r = ar_h1m_feed(&parts, buf, cut, &a);
		if (r == AR_H1M_MORE)
			r = ar_h1m_feed(&parts, buf + cut, len - cut, &b);
		u_parts = a + b;
		if (r != AR_H1M_BAD && rw != AR_H1M_BAD)
			AR_FUZZ_CHECK(r == rw && u_parts == u_whole,
				      "h1m split at %zu: %d/%zu vs whole %d/%zu", cut, r, u_parts,
				      rw, u_whole);
		else
			AR_FUZZ_CHECK(r == rw, "h1m split at %zu: %d vs whole %d", cut, r, rw);
	}
}

static void fuzz_authority(const char *s, size_t len)
{
	char host[AR_H1_HOST_MAX];
	int port = 0;
	bool v6 = false;
	if (ar_h1_split_authority(s, len, host, sizeof(host), &port, &v6, len % 2 ? 80 : -1) == -1)
		return;
	AR_FUZZ_CHECK(host[0] != '\0' && strlen(host) < sizeof(host), "authority host");
	AR_FUZZ_CHECK(port >= 1 && port <= 65535, "authority port %d", port);
}

void ar_fuzz_http1(const uint8_t *data, size_t size)
{
	ar_autofree char *buf = ar_fuzz_dup(data, size);
	struct ar_h1_scan s1, s2;
	size_t end1 = 0, end2 = 0;
	enum ar_h1_scan_result r1 = scan_whole(buf, size, &s1, &end1);
	enum ar_h1_scan_result r2 = scan_bytewise(buf, size, &s2, &end2);

	AR_FUZZ_CHECK(r1 == r2, "scan whole %d, byte by byte %d", r1, r2);
	if (r1 != AR_H1_SCAN_DONE) {
		/* still exercise the authority splitter on the first line */
		const char *nl = memchr(buf, '\r', size);
		fuzz_authority(buf, nl != NULL ? (size_t)(nl - buf) : size);
		return;
	}
	AR_FUZZ_CHECK(end1 == end2 && s1.start == s2.start, "head end %zu/%zu start %zu/%zu", end1,
		      end2, s1.start, s2.start);
	AR_FUZZ_CHECK(s1.start < end1 && end1 <= size, "head bounds");
	/* parse from an exact-size copy so a read past the head is caught */
	size_t hlen = end1 - s1.start;
	ar_autofree char *head = ar_fuzz_dup((const uint8_t *)buf + s1.start, hlen);
	fuzz_request(head, hlen);
	fuzz_response(head, hlen, size % 2 == 1);
	fuzz_chunked(buf + end1, size - end1);
	fuzz_h1m(buf + end1, size - end1, (enum ar_h1_framing)(size % 4), size % 97);
}

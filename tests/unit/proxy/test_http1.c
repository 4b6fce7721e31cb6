/* Unit tests for the HTTP/1 parsers: head scanner limits, request parsing with every
 * smuggling shape, the upstream request rewrite, response framing, chunked bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/http1.h"

/* Scan + parse a whole request; returns 0 or the error status (400/431). */
static int parse(const char *raw, struct ar_h1_request *req, const char **reason)
{
	struct ar_h1_scan s = {0};
	size_t end = 0;
	size_t len = strlen(raw);
	enum ar_h1_scan_result r = ar_h1_scan_head(&s, raw, len, &end);
	*reason = NULL;
	if (r == AR_H1_SCAN_TOO_BIG || r == AR_H1_SCAN_TOO_MANY)
		return 431;
	if (r == AR_H1_SCAN_BARE_LF) {
		*reason = "bare LF";
		return 400;
	}
	if (r != AR_H1_SCAN_DONE)
		return -1;
	struct ar_h1_error e = {0};
	if (ar_h1_parse_request(raw + s.start, end - s.start, req, &e) == -1) {
		*reason = e.reason;
		return e.status;
	}
	return 0;
}

static struct ar_h1_request req;

static void test_absolute_get(void **state)
{
	const char *why;
	const char *raw =
	    "GET http://Example.COM:8080/a/b?c=d HTTP/1.1\r\nHost: example.com:8080\r\n"
	    "Accept: */*\r\n\r\n";
	assert_int_equal(parse(raw, &req, &why), 0);
	assert_string_equal(req.host, "Example.COM");
	assert_int_equal(req.port, 8080);
	assert_int_equal(req.minor, 1);
	assert_false(req.is_connect);
	assert_int_equal(req.framing, AR_H1_BODY_NONE);
	assert_false(req.conn_close);
	assert_int_equal(req.n_fields, 2);
	struct ar_buf out = {0};
	ar_h1_write_request(raw, &req, 0, &out);
	assert_string_equal(out.data, "GET /a/b?c=d HTTP/1.1\r\nHost: example.com:8080\r\n"
				      "Accept: */*\r\nVia: 1.1 agentrun\r\n\r\n");
	ar_buf_free(&out);
}

static void test_rewrite_forwarded(void **state)
{
	const char *why;
	const char *raw = "GET http://h.test/ HTTP/1.1\r\nVia: 1.1 client-side\r\n"
			  "Forwarded: for=10.0.0.1\r\nX-Forwarded-For: 10.0.0.1\r\n"
			  "X-Forwarded-Host: kept\r\n\r\n";
	assert_int_equal(parse(raw, &req, &why), 0);
	struct ar_buf out = {0};
	ar_h1_write_request(raw, &req, 0, &out);
	assert_string_equal(out.data, "GET / HTTP/1.1\r\nVia: 1.1 client-side\r\n"
				      "X-Forwarded-Host: kept\r\nHost: h.test\r\n"
				      "Via: 1.1 agentrun\r\n\r\n");
	ar_buf_reset(&out);
	ar_h1_write_request(raw, &req, AR_H1_PASS_FORWARDED, &out);
	assert_string_equal(out.data, "GET / HTTP/1.1\r\nVia: 1.1 client-side\r\n"
				      "Forwarded: for=10.0.0.1\r\nX-Forwarded-For: 10.0.0.1\r\n"
				      "X-Forwarded-Host: kept\r\nHost: h.test\r\n"
				      "Via: 1.1 agentrun\r\n\r\n");
	ar_buf_free(&out);
}

static void test_rewrite_hop_by_hop(void **state)
{
	const char *why;
	const char *raw =
	    "POST http://h.test?q=1 HTTP/1.1\r\n"
	    "Connection: keep-alive, X-Secret\r\n"
	    "Proxy-Connection: keep-alive\r\n"
	    "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n"
	    "Keep-Alive: timeout=5\r\nTE: trailers\r\nTrailer: X-T\r\nUpgrade: h2c\r\n"
	    "X-Secret: 1\r\nX-Kept:  spaced value  \r\nContent-Length: 5\r\n\r\n";
	assert_int_equal(parse(raw, &req, &why), 0);
	assert_int_equal(req.framing, AR_H1_BODY_LENGTH);
	assert_int_equal(req.content_length, 5);
	assert_int_equal(req.port, 80);
	struct ar_buf out = {0};
	ar_h1_write_request(raw, &req, 0, &out);
	/* no Host from the client: one is added from the URL */
	assert_string_equal(out.data,
			    "POST /?q=1 HTTP/1.1\r\nX-Kept: spaced value\r\n"
			    "Content-Length: 5\r\nHost: h.test\r\nVia: 1.1 agentrun\r\n\r\n");
	ar_buf_free(&out);
}

static void test_ipv6_and_root(void **state)
{
	const char *why;
	const char *raw = "HEAD http://[::1]:8443 HTTP/1.0\r\n\r\n";
	assert_int_equal(parse(raw, &req, &why), 0);
	assert_string_equal(req.host, "::1");
	assert_true(req.host_is_v6);
	assert_true(req.is_head);
	assert_int_equal(req.port, 8443);
	assert_true(req.conn_close); /* HTTP/1.0 without keep-alive */
	struct ar_buf out = {0};
	ar_h1_write_request(raw, &req, 0, &out);
	assert_string_equal(out.data,
			    "HEAD / HTTP/1.0\r\nHost: [::1]:8443\r\nVia: 1.0 agentrun\r\n\r\n");
	ar_buf_free(&out);
	assert_int_equal(
	    parse("GET http://a.test/ HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &req, &why), 0);
	assert_false(req.conn_close);
	assert_int_equal(
	    parse("GET http://a.test/ HTTP/1.1\r\nConnection: close\r\n\r\n", &req, &why), 0);
	assert_true(req.conn_close);
}

static void test_connect(void **state)
{
	const char *why;
	assert_int_equal(parse("CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n"
			       "\r\n",
			       &req, &why),
			 0);
	assert_true(req.is_connect);
	assert_string_equal(req.host, "api.github.com");
	assert_int_equal(req.port, 443);
	assert_int_equal(parse("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n", &req, &why), 0);
	assert_string_equal(req.host, "2001:db8::1");
	assert_int_equal(req.port, 8443);
	assert_int_equal(parse("CONNECT api.github.com HTTP/1.1\r\n\r\n", &req, &why), 400);
	assert_string_equal(why, "CONNECT target must be host:port");
	assert_int_equal(parse("CONNECT a.test:0 HTTP/1.1\r\n\r\n", &req, &why), 400);
	assert_int_equal(parse("CONNECT a.test:65536 HTTP/1.1\r\n\r\n", &req, &why), 400);
	assert_int_equal(
	    parse("CONNECT a.test:443 HTTP/1.1\r\nHost: b.test:443\r\n\r\n", &req, &why), 400);
}

static const struct {
	const char *raw;
	int status;
	const char *reason;
} bad[] = {
    {"GET /index.html HTTP/1.1\r\nHost: a\r\n\r\n", 400,
     "relative URL: a proxy request needs an absolute http:// URL"},
    {"OPTIONS * HTTP/1.1\r\n\r\n", 400,
     "relative URL: a proxy request needs an absolute http:// URL"},
    {"GET https://a.test/ HTTP/1.1\r\n\r\n", 400,
     "only http:// URLs can be forwarded (use CONNECT for https)"},
    {"GET http://u:p@a.test/ HTTP/1.1\r\n\r\n", 400, "user information in URL is not allowed"},
    {"GET http://a.test/#x HTTP/1.1\r\n\r\n", 400, "fragment in URL"},
    {"GET http://a%2etest/ HTTP/1.1\r\n\r\n", 400, "invalid host or port in URL"},
    {"GET http://a.test:99999/ HTTP/1.1\r\n\r\n", 400, "invalid host or port in URL"},
    {"GET ftp-ish HTTP/1.1\r\n\r\n", 400, "malformed URL: an absolute http:// URL is required"},
    /* smuggling shapes */
    {"POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
     "both Transfer-Encoding and Content-Length"},
    {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400,
     "both Transfer-Encoding and Content-Length"},
    {"POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400,
     "duplicate Content-Length"},
    {"POST http://a.test/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", 400, "invalid Content-Length"},
    {"POST http://a.test/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n", 400, "invalid Content-Length"},
    {"POST http://a.test/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "invalid Content-Length"},
    {"POST http://a.test/ HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", 400, "invalid Content-Length"},
    {"POST http://a.test/ HTTP/1.1\r\nContent-Length: \r\n\r\n", 400, "invalid Content-Length"},
    {"POST http://a.test/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400,
     "invalid Content-Length"},
    {"POST http://a.test/ HTTP/1.1\r\nContent-Length : 5\r\n\r\n", 400,
     "whitespace before colon in header"},
    {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding\t: chunked\r\n\r\n", 400,
     "whitespace before colon in header"},
    {"GET http://a.test/ HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n", 400,
     "obsolete line folding in header"},
    {"GET http://a.test/ HTTP/1.1\r\nX-A: 1\r\n\tfolded\r\n\r\n", 400,
     "obsolete line folding in header"},
    {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501,
     "unsupported Transfer-Encoding (only chunked)"},
    {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 501,
     "unsupported Transfer-Encoding (only chunked)"},
    {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n", 501,
     "unsupported Transfer-Encoding (only chunked)"},
    {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: identity, chunked\r\n\r\n", 501,
     "unsupported Transfer-Encoding (only chunked)"},
    {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501,
     "unsupported Transfer-Encoding (only chunked)"},
    {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 501,
     "unsupported Transfer-Encoding (only chunked)"},
    {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked,\r\n\r\n", 501,
     "unsupported Transfer-Encoding (only chunked)"},
    /* CGI/WSGI origins fold `_` into `-`: a second Transfer-Encoding behind the proxy */
    {"POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer_Encoding: chunked\r\n\r\n", 400,
     "underscore in header name"},
    {"GET http://a.test/ HTTP/1.1\r\nX_Forwarded_For: 1.2.3.4\r\n\r\n", 400,
     "underscore in header name"},
    /* brackets hold an IPv6 address only */
    {"GET http://[127.0.0.1]:80/ HTTP/1.1\r\n\r\n", 400, "invalid host or port in URL"},
    {"GET http://[2130706433]/ HTTP/1.1\r\n\r\n", 400, "invalid host or port in URL"},
    {"GET http://[a.test]/ HTTP/1.1\r\n\r\n", 400, "invalid host or port in URL"},
    {"GET http://[::1%25lo]/ HTTP/1.1\r\n\r\n", 400, "invalid host or port in URL"},
    {"GET http://[]/ HTTP/1.1\r\n\r\n", 400, "invalid host or port in URL"},
    {"CONNECT [127.0.0.1]:443 HTTP/1.1\r\n\r\n", 400, "CONNECT target must be host:port"},
    {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
     "chunked\r\n\r\n",
     400, "duplicate Transfer-Encoding"},
    {"POST http://a.test/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
     "Transfer-Encoding in an HTTP/1.0 request"},
    {"GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n", 400,
     "Host header disagrees with the request URL"},
    {"GET http://a.test/ HTTP/1.1\r\nHost: a.test:8080\r\n\r\n", 400,
     "Host header disagrees with the request URL"},
    {"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nHost: a.test\r\n\r\n", 400,
     "duplicate Host header"},
    {"GET http://a.test/ HTTP/1.1\r\nHost: a.test@b.test\r\n\r\n", 400, "invalid Host header"},
    {"GET http://a.test/ HTTP/1.1\r\nX-A: a\001b\r\n\r\n", 400,
     "invalid character in header value"},
    {"GET http://a.test/ HTTP/1.1\r\nX-A: a\rb\r\n\r\n", 400, "malformed header line"},
    {"GET http://a.test/ HTTP/1.1\r\nX(A): 1\r\n\r\n", 400, "invalid header name"},
    {"GET http://a.test/ HTTP/1.1\r\n: 1\r\n\r\n", 400, "invalid header name"},
    {"GET http://a.test/ HTTP/1.1\r\nX-A: 1\nX-B: 2\r\n\r\n", 400, "bare LF"},
    {"GET  http://a.test/ HTTP/1.1\r\n\r\n", 400, "malformed request line"},
    {"GET http://a.test/ HTTP/2.0\r\n\r\n", 400,
     "unsupported HTTP version (HTTP/1.0 and HTTP/1.1 only)"},
    {"GET http://a.test/ http/1.1\r\n\r\n", 400,
     "unsupported HTTP version (HTTP/1.0 and HTTP/1.1 only)"},
    {"G(T http://a.test/ HTTP/1.1\r\n\r\n", 400, "malformed request line"},
};

static void test_rejections(void **state)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *why = NULL;
		int st = parse(bad[i].raw, &req, &why);
		if (st != bad[i].status || why == NULL || strcmp(why, bad[i].reason) != 0)
			fail_msg("case %zu (%s): got %d `%s`", i, bad[i].raw, st, why ? why : "");
	}
}

static void test_chunked_request(void **state)
{
	const char *why;
	assert_int_equal(parse("POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n"
			       "\r\n",
			       &req, &why),
			 0);
	assert_int_equal(req.framing, AR_H1_BODY_CHUNKED);
	/* Content-Length: 0 is no body */
	assert_int_equal(
	    parse("POST http://a.test/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n", &req, &why), 0);
	assert_int_equal(req.framing, AR_H1_BODY_NONE);
}

static void test_scan_limits(void **state)
{
	/* 100 header lines pass, 101 do not */
	struct ar_buf b = {0};
	const char *why;
	ar_buf_puts(&b, "GET http://a.test/ HTTP/1.1\r\n");
	for (int i = 0; i < 100; i++)
		ar_buf_printf(&b, "X-%d: v\r\n", i);
	ar_buf_puts(&b, "\r\n");
	assert_int_equal(parse(b.data, &req, &why), 0);
	assert_int_equal(req.n_fields, 100);
	ar_buf_reset(&b);
	ar_buf_puts(&b, "GET http://a.test/ HTTP/1.1\r\n");
	for (int i = 0; i < 101; i++)
		ar_buf_printf(&b, "X-%d: v\r\n", i);
	ar_buf_puts(&b, "\r\n");
	assert_int_equal(parse(b.data, &req, &why), 431);
	/* a response scan may allow more lines */
	struct ar_h1_scan rs = {.max_fields = 1000};
	size_t rend;
	assert_int_equal(ar_h1_scan_head(&rs, b.data, b.len, &rend), AR_H1_SCAN_DONE);
	assert_int_equal(rend, b.len);
	/* more than 64 KiB before the end of the head */
	ar_buf_reset(&b);
	ar_buf_puts(&b, "GET http://a.test/ HTTP/1.1\r\nX-Big: ");
	for (int i = 0; i < 70000; i++)
		ar_buf_putc(&b, 'a');
	struct ar_h1_scan s = {0};
	size_t end;
	assert_int_equal(ar_h1_scan_head(&s, b.data, b.len, &end), AR_H1_SCAN_TOO_BIG);
	ar_buf_free(&b);
}

static void test_scan_incremental(void **state)
{
	const char *raw = "\r\n\r\nGET http://a.test/ HTTP/1.1\r\nX: 1\r\n\r\nNEXT";
	struct ar_h1_scan s = {0};
	size_t end = 0;
	size_t i;
	for (i = 1; i <= strlen(raw); i++) {
		enum ar_h1_scan_result r = ar_h1_scan_head(&s, raw, i, &end);
		if (r == AR_H1_SCAN_DONE)
			break;
		assert_int_equal(r, AR_H1_SCAN_MORE);
	}
	assert_int_equal(s.start, 4); /* leading empty lines skipped */
	assert_int_equal(end, strlen(raw) - 4);
	assert_int_equal(i, end);
}

static void test_split_authority(void **state)
{
	char h[64];
	int port;
	bool v6;
	assert_int_equal(ar_h1_split_authority("a.test:8080", 11, h, sizeof(h), &port, &v6, -1), 0);
	assert_string_equal(h, "a.test");
	assert_int_equal(port, 8080);
	assert_int_equal(ar_h1_split_authority("[::1]", 5, h, sizeof(h), &port, &v6, 80), 0);
	assert_string_equal(h, "::1");
	assert_true(v6);
	assert_int_equal(port, 80);
	assert_int_equal(ar_h1_split_authority("::1", 3, h, sizeof(h), &port, &v6, 80), -1);
	assert_int_equal(ar_h1_split_authority("a.test:", 7, h, sizeof(h), &port, &v6, 80), -1);
	assert_int_equal(ar_h1_split_authority(":80", 3, h, sizeof(h), &port, &v6, 80), -1);
	assert_int_equal(ar_h1_split_authority("a b:80", 6, h, sizeof(h), &port, &v6, 80), -1);
	assert_int_equal(ar_h1_split_authority("[1.2.3.4]:80", 12, h, sizeof(h), &port, &v6, 80),
			 -1);
	assert_int_equal(
	    ar_h1_split_authority("[::ffff:1.2.3.4]", 16, h, sizeof(h), &port, &v6, 80), 0);
}

static int resp(const char *raw, bool head, struct ar_h1_response *r)
{
	const char *why;
	return ar_h1_parse_response(raw, strlen(raw), head, r, &why);
}

static void test_response_framing(void **state)
{
	struct ar_h1_response r;
	assert_int_equal(resp("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n", false, &r), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.framing, AR_H1_BODY_LENGTH);
	assert_int_equal(r.content_length, 12);
	assert_false(r.conn_close);
	assert_int_equal(resp("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n", true, &r), 0);
	assert_int_equal(r.framing, AR_H1_BODY_NONE);
	assert_int_equal(resp("HTTP/1.1 204 No Content\r\nContent-Length: 12\r\n\r\n", false, &r),
			 0);
	assert_int_equal(r.framing, AR_H1_BODY_NONE);
	assert_int_equal(resp("HTTP/1.1 304 Not Modified\r\n\r\n", false, &r), 0);
	assert_int_equal(r.framing, AR_H1_BODY_NONE);
	assert_false(r.conn_close);
	assert_int_equal(resp("HTTP/1.1 100 Continue\r\n\r\n", false, &r), 0);
	assert_int_equal(r.status, 100);
	assert_int_equal(r.framing, AR_H1_BODY_NONE);
	assert_int_equal(resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, &r),
			 0);
	assert_int_equal(r.framing, AR_H1_BODY_CHUNKED);
	assert_int_equal(resp("HTTP/1.1 200 OK\r\nServer: x\r\n\r\n", false, &r), 0);
	assert_int_equal(r.framing, AR_H1_BODY_CLOSE);
	assert_true(r.conn_close);
	assert_int_equal(resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false, &r), 0);
	assert_int_equal(r.framing, AR_H1_BODY_CLOSE);
	assert_int_equal(resp("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n", false, &r), 0);
	assert_true(r.conn_close);
	assert_int_equal(
	    resp("HTTP/1.0 200 OK\r\nContent-Length: 1\r\nConnection: keep-alive\r\n\r\n", false,
		 &r),
	    0);
	assert_false(r.conn_close);
	assert_int_equal(
	    resp("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nConnection: close\r\n\r\n", false, &r),
	    0);
	assert_true(r.conn_close);
	assert_int_equal(resp("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", false, &r), 0);
	assert_int_equal(r.framing, AR_H1_BODY_NONE);
	/* identical duplicates are tolerated, different ones are not */
	assert_int_equal(
	    resp("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", false, &r),
	    0);
	assert_int_equal(
	    resp("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", false, &r),
	    -1);
	assert_int_equal(resp("HTTP/1.1 2000 OK\r\n\r\n", false, &r), -1);
	assert_int_equal(resp("HTTX/1.1 200 OK\r\n\r\n", false, &r), -1);
	assert_int_equal(resp("HTTP/1.1 200 OK\r\nBad Name: 1\r\n\r\n", false, &r), -1);
}

static enum ar_h1_chunked_result feed_all(const char *raw, size_t *used)
{
	struct ar_h1_chunked c = {0};
	return ar_h1_chunked_feed(&c, raw, strlen(raw), used);
}

static void test_chunked(void **state)
{
	size_t used;
	const char *ok = "5\r\nhello\r\n1a;name=val\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n"
			 "X-Trailer: t\r\n\r\nNEXT";
	assert_int_equal(feed_all(ok, &used), AR_H1_CHUNKED_DONE);
	assert_int_equal(used, strlen(ok) - 4);
	/* byte by byte gives the same end */
	struct ar_h1_chunked c = {0};
	size_t total = 0;
	enum ar_h1_chunked_result r = AR_H1_CHUNKED_MORE;
	for (size_t i = 0; i < strlen(ok) && r == AR_H1_CHUNKED_MORE; i++) {
		r = ar_h1_chunked_feed(&c, ok + i, 1, &used);
		total += used;
	}
	assert_int_equal(r, AR_H1_CHUNKED_DONE);
	assert_int_equal(total, strlen(ok) - 4);
	assert_int_equal(feed_all("0\r\n\r\n", &used), AR_H1_CHUNKED_DONE);
	assert_int_equal(used, 5);
	assert_int_equal(feed_all("0\r\nX-A:1\r\nX-B: two words\r\n\r\n", &used),
			 AR_H1_CHUNKED_DONE);
	/* a long name that starts like a forbidden one is fine */
	assert_int_equal(
	    feed_all("0\r\nContent-Length-Extra-Long-Name: 1\r\nHostx: 2\r\n\r\n", &used),
	    AR_H1_CHUNKED_DONE);
	assert_int_equal(feed_all("A\r\n0123456789", &used), AR_H1_CHUNKED_MORE);
	assert_int_equal(used, 13);

	static const char *const broken[] = {
	    "5\r\nhelloX\r\n",			   /* data not followed by CRLF */
	    "5\nhello\r\n",			   /* bare LF after the size */
	    "g\r\n",				   /* not hex */
	    "\r\n",				   /* empty size */
	    "5 ;x\r\nhello\r\n",		   /* whitespace before an extension */
	    "-5\r\n",				   /* sign */
	    "10000000000000000\r\n",		   /* size overflow */
	    "5\r\nhello\r\n0\r\nX\001: t\r\n\r\n", /* control byte in a trailer */
	    "0\r\n\n",				   /* bare LF at the end */
	    /* trailers are field lines: a request line smuggled there is bad framing */
	    "0\r\nGET http://evil.test/ HTTP/1.1\r\n\r\n",
	    "0\r\nX-A : 1\r\n\r\n", /* whitespace before the colon */
	    "0\r\nX-A\r\n\r\n",	    /* no colon */
	    "0\r\n: 1\r\n\r\n",	    /* no name */
	    "0\r\n X-A: 1\r\n\r\n", /* obs-fold */
	    "0\r\nX_A: 1\r\n\r\n",  /* underscore */
	    /* framing and routing fields have no business in a trailer */
	    "0\r\nContent-Length: 5\r\n\r\n",
	    "0\r\nTRANSFER-ENCODING: chunked\r\n\r\n",
	    "0\r\nhost: evil.test\r\n\r\n",
	    "0\r\nX-A: 1\r\nConnection: close\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++)
		if (feed_all(broken[i], &used) != AR_H1_CHUNKED_BAD)
			fail_msg("broken chunked case %zu accepted", i);
}

/* One framing function for requests and responses, fed the bytes as they come. */
static void test_h1m(void **state)
{
	struct ar_h1m m;
	size_t used;
	ar_h1m_init(&m, AR_H1_BODY_LENGTH, 5);
	assert_int_equal(ar_h1m_feed(&m, "hel", 3, &used), AR_H1M_MORE);
	assert_int_equal(used, 3);
	assert_int_equal(ar_h1m_feed(&m, "loGET /", 7, &used), AR_H1M_DONE);
	assert_int_equal(used, 2); /* the next request is not this body's */
	assert_int_equal(ar_h1m_feed(&m, "x", 1, &used), AR_H1M_DONE);
	assert_int_equal(used, 0);
	ar_h1m_init(&m, AR_H1_BODY_NONE, 0);
	assert_true(m.done);
	assert_int_equal(ar_h1m_feed(&m, "x", 1, &used), AR_H1M_DONE);
	assert_int_equal(used, 0);
	ar_h1m_init(&m, AR_H1_BODY_CLOSE, 0);
	assert_int_equal(ar_h1m_feed(&m, "abc", 3, &used), AR_H1M_MORE);
	assert_int_equal(used, 3);
	ar_h1m_init(&m, AR_H1_BODY_CHUNKED, 0);
	assert_int_equal(ar_h1m_feed(&m, "3\r\nabc\r\n0\r\n", 11, &used), AR_H1M_MORE);
	assert_int_equal(ar_h1m_feed(&m, "\r\nNEXT", 6, &used), AR_H1M_DONE);
	assert_int_equal(used, 2);
	ar_h1m_init(&m, AR_H1_BODY_CHUNKED, 0);
	assert_int_equal(ar_h1m_feed(&m, "0\r\nGET / HTTP/1.1\r\n\r\n", 23, &used), AR_H1M_BAD);
	assert_int_equal(used, 6); /* at the space after GET */
}

/* Inside a terminated CONNECT: origin-form, the CONNECT's authority, Host agreeing. */
static int parse_at(const char *raw, const char *host, int port, struct ar_h1_request *r,
		    const char **why)
{
	struct ar_h1_origin o = {host, port, false};
	struct ar_h1_error e = {0};
	*why = NULL;
	if (ar_h1_parse_request_at(raw, strlen(raw), &o, r, &e) == -1) {
		*why = e.reason;
		return e.status;
	}
	return 0;
}

static void test_origin_form(void **state)
{
	const char *why;
	const char *raw = "GET /v1/x?k=1 HTTP/1.1\r\nHost: api.test\r\nX: y\r\n\r\n";
	assert_int_equal(parse_at(raw, "api.test", 443, &req, &why), 0);
	assert_string_equal(req.host, "api.test");
	assert_int_equal(req.port, 443);
	assert_true(req.origin_form);
	struct ar_buf out = {0};
	ar_h1_write_request(raw, &req, 0, &out);
	assert_string_equal(out.data, "GET /v1/x?k=1 HTTP/1.1\r\nHost: api.test\r\nX: y\r\n"
				      "Via: 1.1 agentrun\r\n\r\n");
	ar_buf_free(&out);
	/* without Host: one for the CONNECT's authority, the port only when not 443 */
	const char *nohost = "GET / HTTP/1.1\r\n\r\n";
	assert_int_equal(parse_at(nohost, "api.test", 8443, &req, &why), 0);
	ar_h1_write_request(nohost, &req, 0, &out);
	assert_string_equal(out.data,
			    "GET / HTTP/1.1\r\nHost: api.test:8443\r\nVia: 1.1 agentrun\r\n\r\n");
	ar_buf_free(&out);
	assert_int_equal(
	    parse_at("GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", "api.test", 443, &req, &why),
	    400);
	assert_string_equal(why, "Host header disagrees with the request URL");
	assert_int_equal(
	    parse_at("GET http://api.test/ HTTP/1.1\r\n\r\n", "api.test", 443, &req, &why), 400);
	assert_int_equal(
	    parse_at("CONNECT api.test:443 HTTP/1.1\r\n\r\n", "api.test", 443, &req, &why), 400);
	assert_string_equal(why, "CONNECT on a connection to one origin (terminated or captured)");
}

static void test_upgrade(void **state)
{
	const char *why;
	const char *raw = "GET http://h.test/ws HTTP/1.1\r\nConnection: keep-alive, Upgrade\r\n"
			  "Upgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n";
	assert_int_equal(parse(raw, &req, &why), 0);
	assert_true(req.upgrade);
	struct ar_buf out = {0};
	ar_h1_write_request(raw, &req, AR_H1_PASS_UPGRADE, &out);
	assert_string_equal(out.data, "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n"
				      "Sec-WebSocket-Key: k\r\nHost: h.test\r\n"
				      "Connection: Upgrade\r\nVia: 1.1 agentrun\r\n\r\n");
	ar_buf_free(&out);
	/* Upgrade without Connection naming it, or with a body: no upgrade */
	assert_int_equal(
	    parse("GET http://h.test/ HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", &req, &why), 0);
	assert_false(req.upgrade);
	assert_int_equal(parse("POST http://h.test/ HTTP/1.1\r\nConnection: upgrade\r\n"
			       "Upgrade: websocket\r\nContent-Length: 1\r\n\r\n",
			       &req, &why),
			 0);
	assert_false(req.upgrade);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_absolute_get),      cmocka_unit_test(test_rewrite_hop_by_hop),
	    cmocka_unit_test(test_rewrite_forwarded), cmocka_unit_test(test_h1m),
	    cmocka_unit_test(test_ipv6_and_root),     cmocka_unit_test(test_connect),
	    cmocka_unit_test(test_rejections),	      cmocka_unit_test(test_chunked_request),
	    cmocka_unit_test(test_scan_limits),	      cmocka_unit_test(test_scan_incremental),
	    cmocka_unit_test(test_split_authority),   cmocka_unit_test(test_response_framing),
	    cmocka_unit_test(test_chunked),	      cmocka_unit_test(test_origin_form),
	    cmocka_unit_test(test_upgrade),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

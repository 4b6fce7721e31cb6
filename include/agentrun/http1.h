/* HTTP/1.x message parsing for the egress proxy, after haproxy's h1m: pure functions
 * over a caller-owned buffer, no I/O and no allocation, so they are unit-testable and
 * fuzzable. The proxy feeds bytes as they arrive: ar_h1_scan_head finds where a head
 * ends (incrementally, enforcing the size and line limits), ar_h1_parse_request and
 * ar_h1_parse_response read a complete head, ar_h1_chunked_feed tracks a chunked body.
 *
 * The parser is deliberately strict where lenience enables request smuggling
 * (RFC 9112 §11.2): CRLF line endings only, no whitespace before a colon, no obs-fold,
 * no Transfer-Encoding together with Content-Length, Transfer-Encoding exactly
 * `chunked`, exactly one well-formed Content-Length, no `_` in header names, a Host
 * header that agrees with the URL, brackets only around an IPv6 address, chunked
 * trailers that are field lines. */
#ifndef AGENTRUN_HTTP1_H
#define AGENTRUN_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentrun/util.h"

#define AR_H1_MAX_HEAD	      (64 * 1024) /* bytes of a head, request line included */
#define AR_H1_MAX_FIELDS      100	  /* header lines */
#define AR_H1_MAX_CONN_TOKENS 16	  /* names listed in Connection */
#define AR_H1_HOST_MAX	      256
#define AR_H1_MAX_TRAILER     (64 * 1024)

/* A slice of the caller's buffer. */
struct ar_h1_span {
	uint32_t off;
	uint32_t len;
};

struct ar_h1_field {
	struct ar_h1_span name;
	struct ar_h1_span value;
};

enum ar_h1_framing {
	AR_H1_BODY_NONE,    /* no body follows the head */
	AR_H1_BODY_LENGTH,  /* Content-Length bytes follow */
	AR_H1_BODY_CHUNKED, /* chunked transfer coding */
	AR_H1_BODY_CLOSE,   /* response body delimited by the connection closing */
};

/* Incremental end-of-head scanner. Zero it before the first call for each head. */
struct ar_h1_scan {
	size_t pos;	     /* next byte to look at */
	size_t start;	     /* empty lines skipped before the start line */
	unsigned lines;	     /* line feeds seen after `start` */
	unsigned max_fields; /* 0: AR_H1_MAX_FIELDS (responses get more room) */
};

enum ar_h1_scan_result {
	AR_H1_SCAN_MORE,     /* head not complete yet */
	AR_H1_SCAN_DONE,     /* head ends at *head_end (exclusive) */
	AR_H1_SCAN_TOO_BIG,  /* over AR_H1_MAX_HEAD: 431 */
	AR_H1_SCAN_TOO_MANY, /* over max_fields header lines: 431 */
	AR_H1_SCAN_BARE_LF,  /* a line ended in LF without CR: 400 */
};

/* Look at buf[0..len) (the same buffer, growing, across calls). On DONE the head is
 * buf[s->start .. *head_end). */
enum ar_h1_scan_result ar_h1_scan_head(struct ar_h1_scan *s, const char *buf, size_t len,
				       size_t *head_end);

struct ar_h1_request {
	struct ar_h1_span method;
	struct ar_h1_span target;
	int minor; /* HTTP/1.minor: 0 or 1 */
	bool is_connect;
	bool is_head;
	/* The authority from the absolute-form URL or the CONNECT target, brackets
	 * removed from IPv6 literals; port defaulted to 80 for http://. */
	char host[AR_H1_HOST_MAX];
	int port;
	bool host_is_v6;	/* was written in brackets */
	struct ar_h1_span path; /* from the absolute URL: "/x?y" (len 0 means "/") */
	bool path_needs_slash;	/* the URL had "?q" directly after the authority */
	bool origin_form;	/* inside a terminated connection (ar_h1_parse_request_at) */
	bool upgrade; /* an HTTP/1.1 upgrade (WebSocket): Connection names it, Upgrade given */
	enum ar_h1_framing framing;
	uint64_t content_length;
	bool conn_close; /* Connection: close (or HTTP/1.0 without keep-alive) */
	bool has_host_field;
	uint16_t n_fields;
	struct ar_h1_field fields[AR_H1_MAX_FIELDS];
	uint16_t n_conn_tokens;
	struct ar_h1_span conn_tokens[AR_H1_MAX_CONN_TOKENS];
};

struct ar_h1_error {
	int status;	    /* 400, 431 or 501 */
	const char *reason; /* static text for the response, the log and the audit */
};

/* Parse a complete request head buf[0..len) (from ar_h1_scan_head: the bytes from
 * s.start to head_end). Returns 0, or -1 with *e set. Spans are relative to buf. */
int ar_h1_parse_request(const char *buf, size_t len, struct ar_h1_request *req,
			struct ar_h1_error *e);

/* The same for a request inside a terminated CONNECT (docs/secrets.md): origin-form
 * (`GET /path?q HTTP/1.1`), the authority is the CONNECT's, a Host field must agree
 * with it, CONNECT is refused. */
struct ar_h1_origin {
	const char *host;
	int port;
	bool is_v6;
};
int ar_h1_parse_request_at(const char *buf, size_t len, const struct ar_h1_origin *o,
			   struct ar_h1_request *req, struct ar_h1_error *e);

/* Append the head to send upstream for a non-CONNECT request: origin-form request
 * line, the client's fields minus hop-by-hop ones (Connection and the names it
 * lists, Keep-Alive, Proxy-Authorization, Proxy-Connection, TE, Trailer, Upgrade) and
 * minus Forwarded and X-Forwarded-For (unless AR_H1_PASS_FORWARDED), a Host field when
 * the client sent none, and `Via: 1.1 agentrun` last. */
#define AR_H1_PASS_FORWARDED 1u
/* Keep the Upgrade field and say `Connection: Upgrade` (req->upgrade: a WebSocket). */
#define AR_H1_PASS_UPGRADE 2u
void ar_h1_write_request(const char *buf, const struct ar_h1_request *req, unsigned flags,
			 struct ar_buf *out);

struct ar_h1_response {
	int status;
	int minor;
	enum ar_h1_framing framing;
	uint64_t content_length;
	bool conn_close; /* the connection cannot carry another request after this one */
};

/* Parse a complete response head; `request_was_head` selects HEAD semantics (no body).
 * Returns 0, or -1 with *reason set to a static message. */
int ar_h1_parse_response(const char *buf, size_t len, bool request_was_head,
			 struct ar_h1_response *r, const char **reason);

/* Chunked body tracker: the bytes pass through unchanged, this only finds the end
 * and rejects malformed framing. Trailer lines must be field lines, and fields that
 * frame or route a message (Content-Length, Transfer-Encoding, Host, Connection, ...)
 * are refused there: an origin that merges trailers into the head would act on them.
 * Zero it before the body. */
struct ar_h1_chunked {
	uint8_t state;
	uint8_t digits;
	uint8_t tname_len; /* the trailer field name so far (lowercase, first bytes) */
	char tname[19];
	uint64_t remaining;
	uint32_t trailer;
};

enum ar_h1_chunked_result {
	AR_H1_CHUNKED_MORE = 0, /* all of buf consumed, body continues */
	AR_H1_CHUNKED_DONE = 1, /* body ends after *consumed bytes */
	AR_H1_CHUNKED_BAD = -1, /* syntax error at buf[*consumed] */
};

enum ar_h1_chunked_result ar_h1_chunked_feed(struct ar_h1_chunked *c, const char *buf, size_t len,
					     size_t *consumed);

/* The body of one message, after haproxy's h1m: the parse state lives in this struct
 * (set up by ar_h1m_init from the head's framing) and ar_h1m_feed is the one framing
 * function, fed the bytes as they arrive, for requests and responses alike. The bytes
 * pass through unchanged; it says how many belong to the body and whether it ended. */
struct ar_h1m {
	uint8_t framing; /* enum ar_h1_framing */
	bool done;
	uint64_t remaining; /* AR_H1_BODY_LENGTH: bytes still to come */
	struct ar_h1_chunked chunk;
};

enum ar_h1m_result {
	AR_H1M_MORE = 0, /* every byte fed is body; more follows */
	AR_H1M_DONE = 1, /* the body ends after *used bytes (the rest is not this message's) */
	AR_H1M_BAD = -1, /* bad chunked framing at buf[*used] */
};

void ar_h1m_init(struct ar_h1m *m, enum ar_h1_framing framing, uint64_t content_length);
/* A close-delimited body (AR_H1_BODY_CLOSE) never ends here: the caller ends it at EOF.
 * After DONE every further call answers DONE with *used 0. */
enum ar_h1m_result ar_h1m_feed(struct ar_h1m *m, const char *buf, size_t len, size_t *used);

/* Split "host:port" / "[v6]:port" (a CONNECT target or a Host field value). Without a
 * port, *port = default_port (-1 makes the port mandatory). Returns 0 or -1. */
int ar_h1_split_authority(const char *s, size_t len, char *host, size_t host_size, int *port,
			  bool *is_v6, int default_port);

#endif

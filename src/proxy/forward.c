/* Requests: reading a head, the decision, replies the proxy makes, the plain-HTTP
 * exchange (request head and body to the origin, response framed and streamed back
 * unchanged), the audit of each request, and the per-origin idle upstream pool. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define IN_MAX		(AR_H1_MAX_HEAD + 16384)
#define OUT_MAX		(AR_H1_MAX_HEAD + 16384)
#define LINGER_MS	2000
#define RESP_MAX_FIELDS 1000 /* origins send many Set-Cookie lines; 64 KiB still bounds it */

static const struct {
	int code;
	const char *text;  /* status line */
	const char *error; /* "error" in the JSON body */
} statuses[] = {
    {400, "Bad Request", "bad request"},
    {403, "Egress denied", "egress denied"},
    {408, "Request Timeout", "request timeout"},
    {413, "Payload Too Large", "byte budget exceeded"},
    {431, "Request Header Fields Too Large", "request headers too large"},
    {501, "Not Implemented", "not implemented"},
    {502, "Bad Gateway", "bad gateway"},
    {503, "Service Unavailable", "over capacity"},
    {504, "Gateway Timeout", "gateway timeout"},
};

static const char *status_text(int code, const char **error)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(statuses); i++)
		if (statuses[i].code == code) {
			*error = statuses[i].error;
			return statuses[i].text;
		}
	*error = "error";
	return "Error";
}

static bool would_block(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK;
}

/* ---- audit ---- */

void exchange_free(struct client *c)
{
	ar_buf_free(&c->x.uo);
}

void client_audit_close(struct client *c)
{
	if (!c->audited && c->host[0] && c->status == 0)
		c->status = 499; /* decided, then the client went away before any answer */
	if (!c->audited && c->status != 0)
		client_audit(c);
}

void client_audit(struct client *c)
{
	struct ar_proxy *px = c->px;
	bool known = c->host[0] != '\0';
	struct ar_audit_rec r = {
	    .id = c->id,
	    .method = c->have_method ? c->method : NULL,
	    .host = known ? c->host : NULL,
	    .port = known ? c->port : 0,
	    .host_is_v6 = c->host_v6,
	    .addr = c->uo_addr[0] ? c->uo_addr : NULL,
	    .allowed = c->allowed,
	    .status = c->status,
	    .reason = c->reason[0] ? c->reason : NULL,
	    .rule = c->rule,
	    .bytes_out = c->bytes_out,
	    .bytes_in = c->bytes_in,
	    .duration_ms = px->loop.now - c->started,
	    .learned = c->learned && c->allowed,
	    .has_body = c->has_body,
	    .body_bytes = c->body_bytes,
	};
	char names[512];
	if (c->secrets_used || c->secrets_refused) {
		secret_audit_names(c, names, sizeof(names), &r.secret_action);
		r.secret = names;
	}
	c->audited = true;
	proxy_record(px, &r);
}

/* ---- generated replies ---- */

static void put_header_safe(struct ar_buf *b, const char *s)
{
	for (; *s; s++)
		ar_buf_putc(b, ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s);
}

static void build_reply(struct client *c, int status, struct ar_buf *head, struct ar_buf *body)
{
	const char *error;
	const char *text = status_text(status, &error);
	ar_buf_printf(body, "{\"error\": \"%s\"", error);
	if (c->host[0]) {
		ar_buf_puts(body, ", \"host\": ");
		ar_json_quote(body, c->host);
		ar_buf_printf(body, ", \"port\": %d", c->port);
	}
	ar_buf_puts(body, ", \"reason\": ");
	ar_json_quote(body, c->reason);
	ar_buf_puts(body, "}\n");
	ar_buf_printf(head,
		      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
		      "Content-Length: %zu\r\nX-Agentrun-Reason: ",
		      status, text, body->len);
	put_header_safe(head, c->reason);
	ar_buf_puts(head, c->close_after ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n");
}

/* Answer the request ourselves (403, 400, 502, ...), audit it, then either close
 * (close_after) or read the next request. */
enum cstate reply_with(struct client *c, int status, const char *reason, bool allowed)
{
	if (reason != c->reason)
		snprintf(c->reason, sizeof(c->reason), "%s", reason);
	c->status = status;
	c->allowed = allowed;
	if (!c->keepalive || status != 403)
		c->close_after = true;
	search_reset(c);
	if (c->up)
		upstream_release(c, false);
	ar_autobuf struct ar_buf head = {0};
	ar_autobuf struct ar_buf body = {0};
	build_reply(c, status, &head, &body);
	c->out.off = c->out.len = 0;
	uint32_t n = (uint32_t)(head.len + (c->is_head ? 0 : body.len));
	iobuf_reserve(c->px, &c->out, n, n > OUT_MAX ? n : OUT_MAX);
	memcpy(c->out.p, head.data, head.len);
	if (!c->is_head)
		memcpy(c->out.p + head.len, body.data, body.len);
	c->out.len = n;
	client_audit(c);
	c->deadline = c->px->loop.now + LINGER_MS * 2;
	return CS_REPLY;
}

static void begin_request(struct client *c)
{
	ar_egress_unref(c->egress);
	c->egress = NULL;
	c->id = ++c->px->next_id;
	c->started = c->px->loop.now;
	c->rule = NULL;
	c->audited = c->allowed = c->is_connect = c->is_head = c->host_v6 = false;
	c->have_method = c->rule_literal = c->host_is_ip = false;
	c->budget = NULL;
	c->status = 0;
	c->port = 0;
	c->method[0] = c->host[0] = c->reason[0] = c->uo_addr[0] = '\0';
	c->bytes_out = c->bytes_in = c->body_bytes = 0;
	c->learned = c->has_body = false;
	search_reset(c);
}

/* The exchange is over and the client may send another request. */
static enum cstate next_request(struct client *c)
{
	struct ar_proxy *px = c->px;
	ar_egress_unref(c->egress);
	c->egress = NULL;
	c->first_request = false;
	c->close_after = false;
	memset(&c->scan, 0, sizeof(c->scan));
	iobuf_compact(&c->in);
	if (c->in.len == 0)
		iobuf_free(px, &c->in);
	iobuf_free(px, &c->out);
	c->head_deadline = c->in.len > c->in.off;
	c->deadline = px->loop.now + (c->head_deadline ? px->egress->header_timeout_ms
						       : px->egress->keepalive_timeout_ms);
	return CS_HEAD;
}

enum cstate step_reply(struct client *c)
{
	while (c->out.off < c->out.len) {
		ssize_t n = cio_send(c, c->out.p + c->out.off, c->out.len - c->out.off);
		if (n > 0) {
			c->out.off += (uint32_t)n;
			continue;
		}
		if (n == -1 && would_block())
			return CS_WAIT;
		if (n == -1 && errno == EINTR)
			continue;
		return CS_CLOSE;
	}
	if (!c->close_after)
		return next_request(c);
	shutdown(c->fd, SHUT_WR);
	c->deadline = c->px->loop.now + LINGER_MS;
	return CS_LINGER;
}

/* After our write side is shut, read and drop what the client still sends so the
 * kernel does not answer it with a RST that could destroy our reply in flight. */
enum cstate step_linger(struct client *c)
{
	char scratch[4096];
	for (;;) {
		ssize_t n = cio_recv(c, scratch, sizeof(scratch));
		if (n > 0)
			continue;
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && would_block())
			return CS_WAIT;
		return CS_CLOSE;
	}
}

/* ---- request heads and the decision ---- */

static void copy_span(char *dst, size_t size, const char *buf, struct ar_h1_span s)
{
	size_t n = s.len < size - 1 ? s.len : size - 1;
	memcpy(dst, buf + s.off, n);
	dst[n] = '\0';
}

static bool rule_is_literal(const struct ar_rules *r, const char *rule)
{
	for (size_t i = 0; rule && i < ar_rules_count(r); i++)
		if (ar_rules_text(r, i) == rule)
			return ar_rules_is_literal(r, i);
	return false;
}

/* A helper of a step ended the request: -1, with the state to go to in *end. */
static int ended(enum cstate *end, enum cstate next)
{
	*end = next;
	return -1;
}

static enum cstate budget_refuse(struct client *c)
{
	budget_reason(c);
	c->keepalive = false;
	if (!c->x.resp_started)
		return reply_with(c, 413, c->reason, true);
	c->status = 413;
	return CS_CLOSE;
}

/* Decide on the request's host:port with the rules in force now: CS_UPSTREAM when
 * allowed, else the reply. */
static enum cstate decide(struct client *c, const struct ar_h1_request *req, const char *head,
			  size_t len)
{
	struct ar_proxy *px = c->px;
	struct ar_host h;
	ar_auto_error ar_error_t err = NULL;
	snprintf(c->host, sizeof(c->host), "%s", req->host);
	c->port = req->port;
	c->host_v6 = req->host_is_v6;
	if (ar_host_canonicalize(req->host, &h, &err) == -1) {
		snprintf(c->reason, sizeof(c->reason), "invalid host: %s", err->msg);
		return reply_with(c, 400, c->reason, false);
	}
	snprintf(c->host, sizeof(c->host), "%s", h.name);
	c->host_v6 = h.family == AF_INET6;
	struct ar_decision d;
	ar_rules_decide(px->egress->rules, &h, req->port, &d);
	c->egress = ar_egress_ref(px->egress);
	learn_decision(c, &h, req->port, &d);
	c->host_is_ip = h.family != 0;
	c->rule = d.rule;
	c->rule_literal = rule_is_literal(px->egress->rules, d.rule);
	c->allowed = d.allowed;
	snprintf(c->reason, sizeof(c->reason), "%s", d.reason);
	secret_begin(c, &h, req->port);
	/* a placeholder refused is the reason, whatever the allow-list says: the operator
	 * learns which secret an injection tried to send where */
	if (secret_any(c) && secret_check_head(c, head, len) == -1)
		return reply_with(c, 403, c->reason, false);
	if (!d.allowed)
		return reply_with(c, 403, c->reason, false);
	budget_attach(c);
	/* a spent budget answers the CONNECT itself, with the reason: a 200 and a close
	 * would read as a TLS failure to the client */
	if (req->is_connect && budget_spent(c))
		return reply_with(c, 413, c->reason, true);
	if (h.family) {
		search_literal(c, h.family, &h.addr);
	}
	return CS_UPSTREAM;
}

static void start_forward(struct client *c, const char *head, const struct ar_h1_request *req)
{
	ar_buf_reset(&c->x.uo);
	unsigned flags = (c->egress->pass_forwarded ? AR_H1_PASS_FORWARDED : 0) |
			 (req->upgrade ? AR_H1_PASS_UPGRADE : 0);
	ar_h1_write_request(head, req, flags, &c->x.uo);
	c->x.upgrade = req->upgrade;
	c->x.upgraded = false;
	c->x.uo_off = 0;
	ar_h1m_init(&c->x.req_m, req->framing, req->content_length);
	c->x.req_done = c->x.req_m.done;
	c->x.req_ready = 0;
	c->has_body = req->framing != AR_H1_BODY_NONE;
}

static enum cstate on_upstream(struct client *c, int status, const char *why);

/* ---- secrets: substitution, refusals, terminated connections ---- */

/* A CONNECT to a host a secret is for: the 200, then TLS with the sandbox CA's leaf
 * for it (CS_TLSACCEPT); no upstream yet: each request inside finds its own (the
 * pool's TLS connections to the origin, or a fresh one, verified). */
static enum cstate term_begin(struct client *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	if (c->in.len > c->in.off) {
		c->keepalive = false;
		return reply_with(c, 400,
				  "bytes after the CONNECT head before the proxy's 200: a "
				  "terminated connection starts its TLS after the 200",
				  c->allowed);
	}
	snprintf(c->term_host, sizeof(c->term_host), "%s", c->host);
	c->term_port = c->port;
	c->out.off = c->out.len = 0;
	iobuf_reserve(c->px, &c->out, sizeof(ok), OUT_MAX);
	memcpy(c->out.p, ok, sizeof(ok) - 1);
	c->out.len = sizeof(ok) - 1;
	c->deadline = c->px->loop.now + c->px->egress->header_timeout_ms;
	return CS_TLSACCEPT;
}

/* A captured connection (no CONNECT, a proxy-unaware client such as node's fetch) to a
 * secret's host: terminated the same way, without the 200. */
enum cstate term_captured(struct client *c)
{
	snprintf(c->method, sizeof(c->method), "TLS");
	snprintf(c->term_host, sizeof(c->term_host), "%s", c->host);
	c->term_port = c->port;
	c->out.off = c->out.len = 0;
	c->deadline = c->px->loop.now + c->px->egress->header_timeout_ms;
	return CS_TLSACCEPT;
}

/* Placeholders in the request: put in for the host's secrets, refused elsewhere. */
static enum cstate apply_secrets(struct client *c, const char *head, size_t len,
				 const struct ar_h1_request *req)
{
	if (req->is_connect) {
		if (secret_check_connect(c, head, len) == -1)
			return reply_with(c, 403, c->reason, false);
		return c->secrets_bound && c->px->cfg.tls ? term_begin(c) : CS_UPSTREAM;
	}
	if (secret_rewrite_head(c, &c->x.uo) == -1)
		return reply_with(c, 403, c->reason, false);
	return CS_UPSTREAM;
}

static void term_reason(struct client *c, const char *what)
{
	size_t n = strlen(c->reason);
	snprintf(c->reason + n, sizeof(c->reason) - n, "; %s", what);
}

static enum cstate term_handshake_failed(struct client *c)
{
	char why[400];
	snprintf(why, sizeof(why),
		 "TLS with the client failed (%s): a client that does not trust the sandbox CA "
		 "(it pins its certificates or brings its own roots) cannot reach a secret's host",
		 tlsio_error(c->px, c->tls));
	term_reason(c, why);
	c->status = 502;
	return CS_CLOSE;
}

/* The client's handshake with the proxy, the SNI checked against the CONNECT host;
 * then the connection carries requests, each decided, rewritten and audited. */
enum cstate step_tls_accept(struct client *c)
{
	char why[700];
	while (c->out.off < c->out.len && c->tls == NULL) {
		ssize_t n =
		    send(c->fd, c->out.p + c->out.off, c->out.len - c->out.off, MSG_NOSIGNAL);
		if (n > 0)
			c->out.off += (uint32_t)n;
		else if (n == -1 && would_block())
			return CS_WAIT;
		else if (!(n == -1 && errno == EINTR))
			return CS_CLOSE;
	}
	if (c->tls == NULL && tlsio_accept(c, c->term_host, why, sizeof(why)) == -1) {
		term_reason(c, why);
		c->status = 502;
		return CS_CLOSE;
	}
	if (tlsio_handshake(c->px, c->tls) == -1)
		return errno == EAGAIN ? CS_WAIT : term_handshake_failed(c);
	const char *sni = tlsio_server_name(c->px, c->tls);
	if (sni != NULL && strcasecmp(sni, c->term_host) != 0) {
		snprintf(why, sizeof(why), "SNI %s does not match CONNECT %s", sni, c->term_host);
		term_reason(c, why);
		c->status = 421;
		c->allowed = false;
		return CS_CLOSE;
	}
	char names[512];
	ar_secrets_names(c->px->cfg.secrets, c->secrets_bound, names, sizeof(names));
	snprintf(why, sizeof(why), "terminated: the proxy adds %s on the way", names);
	term_reason(c, why);
	c->status = 200;
	client_audit(c);
	c->term = c->one_origin = true;
	return next_request(c);
}

/* Captured plain HTTP while the policy has secrets: a proxy-unaware client (curl
 * --noproxy, a library that ignores HTTP_PROXY) gets what an explicit proxy request
 * gets: each request read for the captured name:port (origin-form, Host equal to it),
 * decided, its placeholders put in for a bound host or refused anywhere else (the body's
 * first 64 KiB too), and audited on its own. The connection has no record besides its
 * requests'. The upstream leg is plain: a connection the tunnel already opened waits
 * in the origin's pool for the first request. */
enum cstate captured_requests(struct client *c)
{
	snprintf(c->term_host, sizeof(c->term_host), "%s", c->host);
	c->term_port = c->port;
	c->one_origin = true;
	c->audited = true;
	c->keepalive = true;
	return next_request(c);
}

#define CA_PATH "/agentrun/ca-bundle.pem"

/* Is this `GET /agentrun/ca-bundle.pem` asked of the proxy itself (origin-form, which
 * no proxied request is)? */
static bool asks_ca(const struct client *c, const char *head, size_t len)
{
	static const char want[] = "GET " CA_PATH " HTTP/1.";
	return c->px->cfg.ca_bundle_pem != NULL && !c->one_origin && len > sizeof(want) &&
	       memcmp(head, want, sizeof(want) - 1) == 0;
}

/* The roots and the sandbox CA, for an agent in another container or pod (a
 * Kubernetes init container fetches them; docs/secrets.md). Certificates only: public. */
static enum cstate serve_ca(struct client *c, size_t head_end)
{
	const char *pem = c->px->cfg.ca_bundle_pem;
	ar_autobuf struct ar_buf b = {0};
	c->in.off += (uint32_t)head_end;
	memset(&c->scan, 0, sizeof(c->scan));
	snprintf(c->method, sizeof(c->method), "GET");
	c->have_method = c->allowed = c->close_after = true;
	c->status = 200;
	snprintf(c->reason, sizeof(c->reason), "%s: the roots and the sandbox CA", CA_PATH);
	ar_buf_printf(&b,
		      "HTTP/1.1 200 OK\r\nContent-Type: application/x-pem-file\r\n"
		      "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		      strlen(pem), pem);
	c->out.off = c->out.len = 0;
	iobuf_reserve(c->px, &c->out, (uint32_t)b.len, (uint32_t)b.len);
	memcpy(c->out.p, b.data, b.len);
	c->out.len = (uint32_t)b.len;
	client_audit(c);
	c->deadline = c->px->loop.now + LINGER_MS * 2;
	return CS_REPLY;
}

static enum cstate handle_request(struct client *c, size_t head_end)
{
	struct ar_h1_request req;
	struct ar_h1_error e;
	const char *head = c->in.p + c->in.off + c->scan.start;
	size_t len = head_end - c->scan.start;
	begin_request(c);
	c->keepalive = false;
	if (asks_ca(c, head, len))
		return serve_ca(c, head_end);
	struct ar_h1_origin at = {c->term_host, c->term_port, strchr(c->term_host, ':') != NULL};
	int rc = c->one_origin ? ar_h1_parse_request_at(head, len, &at, &req, &e)
			       : ar_h1_parse_request(head, len, &req, &e);
	if (req.method.len) {
		copy_span(c->method, sizeof(c->method), head, req.method);
		c->have_method = true;
	}
	c->is_head = rc == 0 && req.is_head;
	if (rc == -1)
		return reply_with(c, e.status, e.reason, false);
	c->is_connect = req.is_connect;
	/* the head stays readable at `head` until the buffer is next written */
	c->in.off += (uint32_t)head_end;
	memset(&c->scan, 0, sizeof(c->scan));
	/* a denied request without a body leaves the connection usable */
	c->keepalive = !req.conn_close && !req.is_connect && req.framing == AR_H1_BODY_NONE;
	enum cstate next = decide(c, &req, head, len);
	if (next != CS_UPSTREAM)
		return next;
	if (!req.is_connect)
		start_forward(c, head, &req);
	if (secret_any(c) && (next = apply_secrets(c, head, len, &req)) != CS_UPSTREAM)
		return next;
	c->keepalive = !req.conn_close && !req.is_connect;
	c->deadline = 0;
	return search_start(c, on_upstream);
}

static enum cstate head_limit(struct client *c, int status, const char *reason)
{
	begin_request(c);
	return reply_with(c, status, reason, false);
}

enum cstate step_head(struct client *c)
{
	struct ar_proxy *px = c->px;
	for (;;) {
		if (c->in.len > c->in.off) {
			size_t end;
			switch (ar_h1_scan_head(&c->scan, c->in.p + c->in.off,
						c->in.len - c->in.off, &end)) {
			case AR_H1_SCAN_DONE:
				return handle_request(c, end);
			case AR_H1_SCAN_TOO_BIG:
				return head_limit(c, 431, "request headers larger than 64 KiB");
			case AR_H1_SCAN_TOO_MANY:
				return head_limit(c, 431, "more than 100 header lines");
			case AR_H1_SCAN_BARE_LF:
				return head_limit(c, 400, "line ending without CR in request head");
			case AR_H1_SCAN_MORE:
				break;
			}
		}
		if (!iobuf_reserve(c->px, &c->in, 4096, IN_MAX))
			return head_limit(c, 431, "request headers larger than 64 KiB");
		ssize_t n = cio_recv(c, c->in.p + c->in.len, c->in.cap - c->in.len);
		if (n > 0) {
			c->in.len += (uint32_t)n;
			if (!c->head_deadline) {
				c->head_deadline = true;
				c->deadline = px->loop.now + px->egress->header_timeout_ms;
			}
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && would_block())
			return CS_WAIT;
		/* EOF or reset between or inside heads: nothing was asked, nothing to audit */
		return CS_CLOSE;
	}
}

/* ---- the plain HTTP exchange ---- */

/* The end of the upstream search: connected (fresh or from the pool), or the answer
 * the client gets instead. */
static enum cstate on_upstream(struct client *c, int status, const char *why)
{
	if (status != 0)
		return reply_with(c, status, why, status == 403 ? false : c->allowed);
	c->deadline = 0;
	c->last_active = c->px->loop.now;
	if (c->is_connect) {
		ar_buf_free(&c->x.uo); /* a GET's head before the CONNECT on this connection */
		return tunnel_begin(c, true, c->egress->sni != AR_SNI_OFF);
	}
	c->x.resp_head_done = c->x.resp_done = c->x.up_eof = c->x.resp_started = false;
	c->x.up_reusable = true;
	c->out.off = c->out.len = 0;
	c->x.rbase = c->x.rready = 0;
	memset(&c->x.rscan, 0, sizeof(c->x.rscan));
	c->x.rscan.max_fields = RESP_MAX_FIELDS;
	return CS_FORWARD;
}

static enum cstate fwd_abort(struct client *c, const char *why)
{
	if (c->status == 0 || !c->x.resp_started) {
		/* nothing reached the client yet: it gets a proper answer */
		return reply_with(c, 502, why, c->allowed);
	}
	size_t n = strlen(c->reason);
	snprintf(c->reason + n, sizeof(c->reason) - n, "; %s", why);
	return CS_CLOSE;
}

/* The origin went away before its response started: a pooled connection it had
 * closed is retried once on a fresh one when the request can be replayed. */
static int upstream_gone(struct client *c, int error, enum cstate *end)
{
	char why[INET6_ADDRSTRLEN + 160];
	if (c->x.req_m.framing == AR_H1_BODY_NONE && !c->x.resp_started && c->out.len == 0 &&
	    search_retry(c)) {
		c->x.uo_off = 0;
		c->bytes_out = 0;
		return ended(end, CS_UPSTREAM);
	}
	snprintf(why, sizeof(why), "upstream %s closed the connection%s%s", c->uo_addr,
		 error ? ": " : " before responding", error ? strerror(error) : "");
	return ended(end, fwd_abort(c, why));
}

static int fwd_send_head(struct client *c, enum cstate *end)
{
	if (c->x.uo_off >= c->x.uo.len)
		return 0;
	if (budget_room(c) < c->x.uo.len - c->x.uo_off)
		return ended(end, budget_refuse(c));
	ssize_t n = uio_send(c->up, c->x.uo.data + c->x.uo_off, c->x.uo.len - c->x.uo_off);
	if (n > 0) {
		c->x.uo_off += (size_t)n;
		c->bytes_out += (uint64_t)n;
		budget_spend(c, (uint64_t)n);
		return 1;
	}
	if (n == -1 && (would_block() || errno == EINTR))
		return 0;
	return upstream_gone(c, errno, end);
}

/* How many of the buffered bytes belong to the request body (validating chunks). */
static int frame_request_body(struct client *c, enum cstate *end)
{
	size_t used;
	enum ar_h1m_result r =
	    ar_h1m_feed(&c->x.req_m, c->in.p + c->in.off, c->in.len - c->in.off, &used);
	if (r == AR_H1M_BAD) {
		c->keepalive = false;
		return ended(end, reply_with(c, 400, "bad chunk syntax in request body", false));
	}
	c->x.req_ready = (uint32_t)used;
	if (used > 0 && secret_check_body(c, c->in.p + c->in.off, used) == -1) {
		c->keepalive = c->x.up_reusable = false;
		if (c->x.resp_started) {
			c->status = 403;
			return ended(end, CS_CLOSE);
		}
		return ended(end, reply_with(c, 403, c->reason, false));
	}
	return 0;
}

static int read_client_body(struct client *c, enum cstate *end)
{
	iobuf_reserve(c->px, &c->in, 4096, IN_MAX);
	ssize_t n = cio_recv(c, c->in.p + c->in.len, c->in.cap - c->in.len);
	if (n > 0) {
		c->in.len += (uint32_t)n;
		return 1;
	}
	if (n == -1 && (would_block() || errno == EINTR))
		return 0;
	if (!c->x.upgraded) /* an upgraded connection ends when either side closes */
		snprintf(c->reason, sizeof(c->reason), "client closed the connection mid-request");
	return ended(end, CS_CLOSE);
}

static int fwd_send_body(struct client *c, enum cstate *end)
{
	int progress = 0;
	while (!c->x.req_done && c->x.uo_off >= c->x.uo.len) {
		if (c->x.req_ready == 0) {
			if (c->in.len == c->in.off) {
				int r = read_client_body(c, end);
				if (r <= 0)
					return r < 0 ? -1 : progress;
				progress = 1;
			}
			if (frame_request_body(c, end) == -1)
				return -1;
			if (c->x.req_ready == 0 && c->x.req_m.done) {
				c->x.req_done = true;
				break;
			}
		}
		uint64_t room = budget_room(c);
		if (room == 0)
			return ended(end, budget_refuse(c));
		size_t len = c->x.req_ready < room ? c->x.req_ready : (size_t)room;
		ssize_t n = uio_send(c->up, c->in.p + c->in.off, len);
		if (n > 0) {
			c->in.off += (uint32_t)n;
			c->x.req_ready -= (uint32_t)n;
			c->bytes_out += (uint64_t)n;
			c->body_bytes += (uint64_t)n;
			budget_spend(c, (uint64_t)n);
			c->x.req_done = c->x.req_ready == 0 && c->x.req_m.done;
			progress = 1;
			continue;
		}
		if (n == -1 && (would_block() || errno == EINTR))
			return progress;
		return upstream_gone(c, errno, end);
	}
	return progress;
}

/* RFC 9110 §7.6.3: the response names the proxy too, as its last Via line (the
 * origin's own stay before it). Inserted before the head's final CRLF at `end`, with
 * the body bytes already read moved along. Returns the bytes added. */
static uint32_t add_response_via(struct client *c, uint32_t end, int minor)
{
	static const char via11[] = "Via: 1.1 agentrun\r\n", via10[] = "Via: 1.0 agentrun\r\n";
	const char *via = minor ? via11 : via10;
	uint32_t n = sizeof(via11) - 1;
	struct iobuf *b = &c->out;
	if (b->cap - b->len < n) {
		b->p = ar_xrealloc(b->p, b->cap + AR_IOBUF_UNIT); /* keeps off/rbase/rready */
		b->cap += AR_IOBUF_UNIT;
	}
	memmove(b->p + end - 2 + n, b->p + end - 2, b->len - (end - 2));
	memcpy(b->p + end - 2, via, n);
	b->len += n;
	return n;
}

/* 101 to an upgrade the client asked for (a WebSocket, after the head's substitution):
 * from here both ways are opaque bytes until either side closes, relayed by the same
 * exchange as bodies delimited by the close. */
static int upgraded(struct client *c, size_t end, const struct ar_h1_response *r)
{
	c->x.resp_head_done = c->x.upgraded = true;
	c->keepalive = c->x.up_reusable = false;
	end = secret_mask_response(c, &c->out, c->x.rbase + (uint32_t)c->x.rscan.start,
				   c->x.rbase + (uint32_t)end) -
	      c->x.rbase;
	end += add_response_via(c, c->x.rbase + (uint32_t)end, r->minor);
	c->x.rready = c->x.rbase + (uint32_t)end;
	ar_h1m_init(&c->x.resp_m, AR_H1_BODY_CLOSE, 0);
	ar_h1m_init(&c->x.req_m, AR_H1_BODY_CLOSE, 0);
	c->x.resp_done = c->x.req_done = false;
	return 1;
}

static int response_head(struct client *c, size_t end, enum cstate *next)
{
	struct ar_h1_response r;
	const char *why;
	const char *head = c->out.p + c->x.rbase + c->x.rscan.start;
	if (ar_h1_parse_response(head, end - c->x.rscan.start, c->is_head, &r, &why) == -1)
		return ended(next, fwd_abort(c, why));
	c->status = r.status;
	if (r.status == 101 && c->x.upgrade && c->x.req_done)
		return upgraded(c, end, &r);
	if (r.status < 200) {
		if (r.status == 101)
			return ended(next, fwd_abort(c, "upstream switched protocols without an "
							"Upgrade asked for"));
		c->x.rbase += (uint32_t)end; /* an interim response: forward it, read on */
		c->x.rready = c->x.rbase;
		memset(&c->x.rscan, 0, sizeof(c->x.rscan));
		c->x.rscan.max_fields = RESP_MAX_FIELDS;
		return 1;
	}
	c->x.resp_head_done = true;
	end = secret_mask_response(c, &c->out, c->x.rbase + (uint32_t)c->x.rscan.start,
				   c->x.rbase + (uint32_t)end) -
	      c->x.rbase;
	end += add_response_via(c, c->x.rbase + (uint32_t)end, r.minor);
	c->x.rready = c->x.rbase + (uint32_t)end;
	ar_h1m_init(&c->x.resp_m, r.framing, r.content_length);
	c->x.resp_done = c->x.resp_m.done;
	if (r.conn_close) {
		c->x.up_reusable = false;
		c->keepalive = false;
	}
	return 1;
}

/* Find the end of the response in the bytes read so far; bytes after it are not
 * the client's, and make the connection unusable for another request. */
static int track_response(struct client *c, enum cstate *next)
{
	while (!c->x.resp_head_done) {
		size_t end;
		switch (ar_h1_scan_head(&c->x.rscan, c->out.p + c->x.rbase, c->out.len - c->x.rbase,
					&end)) {
		case AR_H1_SCAN_MORE:
			return 0;
		case AR_H1_SCAN_DONE:
			if (response_head(c, end, next) < 0)
				return -1;
			break;
		default:
			return ended(
			    next,
			    fwd_abort(c, "malformed or oversized response head from upstream"));
		}
	}
	uint32_t avail = c->out.len - c->x.rready;
	if (!c->x.resp_done && avail > 0) {
		size_t used;
		enum ar_h1m_result r =
		    ar_h1m_feed(&c->x.resp_m, c->out.p + c->x.rready, avail, &used);
		c->x.rready += (uint32_t)used;
		if (r == AR_H1M_BAD) {
			c->out.len = c->x.rready;
			c->keepalive = c->x.up_reusable = false;
			size_t n = strlen(c->reason);
			snprintf(c->reason + n, sizeof(c->reason) - n,
				 "; bad chunked framing from upstream");
		}
		c->x.resp_done = r != AR_H1M_MORE;
	}
	if (c->x.resp_done && c->out.len > c->x.rready) {
		c->out.len = c->x.rready;
		c->x.up_reusable = false;
	}
	return 0;
}

/* Room for the next read from the origin, keeping rbase/rready consistent. */
static bool response_room(struct client *c)
{
	struct iobuf *b = &c->out;
	iobuf_take(c->px, b);
	if (b->off == b->len && b->off == c->x.rbase && b->off == c->x.rready) {
		b->off = b->len = c->x.rbase = c->x.rready = 0;
		memset(&c->x.rscan, 0, sizeof(c->x.rscan));
		c->x.rscan.max_fields = RESP_MAX_FIELDS;
	}
	if (b->cap - b->len >= 1024 || (b->cap >= OUT_MAX && b->len < b->cap))
		return true;
	if (b->off > 0) {
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		c->x.rbase -= b->off;
		c->x.rready -= b->off;
		b->off = 0;
	}
	if (b->cap - b->len >= 1024)
		return true;
	if (b->cap < OUT_MAX) {
		uint32_t cap = b->cap ? b->cap * 2 : AR_IOBUF_UNIT;
		b->p = ar_xrealloc(b->p, cap > OUT_MAX ? OUT_MAX : cap);
		b->cap = cap > OUT_MAX ? OUT_MAX : cap;
	}
	return b->len < b->cap;
}

static int fwd_read_response(struct client *c, enum cstate *end)
{
	if (c->x.resp_done)
		return 0;
	if (!response_room(c)) {
		if (!c->x.resp_head_done)
			return ended(
			    end, fwd_abort(c, "response head from upstream larger than 64 KiB"));
		return 0;
	}
	ssize_t n = uio_recv(c->up, c->out.p + c->out.len, c->out.cap - c->out.len);
	if (n > 0) {
		c->out.len += (uint32_t)n;
		return track_response(c, end) < 0 ? -1 : 1;
	}
	if (n == -1 && (would_block() || errno == EINTR))
		return 0;
	int error = n == 0 ? 0 : errno;
	c->x.up_eof = true;
	c->x.up_reusable = false;
	if (!c->x.resp_head_done)
		return upstream_gone(c, error, end);
	if (c->x.resp_m.framing != AR_H1_BODY_CLOSE) {
		size_t len = strlen(c->reason);
		snprintf(c->reason + len, sizeof(c->reason) - len,
			 "; upstream closed mid-response");
	}
	c->keepalive = false;
	c->x.resp_done = true;
	return 1;
}

static int fwd_write_client(struct client *c, enum cstate *end)
{
	if (c->out.off >= c->x.rready)
		return 0;
	ssize_t n = cio_send(c, c->out.p + c->out.off, c->x.rready - c->out.off);
	if (n > 0) {
		c->out.off += (uint32_t)n;
		c->bytes_in += (uint64_t)n;
		c->x.resp_started = true;
		return 1;
	}
	if (n == -1 && (would_block() || errno == EINTR))
		return 0;
	snprintf(c->reason + strlen(c->reason), sizeof(c->reason) - strlen(c->reason),
		 "; client went away");
	return ended(end, CS_CLOSE);
}

static enum cstate finish_exchange(struct client *c)
{
	if (!c->x.req_done)
		c->keepalive = c->x.up_reusable = false;
	client_audit(c);
	upstream_release(c, c->x.up_reusable && !c->x.up_eof);
	if (c->keepalive)
		return next_request(c);
	c->close_after = true;
	return CS_REPLY; /* nothing left to send: shut down and linger */
}

enum cstate step_forward(struct client *c)
{
	enum cstate end = CS_CLOSE;
	for (;;) {
		int p = 0, r;
		if ((r = fwd_send_head(c, &end)) < 0)
			return end;
		p |= r;
		if ((r = fwd_send_body(c, &end)) < 0)
			return end;
		p |= r;
		if ((r = fwd_read_response(c, &end)) < 0)
			return end;
		p |= r;
		if ((r = fwd_write_client(c, &end)) < 0)
			return end;
		p |= r;
		if (c->x.resp_done && c->out.off == c->out.len)
			return finish_exchange(c);
		if (!p)
			return CS_WAIT;
	}
}

/* ---- timers ---- */

enum cstate timeout_head(struct client *c)
{
	struct ar_proxy *px = c->px;
	char why[AR_HOST_MAX + 96];
	if (c->deadline == 0 || px->loop.now < c->deadline)
		return CS_WAIT;
	if (!c->head_deadline || (c->first_request && c->in.len == c->in.off))
		return CS_CLOSE; /* idle, nothing asked: no request to answer */
	begin_request(c);
	snprintf(why, sizeof(why), "request headers not complete within %d ms",
		 px->egress->header_timeout_ms);
	return reply_with(c, 408, why, false);
}

enum cstate timeout_forward(struct client *c)
{
	struct ar_proxy *px = c->px;
	char why[AR_HOST_MAX + 96];
	if (px->loop.now - c->last_active < px->egress->idle_timeout_ms)
		return CS_WAIT;
	if (!c->x.resp_started) {
		snprintf(why, sizeof(why), "upstream sent no response within %d ms",
			 px->egress->idle_timeout_ms);
		return reply_with(c, 504, why, c->allowed);
	}
	snprintf(c->reason + strlen(c->reason), sizeof(c->reason) - strlen(c->reason),
		 "; idle for %d ms", px->egress->idle_timeout_ms);
	return CS_CLOSE;
}

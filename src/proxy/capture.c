/* Captured TCP connections (docs/network.md, "Transparent capture"): a listener with
 * IP_TRANSPARENT on 0.0.0.0:PORT accepts a connection to any address; the address the
 * client dialled (getsockname) is a synthetic one the DNS stub handed out, and so a
 * name. The connection is decided on name:port with the rules in force, dialled like
 * a CONNECT to that name (c-ares, the private ranges, the address checked is the one
 * dialled) and relayed by the tunnel code; a TLS ClientHello must name that very
 * name (421 otherwise, tunnel.c), and a plain HTTP request head, read whole, must
 * carry exactly one Host equal to it. A connection to any other address is decided by
 * the SNI or Host it carries, and dialled only if that name resolves to that address.
 * With secrets in the policy (docs/secrets.md), plain HTTP is parsed request by request
 * by forward.c (placeholders put in or refused), and a secret's host:port is sniffed
 * before anything is dialled: TLS terminated, HTTP parsed, the rest tunnelled.
 * A reload cannot add captured ports (capture_rules_changed says which stay out). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

static int captured_check(struct client *c, int r);
static enum cstate step_sniff(struct client *c);

/* A captured connection has no head to read: the decision is made at accept, and
 * what the first bytes are (TLS, HTTP, anything) names the audit's method. */
static enum cstate captured_upstream(struct client *c, int status, const char *why)
{
	if (status != 0) {
		c->status = status;
		snprintf(c->reason, sizeof(c->reason), "%s", why ? why : "upstream failed");
		if (status == 403)
			c->allowed = false;
		return CS_CLOSE;
	}
	c->deadline = 0;
	c->last_active = c->px->loop.now;
	/* always for a synthetic address: the ClientHello must name the connection's name;
	 * a literal one was decided on the name its first bytes carry */
	return tunnel_begin(c, false, c->s.pin.family == 0);
}

static enum cstate refuse(struct client *c, const char *reason)
{
	snprintf(c->reason, sizeof(c->reason), "%s", reason);
	c->allowed = false;
	c->status = 403;
	return CS_CLOSE;
}

/* A spent budget: nothing is dialled; a captured connection has no request to answer
 * with 413, so it is closed at once and audited as 413 with the reason. */
static enum cstate spent(struct client *c)
{
	c->status = 413;
	return CS_CLOSE;
}

/* A literal address: its name comes from the SNI or the Host it carries (step_sniff),
 * and it is dialled only if that name resolves to that very address (c->s.pin). */
static enum cstate literal_start(struct client *c, const struct sockaddr_in *dst, const char *addr)
{
	snprintf(c->host, sizeof(c->host), "%s", addr);
	c->s.pin.family = AF_INET;
	memcpy(c->s.pin.addr, &dst->sin_addr, 4);
	c->allowed = false;
	snprintf(c->reason, sizeof(c->reason), "%s: no SNI or Host arrived", addr);
	c->sniff = step_sniff;
	c->deadline = c->px->loop.now + c->px->egress->header_timeout_ms;
	return CS_SNIFF;
}

/* Is the connection's name:port one a secret is for (docs/secrets.md)? */
static bool captured_secrets(struct client *c, const char *name)
{
	struct ar_host h;
	ar_auto_error ar_error_t err = NULL;
	if (!secret_any(c) || ar_host_canonicalize(name, &h, &err) == -1)
		return false;
	secret_begin(c, &h, c->port);
	return c->secrets_bound != 0;
}

static bool looks_http(const char *p, size_t n);
static bool maybe_http(const char *p, size_t n);

/* Neither TLS nor HTTP to a secret's host: an opaque tunnel, as to any other. */
static enum cstate captured_tunnel(struct client *c)
{
	budget_attach(c);
	if (budget_spent(c))
		return spent(c);
	return search_start(c, captured_upstream);
}

/* CS_SNIFF for a secret's host: what the client speaks first decides, read with
 * MSG_PEEK so that the TLS handshake still finds its ClientHello in the socket. TLS is
 * terminated (on any port: a rule host:8443 as host:443), HTTP goes through the
 * plain-HTTP path (the value put in, other secrets refused), anything else is a
 * tunnel. Nothing is dialled before: a secret's host is never spoken to first. */
static enum cstate sniff_bound(struct client *c)
{
	char p[16];
	ssize_t n;
	do
		n = recv(c->fd, p, sizeof(p), MSG_PEEK);
	while (n == -1 && errno == EINTR);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return CS_WAIT;
	if (n <= 0)
		return CS_CLOSE;
	if (p[0] == 0x16 && c->px->cfg.tls != NULL) /* a TLS handshake record */
		return term_captured(c);
	if (looks_http(p, (size_t)n)) {
		snprintf(c->method, sizeof(c->method), "HTTP");
		return captured_requests(c);
	}
	if (maybe_http(p, (size_t)n) && (size_t)n < sizeof(p))
		return CS_WAIT; /* a method still arriving; its next bytes wake us */
	return captured_tunnel(c);
}

/* Decide the connection on the name behind the address it was made to. */
static enum cstate captured_start(struct client *c, const struct sockaddr_in *dst)
{
	struct ar_proxy *px = c->px;
	struct ar_dns_target t;
	char addr[INET_ADDRSTRLEN], why[AR_HOST_MAX + 96];

	c->id = ++px->next_id;
	c->started = px->loop.now;
	c->captured = true;
	c->first_bytes = captured_check;
	c->is_connect = true;
	c->have_method = true;
	snprintf(c->method, sizeof(c->method), "TCP");
	c->port = ntohs(dst->sin_port);
	c->egress = ar_egress_ref(px->egress);
	inet_ntop(AF_INET, &dst->sin_addr, addr, sizeof(addr));
	ar_dns_target(px->dns_pool, px->egress->rules, dst->sin_addr, c->port, &t);
	if (t.kind == AR_DNS_TARGET_LITERAL)
		return literal_start(c, dst, addr);
	if (t.kind != AR_DNS_TARGET_NAME) {
		snprintf(c->host, sizeof(c->host), "%s", addr);
		snprintf(why, sizeof(why), "%s is a synthetic address never handed out", addr);
		return refuse(c, why);
	}
	snprintf(c->host, sizeof(c->host), "%s", t.name);
	struct ar_host h;
	if (ar_host_canonicalize(t.name, &h, NULL) == 0)
		learn_decision(c, &h, c->port, &t.decision);
	c->rule = t.decision.rule;
	c->allowed = t.decision.allowed;
	if (!c->allowed)
		return refuse(c, t.decision.reason);
	snprintf(c->reason, sizeof(c->reason), "%s (captured at %s)", t.decision.reason, addr);
	if (captured_secrets(c, t.name)) {
		c->sniff = sniff_bound;
		c->deadline = px->loop.now + px->egress->header_timeout_ms;
		return CS_SNIFF;
	}
	return captured_tunnel(c);
}

static void captured_accept(void *arg, uint32_t events)
{
	struct listener *l = arg;
	(void)events;
	for (;;) {
		struct sockaddr_in dst;
		ar_auto_error ar_error_t err = NULL;
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		if (ar_capture_original_dst(fd, &dst, &err) == -1) {
			close(fd);
			continue;
		}
		struct client *c = client_new(l->px, fd);
		if (c != NULL)
			conn_start(c, captured_start(c, &dst));
	}
}

int capture_init(struct ar_proxy *px, const struct ar_proxy_config *cfg, ar_error_t *err)
{
	/* the descriptors are ours from the start, even if something fails */
	px->dns_udp = cfg->dns_udp_fd > 0 ? cfg->dns_udp_fd : -1;
	px->dns_tcp = cfg->dns_tcp_fd > 0 ? cfg->dns_tcp_fd : -1;
	for (size_t i = 0; i < cfg->n_capture_fds && i < AR_PROXY_MAX_CAPTURE; i++) {
		struct listener *l = &px->capture[px->n_capture++];
		*l = (struct listener){
		    .io = {captured_accept, l}, .px = px, .fd = cfg->capture_fds[i]};
		snprintf(l->name, sizeof(l->name), "captured fd %d", l->fd);
	}
	if (px->dns_udp < 0 && px->dns_tcp < 0 && px->n_capture == 0)
		return 0;
	/* the policy's proxy.dns_pool, unless the caller names one itself */
	const char *pool = cfg->dns_pool;
	if (pool == NULL && cfg->policy != NULL)
		pool = cfg->policy->proxy.dns_pool;
	return ar_dns_pool_create(pool, 0, &px->dns_pool, err);
}

int capture_start(struct ar_proxy *px, ar_error_t *err)
{
	if (px->dns_pool == NULL)
		return 0;
	px->dns_stub = ar_dns_stub_new(px->egress->rules, px->dns_pool);
	ar_dns_stub_set_learn(px->dns_stub, px->egress->learn ? px->shape : NULL);
	for (size_t i = 0; i < px->n_capture; i++)
		if (ev_add(&px->loop, px->capture[i].fd, EPOLLIN, &px->capture[i].io) == -1)
			return ar_error_make(err, errno, "epoll_ctl: a captured-TCP listener");
	return dnsd_start(px, err);
}

void capture_free(struct ar_proxy *px)
{
	for (size_t i = 0; i < px->n_capture; i++)
		close(px->capture[i].fd);
	px->n_capture = 0;
	int *fds[] = {&px->dns_udp, &px->dns_tcp};
	for (size_t i = 0; i < AR_ARRAY_SIZE(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
	free(px->dgrams);
	px->dgrams = NULL;
	ar_dns_stub_free(px->dns_stub);
	px->dns_stub = NULL;
	ar_dns_pool_free(px->dns_pool);
	px->dns_pool = NULL;
}

static int fd_port(int fd)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	if (getsockname(fd, (struct sockaddr *)&sa, &sl) == -1 || sa.sin_family != AF_INET)
		return -1;
	return ntohs(sa.sin_port);
}

/* Is port served already: a capture listener's, the DNS stub's, an explicit one's? */
static bool port_served(const struct ar_proxy *px, int port)
{
	if (port == AR_CAPTURE_DNS_PORT)
		return true;
	for (size_t i = 0; i < px->n_capture; i++)
		if (fd_port(px->capture[i].fd) == port)
			return true;
	for (size_t i = 0; i < px->n_listeners; i++)
		if (fd_port(px->listeners[i].fd) == port)
			return true;
	return false;
}

/* New rules in force: the capture's listeners were made at start, while the caller
 * was privileged (IP_TRANSPARENT); this confined process cannot add one. A port the
 * new rules name and nothing listens on stays refused (RST) until the sandbox
 * restarts: say so, naming the ports, rather than let a rule look like it works. */
void capture_rules_changed(struct ar_proxy *px, const struct ar_rules *rules)
{
	ar_autofree uint16_t *ports = NULL;
	size_t n = 0, missing = 0;
	if (px->n_capture == 0)
		return;
	ar_capture_ports(rules, &ports, &n);
	ar_buf_reset(&px->line);
	ar_buf_puts(&px->line, "agentrun: proxy: warning: the new rules name port(s)");
	for (size_t i = 0; i < n; i++)
		if (!port_served(px, ports[i]))
			ar_buf_printf(&px->line, "%s%u", missing++ ? ", " : " ", ports[i]);
	if (missing == 0)
		return;
	ar_buf_puts(&px->line, " that transparent capture does not listen on: connections "
			       "from the sandbox to them stay refused until it restarts (the "
			       "captured ports are fixed at start)\n");
	logq_line(&px->log, px->line.data, px->line.len);
}

/* Is this the start of an HTTP/1 request line ("GET /", "POST /", ...)? */
static bool looks_http(const char *p, size_t n)
{
	size_t i = 0;
	while (i < n && i < 16 && p[i] >= 'A' && p[i] <= 'Z')
		i++;
	return i > 0 && i < n && p[i] == ' ';
}

/* Could these bytes still become a request line (a method arriving in pieces)? */
static bool maybe_http(const char *p, size_t n)
{
	size_t k = 0;
	while (k < n && p[k] >= 'A' && p[k] <= 'Z')
		k++;
	return n > 0 && k == n && n < 16;
}

/* The name a request head gives: Host (exactly one), and an absolute-form target
 * ("GET http://name:port/ HTTP/1.1") that must agree with it. */
struct head_name {
	char name[AR_HOST_MAX];
	int port;
};

/* The authority of an absolute-form target in the request line at p, if any: 1 with
 * *abs set, 0 for an origin-form target, -1 when it does not parse. */
static int absolute_target(const char *p, size_t eol, int dport, struct head_name *abs)
{
	const char *sp = memchr(p, ' ', eol);
	bool v6;
	if (sp == NULL)
		return -1;
	size_t t = (size_t)(sp - p) + 1, e = t;
	while (e < eol && p[e] != ' ')
		e++;
	if (e - t < 7 || strncasecmp(p + t, "http://", 7) != 0)
		return 0;
	size_t a = t + 7, z = a;
	while (z < e && p[z] != '/' && p[z] != '?' && p[z] != '#')
		z++;
	return ar_h1_split_authority(p + a, z - a, abs->name, sizeof(abs->name), &abs->port, &v6,
				     dport) == 0
		   ? 1
		   : -1;
}

/* The one Host field of the head p[0..end), into *h; NULL or a static reason. */
static const char *host_field(const char *p, size_t end, int dport, struct head_name *h)
{
	const char *value = NULL;
	size_t vlen = 0;
	bool v6;
	for (size_t i = (size_t)((const char *)memchr(p, '\n', end) - p) + 1; i + 2 <= end;) {
		const char *nl = memchr(p + i, '\n', end - i);
		size_t eol = (size_t)(nl - p) - 1; /* the scanner saw CRLF on every line */
		if (eol <= i)
			break; /* the blank line */
		if (p[i] == ' ' || p[i] == '\t')
			return "a folded header line";
		const char *colon = memchr(p + i, ':', eol - i);
		size_t nlen = colon ? (size_t)(colon - p) - i : 0;
		if (nlen >= 4 && strncasecmp(p + i, "host", 4) == 0 &&
		    strspn(p + i + 4, " \t") == nlen - 4) {
			if (nlen > 4)
				return "whitespace before the colon of Host";
			if (value != NULL)
				return "duplicate Host header";
			value = colon + 1;
			while (value < p + eol && (*value == ' ' || *value == '\t'))
				value++;
			vlen = (size_t)(p + eol - value);
			while (vlen > 0 && (value[vlen - 1] == ' ' || value[vlen - 1] == '\t'))
				vlen--;
		}
		i = eol + 2;
	}
	if (value == NULL)
		return "no Host header";
	if (ar_h1_split_authority(value, vlen, h->name, sizeof(h->name), &h->port, &v6, dport) ==
	    -1)
		return "an invalid Host header";
	return NULL;
}

/* The name the whole request head at p names: 1 with *h set, 0 for "read more", -1
 * with why (the head is refused). */
static int head_name(const char *p, size_t n, int dport, struct head_name *h, char *why,
		     size_t size)
{
	static const char *const scan_why[] = {
	    [AR_H1_SCAN_TOO_BIG] = "a request head over 64 KiB",
	    [AR_H1_SCAN_TOO_MANY] = "too many header lines",
	    [AR_H1_SCAN_BARE_LF] = "a line ending in LF without CR",
	};
	struct ar_h1_scan s = {0};
	struct head_name abs;
	size_t end;
	enum ar_h1_scan_result r = ar_h1_scan_head(&s, p, n, &end);
	if (r == AR_H1_SCAN_MORE)
		return 0;
	if (r != AR_H1_SCAN_DONE) {
		snprintf(why, size, "%s", scan_why[r]);
		return -1;
	}
	p += s.start;
	end -= s.start;
	const char *bad = host_field(p, end, dport, h);
	int a =
	    bad ? 0
		: absolute_target(p, (size_t)((const char *)memchr(p, '\r', end) - p), dport, &abs);
	if (a == -1)
		bad = "an invalid request target";
	if (bad != NULL) {
		snprintf(why, size, "%s", bad);
		return -1;
	}
	if (a == 1 && (!ar_dns_same_name(abs.name, h->name) || abs.port != h->port)) {
		snprintf(why, size, "the request target names %.120s:%d, Host %.120s:%d", abs.name,
			 abs.port, h->name, h->port);
		return -1;
	}
	return 1;
}

/* Is a captured connection's plain HTTP request head still arriving? */
static bool captured_wants_more(const struct client *c)
{
	const char *p = c->in.p + c->in.off;
	size_t n = c->in.len - c->in.off;
	struct head_name h;
	char why[8];
	if (maybe_http(p, n))
		return true;
	return looks_http(p, n) && head_name(p, n, c->port, &h, why, sizeof(why)) == 0;
}

/* The tunnel found plain HTTP while the policy has secrets: its connection to the
 * origin (nothing of the client's went through it) waits in the origin's pool for the
 * first request, unless the origin spoke first; the requests are parsed from here. */
static enum cstate captured_handover(struct client *c)
{
	bool clean =
	    c->tn.dir[0].bytes == 0 && c->tn.dir[1].bytes == 0 && c->tn.dir[1].in_pipe == 0;
	tunnel_release(c);
	upstream_release(c, clean);
	return captured_requests(c);
}

/* The first bytes of a captured connection (r: what the ClientHello parser made of
 * them) name the audit's method (TLS, HTTP, TCP); plain HTTP must carry Host == the
 * connection's name. 0, -1 with c->reason set (421), 1: not TLS and an HTTP head
 * still arriving (read more, for its Host), or 2: HTTP to be parsed request by request
 * (the policy has secrets: placeholders are looked for), c->sniff set. Called by
 * tunnel.c through c->first_bytes. */
static int captured_check(struct client *c, int r)
{
	const char *p = c->in.p ? c->in.p + c->in.off : "";
	size_t n = c->in.len - c->in.off;
	struct head_name h;
	char why[AR_HOST_MAX + 64];

	if (r == AR_SNI_NOT_TLS && captured_wants_more(c)) {
		snprintf(c->method, sizeof(c->method), "HTTP"); /* the audit's, on a timeout */
		return 1;
	}

	if (!looks_http(p, n)) {
		if (r != AR_SNI_NOT_TLS)
			snprintf(c->method, sizeof(c->method), "TLS");
		return 0; /* TLS: the SNI check follows in sni_verdict; ssh and the like: the
			     name mapping alone decides */
	}
	snprintf(c->method, sizeof(c->method), "HTTP");
	int k = head_name(p, n, c->port, &h, why, sizeof(why));
	if (k == 1 && ar_dns_same_name(h.name, c->host) && h.port == c->port) {
		if (!secret_any(c))
			return 0;
		c->sniff = captured_handover;
		return 2;
	}
	if (k == 1)
		snprintf(c->reason, sizeof(c->reason), "Host %.180s:%d does not match %.180s:%d",
			 h.name, h.port, c->host, c->port);
	else
		snprintf(c->reason, sizeof(c->reason), "HTTP to %.180s refused: %.160s", c->host,
			 k == 0 ? "the request head ended before its blank line" : why);
	return -1;
}

/* What the first bytes of a literal connection name: 1 with *name set, 0 for "read
 * more", -1 when they name nothing (not TLS or HTTP, no SNI, no Host; *why says). */
static int sniff_name(struct client *c, char *name, size_t size, char *why, size_t wsize)
{
	const char *p = c->in.p + c->in.off;
	size_t n = c->in.len - c->in.off;
	const char *hello_why = NULL;
	struct head_name h;
	int r = ar_proxy_client_hello_parse((const uint8_t *)p, n, name, size, &hello_why);
	if (r != AR_SNI_NOT_TLS) {
		snprintf(c->method, sizeof(c->method), "TLS");
		return r == AR_SNI_MORE ? 0 : r == AR_SNI_FOUND ? 1 : -1;
	}
	if (!looks_http(p, n)) /* a method name still arriving waits */
		return maybe_http(p, n) ? 0 : -1;
	snprintf(c->method, sizeof(c->method), "HTTP");
	int k = head_name(p, n, c->port, &h, why, wsize);
	if (k == 1 && h.port != c->port) {
		snprintf(why, wsize, "Host names port %d, the connection is to %d", h.port,
			 c->port);
		return -1;
	}
	if (k == 1)
		snprintf(name, size, "%s", h.name);
	return k;
}

/* Decide name:port for a literal connection, then resolve the name and dial the
 * address the client dialled only if the name resolves to it. */
static enum cstate literal_decide(struct client *c, const char *name, const char *detail)
{
	struct ar_host h;
	struct ar_decision d;
	char addr[INET_ADDRSTRLEN], why[AR_HOST_MAX + 160];
	ar_auto_error ar_error_t err = NULL;
	inet_ntop(AF_INET, c->s.pin.addr, addr, sizeof(addr));
	if (name == NULL || ar_host_canonicalize(name, &h, &err) == -1 || h.family != 0) {
		snprintf(why, sizeof(why),
			 "%s: a connection to an address is decided by the name it carries (TLS "
			 "SNI or HTTP Host), and it carries none%s%.120s",
			 addr, detail && *detail ? ": " : "", detail ? detail : "");
		return refuse(c, why);
	}
	snprintf(c->host, sizeof(c->host), "%s", h.name);
	ar_rules_decide(c->egress->rules, &h, c->port, &d);
	learn_decision(c, &h, c->port, &d);
	c->rule = d.rule;
	c->allowed = d.allowed;
	if (!d.allowed)
		return refuse(c, d.reason);
	snprintf(c->reason, sizeof(c->reason), "%s (captured at %s)", d.reason, addr);
	if (secret_any(c) && strcmp(c->method, "HTTP") == 0)
		return captured_requests(c); /* the head read is the first request's */
	budget_attach(c);
	if (budget_spent(c))
		return spent(c);
	c->deadline = 0;
	return search_start(c, captured_upstream);
}

/* CS_SNIFF: a captured connection to a literal address, until its SNI or Host. */
static enum cstate step_sniff(struct client *c)
{
	char name[AR_HOST_MAX], why[AR_HOST_MAX + 64] = "";
	for (;;) {
		if (c->in.len > c->in.off) {
			int r = sniff_name(c, name, sizeof(name), why, sizeof(why));
			if (r != 0)
				return literal_decide(c, r == 1 ? name : NULL, why);
		}
		if (!iobuf_reserve(c->px, &c->in, 4096, 2 * AR_SNI_HELLO_MAX))
			return literal_decide(c, NULL, "more than 128 KiB without a name");
		ssize_t n = recv(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len, 0);
		if (n > 0) {
			c->in.len += (uint32_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return CS_WAIT;
		return CS_CLOSE;
	}
}

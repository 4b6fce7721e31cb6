/* Captured TCP connections (docs/network.md, "Transparent capture"): a listener with
 * IP_TRANSPARENT on 0.0.0.0:PORT accepts a connection to any address; the address the
 * client dialled (getsockname) is a synthetic one the DNS stub handed out, and so a
 * name. The connection is decided on name:port with the rules in force, dialled like
 * a CONNECT to that name (c-ares, the private ranges, the address checked is the one
 * dialled) and relayed by the tunnel code; a TLS ClientHello must name that very
 * name (421 otherwise, tunnel.c). A connection to any other address is refused. */
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
	c->rule = t.decision.rule;
	c->allowed = t.decision.allowed;
	if (!c->allowed)
		return refuse(c, t.decision.reason);
	snprintf(c->reason, sizeof(c->reason), "%s (captured at %s)", t.decision.reason, addr);
	budget_attach(c);
	return search_start(c, captured_upstream);
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
	return ar_dns_pool_create(cfg->dns_pool, 0, &px->dns_pool, err);
}

int capture_start(struct ar_proxy *px, ar_error_t *err)
{
	if (px->dns_pool == NULL)
		return 0;
	px->dns_stub = ar_dns_stub_new(px->egress->rules, px->dns_pool);
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

/* Is this the start of an HTTP/1 request line ("GET /", "POST /", ...)? */
static bool looks_http(const char *p, size_t n)
{
	size_t i = 0;
	while (i < n && i < 16 && p[i] >= 'A' && p[i] <= 'Z')
		i++;
	return i > 0 && i < n && p[i] == ' ';
}

/* The Host header's value in the head at p (as much of it as arrived), or "". */
static void find_host(const char *p, size_t n, char *out, size_t size)
{
	out[0] = '\0';
	for (size_t i = 0; i + 7 < n; i++) {
		if (p[i] != '\n' || strncasecmp(p + i + 1, "host:", 5) != 0)
			continue;
		size_t j = i + 6, k = 0;
		while (j < n && (p[j] == ' ' || p[j] == '\t'))
			j++;
		while (j < n && p[j] != '\r' && p[j] != '\n' && k + 1 < size)
			out[k++] = p[j++];
		out[k] = '\0';
		return;
	}
}

/* The first bytes of a captured connection (r: what the ClientHello parser made of
 * them) name the audit's method (TLS, HTTP, TCP); plain HTTP must carry Host == the
 * connection's name. 0, or -1 with c->reason set (421). Called by tunnel.c through
 * c->first_bytes. */
static int captured_check(struct client *c, int r)
{
	const char *p = c->in.p ? c->in.p + c->in.off : "";
	size_t n = c->in.len - c->in.off;
	char host[AR_HOST_MAX + 8], name[AR_HOST_MAX];
	int port;

	if (r != AR_SNI_NOT_TLS) {
		snprintf(c->method, sizeof(c->method), "TLS");
		return 0; /* the SNI check follows in sni_verdict */
	}
	if (!looks_http(p, n))
		return 0; /* ssh and the like: the name mapping alone decides */
	snprintf(c->method, sizeof(c->method), "HTTP");
	find_host(p, n, host, sizeof(host));
	if (ar_host_split_port(host, name, sizeof(name), &port, c->port, NULL) == 0 &&
	    ar_dns_same_name(name, c->host))
		return 0;
	snprintf(c->reason, sizeof(c->reason), "Host %.180s does not match %.180s",
		 host[0] ? host : "(none in the first segment)", c->host);
	return -1;
}

/* What the first bytes of a literal connection name: 1 with *name set, 0 for "read
 * more", -1 when they name nothing (not TLS or HTTP, no SNI, no Host). */
static int sniff_name(struct client *c, char *name, size_t size)
{
	const char *p = c->in.p + c->in.off;
	size_t n = c->in.len - c->in.off;
	const char *why = NULL;
	char host[AR_HOST_MAX + 8];
	int port;
	int r = ar_proxy_client_hello_parse((const uint8_t *)p, n, name, size, &why);
	if (r != AR_SNI_NOT_TLS) {
		snprintf(c->method, sizeof(c->method), "TLS");
		return r == AR_SNI_MORE ? 0 : r == AR_SNI_FOUND ? 1 : -1;
	}
	if (!looks_http(p, n)) {
		size_t k = 0; /* a method name still arriving waits; anything else is no name */
		while (k < n && p[k] >= 'A' && p[k] <= 'Z')
			k++;
		return k == n && n < 16 ? 0 : -1;
	}
	snprintf(c->method, sizeof(c->method), "HTTP");
	if (memmem(p, n, "\r\n\r\n", 4) == NULL) /* the whole head, then its Host */
		return n > 16384 ? -1 : 0;
	find_host(p, n, host, sizeof(host));
	return host[0] && ar_host_split_port(host, name, size, &port, c->port, NULL) == 0 ? 1 : -1;
}

/* Decide name:port for a literal connection, then resolve the name and dial the
 * address the client dialled only if the name resolves to it. */
static enum cstate literal_decide(struct client *c, const char *name)
{
	struct ar_host h;
	struct ar_decision d;
	char addr[INET_ADDRSTRLEN], why[AR_HOST_MAX + 160];
	ar_auto_error ar_error_t err = NULL;
	inet_ntop(AF_INET, c->s.pin.addr, addr, sizeof(addr));
	if (name == NULL || ar_host_canonicalize(name, &h, &err) == -1 || h.family != 0) {
		snprintf(why, sizeof(why),
			 "%s: a connection to an address is decided by the name it carries (TLS "
			 "SNI or HTTP Host), and it carries none",
			 addr);
		return refuse(c, why);
	}
	snprintf(c->host, sizeof(c->host), "%s", h.name);
	ar_rules_decide(c->egress->rules, &h, c->port, &d);
	c->rule = d.rule;
	c->allowed = d.allowed;
	if (!d.allowed)
		return refuse(c, d.reason);
	snprintf(c->reason, sizeof(c->reason), "%s (captured at %s)", d.reason, addr);
	budget_attach(c);
	c->deadline = 0;
	return search_start(c, captured_upstream);
}

/* CS_SNIFF: a captured connection to a literal address, until its SNI or Host. */
static enum cstate step_sniff(struct client *c)
{
	char name[AR_HOST_MAX];
	for (;;) {
		if (c->in.len > c->in.off) {
			int r = sniff_name(c, name, sizeof(name));
			if (r != 0)
				return literal_decide(c, r == 1 ? name : NULL);
		}
		if (!iobuf_reserve(c->px, &c->in, 4096, 2 * AR_SNI_HELLO_MAX))
			return literal_decide(c, NULL);
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

/* Finding the upstream: the per-origin pool first, else asynchronous resolution with
 * c-ares (its sockets live in the proxy's epoll set, so the loop never blocks on
 * DNS), a check of every resolved address against the refused ranges, and a
 * non-blocking connect to exactly an address that passed, trying the next one when a
 * connect fails. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

#define MAX_CANDS 16

struct dns_sock {
	struct ev_io io;
	struct ar_proxy *px;
	int fd;
	struct dns_sock *next;
};

/* Outlives its client: c-ares calls back after a cancel too. */
struct lookup {
	struct client *c;
};

static void dns_event(void *arg, uint32_t events)
{
	struct dns_sock *ds = arg;
	ares_process_fd(ds->px->ares,
			(events & (EPOLLIN | EPOLLERR | EPOLLHUP)) ? ds->fd : ARES_SOCKET_BAD,
			(events & EPOLLOUT) ? ds->fd : ARES_SOCKET_BAD);
}

static void sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct ar_proxy *px = data;
	struct dns_sock **pp = &px->dns_socks;
	while (*pp && (*pp)->fd != fd)
		pp = &(*pp)->next;
	if (!readable && !writable) {
		if (*pp) {
			struct dns_sock *ds = *pp;
			ev_del(&px->loop, fd, &ds->io);
			*pp = ds->next;
			ev_defer_free(&px->loop, ds);
		}
		return;
	}
	uint32_t events = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
	if (*pp != NULL) {
		ev_mod(&px->loop, fd, events, &(*pp)->io);
		return;
	}
	struct dns_sock *ds = ar_xcalloc(1, sizeof(*ds));
	ds->io = (struct ev_io){dns_event, ds};
	ds->px = px;
	ds->fd = fd;
	*pp = ds;
	ev_add(&px->loop, fd, events, &ds->io);
}

int resolver_init(struct ar_proxy *px, ar_error_t *err)
{
	int rc = ares_library_init(ARES_LIB_INIT_ALL);
	if (rc != ARES_SUCCESS)
		return ar_error_make(err, 0, "c-ares: %s", ares_strerror(rc));
	struct ares_options o;
	memset(&o, 0, sizeof(o));
	o.sock_state_cb = sock_state;
	o.sock_state_cb_data = px;
	/* /etc/hosts first; tests say "files only" so nothing can leave the machine */
	o.lookups = px->cfg.dns_files_only ? "f" : "fb";
	o.timeout = 2000;
	o.tries = 2;
	int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_LOOKUPS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
	rc = ares_init_options(&px->ares, &o, mask);
	if (rc != ARES_SUCCESS) {
		px->ares = NULL;
		return ar_error_make(err, 0, "c-ares: %s", ares_strerror(rc));
	}
	return 0;
}

void resolver_free(struct ar_proxy *px)
{
	if (px->ares) {
		ares_destroy(px->ares); /* calls back with ARES_EDESTRUCTION */
		px->ares = NULL;
		ares_library_cleanup();
	}
	while (px->dns_socks) {
		struct dns_sock *ds = px->dns_socks;
		px->dns_socks = ds->next;
		free(ds);
	}
}

void resolver_tick(struct ar_proxy *px)
{
	if (px->ares && px->dns_socks)
		ares_process_fd(px->ares, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
}

int resolver_timeout(struct ar_proxy *px, int max_ms)
{
	if (px->ares == NULL || px->dns_socks == NULL)
		return max_ms;
	struct timeval maxtv = {max_ms / 1000, (max_ms % 1000) * 1000}, tv;
	struct timeval *t = ares_timeout(px->ares, max_ms < 0 ? NULL : &maxtv, &tv);
	if (t == NULL)
		return max_ms;
	int ms = (int)(t->tv_sec * 1000 + (t->tv_usec + 999) / 1000);
	return max_ms < 0 || ms < max_ms ? ms : max_ms;
}

void resolver_cancel(struct client *c)
{
	if (c->s.lookup) {
		c->s.lookup->c = NULL;
		c->s.lookup = NULL;
	}
}

void search_reset(struct client *c)
{
	resolver_cancel(c);
	free(c->s.cands);
	c->s.cands = NULL;
	c->s.n_cands = c->s.next = 0;
	c->s.reused = c->s.retried = c->s.resolved = false;
}

void search_literal(struct client *c, int family, const void *addr)
{
	free(c->s.cands);
	c->s.cands = ar_xcalloc(1, sizeof(struct cand));
	c->s.cands[0].family = family;
	memcpy(c->s.cands[0].addr, addr, family == AF_INET ? 4 : 16);
	c->s.n_cands = 1;
	c->s.next = 0;
}

enum cstate search_start(struct client *c, upstream_done_fn *done)
{
	c->s.done = done;
	return CS_UPSTREAM;
}

bool search_retry(struct client *c)
{
	if (!c->s.reused || c->s.retried)
		return false;
	upstream_release(c, false);
	c->s.retried = true;
	return true;
}

/* ---- address checks ---- */

static void cand_text(const struct cand *k, int port, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN];
	inet_ntop(k->family, k->addr, a, sizeof(a));
	if (port)
		snprintf(buf, size, k->family == AF_INET6 ? "[%s]:%d" : "%s:%d", a, port);
	else
		snprintf(buf, size, "%s", a);
}

/* ::ffff:a.b.c.d is dialled and judged as a.b.c.d */
static void cand_normalize(struct cand *k)
{
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
	if (k->family == AF_INET6 && memcmp(k->addr, mapped, 12) == 0) {
		memmove(k->addr, k->addr + 12, 4);
		k->family = AF_INET;
	}
}

/* Drop the candidates in refused ranges. When none is left, the search ends 403
 * naming the first refused address. CS_WAIT while candidates are left, else the
 * state the search's end goes to. */
static enum cstate filter_cands(struct client *c)
{
	uint8_t kept = 0;
	struct cand refused = {0};
	enum ar_addr_class refused_class = AR_ADDR_PUBLIC;
	for (uint8_t i = 0; i < c->s.n_cands; i++) {
		struct cand k = c->s.cands[i];
		cand_normalize(&k);
		/* a captured connection goes where the client dialled, or nowhere */
		if (c->s.pin.family != 0 &&
		    (k.family != c->s.pin.family ||
		     memcmp(k.addr, c->s.pin.addr, k.family == AF_INET ? 4 : 16)))
			continue;
		enum ar_addr_class cls = ar_proxy_addr_classify(k.family, k.addr);
		if (cls == AR_ADDR_PUBLIC || c->rule_literal ||
		    egress_private_ok(c->egress, k.family, k.addr)) {
			c->s.cands[kept++] = k;
		} else if (refused.family == 0) {
			refused = k;
			refused_class = cls;
		}
	}
	c->s.n_cands = kept;
	c->s.next = 0;
	if (kept > 0)
		return CS_WAIT;
	char a[INET6_ADDRSTRLEN + 8], why[AR_HOST_MAX + 160];
	if (refused.family == 0 && c->s.pin.family != 0) {
		cand_text(&c->s.pin, 0, a, sizeof(a));
		snprintf(why, sizeof(why), "%s does not resolve to %s, the address dialled",
			 c->host, a);
		return c->s.done(c, 403, why);
	}
	cand_text(&refused, 0, a, sizeof(a));
	snprintf(why, sizeof(why), "%s resolves to %s, a %s address (allow it with %s)", c->host, a,
		 ar_proxy_addr_class_name(refused_class), c->egress->private_hint);
	return c->s.done(c, 403, why);
}

/* ---- dialling ---- */

static struct upstream *dial(struct client *c, const struct cand *k, int *error)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	memset(&ss, 0, sizeof(ss));
	if (k->family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)c->port);
		memcpy(&s4->sin_addr, k->addr, 4);
		sl = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)c->port);
		memcpy(&s6->sin6_addr, k->addr, 16);
		sl = sizeof(*s6);
	}
	int fd = socket(k->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		*error = errno;
		return NULL;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&ss, sl) == -1 && errno != EINPROGRESS) {
		*error = errno;
		close(fd);
		return NULL;
	}
	struct upstream *up = ar_xcalloc(1, sizeof(*up));
	up->io = (struct ev_io){upstream_event, up};
	up->fd = fd;
	up->px = c->px;
	upstream_attach(c, up);
	cand_text(k, 0, up->addr, sizeof(up->addr));
	if (ev_add(&c->px->loop, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, &up->io) == -1) {
		*error = errno;
		close(fd);
		free(up);
		return NULL;
	}
	return up;
}

/* Connect to the next candidate; on running out, 502 with the last error. */
static enum cstate dial_next(struct client *c)
{
	int error = 0;
	while (c->s.next < c->s.n_cands) {
		const struct cand *k = &c->s.cands[c->s.next++];
		cand_text(k, 0, c->uo_addr, sizeof(c->uo_addr));
		c->up = dial(c, k, &error);
		if (c->up) {
			c->up->ready = false;
			c->deadline = c->px->loop.now + c->px->egress->connect_timeout_ms;
			return CS_CONNECT;
		}
	}
	char why[AR_HOST_MAX + 160];
	snprintf(why, sizeof(why), "connect to %s port %d failed: %s", c->uo_addr, c->port,
		 strerror(error));
	return c->s.done(c, 502, why);
}

/* The candidates known: filter them, then dial the first that passed. */
static enum cstate filter_and_dial(struct client *c)
{
	enum cstate refused = filter_cands(c);
	return refused != CS_WAIT ? refused : dial_next(c);
}

/* CS_RESOLVE and CS_CONNECT: a deadline passed. The next candidate gets a fresh
 * one, if any; else the search ends 504. */
enum cstate timeout_upstream(struct client *c)
{
	struct ar_proxy *px = c->px;
	char why[AR_HOST_MAX + 96];
	if (c->deadline == 0 || px->loop.now < c->deadline)
		return CS_WAIT;
	if (c->state == CS_CONNECT && c->s.next < c->s.n_cands) {
		upstream_release(c, false);
		return dial_next(c);
	}
	snprintf(why, sizeof(why), "%s %s timed out after %d ms",
		 c->state == CS_CONNECT ? "connecting to" : "resolving",
		 c->state == CS_CONNECT ? c->uo_addr : c->host, px->egress->connect_timeout_ms);
	resolver_cancel(c);
	return c->s.done(c, 504, why);
}

/* The origin's TLS leg of a terminated connection, on the connected socket: verified
 * against the host's trust store (and proxy.upstream_ca), the name checked. */
static enum cstate upstream_tls(struct client *c)
{
	char why[AR_HOST_MAX + 400];
	if (c->up->tls == NULL && tlsio_connect(c->up, c->host, why, sizeof(why)) == -1) {
		upstream_release(c, false);
		return c->s.done(c, 502, why);
	}
	if (tlsio_handshake(c->px, c->up->tls) == 0)
		return c->s.done(c, 0, NULL);
	if (errno == EAGAIN)
		return CS_WAIT;
	snprintf(why, sizeof(why), "TLS to %s (%s) port %d: %s", c->host, c->uo_addr, c->port,
		 tlsio_error(c->px, c->up->tls));
	upstream_release(c, false);
	return c->s.done(c, 502, why);
}

enum cstate step_connect(struct client *c)
{
	if (c->up->connected && c->term)
		return upstream_tls(c);
	if (!c->up->ready)
		return CS_WAIT;
	int error = 0;
	socklen_t sl = sizeof(error);
	if (getsockopt(c->up->fd, SOL_SOCKET, SO_ERROR, &error, &sl) == -1)
		error = errno;
	if (error == 0) {
		struct sockaddr_storage ss;
		socklen_t pl = sizeof(ss);
		if (getpeername(c->up->fd, (struct sockaddr *)&ss, &pl) == -1)
			return CS_WAIT; /* still connecting: a spurious wakeup */
		c->up->connected = true;
		return c->term ? upstream_tls(c) : c->s.done(c, 0, NULL);
	}
	upstream_release(c, false);
	if (c->s.next < c->s.n_cands)
		return dial_next(c);
	char why[AR_HOST_MAX + 160];
	snprintf(why, sizeof(why), "connect to %s port %d failed: %s", c->uo_addr, c->port,
		 strerror(error));
	return c->s.done(c, 502, why);
}

/* ---- resolution ---- */

/* The c-ares completion records the answer and schedules the client's driver (its
 * task): step_resolve takes the answer from there, never from inside c-ares. */
static void on_resolved(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct lookup *lk = arg;
	struct client *c = lk->c;
	(void)timeouts;
	free(lk);
	if (c == NULL) {
		ares_freeaddrinfo(res);
		return;
	}
	c->s.lookup = NULL;
	free(c->s.cands);
	c->s.cands = ar_xcalloc(MAX_CANDS, sizeof(struct cand));
	c->s.n_cands = 0;
	for (struct ares_addrinfo_node *n = res ? res->nodes : NULL; n && c->s.n_cands < MAX_CANDS;
	     n = n->ai_next) {
		struct cand *k = &c->s.cands[c->s.n_cands];
		if (n->ai_family == AF_INET) {
			k->family = AF_INET;
			memcpy(k->addr, &((struct sockaddr_in *)n->ai_addr)->sin_addr, 4);
		} else if (n->ai_family == AF_INET6) {
			k->family = AF_INET6;
			memcpy(k->addr, &((struct sockaddr_in6 *)n->ai_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		c->s.n_cands++;
	}
	ares_freeaddrinfo(res);
	c->s.resolved = true;
	c->s.ares_status = status;
	ev_post(&c->px->loop, &c->task);
}

/* CS_RESOLVE: wait for on_resolved, then filter the answer and dial. */
enum cstate step_resolve(struct client *c)
{
	if (!c->s.resolved)
		return CS_WAIT;
	c->s.resolved = false;
	if (c->s.ares_status != ARES_SUCCESS || c->s.n_cands == 0) {
		char why[AR_HOST_MAX + 160];
		snprintf(why, sizeof(why), "cannot resolve %s: %s", c->host,
			 c->s.ares_status == ARES_SUCCESS ? "no address"
							  : ares_strerror(c->s.ares_status));
		return c->s.done(c, 502, why);
	}
	return filter_and_dial(c);
}

enum cstate step_upstream(struct client *c)
{
	struct ar_proxy *px = c->px;
	if (!c->is_connect && !c->s.retried) {
		struct upstream *up = pool_get(px, c->host, c->port, c->term);
		if (up) {
			upstream_attach(c, up);
			c->s.reused = true;
			snprintf(c->uo_addr, sizeof(c->uo_addr), "%s", up->addr);
			return c->s.done(c, 0, NULL);
		}
	}
	c->s.reused = false;
	if (c->s.n_cands > 0)
		return filter_and_dial(c);
	c->deadline = px->loop.now + px->egress->connect_timeout_ms;
	struct lookup *lk = ar_xcalloc(1, sizeof(*lk));
	lk->c = c;
	c->s.lookup = lk;
	struct ares_addrinfo_hints hints = {
	    .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = ARES_AI_NOSORT};
	/* may call back before returning (a files lookup completes at once): step_resolve
	 * finds the answer then */
	c->s.resolved = false;
	ares_getaddrinfo(px->ares, c->host, NULL, &hints, on_resolved, lk);
	return CS_RESOLVE;
}

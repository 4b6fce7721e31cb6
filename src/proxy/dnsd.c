/* The DNS stub of transparent capture (docs/network.md, "Transparent capture"): two
 * more callbacks on the event core. UDP and TCP port 53 on any address of the proxy
 * netns (the sockets come from agentrun, made there while privileged); every query is
 * answered from the allow-list alone by src/dns and audited (method DNS). Nothing is
 * ever forwarded: the stub has no upstream. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agentrun/capture.h"
#include "agentrun/dns.h"
#include "internal.h"

#define DNS_TCP_MAX_CONNS 64
#define DNS_TCP_IDLE_MS	  10000

/* One TCP client of the stub: a query buffer and an idle deadline. */
struct dns_conn {
	struct ev_io io;
	struct ev_timer timer;
	struct ar_proxy *px;
	struct dns_conn *next, *prev;
	int fd;
	size_t have;
	uint8_t buf[AR_DNS_MAX_QUERY + 2];
};

/* A name carrying a secret's placeholder (an injection spelling it into a DNS name to
 * carry it out): REFUSED, audited by the secret's name. 0 when the name has none. */
static size_t refuse_secret(struct ar_proxy *px, const uint8_t *q, size_t len, uint8_t *out,
			    size_t cap)
{
	struct ar_dns_query dq;
	if (px->cfg.secrets == NULL || ar_dns_parse_query(q, len, &dq) != AR_DNS_PARSE_OK)
		return 0;
	uint64_t found = ar_secrets_find_name(px->cfg.secrets, dq.name);
	if (found == 0)
		return 0;
	char names[200], type[16], reason[AR_HOST_MAX + 300];
	ar_secrets_names(px->cfg.secrets, found, names, sizeof(names));
	snprintf(reason, sizeof(reason),
		 "%s: the placeholder of secret %s in a DNS name, which is not one of its hosts",
		 ar_dns_type_name(dq.qtype, type, sizeof(type)), names);
	struct ar_dns_answer a = {.rcode = AR_DNS_REFUSED};
	size_t n = ar_dns_build_reply(&dq, &a, out, cap);
	struct ar_audit_rec rec = {.method = "DNS",
				   .host = dq.name,
				   .port = 53,
				   .status = AR_DNS_REFUSED,
				   .reason = reason,
				   .secret = names,
				   .secret_action = "refused"};
	px->stats.dns_queries++;
	proxy_record(px, &rec);
	return n > 0 ? n : (size_t)-1;
}

static size_t answer(struct ar_proxy *px, const uint8_t *q, size_t len, uint8_t *out, size_t cap)
{
	struct ar_dns_event ev;
	struct ar_audit_rec rec;
	size_t r = refuse_secret(px, q, len, out, cap);
	if (r != 0)
		return r == (size_t)-1 ? 0 : r;
	size_t n = ar_dns_stub_answer(px->dns_stub, q, len, out, cap, &ev);
	ar_dns_event_audit(&ev, &rec);
	px->stats.dns_queries++;
	proxy_record(px, &rec);
	return n;
}

/* A batch of queries in one recvmmsg, their replies in one sendmmsg, their audit and
 * log lines held and written together: under load the stub costs a few system calls
 * per batch, not two writes per query (whole lines: a reader never sees half of one). */
static void dns_udp_event(void *arg, uint32_t events)
{
	struct ar_proxy *px = arg;
	(void)events;
	for (int round = 0; round < 64; round++) {
		int n = ar_capture_recv_queries(px->dns_udp, px->dgrams, AR_CAPTURE_BATCH);
		if (n <= 0)
			return;
		logq_hold(&px->audit);
		logq_hold(&px->log);
		for (int i = 0; i < n; i++) {
			struct ar_capture_dgram *d = &px->dgrams[i];
			if (d->len > 0)
				d->reply_len =
				    answer(px, d->query, d->len, d->reply, sizeof(d->reply));
		}
		if (ar_capture_send_replies(px->dns_udp, px->dgrams, (size_t)n) == -1) {
			/* the client is gone: nothing to tell it */
		}
		logq_release(&px->audit);
		logq_release(&px->log);
	}
}

static void conn_close(struct dns_conn *dc)
{
	struct ar_proxy *px = dc->px;
	ev_del(&px->loop, dc->fd, &dc->io);
	ev_timer_stop(&px->loop, &dc->timer);
	close(dc->fd);
	dc->io.fn = NULL;
	if (dc->prev)
		dc->prev->next = dc->next;
	else
		px->dns_conns = dc->next;
	if (dc->next)
		dc->next->prev = dc->prev;
	px->n_dns_conns--;
	ev_defer_free(&px->loop, dc);
}

/* Answer every whole message in the buffer; false when the connection must close. */
static bool conn_answer(struct dns_conn *dc)
{
	for (;;) {
		const uint8_t *msg;
		size_t len;
		uint8_t r[AR_DNS_MAX_REPLY + 2];
		int f = ar_dns_tcp_frame(dc->buf, dc->have, AR_DNS_MAX_QUERY, &msg, &len);
		if (f != 1)
			return f == 0;
		size_t m = answer(dc->px, msg, len, r + 2, sizeof(r) - 2);
		if (m > 0) {
			ar_dns_tcp_prefix(m, r);
			if (send(dc->fd, r, m + 2, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)(m + 2))
				return false; /* a client that does not read its answers */
		}
		size_t used = (size_t)(msg - dc->buf) + len;
		memmove(dc->buf, dc->buf + used, dc->have - used);
		dc->have -= used;
	}
}

static void conn_event(void *arg, uint32_t events)
{
	struct dns_conn *dc = arg;
	(void)events;
	for (;;) {
		ssize_t n = read(dc->fd, dc->buf + dc->have, sizeof(dc->buf) - dc->have);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			conn_close(dc);
			return;
		}
		dc->have += (size_t)n;
		if (!conn_answer(dc)) {
			conn_close(dc);
			return;
		}
	}
	ev_timer_at(&dc->px->loop, &dc->timer, dc->px->loop.now + DNS_TCP_IDLE_MS);
}

static void conn_timer(void *arg)
{
	conn_close(arg);
}

static void dns_tcp_accept(void *arg, uint32_t events)
{
	struct ar_proxy *px = arg;
	(void)events;
	for (;;) {
		int fd = accept4(px->dns_tcp, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		if (px->n_dns_conns >= DNS_TCP_MAX_CONNS) {
			close(fd);
			continue;
		}
		struct dns_conn *dc = ar_xcalloc(1, sizeof(*dc));
		*dc = (struct dns_conn){.io = {conn_event, dc}, .px = px, .fd = fd};
		dc->timer = (struct ev_timer){.fn = conn_timer, .arg = dc};
		if (ev_add(&px->loop, fd, EPOLLIN | EPOLLRDHUP | EPOLLET, &dc->io) == -1) {
			close(fd);
			free(dc);
			continue;
		}
		px->n_dns_conns++;
		dc->next = px->dns_conns;
		if (dc->next)
			dc->next->prev = dc;
		px->dns_conns = dc;
		conn_event(dc, EPOLLIN);
	}
}

void dnsd_close_all(struct ar_proxy *px)
{
	while (px->dns_conns)
		conn_close(px->dns_conns);
}

int dnsd_start(struct ar_proxy *px, ar_error_t *err)
{
	if (px->dns_udp < 0 && px->dns_tcp < 0)
		return 0;
	px->dgrams = ar_xcalloc(AR_CAPTURE_BATCH, sizeof(*px->dgrams));
	px->dns_udp_io = (struct ev_io){dns_udp_event, px};
	px->dns_tcp_io = (struct ev_io){dns_tcp_accept, px};
	if (px->dns_udp >= 0 && ev_add(&px->loop, px->dns_udp, EPOLLIN, &px->dns_udp_io) == -1)
		return ar_error_make(err, errno, "epoll_ctl: the DNS stub (UDP)");
	if (px->dns_tcp >= 0 && ev_add(&px->loop, px->dns_tcp, EPOLLIN, &px->dns_tcp_io) == -1)
		return ar_error_make(err, errno, "epoll_ctl: the DNS stub (TCP)");
	return 0;
}

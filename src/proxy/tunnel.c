/* CONNECT tunnels: an opaque relay with splice(2), socket -> pipe -> socket, in each
 * direction, counting bytes exactly. Pipes come from a small pool and are held only
 * while they carry data, so an idle tunnel costs its two sockets and its struct.
 * Half-close is forwarded: EOF from one side becomes shutdown(SHUT_WR) on the other
 * once the pipe is drained; the tunnel ends when both directions have ended. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

#define PIPE_WANT (1024 * 1024) /* F_SETPIPE_SZ; falls back to the default quietly */
#define POOL_IDLE 64		/* empty pipes kept for reuse */

struct pipe_pool {
	struct tpipe idle[POOL_IDLE];
	size_t n_idle;
	bool big_ok; /* stop asking for big pipes once the kernel said no */
};

int pipes_init(struct ar_proxy *px)
{
	px->pipes = ar_xcalloc(1, sizeof(*px->pipes));
	px->pipes->big_ok = true;
	return 0;
}

void pipes_free(struct ar_proxy *px)
{
	if (px->pipes == NULL)
		return;
	for (size_t i = 0; i < px->pipes->n_idle; i++) {
		close(px->pipes->idle[i].r);
		close(px->pipes->idle[i].w);
	}
	free(px->pipes);
	px->pipes = NULL;
}

static int pipe_get(struct ar_proxy *px, struct tpipe *p)
{
	struct pipe_pool *pp = px->pipes;
	if (pp->n_idle > 0) {
		*p = pp->idle[--pp->n_idle];
		return 0;
	}
	int fds[2];
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) == -1)
		return -1;
	p->r = fds[0];
	p->w = fds[1];
	if (pp->big_ok && fcntl(fds[1], F_SETPIPE_SZ, PIPE_WANT) == -1)
		pp->big_ok = false;
	int sz = fcntl(fds[1], F_GETPIPE_SZ);
	p->size = sz > 0 ? (uint32_t)sz : 65536;
	return 0;
}

/* Return an empty pipe to the pool (a pipe with data in it is closed instead). */
static void pipe_put(struct ar_proxy *px, struct tpipe *p, bool empty)
{
	if (p->r < 0)
		return;
	struct pipe_pool *pp = px->pipes;
	if (empty && pp->n_idle < POOL_IDLE) {
		pp->idle[pp->n_idle++] = *p;
	} else {
		close(p->r);
		close(p->w);
	}
	p->r = p->w = -1;
}

void tunnel_init(struct client *c)
{
	c->tn.dir[0].pipe.r = c->tn.dir[0].pipe.w = -1;
	c->tn.dir[1].pipe.r = c->tn.dir[1].pipe.w = -1;
}

void tunnel_release(struct client *c)
{
	for (int i = 0; i < 2; i++) {
		pipe_put(c->px, &c->tn.dir[i].pipe, c->tn.dir[i].in_pipe == 0);
		c->tn.dir[i].in_pipe = 0;
	}
}

static bool fatal_errno(void)
{
	return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

/* With a byte budget used up, any further byte from the client ends the tunnel. */
static enum tunnel_end budget_gate(struct tdir *d, int src)
{
	char b;
	ssize_t n = recv(src, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0)
		return TUNNEL_BUDGET;
	if (n == 0) {
		d->eof = true;
		return TUNNEL_OPEN;
	}
	return fatal_errno() ? TUNNEL_BROKEN : TUNNEL_OPEN;
}

/* Move what can move in one direction (`out`: client to origin, the budgeted one).
 * TUNNEL_OPEN while it may go on. */
static enum tunnel_end pump(struct client *c, struct tdir *d, int src, int dst, bool out)
{
	uint64_t *count = out ? &c->bytes_out : &c->bytes_in;
	for (;;) {
		if (d->in_pipe > 0) {
			ssize_t n = splice(d->pipe.r, NULL, dst, NULL, d->in_pipe,
					   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				d->in_pipe -= (uint32_t)n;
				d->bytes += (uint64_t)n;
				*count += (uint64_t)n;
				if (out)
					budget_spend(c, (uint64_t)n);
				continue;
			}
			if (n == -1 && !fatal_errno())
				return TUNNEL_OPEN;
			return TUNNEL_BROKEN;
		}
		if (d->eof) {
			pipe_put(c->px, &d->pipe, true);
			if (!d->shut && shutdown(dst, SHUT_WR) == -1 && errno != ENOTCONN)
				return TUNNEL_BROKEN;
			d->shut = true;
			return TUNNEL_OPEN;
		}
		size_t want = SIZE_MAX;
		if (out) {
			uint64_t room = budget_room(c);
			if (room == 0) {
				enum tunnel_end g = budget_gate(d, src);
				if (g == TUNNEL_OPEN && d->eof)
					continue;
				pipe_put(c->px, &d->pipe, true);
				return g;
			}
			if (room < want)
				want = (size_t)room;
		}
		if (d->pipe.r < 0 && pipe_get(c->px, &d->pipe) == -1)
			return TUNNEL_BROKEN;
		if (want > d->pipe.size)
			want = d->pipe.size;
		ssize_t n =
		    splice(src, NULL, d->pipe.w, NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			d->in_pipe = (uint32_t)n;
			continue;
		}
		if (n == 0) {
			d->eof = true;
			continue;
		}
		if (!fatal_errno()) {
			pipe_put(c->px, &d->pipe, true);
			return TUNNEL_OPEN;
		}
		return TUNNEL_BROKEN;
	}
}

/* Before the relay: the "200 Connection established" to the client. Returns -1 on a
 * dead socket, 1 while something is pending, 0 when done. */
static int send_established(struct client *c)
{
	while (c->out.off < c->out.len) {
		ssize_t n =
		    send(c->fd, c->out.p + c->out.off, c->out.len - c->out.off, MSG_NOSIGNAL);
		if (n > 0) {
			c->out.off += (uint32_t)n;
			continue;
		}
		if (n == -1 && !fatal_errno())
			return 1;
		return -1;
	}
	return 0;
}

/* The bytes the client sent after its CONNECT head or read for the SNI check go to
 * the origin before the relay takes over. Same returns as send_established, and -2
 * when they are more than the byte budget has room for (nothing of them is sent). */
static int send_early(struct client *c)
{
	if (c->in.len - c->in.off > budget_room(c))
		return -2;
	while (c->in.off < c->in.len) {
		ssize_t n =
		    send(c->up->fd, c->in.p + c->in.off, c->in.len - c->in.off, MSG_NOSIGNAL);
		if (n > 0) {
			c->in.off += (uint32_t)n;
			c->bytes_out += (uint64_t)n;
			c->tn.dir[0].bytes += (uint64_t)n;
			budget_spend(c, (uint64_t)n);
			continue;
		}
		if (n == -1 && !fatal_errno())
			return 1;
		return -1;
	}
	return 0;
}

/* How a refusal names the tunnel's host: "CONNECT api.example" for an explicit
 * tunnel, just the name for a captured connection (it made no CONNECT). */
static const char *sni_via(const struct client *c)
{
	return c->captured ? "" : "CONNECT ";
}

/* proxy.sni: the verdict on what the client sent first. A tunnel that starts as TLS
 * must show a whole ClientHello naming the CONNECT host; only `off` looks at nothing
 * and only a tunnel that is not TLS at all passes `check` unread. */
static enum tunnel_end sni_verdict(struct client *c, int r, const char *name, const char *why)
{
	enum ar_sni_mode mode = c->egress->sni;
	const char *via = sni_via(c);
	struct ar_host h;
	ar_auto_error ar_error_t err = NULL;
	if (c->captured) {
		int f = c->first_bytes ? c->first_bytes(c, r) : 0;
		if (f == 1)
			return TUNNEL_MORE; /* the whole HTTP head, for its Host (capture.c) */
		c->tn.sni_wait = false;
		if (f == 2)
			return TUNNEL_HTTP; /* its requests are parsed from here (c->sniff) */
		if (f != 0)
			return TUNNEL_SNI;
		if (mode == AR_SNI_OFF) /* a captured connection has no CONNECT to trust */
			mode = AR_SNI_CHECK;
	}
	c->tn.sni_wait = false;
	switch (r) {
	case AR_SNI_FOUND:
		if (ar_host_canonicalize(name, &h, &err) == 0 && strcmp(h.name, c->host) == 0)
			return TUNNEL_OPEN;
		snprintf(c->reason, sizeof(c->reason), "SNI %.180s does not match %s%.180s", name,
			 via, c->host);
		return TUNNEL_SNI;
	case AR_SNI_NONE:
		if (mode == AR_SNI_CHECK && c->host_is_ip)
			return TUNNEL_OPEN; /* clients send no SNI for an IP address */
		snprintf(c->reason, sizeof(c->reason), "ClientHello for %s%s has no SNI", via,
			 c->host);
		return TUNNEL_SNI;
	case AR_SNI_NOT_TLS:
		if (mode == AR_SNI_CHECK)
			return TUNNEL_OPEN;
		snprintf(c->reason, sizeof(c->reason),
			 "tunnel to %s%s is not TLS (proxy.sni is require)", via, c->host);
		return TUNNEL_SNI;
	default:
		snprintf(c->reason, sizeof(c->reason), "malformed ClientHello for %s%s: %s", via,
			 c->host, why ? why : "unreadable");
		return TUNNEL_SNI;
	}
}

/* Raw bytes a ClientHello may take in records (a 64 KiB hello in small records). */
#define SNI_RAW_MAX (2 * AR_SNI_HELLO_MAX + 16384)

/* Read until the ClientHello is complete, then judge it. TUNNEL_OPEN with sni_wait
 * still set means "wait for more bytes". */
static enum tunnel_end sni_step(struct client *c)
{
	char name[AR_HOST_MAX];
	if (c->in.len == c->in.off) {
		/* nothing yet: an idle tunnel holds no buffer, and server-first protocols
		 * (the origin speaks before the client) are not on a clock */
		char b;
		ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n == -1 && !fatal_errno())
			return TUNNEL_OPEN;
		if (n <= 0)
			return TUNNEL_BROKEN;
	}
	if (c->deadline == 0) /* a ClientHello, once begun, has the header timeout */
		c->deadline = c->px->loop.now + c->px->egress->header_timeout_ms;
	for (;;) {
		const char *why = NULL;
		int r =
		    ar_proxy_client_hello_parse((const uint8_t *)c->in.p + c->in.off,
						c->in.len - c->in.off, name, sizeof(name), &why);
		if (r != AR_SNI_MORE) {
			enum tunnel_end e = sni_verdict(c, r, name, why);
			if (e != TUNNEL_MORE)
				return e;
		}
		if (!iobuf_reserve(c->px, &c->in, 4096, SNI_RAW_MAX))
			return sni_verdict(c, AR_SNI_MALFORMED, name,
					   "ClientHello spread over more than 144 KiB of records");
		ssize_t n = recv(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len, 0);
		if (n > 0) {
			c->in.len += (uint32_t)n;
			continue;
		}
		if (n == -1 && !fatal_errno())
			return TUNNEL_OPEN;
		if (n == 0 && c->in.len > c->in.off)
			return sni_verdict(c, AR_SNI_MALFORMED, name,
					   "the client closed before the ClientHello was complete");
		return TUNNEL_BROKEN;
	}
}

/* The tunnel ends: a spent budget is audited as 413, an SNI refusal as 421; a
 * captured HTTP connection goes on in its sniff step (capture.c). */
static enum cstate tunnel_close(struct client *c, enum tunnel_end why)
{
	switch (why) {
	case TUNNEL_HTTP:
		return CS_SNIFF;
	case TUNNEL_BUDGET:
		c->status = 413;
		budget_reason(c);
		break;
	case TUNNEL_SNI:
		c->status = 421;
		c->allowed = false;
		break;
	case TUNNEL_SNI_TIMEOUT:
		c->status = 421;
		c->allowed = false;
		snprintf(c->reason, sizeof(c->reason), "no complete %s for %s%s within %d ms",
			 c->captured && strcmp(c->method, "HTTP") == 0 ? "HTTP request head"
								       : "ClientHello",
			 sni_via(c), c->host, c->px->egress->header_timeout_ms);
		break;
	default:
		break;
	}
	return CS_CLOSE;
}

/* The ClientHello did not arrive within the header timeout (421), or the tunnel was
 * idle too long. */
enum cstate timeout_tunnel(struct client *c)
{
	struct ar_proxy *px = c->px;
	if (c->tn.sni_wait && c->deadline && px->loop.now >= c->deadline)
		return tunnel_close(c, TUNNEL_SNI_TIMEOUT);
	if (px->loop.now - c->last_active < px->egress->idle_timeout_ms)
		return CS_WAIT;
	snprintf(c->reason + strlen(c->reason), sizeof(c->reason) - strlen(c->reason),
		 "; idle for %d ms", px->egress->idle_timeout_ms);
	return CS_CLOSE;
}

/* The upstream is connected: a CONNECT gets its 200 first (`established`; a captured
 * connection was never asked anything), and the ClientHello is read and checked before
 * any byte goes upstream unless proxy.sni is off. */
enum cstate tunnel_begin(struct client *c, bool established, bool sni)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	c->status = 200;
	c->out.off = c->out.len = 0;
	if (established) {
		iobuf_reserve(c->px, &c->out, sizeof(ok), sizeof(ok));
		memcpy(c->out.p, ok, sizeof(ok) - 1);
		c->out.len = sizeof(ok) - 1;
	}
	c->tn.sni_wait = sni;
	return CS_TUNNEL;
}

/* The prologue: the 200, the SNI verdict, the early bytes; then the buffers go back.
 * TUNNEL_OPEN with tunnel_bufs_freed still false means "wait". */
static enum tunnel_end tunnel_prologue(struct client *c)
{
	int out = send_established(c);
	if (out < 0)
		return TUNNEL_BROKEN;
	if (out == 0 && c->out.p != NULL)
		iobuf_free(c->px, &c->out);
	if (c->tn.sni_wait) {
		if (c->in.len == c->in.off && c->in.p != NULL)
			iobuf_free(c->px,
				   &c->in); /* the head's buffer: a waiting tunnel holds none */
		enum tunnel_end r = sni_step(c);
		if (r != TUNNEL_OPEN || c->tn.sni_wait)
			return r; /* nothing is forwarded before the verdict */
		c->deadline = 0;
	}
	int early = send_early(c);
	if (early < 0)
		return early == -2 ? TUNNEL_BUDGET : TUNNEL_BROKEN;
	if (out == 0 && early == 0) {
		/* the relay needs no user-space buffers: give them back */
		iobuf_free(c->px, &c->in);
		iobuf_free(c->px, &c->out);
		c->tn.bufs_freed = true;
	}
	return TUNNEL_OPEN;
}

#define EV_IN (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)

enum cstate step_tunnel(struct client *c)
{
	enum tunnel_end r = TUNNEL_OPEN;
	uint32_t ce = c->events, ue = c->up->events;
	/* a direction moves only when its source was readable or its pipe holds bytes (a
	 * blocked destination always has: its EPOLLOUT finds them), so a one-way transfer
	 * spends no splice on the idle way. Writability alone says nothing: epoll reports
	 * EPOLLOUT with every event of an idle socket. The prologue tries everything. */
	bool all = !c->tn.bufs_freed;
	c->events = c->up->events = 0;
	if (!c->tn.bufs_freed)
		r = tunnel_prologue(c);
	if (r != TUNNEL_OPEN)
		return tunnel_close(c, r);
	/* before the SNI verdict only the origin's bytes flow (server-first protocols) */
	bool out_ready = !c->tn.sni_wait && c->in.off >= c->in.len &&
			 (all || (ce & EV_IN) || c->tn.dir[0].in_pipe);
	bool in_ready = c->out.off >= c->out.len && (all || (ue & EV_IN) || c->tn.dir[1].in_pipe);
	r = out_ready ? pump(c, &c->tn.dir[0], c->fd, c->up->fd, true) : TUNNEL_OPEN;
	if (r != TUNNEL_OPEN)
		return tunnel_close(c, r);
	r = in_ready ? pump(c, &c->tn.dir[1], c->up->fd, c->fd, false) : TUNNEL_OPEN;
	if (r != TUNNEL_OPEN)
		return tunnel_close(c, r);
	if (c->tn.dir[0].shut && c->tn.dir[1].shut)
		return CS_CLOSE;
	return CS_WAIT;
}

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

void tunnel_release(struct client *c)
{
	for (int i = 0; i < 2; i++) {
		pipe_put(c->px, &c->dir[i].pipe, c->dir[i].in_pipe == 0);
		c->dir[i].in_pipe = 0;
	}
}

static bool fatal_errno(void)
{
	return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

/* With a byte budget used up, any further byte from the client ends the tunnel. */
static int budget_gate(struct tdir *d, int src)
{
	char b;
	ssize_t n = recv(src, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0)
		return -2;
	if (n == 0) {
		d->eof = true;
		return 1;
	}
	return fatal_errno() ? -1 : 0;
}

/* Move what can move in one direction (`out`: client to origin, the budgeted one).
 * Returns -1 when the tunnel must close, -2 when the byte budget is exceeded. */
static int pump(struct client *c, struct tdir *d, int src, int dst, bool out)
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
				return 0;
			return -1;
		}
		if (d->eof) {
			pipe_put(c->px, &d->pipe, true);
			if (!d->shut && shutdown(dst, SHUT_WR) == -1 && errno != ENOTCONN)
				return -1;
			d->shut = true;
			return 0;
		}
		size_t want = SIZE_MAX;
		if (out) {
			uint64_t room = budget_room(c);
			if (room == 0) {
				int g = budget_gate(d, src);
				if (g == 1)
					continue;
				pipe_put(c->px, &d->pipe, true);
				return g;
			}
			if (room < want)
				want = (size_t)room;
		}
		if (d->pipe.r < 0 && pipe_get(c->px, &d->pipe) == -1)
			return -1;
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
			return 0;
		}
		return -1;
	}
}

/* Before the relay: the "200 Connection established" to the client and any bytes
 * the client sent after its CONNECT head (a ClientHello sent early) to the origin.
 * Returns -1 on a dead socket, 1 while something is pending, 0 when done. */
static int tunnel_prologue(struct client *c)
{
	int pending = 0;
	while (c->out.off < c->out.len) {
		ssize_t n =
		    send(c->fd, c->out.p + c->out.off, c->out.len - c->out.off, MSG_NOSIGNAL);
		if (n > 0) {
			c->out.off += (uint32_t)n;
			continue;
		}
		if (n == -1 && !fatal_errno()) {
			pending = 1;
			break;
		}
		return -1;
	}
	while (c->in.off < c->in.len) {
		ssize_t n =
		    send(c->up->fd, c->in.p + c->in.off, c->in.len - c->in.off, MSG_NOSIGNAL);
		if (n > 0) {
			c->in.off += (uint32_t)n;
			c->bytes_out += (uint64_t)n;
			c->dir[0].bytes += (uint64_t)n;
			continue;
		}
		if (n == -1 && !fatal_errno())
			return 1;
		return -1;
	}
	return pending;
}

/* proxy.sni: the verdict on what the client sent first. */
static int sni_verdict(struct client *c, int r, const char *name)
{
	enum ar_sni_mode mode = c->rref->sni;
	struct ar_host h;
	ar_auto_error ar_error_t err = NULL;
	if (r == AR_SNI_FOUND) {
		if (ar_host_canonicalize(name, &h, &err) == 0 && strcmp(h.name, c->host) == 0)
			return 1;
		snprintf(c->reason, sizeof(c->reason),
			 "TLS server name does not match the CONNECT host %s", c->host);
		return -3;
	}
	if (mode == AR_SNI_CHECK && r != AR_SNI_MALFORMED)
		return 1; /* check: only a server name that is present must match */
	snprintf(c->reason, sizeof(c->reason), "%s (proxy.sni is %s)",
		 r == AR_SNI_NONE ? "TLS ClientHello without a server name"
				  : "the tunnel did not start with a TLS ClientHello",
		 mode == AR_SNI_CHECK ? "check" : "require");
	return -3;
}

/* Read until the ClientHello is complete, then judge it. 1 pass, 0 wait, < 0 end. */
static int sni_step(struct client *c)
{
	char name[AR_HOST_MAX];
	for (;;) {
		int r = ar_proxy_client_hello_sni((const uint8_t *)c->in.p + c->in.off,
						  c->in.len - c->in.off, name, sizeof(name));
		if (r != AR_SNI_MORE) {
			r = sni_verdict(c, r, name);
			c->sni_wait = r < 0;
			return r;
		}
		if (!iobuf_reserve(c->px, &c->in, 4096, 20480))
			return sni_verdict(c, AR_SNI_NOT_TLS, name);
		ssize_t n = recv(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len, 0);
		if (n > 0) {
			c->in.len += (uint32_t)n;
			continue;
		}
		if (n == -1 && !fatal_errno())
			return 0;
		return -1;
	}
}

/* Close the tunnel; a spent budget is audited as 413, an SNI refusal as 421. */
static bool tunnel_end(struct client *c, int why)
{
	if (why == -2) {
		c->status = 413;
		budget_reason(c);
	} else if (why == -3) {
		c->status = 421;
		c->allowed = false;
	}
	client_close(c);
	return false;
}

bool step_tunnel(struct client *c)
{
	int pro = 0;
	if (c->sni_wait) {
		int r = sni_step(c);
		if (r < 0)
			return tunnel_end(c, r);
	}
	if (!c->tunnel_bufs_freed) {
		pro = tunnel_prologue(c);
		if (pro < 0)
			return tunnel_end(c, pro);
		if (pro == 0 && !c->sni_wait) {
			/* the relay needs no user-space buffers: give them back */
			iobuf_free(c->px, &c->in);
			iobuf_free(c->px, &c->out);
			ar_buf_free(&c->uo);
			c->tunnel_bufs_freed = true;
		}
	}
	bool out_ready = !c->sni_wait && c->in.off >= c->in.len;
	bool in_ready = c->out.off >= c->out.len;
	int r = out_ready ? pump(c, &c->dir[0], c->fd, c->up->fd, true) : 0;
	if (r < 0)
		return tunnel_end(c, r);
	r = in_ready ? pump(c, &c->dir[1], c->up->fd, c->fd, false) : 0;
	if (r < 0)
		return tunnel_end(c, r);
	if (c->dir[0].shut && c->dir[1].shut)
		client_close(c);
	return false;
}

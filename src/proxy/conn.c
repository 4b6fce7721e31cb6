/* The connection driver: one client's state machine. Each state has a step (what it
 * can do now; returns the next state, CS_WAIT when it must wait for an event) and a
 * timeout (what its deadline means). Only conn_run loops over steps and sets c->state.
 * A completion (c-ares, the upstream's socket) records its result and schedules the
 * driver (c->task, run after the batch) or calls the client's ev_io; the state's step
 * then returns what follows. Closing is the driver's too: a step returns CS_CLOSE. */
#define _GNU_SOURCE
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

static enum cstate step_sniff(struct client *c)
{
	return c->sniff ? c->sniff(c) : CS_CLOSE;
}

/* REPLY, LINGER, SNIFF and the rest: a passed deadline closes. */
static enum cstate timeout_close(struct client *c)
{
	return c->deadline && c->px->loop.now >= c->deadline ? CS_CLOSE : CS_WAIT;
}

static const struct {
	step_fn *step;
	step_fn *timeout;
} states[CS_CLOSE] = {
    [CS_HEAD] = {step_head, timeout_head},
    [CS_UPSTREAM] = {step_upstream, timeout_upstream},
    [CS_RESOLVE] = {step_resolve, timeout_upstream},
    [CS_CONNECT] = {step_connect, timeout_upstream},
    [CS_FORWARD] = {step_forward, timeout_forward},
    [CS_TUNNEL] = {step_tunnel, timeout_tunnel},
    [CS_REPLY] = {step_reply, timeout_close},
    [CS_LINGER] = {step_linger, timeout_close},
    [CS_SNIFF] = {step_sniff, timeout_close},
    [CS_TLSACCEPT] = {step_tls_accept, timeout_close},
};

static void client_unlink(struct client *c)
{
	struct ar_proxy *px = c->px;
	if (c->prev)
		c->prev->next = c->next;
	else
		px->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
	px->n_clients--;
}

/* Close the client and whatever it holds. Audits an unfinished request. */
static void conn_close(struct client *c)
{
	if (c->state == CS_DEAD)
		return;
	client_audit_close(c);
	search_reset(c);
	tunnel_release(c);
	if (c->up)
		upstream_release(c, false);
	ar_egress_unref(c->egress);
	c->egress = NULL;
	tlsio_free(c->px, &c->tls);
	close(c->fd);
	c->fd = -1;
	iobuf_free(c->px, &c->in);
	iobuf_free(c->px, &c->out);
	exchange_free(c);
	c->state = CS_DEAD;
	c->io.fn = NULL;
	ev_timer_stop(&c->px->loop, &c->timer);
	ev_cancel(&c->px->loop, &c->task);
	client_unlink(c);
	ev_defer_free(&c->px->loop, c);
}

/* Move the client's timer to its nearest deadline (only ever earlier: a timer that
 * fires early finds nothing due and re-arms). */
static void client_arm(struct client *c)
{
	struct ar_proxy *px = c->px;
	int64_t next = c->deadline;
	if (c->state == CS_FORWARD || c->state == CS_TUNNEL) {
		int64_t idle = c->last_active + px->egress->idle_timeout_ms;
		if (next == 0 || idle < next)
			next = idle;
	}
	if (next == 0)
		return; /* an armed timer fires, finds nothing due, and is not re-armed */
	if (next <= px->loop.now)
		next = px->loop.now + 1;
	if (c->timer.slot != 0 && c->timer.when <= next)
		return;
	ev_timer_at(&px->loop, &c->timer, next);
}

/* The one loop over steps: enter `next`, step, until a step says CS_WAIT. */
static void conn_run(struct client *c, enum cstate next)
{
	while (next != CS_WAIT) {
		if (next == CS_CLOSE || next >= CS_DEAD) {
			conn_close(c);
			return;
		}
		c->state = (uint8_t)next;
		next = states[next].step(c);
	}
	if (c->state != CS_DEAD)
		client_arm(c);
}

void conn_start(struct client *c, enum cstate next)
{
	c->last_active = c->px->loop.now;
	conn_run(c, next);
}

static void client_task(void *arg)
{
	struct client *c = arg;
	if (c->state != CS_DEAD)
		conn_start(c, c->state);
}

static void client_event(void *arg, uint32_t events)
{
	struct client *c = arg;
	c->events |= events;
	conn_start(c, c->state);
}

static void client_timer(void *arg)
{
	struct client *c = arg;
	conn_run(c, states[c->state].timeout(c));
}

void conn_close_all(struct ar_proxy *px)
{
	while (px->clients)
		conn_close(px->clients);
}

/* Over --max-conns: answer 503 at once without taking a client slot. */
static void refuse_overload(struct ar_proxy *px, int fd)
{
	char scratch[4096];
	while (recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT) > 0)
		;
	char body[160], msg[512];
	int bl = snprintf(body, sizeof(body),
			  "{\"error\": \"over capacity\", \"reason\": \"more than %d open "
			  "connections (--max-conns)\"}\n",
			  px->cfg.max_conns);
	int n = snprintf(msg, sizeof(msg),
			 "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
			 "Content-Length: %d\r\nX-Agentrun-Reason: over --max-conns %d\r\n"
			 "Connection: close\r\n\r\n%s",
			 bl, px->cfg.max_conns, body);
	if (send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) == -1) {
		/* the client is gone; nothing to tell it */
	}
	shutdown(fd, SHUT_WR);
	close(fd);
	char reason[64];
	snprintf(reason, sizeof(reason), "over --max-conns %d", px->cfg.max_conns);
	struct ar_audit_rec r = {.status = 503, .reason = reason};
	proxy_record(px, &r);
}

struct client *client_new(struct ar_proxy *px, int fd)
{
	if (px->n_clients >= (size_t)px->cfg.max_conns) {
		refuse_overload(px, fd);
		return NULL;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct client *c = ar_xcalloc(1, sizeof(*c));
	c->io = (struct ev_io){client_event, c};
	c->timer = (struct ev_timer){.fn = client_timer, .arg = c};
	c->task = (struct ev_task){.fn = client_task, .arg = c};
	c->fd = fd;
	c->px = px;
	c->state = CS_HEAD;
	c->first_request = true;
	c->head_deadline = true;
	c->deadline = px->loop.now + px->egress->header_timeout_ms;
	tunnel_init(c);
	c->next = px->clients;
	if (px->clients)
		px->clients->prev = c;
	px->clients = c;
	px->n_clients++;
	if (ev_add(&px->loop, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, &c->io) == -1) {
		conn_close(c);
		return NULL;
	}
	return c;
}

/* The per-origin pool of idle upstream connections that makes plain-HTTP keep-alive
 * pay off: a connection goes back to its origin's pool after a clean exchange and is
 * taken again (most recent first) by the next request to the same host:port. Keyed by
 * canonical host and port, so a pooled connection is only reused for the origin whose
 * checked address it was dialled to. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

#define POOL_MAX 256 /* idle upstream connections kept per origin (>= client concurrency) */

struct origin_pool {
	struct origin_pool *next;
	unsigned n_idle;
	struct upstream *head;
	int port;
	bool tls; /* the origin's TLS leg of terminated connections: never for plain HTTP */
	char host[];
};

static unsigned pool_hash(const char *host, int port)
{
	uint32_t h = 2166136261u ^ (uint32_t)port;
	for (const char *p = host; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return h % 256;
}

static struct origin_pool **pool_find(struct ar_proxy *px, const char *host, int port, bool tls)
{
	struct origin_pool **pp = &px->pools[pool_hash(host, port)];
	while (*pp && ((*pp)->port != port || (*pp)->tls != tls || strcmp((*pp)->host, host) != 0))
		pp = &(*pp)->next;
	return pp;
}

/* Take an idle upstream out of its pool and the global idle list. */
static void pool_unlink(struct ar_proxy *px, struct upstream *up)
{
	struct origin_pool *pool = up->pool;
	if (pool == NULL)
		return;
	if (up->pprev)
		up->pprev->pnext = up->pnext;
	else
		pool->head = up->pnext;
	if (up->pnext)
		up->pnext->pprev = up->pprev;
	if (up->gprev)
		up->gprev->gnext = up->gnext;
	else
		px->idle_head = up->gnext;
	if (up->gnext)
		up->gnext->gprev = up->gprev;
	else
		px->idle_tail = up->gprev;
	up->pnext = up->pprev = up->gnext = up->gprev = NULL;
	up->pool = NULL;
	if (--pool->n_idle == 0) {
		struct origin_pool **pp = pool_find(px, pool->host, pool->port, pool->tls);
		*pp = pool->next;
		free(pool);
	}
}

void upstream_close(struct ar_proxy *px, struct upstream *up)
{
	pool_unlink(px, up);
	tlsio_free(px, &up->tls);
	close(up->fd);
	up->fd = -1;
	up->io.fn = NULL;
	ev_defer_free(&px->loop, up);
}

static void pool_put(struct ar_proxy *px, struct upstream *up, const char *host, int port)
{
	struct origin_pool **pp = pool_find(px, host, port, up->tls != NULL);
	if (*pp == NULL) {
		size_t n = strlen(host) + 1;
		*pp = ar_xcalloc(1, sizeof(**pp) + n);
		memcpy((*pp)->host, host, n);
		(*pp)->port = port;
		(*pp)->tls = up->tls != NULL;
	}
	struct origin_pool *pool = *pp;
	if (pool->n_idle >= POOL_MAX) {
		upstream_close(px, up);
		return;
	}
	up->pool = pool;
	up->pnext = pool->head;
	up->pprev = NULL;
	if (pool->head)
		pool->head->pprev = up;
	pool->head = up;
	pool->n_idle++;
	up->gprev = px->idle_tail;
	up->gnext = NULL;
	if (px->idle_tail)
		px->idle_tail->gnext = up;
	else
		px->idle_head = up;
	px->idle_tail = up;
	up->idle_since = px->loop.now;
}

struct upstream *pool_get(struct ar_proxy *px, const char *host, int port, bool tls)
{
	struct origin_pool *pool = *pool_find(px, host, port, tls);
	if (pool == NULL)
		return NULL;
	struct upstream *up = pool->head;
	pool_unlink(px, up);
	return up;
}

void upstream_release(struct client *c, bool reusable)
{
	struct upstream *up = c->up;
	c->up = NULL;
	if (up == NULL)
		return;
	up->owner = NULL;
	up->owner_io = NULL;
	if (reusable && up->connected)
		pool_put(c->px, up, c->host, c->port);
	else
		upstream_close(c->px, up);
}

/* Anything happening on an idle connection (the origin closed it, or sent bytes
 * nobody asked for) makes it useless. */
static void pool_idle_event(struct upstream *up)
{
	char b;
	if (up->tls) { /* a session ticket after the handshake is no reason to close */
		if (uio_idle_check(up) == -1)
			upstream_close(up->px, up);
		return;
	}
	ssize_t n = recv(up->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	upstream_close(up->px, up);
}

void upstream_attach(struct client *c, struct upstream *up)
{
	up->owner = c;
	up->owner_io = &c->io;
	c->up = up;
}

/* An owned upstream's events run its owner's driver through the owner's own ev_io:
 * this layer knows no driver. */
void upstream_event(void *arg, uint32_t events)
{
	struct upstream *up = arg;
	if (up->owner == NULL) {
		pool_idle_event(up);
		return;
	}
	up->ready = true;
	up->events |= events;
	up->owner_io->fn(up->owner_io->arg, events);
}

void pool_expire(struct ar_proxy *px, int64_t older_than)
{
	while (px->idle_head && px->idle_head->idle_since < older_than)
		upstream_close(px, px->idle_head);
}

void pool_free_all(struct ar_proxy *px)
{
	while (px->idle_head)
		upstream_close(px, px->idle_head);
}

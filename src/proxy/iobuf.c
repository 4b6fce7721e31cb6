/* Connection buffers: taken from and returned to the proxy's spare list, so an idle
 * keep-alive connection holds none and the steady state does no malloc per request. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A buffer of one unit goes back to the proxy's spares (an idle keep-alive
 * connection then holds no buffer, and the next request takes one without malloc). */
void iobuf_free(struct ar_proxy *px, struct iobuf *b)
{
	if (b->p && b->cap == AR_IOBUF_UNIT && px->n_spare < AR_ARRAY_SIZE(px->spare))
		px->spare[px->n_spare++] = b->p;
	else
		free(b->p);
	memset(b, 0, sizeof(*b));
}

void iobuf_take(struct ar_proxy *px, struct iobuf *b)
{
	if (b->p == NULL && px->n_spare > 0) {
		b->p = px->spare[--px->n_spare];
		b->cap = AR_IOBUF_UNIT;
		b->off = b->len = 0;
	}
}

/* Make room for `want` more bytes at the end, compacting first and growing up to
 * `max` capacity. False when there is no room. */
bool iobuf_reserve(struct ar_proxy *px, struct iobuf *b, uint32_t want, uint32_t max)
{
	if (max >= AR_IOBUF_UNIT)
		iobuf_take(px, b);
	iobuf_compact(b);
	if (b->cap - b->len >= want)
		return true;
	if (b->off > 0) {
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->cap - b->len >= want)
			return true;
	}
	if (b->cap >= max)
		return b->cap > b->len;
	uint32_t cap = b->cap ? b->cap : AR_IOBUF_UNIT;
	while (cap - b->len < want && cap < max)
		cap *= 2;
	if (cap > max)
		cap = max;
	b->p = ar_xrealloc(b->p, cap);
	b->cap = cap;
	return b->cap > b->len;
}

void iobuf_compact(struct iobuf *b)
{
	if (b->off == b->len)
		b->off = b->len = 0;
}

/* Byte budgets (proxy.max_bytes_out): bytes sent upstream to a host over the proxy's
 * lifetime, all requests and tunnels together, kept across egress swaps. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void budget_attach(struct client *c)
{
	struct ar_proxy *px = c->px;
	const struct ar_egress *r = c->egress;
	c->budget = NULL;
	for (size_t i = 0; i < r->n_budgets; i++) {
		if (strcmp(r->budgets[i].host, c->host) != 0)
			continue;
		struct budget_use *b = px->budgets;
		while (b && strcmp(b->host, c->host) != 0)
			b = b->next;
		if (b == NULL) {
			size_t n = strlen(c->host) + 1;
			b = ar_xcalloc(1, sizeof(*b) + n);
			memcpy(b->host, c->host, n);
			b->next = px->budgets;
			px->budgets = b;
		}
		c->budget = b;
		c->budget_max = (uint64_t)r->budgets[i].max_bytes_out;
		return;
	}
}

uint64_t budget_room(const struct client *c)
{
	if (c->budget == NULL)
		return UINT64_MAX;
	return c->budget->used >= c->budget_max ? 0 : c->budget_max - c->budget->used;
}

void budget_spend(struct client *c, uint64_t n)
{
	if (c->budget)
		c->budget->used += n;
}

bool budget_spent(struct client *c)
{
	if (c->budget == NULL || budget_room(c) > 0)
		return false;
	budget_reason(c);
	return true;
}

void budget_reason(struct client *c)
{
	snprintf(c->reason, sizeof(c->reason),
		 "byte budget exceeded: %s may receive %llu bytes (proxy.max_bytes_out)", c->host,
		 (unsigned long long)c->budget_max);
}

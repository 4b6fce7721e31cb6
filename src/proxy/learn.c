/* Learn mode (docs/learn.md): the proxy decides as usual, but a name the rules refuse
 * is let through and audited as learned, with the rule that would have allowed it,
 * so that `agentrun audit --propose` can write the allow-list from one observed run.
 * What learn mode never lets through is decided elsewhere and stays: the private and
 * metadata ranges (resolve.c, unless allow_private lists them), the SNI check
 * (tunnel.c), the Host check of captured connections (capture.c). Here: an address
 * literal is never learned (it carries no name to write a rule for), and neither is a
 * name whose shape could carry data by itself (src/dns/shape.c, shared with the DNS
 * stub so a name counts once). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "internal.h"

bool learn_decision(struct client *c, const struct ar_host *h, int port, struct ar_decision *d)
{
	char why[AR_HOST_MAX];
	size_t n;
	c->learned = false;
	if (d->allowed || c->egress == NULL || !c->egress->learn)
		return false;
	if (h->family != 0) {
		n = strlen(d->reason);
		snprintf(d->reason + n, sizeof(d->reason) - n,
			 " (learn mode never learns an address)");
		return false;
	}
	if (ar_dns_shape_check(c->px->shape, h->name, why, sizeof(why)) == -1) {
		snprintf(d->reason, sizeof(d->reason), "learn mode refuses %.80s: %.200s", h->name,
			 why);
		return false;
	}
	ar_host_format(h, port, c->learn_rule, sizeof(c->learn_rule));
	snprintf(d->reason, sizeof(d->reason), "learned: %s is not in the allow-list",
		 c->learn_rule);
	d->allowed = true;
	d->rule = c->learn_rule;
	c->learned = true;
	return true;
}

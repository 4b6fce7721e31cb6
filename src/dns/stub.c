/* The stub's decision: which query gets a synthetic address and which gets nothing.
 * The answer depends only on the allow-list, never on the outside world, so a denied
 * name costs no more than an allowed one and no query ever needs to leave. A denied
 * name gets NXDOMAIN whatever its type: the sandbox learns nothing from the answer. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/dns.h"
#include "agentrun/proxy.h"
#include "agentrun/util.h"

struct ar_dns_stub {
	const struct ar_rules *rules;
	struct ar_rules *names; /* the same rules without their ports, index for index */
	struct ar_dns_pool *pool;
	uint16_t *ports;
	size_t n_ports;
	struct ar_dns_shape *shape; /* learn mode (borrowed), or NULL */
};

static int cmp_port(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

void ar_dns_rule_ports(const struct ar_rules *rules, uint16_t **out, size_t *n)
{
	size_t nr = ar_rules_count(rules), k = 0;
	uint16_t *v = ar_xcalloc(nr + 2, sizeof(*v));
	v[k++] = 80;
	v[k++] = 443;
	for (size_t i = 0; i < nr; i++) {
		char host[2 * AR_HOST_MAX];
		int port;
		/* 443 stands for "no port": the web ports are in the set already. A bare
		 * IPv6 rule cannot carry a port and does not split: it names none. */
		if (ar_host_split_port(ar_rules_text(rules, i), host, sizeof(host), &port, 443,
				       NULL) == 0)
			v[k++] = (uint16_t)port;
	}
	qsort(v, k, sizeof(*v), cmp_port);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (u == 0 || v[u - 1] != v[i])
			v[u++] = v[i];
	*out = v;
	*n = u;
}

struct ar_dns_stub *ar_dns_stub_new(const struct ar_rules *rules, struct ar_dns_pool *pool)
{
	struct ar_dns_stub *s = ar_xcalloc(1, sizeof(*s));
	s->pool = pool;
	ar_dns_stub_set_rules(s, rules);
	return s;
}

/* "Is the name covered on any port" is one decision on the rules with their ports
 * removed (a portless rule covers 443): a denied name then costs one pass over the
 * rules, as an allowed one does, instead of one per port. NULL if they do not
 * compile, which cannot happen for rules that compiled with their ports. */
static struct ar_rules *portless(const struct ar_rules *rules)
{
	size_t n = ar_rules_count(rules);
	ar_autostrv char **text = ar_xcalloc(n + 1, sizeof(char *));
	struct ar_rules *out = NULL;
	for (size_t i = 0; i < n; i++) {
		char host[2 * AR_HOST_MAX];
		int port;
		const char *t = ar_rules_text(rules, i);
		text[i] = ar_xstrdup(
		    ar_host_split_port(t, host, sizeof(host), &port, 443, NULL) == 0 ? host : t);
	}
	return ar_rules_compile(text, n, "dns", &out, NULL) == 0 ? out : NULL;
}

void ar_dns_stub_set_rules(struct ar_dns_stub *s, const struct ar_rules *rules)
{
	free(s->ports);
	ar_rules_free(s->names);
	s->rules = rules;
	s->names = portless(rules);
	ar_dns_rule_ports(rules, &s->ports, &s->n_ports);
}

void ar_dns_stub_set_learn(struct ar_dns_stub *s, struct ar_dns_shape *shape)
{
	s->shape = shape;
}

void ar_dns_stub_free(struct ar_dns_stub *s)
{
	if (s == NULL)
		return;
	free(s->ports);
	ar_rules_free(s->names);
	free(s);
}

/* Does any rule cover the name on any port it could be reached on? The rule as the
 * operator wrote it, or NULL. */
static const char *name_rule(const struct ar_dns_stub *s, const struct ar_host *h)
{
	struct ar_decision d;
	if (s->names != NULL) {
		ar_rules_decide(s->names, h, 443, &d);
		for (size_t i = 0; d.allowed && i < ar_rules_count(s->names); i++)
			if (ar_rules_text(s->names, i) == d.rule)
				return ar_rules_text(s->rules, i);
		return NULL;
	}
	for (size_t i = 0; i < s->n_ports; i++) {
		ar_rules_decide(s->rules, h, s->ports[i], &d);
		if (d.allowed)
			return d.rule;
	}
	return NULL;
}

/* "7.5.18.198.in-addr.arpa" -> 198.18.5.7; -1 when it is not an IPv4 reverse name. */
static int parse_reverse(const char *name, struct in_addr *out)
{
	static const char suffix[] = ".in-addr.arpa";
	size_t len = strlen(name), sl = sizeof(suffix) - 1;
	if (len <= sl || strcmp(name + len - sl, suffix) != 0)
		return -1;
	uint32_t a = 0;
	const char *p = name;
	for (int i = 0; i < 4; i++) {
		unsigned v = 0, digits = 0;
		for (; *p >= '0' && *p <= '9' && digits < 4; p++, digits++)
			v = v * 10 + (unsigned)(*p - '0');
		if (digits == 0 || digits > 3 || v > 255 || *p != '.')
			return -1;
		a |= v << (8 * i);
		p++;
	}
	if (p != name + len - sl + 1)
		return -1;
	out->s_addr = htonl(a);
	return 0;
}

static void reason(struct ar_dns_event *ev, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void reason(struct ar_dns_event *ev, const char *fmt, ...)
{
	char tbuf[16];
	va_list ap;
	int n = 0;
	if (ev->qtype != 0) /* 0: the question was unreadable */
		n = snprintf(ev->reason, sizeof(ev->reason),
			     "%s: ", ar_dns_type_name(ev->qtype, tbuf, sizeof(tbuf)));
	va_start(ap, fmt);
	vsnprintf(ev->reason + n, sizeof(ev->reason) - (size_t)n, fmt, ap);
	va_end(ap);
}

static void answer_ptr(struct ar_dns_stub *s, struct in_addr a, struct ar_dns_answer *ans,
		       struct ar_dns_event *ev)
{
	const char *name = ar_dns_pool_contains(s->pool, a) ? ar_dns_pool_name(s->pool, a) : NULL;
	if (name == NULL) {
		ans->rcode = AR_DNS_NXDOMAIN;
		reason(ev, "reverse lookups are answered only for addresses handed out from %s",
		       ar_dns_pool_range(s->pool));
		return;
	}
	ans->type = AR_DNS_T_PTR;
	ans->ptr_name = name;
	ev->allowed = true;
	inet_ntop(AF_INET, &a, ev->addr, sizeof(ev->addr));
	reason(ev, "synthetic address of %s", name);
}

/* An allowed name: A gets its synthetic address, AAAA and HTTPS/SVCB an empty answer
 * (the name exists, the sandbox has no IPv6 route and no use for hints), anything
 * else is refused: only addresses are ever handed out. */
static void answer_allowed(struct ar_dns_stub *s, const char *name, const char *rule,
			   struct ar_dns_answer *ans, struct ar_dns_event *ev)
{
	ev->rule = rule;
	switch (ev->qtype) {
	case AR_DNS_T_A:
		if (ar_dns_pool_get(s->pool, name, &ans->a) == -1) {
			ans->rcode = AR_DNS_SERVFAIL;
			reason(ev, "the synthetic address pool %s is full",
			       ar_dns_pool_range(s->pool));
			return;
		}
		ans->type = AR_DNS_T_A;
		ev->allowed = true;
		inet_ntop(AF_INET, &ans->a, ev->addr, sizeof(ev->addr));
		reason(ev, ev->learned ? "learned: %s is not in the allow-list" : "matches rule %s",
		       rule);
		return;
	case AR_DNS_T_AAAA:
	case AR_DNS_T_HTTPS:
	case 64: /* SVCB */
		ev->allowed = true;
		reason(ev,
		       ev->learned ? "learned: %s is not in the allow-list; empty answer: the "
				     "sandbox has IPv4 only"
				   : "matches rule %s; empty answer: the sandbox has IPv4 only",
		       rule);
		return;
	default:
		ans->rcode = AR_DNS_REFUSED;
		reason(ev, "only A and AAAA queries are answered");
	}
}

/* Learn mode: a name no rule covers is answered, unless its shape is refused (the
 * reason then says which limit). */
static int learn_name(struct ar_dns_stub *s, const struct ar_host *h, struct ar_dns_event *ev)
{
	char why[AR_HOST_MAX];
	if (ar_dns_shape_check(s->shape, h->name, why, sizeof(why)) == -1) {
		reason(ev, "learn mode refuses %.80s: %s", h->name, why);
		return -1;
	}
	snprintf(ev->name, sizeof(ev->name), "%s", h->name);
	ev->learned = true;
	return 0;
}

static void decide(struct ar_dns_stub *s, const struct ar_dns_query *q, struct ar_dns_answer *ans,
		   struct ar_dns_event *ev)
{
	struct ar_host h;
	struct in_addr rev;
	char cbuf[16];
	if (q->qclass != AR_DNS_CLASS_IN) {
		ans->rcode = AR_DNS_REFUSED;
		snprintf(cbuf, sizeof(cbuf), "%u", q->qclass);
		reason(ev, "class %s is not answered (only IN)", cbuf);
		return;
	}
	if (q->qtype == AR_DNS_T_PTR && parse_reverse(q->name, &rev) == 0) {
		answer_ptr(s, rev, ans, ev);
		return;
	}
	ans->rcode = AR_DNS_NXDOMAIN;
	if (!q->host_name) {
		reason(ev, "not a host name");
		return;
	}
	if (ar_host_canonicalize(q->name, &h, NULL) == -1 || h.family != 0) {
		reason(ev, "not a host name (an address or an invalid name)");
		return;
	}
	const char *rule = name_rule(s, &h);
	if (rule == NULL && s->shape != NULL && learn_name(s, &h, ev) == 0)
		rule = ev->name; /* the rule that would allow it: the name itself */
	if (rule == NULL) {
		if (ev->reason[0] == '\0')
			reason(ev, "%s is not in the allow-list", h.name);
		return;
	}
	if (q->qtype == AR_DNS_T_ANY) {
		ans->rcode = AR_DNS_REFUSED;
		ev->rule = rule;
		reason(ev, "ANY queries are refused (RFC 8482)");
		return;
	}
	ans->rcode = AR_DNS_NOERROR;
	answer_allowed(s, h.name, rule, ans, ev);
}

size_t ar_dns_stub_answer(struct ar_dns_stub *s, const uint8_t *query, size_t len, uint8_t *out,
			  size_t cap, struct ar_dns_event *ev)
{
	struct ar_dns_query q;
	struct ar_dns_answer ans = {.rcode = AR_DNS_NOERROR, .ttl = AR_DNS_TTL};
	memset(ev, 0, sizeof(*ev));
	enum ar_dns_parse pr = ar_dns_parse_query(query, len, &q);
	memcpy(ev->name, q.name, sizeof(ev->name));
	ev->qtype = q.qtype;
	switch (pr) {
	case AR_DNS_PARSE_DROP:
		ev->rcode = -1;
		snprintf(ev->reason, sizeof(ev->reason), "dropped: not a query (%zu bytes)", len);
		return 0;
	case AR_DNS_PARSE_NOTIMP:
		ans.rcode = AR_DNS_NOTIMP;
		reason(ev, "%s", q.why);
		break;
	case AR_DNS_PARSE_FORMERR:
		ans.rcode = AR_DNS_FORMERR;
		reason(ev, "malformed query: %s", q.why);
		break;
	case AR_DNS_PARSE_OK:
		decide(s, &q, &ans, ev);
		break;
	}
	size_t n = ar_dns_build_reply(&q, &ans, out, cap);
	if (n == 0) { /* cannot happen with cap >= AR_DNS_MAX_REPLY; answer without records */
		ans = (struct ar_dns_answer){.rcode = AR_DNS_SERVFAIL};
		ev->allowed = false;
		ev->addr[0] = '\0';
		n = ar_dns_build_reply(&q, &ans, out, cap);
	}
	ev->rcode = n > 0 ? (int)ans.rcode : -1;
	return n;
}

void ar_dns_event_audit(const struct ar_dns_event *ev, struct ar_audit_rec *rec)
{
	memset(rec, 0, sizeof(*rec));
	rec->method = "DNS";
	rec->host = ev->name[0] != '\0' ? ev->name : NULL;
	rec->port = 53;
	rec->addr = ev->addr[0] != '\0' ? ev->addr : NULL;
	rec->allowed = ev->allowed;
	rec->status = ev->rcode;
	rec->reason = ev->reason;
	rec->rule = ev->rule;
	rec->learned = ev->learned && ev->allowed;
}

/* The egress object: everything that decides what may leave (the compiled allow-list,
 * the private ranges a name may reach, byte budgets, the SNI mode, the timeouts) in
 * one immutable, reference-counted value. The caller builds it (CLI flags, a policy
 * file, `run`'s in-memory policy) and the proxy swaps it whole on reload; a request
 * keeps the one it was decided with. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/policy.h"
#include "internal.h"

void ar_egress_settings_init(struct ar_egress_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->sni = AR_SNI_CHECK;
}

static const struct {
	size_t field;
	int dflt;
} timeout_defaults[] = {
    {offsetof(struct ar_egress, connect_timeout_ms), 10000},
    {offsetof(struct ar_egress, header_timeout_ms), 10000},
    {offsetof(struct ar_egress, idle_timeout_ms), 120000},
    {offsetof(struct ar_egress, keepalive_timeout_ms), 60000},
};

static void set_timeouts(struct ar_egress *e, const struct ar_egress_settings *s)
{
	e->connect_timeout_ms = s->connect_timeout_ms;
	e->header_timeout_ms = s->header_timeout_ms;
	e->idle_timeout_ms = s->idle_timeout_ms;
	e->keepalive_timeout_ms = s->keepalive_timeout_ms;
	for (size_t i = 0; i < AR_ARRAY_SIZE(timeout_defaults); i++) {
		int *v = (int *)((char *)e + timeout_defaults[i].field);
		if (*v <= 0)
			*v = timeout_defaults[i].dflt;
	}
}

static void copy_budgets(struct ar_egress *e, const struct ar_byte_budget *b, size_t n)
{
	e->budgets = ar_xcalloc(n + 1, sizeof(*e->budgets));
	for (size_t i = 0; i < n; i++) {
		e->budgets[i].host = ar_xstrdup(b[i].host);
		e->budgets[i].max_bytes_out = b[i].max_bytes_out;
	}
	e->n_budgets = n;
}

static void add_cidrs(struct ar_egress *e, const struct ar_cidr *c, size_t n)
{
	e->allow_private =
	    ar_xrealloc(e->allow_private, (e->n_allow_private + n + 1) * sizeof(struct ar_cidr));
	if (n)
		memcpy(e->allow_private + e->n_allow_private, c, n * sizeof(*c));
	e->n_allow_private += n;
}

int ar_egress_new(const struct ar_egress_settings *s, struct ar_egress **out, ar_error_t *err)
{
	struct ar_rules *rules = NULL;
	if (ar_rules_compile(s->allow, s->n_allow, s->origin ? s->origin : "--allow", &rules,
			     err) == -1)
		return -1;
	struct ar_egress *e = ar_xcalloc(1, sizeof(*e));
	atomic_init(&e->refs, 1);
	e->rules = rules;
	e->sni = s->sni;
	e->pass_forwarded = s->pass_forwarded;
	e->learn = s->learn;
	e->private_hint = "--allow-private";
	copy_budgets(e, s->budgets, s->n_budgets);
	add_cidrs(e, s->allow_private, s->n_allow_private);
	set_timeouts(e, s);
	*out = e;
	return 0;
}

/* proxy.allow_private holds strings the policy validated; parse them again here. */
static int policy_cidrs(const struct ar_policy *p, struct ar_cidr *out, ar_error_t *err)
{
	for (size_t i = 0; i < p->proxy.n_allow_private; i++)
		if (ar_cidr_parse(p->proxy.allow_private[i], &out[i]) == -1)
			return ar_error_make(err, 0, "%s: proxy.allow_private: `%s` is not a CIDR",
					     p->origin ? p->origin : "policy",
					     p->proxy.allow_private[i]);
	return 0;
}

int ar_egress_from_policy(const struct ar_policy *p, const struct ar_egress_settings *extra,
			  struct ar_egress **out, ar_error_t *err)
{
	struct ar_egress_settings s = *extra;
	size_t n = p->n_allowed_hosts + extra->n_allow;
	ar_autofree char **rules = ar_xcalloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < p->n_allowed_hosts; i++)
		rules[i] = p->allowed_hosts[i];
	for (size_t i = 0; i < extra->n_allow; i++)
		rules[p->n_allowed_hosts + i] = extra->allow[i];
	ar_autofree struct ar_cidr *cidrs =
	    ar_xcalloc(p->proxy.n_allow_private + 1, sizeof(struct ar_cidr));
	if (policy_cidrs(p, cidrs, err) == -1)
		return -1;
	s.allow = rules;
	s.n_allow = n;
	s.origin = p->origin ? p->origin : "policy";
	s.budgets = p->proxy.budgets;
	s.n_budgets = p->proxy.n_budgets;
	s.sni = p->proxy.sni;
	s.learn = extra->learn || p->mode == AR_MODE_LEARN;
	if (ar_egress_new(&s, out, err) == -1)
		return -1;
	(*out)->private_hint = "the policy's proxy.allow_private";
	add_cidrs(*out, cidrs, p->proxy.n_allow_private);
	return 0;
}

struct ar_egress *ar_egress_ref(struct ar_egress *e)
{
	if (e)
		atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
	return e;
}

void ar_egress_unref(struct ar_egress *e)
{
	if (e == NULL || atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1)
		return;
	ar_rules_free(e->rules);
	for (size_t i = 0; i < e->n_budgets; i++)
		free(e->budgets[i].host);
	free(e->budgets);
	free(e->allow_private);
	free(e);
}

void ar_cleanup_egressp(struct ar_egress **e)
{
	ar_egress_unref(*e);
}

bool egress_private_ok(const struct ar_egress *e, int family, const void *addr)
{
	for (size_t i = 0; i < e->n_allow_private; i++)
		if (ar_cidr_contains(&e->allow_private[i], family, addr))
			return true;
	return false;
}

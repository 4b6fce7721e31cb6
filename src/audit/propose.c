/* The proposal (docs/learn.md): from the allowed connections of one run to the smallest
 * allow-list that would have allowed them, with byte budgets and private ranges, and
 * against the policy the run had, which of its rules and ranges allowed nothing. Pure:
 * the entries, the policy struct and the Public Suffix List in, the proposal out. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/propose.h"
#include "agentrun/proxy.h"
#include "agentrun/rules.h"

/* One distinct host:port the run reached, with what went there. */
struct pair {
	char host[AR_HOST_MAX];
	int port;
	bool literal;
	uint64_t requests, bytes_out;
	struct ar_host h;
	int used_by; /* index of the policy rule that allowed it, or -1 */
};

struct pairs {
	struct pair *v;
	size_t n;
};

uint64_t ar_propose_headroom(uint64_t sent)
{
	uint64_t v = sent > UINT64_MAX / 2 ? UINT64_MAX / 2 : sent * 2, scale = 1;
	while (v / scale >= 100)
		scale *= 10;
	uint64_t r = (v + scale - 1) / scale * scale; /* up, to two significant digits */
	return r < AR_PROPOSE_BUDGET_MIN ? AR_PROPOSE_BUDGET_MIN : r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_rule(const void *a, const void *b)
{
	return strcmp(((const struct ar_proposal_rule *)a)->rule,
		      ((const struct ar_proposal_rule *)b)->rule);
}

static size_t labels(const char *s)
{
	size_t n = 1;
	for (; *s; s++)
		n += *s == '.';
	return n;
}

struct cand {
	const char *parent; /* a suffix of one of the names */
	size_t depth;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->depth != y->depth)
		return x->depth > y->depth ? -1 : 1;
	return strcmp(x->parent, y->parent);
}

/* May *.parent stand for name: name strictly under parent, parent at or below the
 * name's registrable domain (never a public suffix, never above one)? */
static bool under(const char *name, const char *parent, const struct ar_psl *psl)
{
	size_t n = strlen(name), p = strlen(parent);
	if (n <= p + 1 || name[n - p - 1] != '.' || strcmp(name + n - p, parent) != 0)
		return false;
	const char *reg = psl ? ar_psl_registrable(psl, name) : NULL;
	return reg != NULL && p >= strlen(reg);
}

/* Every parent a wildcard could stand at, deepest first. */
static struct cand *candidates(char *const *names, size_t n, const struct ar_psl *psl, size_t *nc)
{
	struct cand *c = NULL;
	size_t k = 0;
	for (size_t i = 0; i < n && psl != NULL; i++) {
		for (const char *p = strchr(names[i], '.'); p != NULL; p = strchr(p + 1, '.')) {
			if (!under(names[i], p + 1, psl))
				break; /* shallower parents are further above the suffix */
			c = ar_xrealloc(c, (k + 1) * sizeof(*c));
			c[k++] = (struct cand){p + 1, labels(p + 1)};
		}
	}
	if (k > 0)
		qsort(c, k, sizeof(*c), cmp_cand);
	*nc = k;
	return c;
}

static struct ar_proposal_rule *add_rule(struct ar_proposal_rule **v, size_t *n, char *text)
{
	*v = ar_xrealloc(*v, (*n + 1) * sizeof(**v));
	struct ar_proposal_rule *r = &(*v)[(*n)++];
	*r = (struct ar_proposal_rule){.rule = text, .added = true};
	return r;
}

static void add_name(struct ar_proposal_rule *r, const char *name)
{
	r->names = ar_xrealloc(r->names, (r->n_names + 2) * sizeof(char *));
	r->names[r->n_names++] = ar_xstrdup(name);
	r->names[r->n_names] = NULL;
}

/* The deepest parent with min or more uncovered names under it, until none is left. */
static void fold_wildcards(char **u, size_t n, int port, size_t min, const struct ar_psl *psl,
			   bool *covered, struct ar_proposal_rule **out, size_t *n_out)
{
	size_t nc = 0;
	ar_autofree struct cand *c = candidates(u, n, psl, &nc);
	for (size_t i = 0; i < nc; i++) {
		if (i > 0 && strcmp(c[i].parent, c[i - 1].parent) == 0)
			continue;
		size_t k = 0;
		for (size_t j = 0; j < n; j++)
			k += !covered[j] && under(u[j], c[i].parent, psl);
		if (k < min)
			continue;
		char *text = ar_xasprintf("*.%s:%d", c[i].parent, port);
		struct ar_rules *check = NULL;
		if (ar_rules_compile(&text, 1, "proposal", &check, NULL) == -1) {
			free(text); /* the rules refuse it (their own suffix list): names stay exact
				     */
			continue;
		}
		ar_rules_free(check);
		struct ar_proposal_rule *r = add_rule(out, n_out, text);
		for (size_t j = 0; j < n; j++)
			if (!covered[j] && under(u[j], c[i].parent, psl)) {
				covered[j] = true;
				add_name(r, u[j]);
			}
	}
}

void ar_propose_fold(char *const *names, size_t n, int port, size_t min, const struct ar_psl *psl,
		     struct ar_proposal_rule **out, size_t *n_out)
{
	ar_autofree char **u = ar_xcalloc(n + 1, sizeof(char *));
	size_t k = 0;
	if (n > 0)
		memcpy(u, names, n * sizeof(char *));
	qsort(u, n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || strcmp(u[k - 1], u[i]) != 0)
			u[k++] = u[i];
	ar_autofree bool *covered = ar_xcalloc(k + 1, sizeof(bool));
	size_t first = *n_out;
	fold_wildcards(u, k, port, min ? min : AR_PROPOSE_WILDCARD_MIN, psl, covered, out, n_out);
	for (size_t j = 0; j < k; j++)
		if (!covered[j])
			add_name(add_rule(out, n_out, ar_xasprintf("%s:%d", u[j], port)), u[j]);
	if (*n_out > first)
		qsort(*out + first, *n_out - first, sizeof(**out), cmp_rule);
}

/* The distinct host:port pairs of the run's allowed connections. */
static void collect_pairs(const struct ar_audit_entries *es, struct pairs *ps,
			  struct ar_proposal *out)
{
	for (size_t i = 0; i < es->n; i++) {
		const struct ar_audit_entry *e = &es->v[i];
		struct ar_host h;
		if (!e->allowed || ar_audit_entry_is_dns(e) || e->host == NULL || e->port <= 0 ||
		    ar_host_canonicalize(e->host, &h, NULL) == -1)
			continue;
		out->requests++;
		out->learned += e->learned;
		size_t j = 0;
		while (j < ps->n &&
		       !(ps->v[j].port == e->port && strcmp(ps->v[j].host, h.name) == 0))
			j++;
		if (j == ps->n) {
			ps->v = ar_xrealloc(ps->v, (ps->n + 1) * sizeof(*ps->v));
			ps->v[ps->n++] = (struct pair){
			    .port = e->port, .h = h, .literal = h.family != 0, .used_by = -1};
			snprintf(ps->v[j].host, sizeof(ps->v[j].host), "%s", h.name);
		}
		ps->v[j].requests++;
		ps->v[j].bytes_out += e->bytes_out;
	}
}

static bool rule_allows(const char *text, const struct pair *pr)
{
	struct ar_rules *r = NULL;
	struct ar_decision d;
	char *t = (char *)text;
	if (ar_rules_compile(&t, 1, "proposal", &r, NULL) == -1)
		return false;
	ar_rules_decide(r, &pr->h, pr->port, &d);
	ar_rules_free(r);
	return d.allowed;
}

static void credit(struct ar_proposal_rule *r, const struct pair *pr)
{
	r->requests += pr->requests;
	r->bytes_out += pr->bytes_out;
	for (size_t i = 0; i < r->n_names; i++)
		if (strcmp(r->names[i], pr->host) == 0)
			return;
	add_name(r, pr->host);
	qsort(r->names, r->n_names, sizeof(char *), cmp_str);
}

/* The policy's rules, in its order: kept when they allowed something, else removed. */
static void keep_used(const struct ar_policy *p, struct pairs *ps, struct ar_proposal *out)
{
	for (size_t i = 0; p != NULL && i < p->n_allowed_hosts; i++) {
		struct ar_proposal_rule r = {.rule = ar_xstrdup(p->allowed_hosts[i])};
		for (size_t j = 0; j < ps->n; j++)
			if (ps->v[j].used_by == -1 && rule_allows(r.rule, &ps->v[j])) {
				ps->v[j].used_by = (int)i;
				credit(&r, &ps->v[j]);
			}
		if (r.requests == 0) {
			out->removed =
			    ar_xrealloc(out->removed, (out->n_removed + 2) * sizeof(char *));
			out->removed[out->n_removed++] = r.rule;
			out->removed[out->n_removed] = NULL;
			continue;
		}
		out->rules = ar_xrealloc(out->rules, (out->n_rules + 1) * sizeof(*out->rules));
		out->rules[out->n_rules++] = r;
	}
}

/* What no kept rule allowed: address literals exactly, names folded per port. */
static void add_missing(struct pairs *ps, const struct ar_propose_opts *o, struct ar_proposal *out)
{
	struct ar_proposal_rule *add = NULL;
	size_t n_add = 0;
	ar_autofree char **names = ar_xcalloc(ps->n + 1, sizeof(char *));
	for (size_t j = 0; j < ps->n; j++) {
		char text[AR_HOST_MAX + 16];
		if (ps->v[j].used_by != -1 || !ps->v[j].literal)
			continue;
		ar_host_format(&ps->v[j].h, ps->v[j].port, text, sizeof(text));
		add_rule(&add, &n_add, ar_xstrdup(text));
	}
	for (size_t j = 0; j < ps->n; j++) {
		size_t k = 0;
		int port = ps->v[j].port;
		bool first = true;
		for (size_t i = 0; i < j && first; i++)
			first = ps->v[i].port != port || ps->v[i].used_by != -1 || ps->v[i].literal;
		if (!first || ps->v[j].used_by != -1 || ps->v[j].literal)
			continue;
		for (size_t i = j; i < ps->n; i++)
			if (ps->v[i].port == port && ps->v[i].used_by == -1 && !ps->v[i].literal)
				names[k++] = ps->v[i].host;
		ar_propose_fold(names, k, port, o->wildcard_min, o->psl, &add, &n_add);
	}
	if (n_add > 0)
		qsort(add, n_add, sizeof(*add), cmp_rule);
	for (size_t i = 0; i < n_add; i++) {
		struct ar_proposal_rule *r = &add[i];
		for (size_t k = 0; k < r->n_names; k++)
			free(r->names[k]);
		r->n_names = 0;
		for (size_t j = 0; j < ps->n; j++)
			if (ps->v[j].used_by == -1 && rule_allows(r->rule, &ps->v[j]))
				credit(r, &ps->v[j]);
	}
	out->rules = ar_xrealloc(out->rules, (out->n_rules + n_add + 1) * sizeof(*out->rules));
	if (n_add > 0)
		memcpy(out->rules + out->n_rules, add, n_add * sizeof(*add));
	out->n_rules += n_add;
	free(add);
}

/* max_bytes_out for every name the run sent to: what it sent, with headroom. */
static void budgets(const struct pairs *ps, struct ar_proposal *out)
{
	for (size_t j = 0; j < ps->n; j++) {
		if (ps->v[j].literal)
			continue; /* budgets are by name */
		size_t i = 0;
		while (i < out->n_budgets && strcmp(out->budgets[i].host, ps->v[j].host) != 0)
			i++;
		if (i == out->n_budgets) {
			out->budgets =
			    ar_xrealloc(out->budgets, (out->n_budgets + 1) * sizeof(*out->budgets));
			out->budgets[out->n_budgets++] =
			    (struct ar_byte_budget){.host = ar_xstrdup(ps->v[j].host)};
		}
		out->budgets[i].max_bytes_out += (int64_t)ps->v[j].bytes_out; /* the sum, for now */
	}
	for (size_t i = 0; i < out->n_budgets; i++)
		out->budgets[i].max_bytes_out =
		    (int64_t)ar_propose_headroom((uint64_t)out->budgets[i].max_bytes_out);
	if (out->n_budgets > 1)
		qsort(out->budgets, out->n_budgets, sizeof(*out->budgets), cmp_str);
}

struct addr {
	int family;
	uint8_t b[16];
	char text[INET6_ADDRSTRLEN];
};

static int cmp_addr(const void *a, const void *b)
{
	const struct addr *x = a, *y = b;
	if (x->family != y->family)
		return x->family == AF_INET ? -1 : 1;
	return memcmp(x->b, y->b, 16);
}

/* The private addresses the run's names were dialled at, sorted, unique. */
static struct addr *private_used(const struct ar_audit_entries *es, size_t *n)
{
	struct addr *v = NULL;
	size_t k = 0;
	for (size_t i = 0; i < es->n; i++) {
		const struct ar_audit_entry *e = &es->v[i];
		struct ar_host h;
		struct addr a = {0};
		if (!e->allowed || ar_audit_entry_is_dns(e) || e->addr == NULL || e->host == NULL ||
		    ar_host_canonicalize(e->host, &h, NULL) == -1 || h.family != 0)
			continue; /* a literal rule reaches its address without allow_private */
		a.family = strchr(e->addr, ':') ? AF_INET6 : AF_INET;
		if (inet_pton(a.family, e->addr, a.b) != 1 ||
		    ar_proxy_addr_classify(a.family, a.b) == AR_ADDR_PUBLIC)
			continue;
		inet_ntop(a.family, a.b, a.text, sizeof(a.text));
		v = ar_xrealloc(v, (k + 1) * sizeof(*v));
		v[k++] = a;
	}
	if (k > 0)
		qsort(v, k, sizeof(*v), cmp_addr);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (u == 0 || cmp_addr(&v[u - 1], &v[i]) != 0)
			v[u++] = v[i];
	*n = u;
	return v;
}

static void push(char ***v, size_t *n, const char *s)
{
	*v = ar_xrealloc(*v, (*n + 2) * sizeof(char *));
	(*v)[(*n)++] = ar_xstrdup(s);
	(*v)[*n] = NULL;
}

/* The policy's ranges that held an address of the run, then each address none held. */
static void private_ranges(const struct ar_audit_entries *es, const struct ar_policy *p,
			   struct ar_proposal *out)
{
	size_t n = 0;
	ar_autofree struct addr *used = private_used(es, &n);
	ar_autofree bool *held = ar_xcalloc(n + 1, sizeof(bool));
	for (size_t i = 0; p != NULL && i < p->proxy.n_allow_private; i++) {
		struct ar_cidr c;
		bool any = false;
		if (ar_cidr_parse(p->proxy.allow_private[i], &c) == 0)
			for (size_t j = 0; j < n; j++)
				if (ar_cidr_contains(&c, used[j].family, used[j].b))
					any = held[j] = true;
		if (any)
			push(&out->allow_private, &out->n_allow_private, p->proxy.allow_private[i]);
		else
			push(&out->private_removed, &out->n_private_removed,
			     p->proxy.allow_private[i]);
	}
	for (size_t j = 0; j < n; j++)
		if (!held[j])
			push(&out->allow_private, &out->n_allow_private, used[j].text);
}

void ar_propose(const struct ar_audit_entries *es, const struct ar_propose_opts *o,
		struct ar_proposal *out)
{
	struct pairs ps = {0};
	memset(out, 0, sizeof(*out));
	collect_pairs(es, &ps, out);
	keep_used(o->policy, &ps, out);
	add_missing(&ps, o, out);
	budgets(&ps, out);
	private_ranges(es, o->policy, out);
	out->mode_learn = o->policy != NULL && o->policy->mode == AR_MODE_LEARN;
	free(ps.v);
}

void ar_proposal_free(struct ar_proposal *p)
{
	for (size_t i = 0; i < p->n_rules; i++) {
		free(p->rules[i].rule);
		ar_strv_free(p->rules[i].names);
	}
	free(p->rules);
	ar_strv_free(p->removed);
	for (size_t i = 0; i < p->n_budgets; i++)
		free(p->budgets[i].host);
	free(p->budgets);
	ar_strv_free(p->allow_private);
	ar_strv_free(p->private_removed);
	memset(p, 0, sizeof(*p));
}

/* The allow-list under review: what the observed run did through each rule (write
 * channels, rules never used) and what each rule opens whatever the run did (every
 * host, a platform where anyone can publish, a paste host). The platforms are the
 * list below, documented in docs/review.md, plus any public suffix the Public Suffix
 * List names. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/review.h"
#include "agentrun/rules.h"
#include "internal.h"

/* Where anyone can publish under a name of the platform's: a wildcard over one of
 * these (or over a parent of one) reaches every tenant's content. */
static const char *const shared_platforms[] = {
    "github.io",
    "githubusercontent.com",
    "github.dev",
    "gitlab.io",
    "amazonaws.com",
    "cloudfront.net",
    "googleapis.com",
    "appspot.com",
    "googleusercontent.com",
    "firebaseapp.com",
    "web.app",
    "run.app",
    "blob.core.windows.net",
    "azurewebsites.net",
    "azureedge.net",
    "herokuapp.com",
    "netlify.app",
    "vercel.app",
    "pages.dev",
    "workers.dev",
    "r2.dev",
    "ngrok.io",
    "ngrok-free.app",
    "glitch.me",
    "onrender.com",
    "fly.dev",
    "surge.sh",
    "digitaloceanspaces.com",
    "trycloudflare.com",
    "repl.co",
};

/* Paste and file-drop hosts: whatever is written there, anyone can read. */
static const char *const paste_hosts[] = {
    "pastebin.com",   "gist.github.com", "gist.githubusercontent.com",
    "paste.ee",	      "hastebin.com",	 "dpaste.org",
    "dpaste.com",     "rentry.co",	 "paste.rs",
    "termbin.com",    "transfer.sh",	 "0x0.st",
    "file.io",	      "justpaste.it",	 "controlc.com",
    "privatebin.net",
};

static bool ends_with_label(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);
	return n > s && name[n - s - 1] == '.' && strcmp(name + n - s, suffix) == 0;
}

/* The host part of a rule, lowercase, without "*." and the port; *wild says whether
 * it was a wildcard. */
static void rule_host(const char *rule, char *host, size_t size, bool *wild)
{
	int port;
	char h[2 * AR_HOST_MAX];
	if (ar_host_split_port(rule, h, sizeof(h), &port, 443, NULL) == -1)
		snprintf(h, sizeof(h), "%s", rule);
	*wild = strncmp(h, "*.", 2) == 0;
	snprintf(host, size, "%s", *wild ? h + 2 : h);
	for (char *p = host; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
}

/* Why *.domain reaches content anyone can publish, or NULL. */
static const char *platform_why(const char *domain, const struct ar_psl *psl, char *buf,
				size_t size)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(shared_platforms); i++) {
		const char *pl = shared_platforms[i];
		if (strcmp(domain, pl) == 0 || ends_with_label(pl, domain)) {
			snprintf(buf, size,
				 "%.200s is a shared platform: anyone can publish under it", pl);
			return buf;
		}
	}
	if (psl != NULL && ar_psl_registrable(psl, domain) == NULL) {
		snprintf(
		    buf, size,
		    "%.200s is a public suffix (Public Suffix List): anyone can register a name "
		    "under it",
		    domain);
		return buf;
	}
	return NULL;
}

static const char *paste_host(const char *host, bool wild)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(paste_hosts); i++)
		if (strcmp(host, paste_hosts[i]) == 0 ||
		    (wild && ends_with_label(paste_hosts[i], host)))
			return paste_hosts[i];
	return NULL;
}

void review_rules(const struct ar_review_input *in, struct ar_review *out)
{
	const struct ar_policy *p = in->p;
	for (size_t i = 0; i < p->n_allowed_hosts; i++) {
		char host[2 * AR_HOST_MAX], why[AR_HOST_MAX + 128], key[48];
		bool wild;
		const char *paste;
		snprintf(key, sizeof(key), "allowed_hosts[%zu]", i);
		rule_host(p->allowed_hosts[i], host, sizeof(host), &wild);
		if (strcmp(host, "*") == 0)
			review_add(out, "wildcard-any", key,
				   "list the hosts the job needs (agentrun run --learn, then "
				   "agentrun audit --propose)",
				   "rule %s allows every host and every address",
				   p->allowed_hosts[i]);
		else if (wild && platform_why(host, in->psl, why, sizeof(why)) != NULL)
			review_add(
			    out, "shared-platform-wildcard", key,
			    "name the exact hosts the job uses (their owner's names), not the "
			    "platform",
			    "rule %s: %s; an injected agent can send to, and fetch from, "
			    "anyone's",
			    p->allowed_hosts[i], why);
		if ((paste = paste_host(host, wild)) != NULL)
			review_add(
			    out, "paste-host", key,
			    "remove the rule unless the job must publish there; give it a "
			    "byte budget (proxy.max_bytes_out) if it only reads",
			    "rule %s allows %s, where anything written can be read by anyone",
			    p->allowed_hosts[i], paste);
	}
}

static void add_unique(char ***v, size_t *n, const char *s)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i], s) == 0)
			return;
	*v = ar_xrealloc(*v, (*n + 2) * sizeof(char *));
	(*v)[(*n)++] = ar_xstrdup(s);
	(*v)[*n] = NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The index of the first rule that allows the entry, or -1. */
static long first_rule(struct ar_rules **rules, size_t n, const struct ar_audit_entry *e)
{
	struct ar_host h;
	if (!e->allowed || ar_audit_entry_is_dns(e) || e->host == NULL || e->port <= 0 ||
	    ar_host_canonicalize(e->host, &h, NULL) == -1)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct ar_decision d;
		if (rules[i] == NULL)
			continue;
		ar_rules_decide(rules[i], &h, e->port, &d);
		if (d.allowed)
			return (long)i;
	}
	return -1;
}

static void count(struct ar_review_host *h, const struct ar_audit_entry *e, char ***methods,
		  size_t *n_methods)
{
	struct ar_host c;
	h->requests++;
	h->bytes_out += e->bytes_out;
	h->bytes_in += e->bytes_in;
	if (e->has_body) {
		h->bodies++;
		if (e->body_bytes > h->largest_body)
			h->largest_body = e->body_bytes;
	}
	if (ar_host_canonicalize(e->host, &c, NULL) == 0)
		add_unique(&h->names, &h->n_names, c.name);
	add_unique(methods, n_methods, e->method ? e->method : "-");
}

/* Every name the rule allowed has a byte budget: what the smallest is, or -1. */
static int64_t budgeted(const struct ar_policy *p, const struct ar_review_host *h)
{
	int64_t min = -1;
	for (size_t i = 0; i < h->n_names; i++) {
		int64_t b = -1;
		for (size_t k = 0; k < p->proxy.n_budgets; k++)
			if (strcmp(p->proxy.budgets[k].host, h->names[i]) == 0)
				b = p->proxy.budgets[k].max_bytes_out;
		if (b < 0)
			return -1;
		min = min < 0 || b < min ? b : min;
	}
	return min;
}

static void verdict(const struct ar_review_input *in, struct ar_review_host *h,
		    struct ar_review *out)
{
	uint64_t kib = in->write_kib ? in->write_kib : AR_REVIEW_WRITE_KIB;
	char key[48];
	snprintf(key, sizeof(key), "allowed_hosts[%zu]", h->index);
	if (!out->have_audit) {
		h->verdict = "no audit";
	} else if (h->requests == 0) {
		h->verdict = "unused";
		review_add(out, "rule-unused", key, "remove the rule (agentrun audit --propose)",
			   "rule %s allowed nothing in the observed run", h->rule);
	} else if (h->bodies > 0 || h->bytes_out > kib * 1024) {
		h->verdict = "write channel";
		int64_t b = budgeted(in->p, h);
		review_add(
		    out, "write-channel", key,
		    "keep it only if the job writes there; bound it with proxy.max_bytes_out "
		    "(agentrun audit --propose writes one)",
		    "rule %s: %" PRIu64 " request(s) (%s) sent %" PRIu64 " bytes, %" PRIu64
		    " request bod%s (largest %" PRIu64
		    " bytes): an injected agent can send data out through it%s",
		    h->rule, h->requests, h->methods, h->bytes_out, h->bodies,
		    h->bodies == 1 ? "y" : "ies", h->largest_body,
		    b >= 0 ? "; bounded by proxy.max_bytes_out" : "");
		if (b >= 0)
			out->f[out->n - 1].severity = AR_SEV_LOW;
	} else {
		h->verdict = "read";
	}
}

void review_hosts(const struct ar_review_input *in, struct ar_review *out)
{
	const struct ar_policy *p = in->p;
	size_t n = p->n_allowed_hosts;
	struct ar_rules **rules = ar_xcalloc(n + 1, sizeof(*rules));
	char ***methods = ar_xcalloc(n + 1, sizeof(*methods));
	size_t *n_methods = ar_xcalloc(n + 1, sizeof(size_t));
	out->hosts = ar_xcalloc(n + 1, sizeof(*out->hosts));
	for (size_t i = 0; i < n; i++) {
		ar_rules_compile(&p->allowed_hosts[i], 1, "review", &rules[i], NULL);
		out->hosts[i] =
		    (struct ar_review_host){.rule = ar_xstrdup(p->allowed_hosts[i]), .index = i};
	}
	out->n_hosts = n;
	for (size_t k = 0; in->audit != NULL && k < in->audit->n; k++) {
		long i = first_rule(rules, n, &in->audit->v[k]);
		if (i >= 0)
			count(&out->hosts[i], &in->audit->v[k], &methods[i], &n_methods[i]);
	}
	for (size_t i = 0; i < n; i++) {
		struct ar_review_host *h = &out->hosts[i];
		ar_autobuf struct ar_buf m = {0};
		if (n_methods[i] > 1)
			qsort(methods[i], n_methods[i], sizeof(char *), cmp_str);
		if (h->n_names > 1)
			qsort(h->names, h->n_names, sizeof(char *), cmp_str);
		for (size_t k = 0; k < n_methods[i]; k++)
			ar_buf_printf(&m, "%s%s", k ? "," : "", methods[i][k]);
		h->methods = ar_xstrdup(m.data ? m.data : "");
		verdict(in, h, out);
		ar_strv_free(methods[i]);
		ar_rules_free(rules[i]);
	}
	free(rules);
	free(methods);
	free(n_methods);
}

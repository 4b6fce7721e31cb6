/* The review's three outputs: text for people, --json for tools, and SARIF 2.1.0 for
 * code scanning (each finding a result on the policy file's line, each kind a rule of
 * the tool's driver). Deterministic: the findings in the order the checks made them. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "agentrun/review.h"
#include "internal.h"

static const char *const upper[] = {"INFO", "LOW", "MEDIUM", "HIGH", "CRITICAL"};

static void text_hosts(const struct ar_review *r, struct ar_buf *out)
{
	size_t w = 4;
	for (size_t i = 0; i < r->n_hosts; i++)
		if (strlen(r->hosts[i].rule) > w)
			w = strlen(r->hosts[i].rule);
	ar_buf_printf(out, "%-*s %8s %12s %6s %10s  %-14s %s\n", (int)w, "RULE", "REQUESTS",
		      "BYTES_OUT", "BODIES", "LARGEST", "VERDICT", "METHODS");
	for (size_t i = 0; i < r->n_hosts; i++) {
		const struct ar_review_host *h = &r->hosts[i];
		ar_buf_printf(
		    out, "%-*s %8" PRIu64 " %12" PRIu64 " %6" PRIu64 " %10" PRIu64 "  %-14s %s\n",
		    (int)w, h->rule, h->requests, h->bytes_out, h->bodies, h->largest_body,
		    h->verdict, h->methods[0] ? h->methods : "-");
	}
}

void ar_review_format_text(const struct ar_review *r, struct ar_buf *out)
{
	ar_buf_printf(out, "review of %s%s%s%s\n", r->policy_path ? r->policy_path : "policy",
		      r->have_audit ? " with an audit" : " (no audit: no evidence of use)",
		      r->target ? ", target " : "", r->target ? r->target : "");
	if (r->n_hosts > 0)
		text_hosts(r, out);
	for (size_t i = 0; i < r->n; i++) {
		const struct ar_review_finding *f = &r->f[i];
		ar_buf_printf(out, "%-8s %s %s:%d%s%s%s\n  evidence: %s\n  fix: %s\n",
			      upper[f->severity], f->id, r->policy_path ? r->policy_path : "policy",
			      f->line, f->key[0] ? " (" : "", f->key, f->key[0] ? ")" : "",
			      f->evidence, f->fix);
	}
	ar_buf_printf(out, "%zu finding(s): %zu critical, %zu high, %zu medium, %zu low\n", r->n,
		      ar_review_count(r, AR_SEV_CRITICAL),
		      ar_review_count(r, AR_SEV_HIGH) - ar_review_count(r, AR_SEV_CRITICAL),
		      ar_review_count(r, AR_SEV_MEDIUM) - ar_review_count(r, AR_SEV_HIGH),
		      ar_review_count(r, AR_SEV_LOW) - ar_review_count(r, AR_SEV_MEDIUM));
}

static void json_str(struct ar_buf *out, const char *key, const char *v, bool comma)
{
	ar_buf_printf(out, "%s\"%s\": ", comma ? ", " : "", key);
	if (v)
		ar_json_quote(out, v);
	else
		ar_buf_puts(out, "null");
}

static void json_host(struct ar_buf *out, const struct ar_review_host *h)
{
	json_str(out, "rule", h->rule, false);
	ar_buf_printf(out,
		      ", \"requests\": %" PRIu64 ", \"bytes_out\": %" PRIu64
		      ", \"bytes_in\": %" PRIu64 ", \"bodies\": %" PRIu64
		      ", \"largest_body\": %" PRIu64,
		      h->requests, h->bytes_out, h->bytes_in, h->bodies, h->largest_body);
	json_str(out, "methods", h->methods, true);
	json_str(out, "verdict", h->verdict, true);
	ar_buf_puts(out, ", \"names\": [");
	for (size_t k = 0; k < h->n_names; k++) {
		if (k)
			ar_buf_puts(out, ", ");
		ar_json_quote(out, h->names[k]);
	}
	ar_buf_puts(out, "]");
}

void ar_review_format_json(const struct ar_review *r, struct ar_buf *out)
{
	ar_buf_puts(out, "{");
	json_str(out, "policy", r->policy_path, false);
	json_str(out, "target", r->target, true);
	ar_buf_printf(out, ", \"audit\": %s, \"hosts\": [", r->have_audit ? "true" : "false");
	for (size_t i = 0; i < r->n_hosts; i++) {
		ar_buf_puts(out, i ? ", {" : "{");
		json_host(out, &r->hosts[i]);
		ar_buf_puts(out, "}");
	}
	ar_buf_puts(out, "], \"findings\": [");
	for (size_t i = 0; i < r->n; i++) {
		const struct ar_review_finding *f = &r->f[i];
		ar_buf_puts(out, i ? ", {" : "{");
		json_str(out, "id", f->id, false);
		json_str(out, "severity", ar_severity_name(f->severity), true);
		json_str(out, "evidence", f->evidence, true);
		json_str(out, "fix", f->fix, true);
		json_str(out, "key", f->key, true);
		ar_buf_printf(out, ", \"line\": %d}", f->line);
	}
	ar_buf_printf(out, "], \"summary\": {\"findings\": %zu", r->n);
	for (int s = AR_SEV_CRITICAL; s >= AR_SEV_INFO; s--)
		ar_buf_printf(
		    out, ", \"%s\": %zu", ar_severity_name((enum ar_severity)s),
		    ar_review_count(r, (enum ar_severity)s) -
			(s < AR_SEV_CRITICAL ? ar_review_count(r, (enum ar_severity)(s + 1)) : 0));
	ar_buf_puts(out, "}}\n");
}

/* SARIF's level for a severity: error, warning, note. */
static const char *level(enum ar_severity s)
{
	return s >= AR_SEV_HIGH ? "error" : s == AR_SEV_MEDIUM ? "warning" : "note";
}

static void sarif_rules(struct ar_buf *out)
{
	for (size_t i = 0; i < review_n_kinds; i++) {
		const struct review_kind *k = &review_kinds[i];
		ar_buf_puts(out, i ? ", {" : "{");
		json_str(out, "id", k->id, false);
		ar_buf_puts(out, ", \"shortDescription\": {");
		json_str(out, "text", k->title, false);
		ar_buf_printf(out, "}, \"defaultConfiguration\": {\"level\": \"%s\"}",
			      level(k->severity));
		ar_buf_printf(out, ", \"properties\": {\"severity\": \"%s\"}}",
			      ar_severity_name(k->severity));
	}
}

static size_t kind_index(const char *id)
{
	for (size_t i = 0; i < review_n_kinds; i++)
		if (strcmp(review_kinds[i].id, id) == 0)
			return i;
	return 0;
}

static void sarif_result(struct ar_buf *out, const struct ar_review *r,
			 const struct ar_review_finding *f)
{
	ar_autofree char *msg = ar_xasprintf("%s. Fix: %s", f->evidence, f->fix);
	json_str(out, "ruleId", f->id, false);
	ar_buf_printf(out, ", \"ruleIndex\": %zu, \"level\": \"%s\", \"message\": {",
		      kind_index(f->id), level(f->severity));
	json_str(out, "text", msg, false);
	ar_buf_puts(out, "}, \"locations\": [{\"physicalLocation\": {\"artifactLocation\": {");
	json_str(out, "uri", r->policy_path ? r->policy_path : "policy.json", false);
	ar_buf_printf(out, "}, \"region\": {\"startLine\": %d}}}], \"properties\": {",
		      f->line > 0 ? f->line : 1);
	json_str(out, "severity", ar_severity_name(f->severity), false);
	json_str(out, "key", f->key, true);
	json_str(out, "fix", f->fix, true);
	ar_buf_puts(out, "}");
}

void ar_review_format_sarif(const struct ar_review *r, struct ar_buf *out)
{
	ar_buf_puts(out,
		    "{\"$schema\": "
		    "\"https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/"
		    "sarif-schema-2.1.0.json\", "
		    "\"version\": \"2.1.0\", \"runs\": [{\"tool\": {\"driver\": {\"name\": "
		    "\"agentrun review\", \"version\": \"" AGENTRUN_VERSION "\", \"rules\": [");
	sarif_rules(out);
	ar_buf_puts(out, "]}}, \"results\": [");
	for (size_t i = 0; i < r->n; i++) {
		ar_buf_puts(out, i ? ", {" : "{");
		sarif_result(out, r, &r->f[i]);
		ar_buf_puts(out, "}");
	}
	ar_buf_puts(out, "]}]}\n");
}

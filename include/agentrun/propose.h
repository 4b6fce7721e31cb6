/* From one observed run to the smallest policy (docs/learn.md): `agentrun audit
 * --propose` builds the allow-list, budgets and private ranges that would have allowed
 * what the audit shows, and, given the policy the run had, what to remove and add as a
 * unified diff of that file. Pure over the audit entries and the policy text; the
 * Public Suffix List comes through ar_psl (libpsl, loaded only by the commands that use
 * it). */
#ifndef AGENTRUN_PROPOSE_H
#define AGENTRUN_PROPOSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentrun/audit.h"
#include "agentrun/error.h"
#include "agentrun/policy.h"
#include "agentrun/util.h"

#define AR_PROPOSE_WILDCARD_MIN 4    /* distinct names under a parent for *.parent */
#define AR_PROPOSE_BUDGET_MIN	4096 /* the smallest budget proposed */

/* The Public Suffix List (src/audit/psl.c): libpsl.so.5 through dlopen, so that a
 * command that does not propose never loads it. */
struct ar_psl;
int ar_psl_open(struct ar_psl **out, ar_error_t *err);
/* The registrable domain of a lowercase name (a suffix of it: "github.com" for
 * "api.github.com", "x.github.io" for itself), or NULL when the name is a public
 * suffix or above one. */
const char *ar_psl_registrable(const struct ar_psl *p, const char *name);
void ar_psl_close(struct ar_psl *p);

/* One rule of the proposed allow-list, with the evidence for it. */
struct ar_proposal_rule {
	char *rule;
	char **names; /* the distinct names it allowed in the run, sorted */
	size_t n_names;
	uint64_t requests;
	uint64_t bytes_out;
	bool added; /* not in the policy compared against (always, without one) */
};

struct ar_proposal {
	struct ar_proposal_rule *rules; /* the new allowed_hosts, in order */
	size_t n_rules;
	char **removed; /* rules of the policy that allowed nothing in the run */
	size_t n_removed;
	struct ar_byte_budget *budgets; /* proxy.max_bytes_out, sorted by host */
	size_t n_budgets;
	char **allow_private; /* proxy.allow_private: kept ranges, then addresses used */
	size_t n_allow_private;
	char **private_removed; /* ranges of the policy no address of the run was in */
	size_t n_private_removed;
	uint64_t requests, learned; /* connections it is built from */
	bool mode_learn;	    /* the policy says "mode": "learn": the proposal says enforce */
};

struct ar_propose_opts {
	size_t wildcard_min; /* 0: AR_PROPOSE_WILDCARD_MIN */
	const struct ar_psl *psl;
	const struct ar_policy *policy; /* compare against it, or NULL */
};

/* Build the proposal from the entries (allowed connections only; DNS answers and
 * refusals propose nothing). */
void ar_propose(const struct ar_audit_entries *es, const struct ar_propose_opts *o,
		struct ar_proposal *out);
void ar_proposal_free(struct ar_proposal *p);
/* Twice what was sent, rounded up to two significant digits, at least
 * AR_PROPOSE_BUDGET_MIN. */
uint64_t ar_propose_headroom(uint64_t sent);
/* Fold names seen on one port into rules: an exact "name:port" each, or "*.parent:port"
 * for min or more distinct names under parent, at the deepest such parent, never at or
 * above a public suffix. names need not be sorted or unique; *out (n_out) is sorted by
 * rule, each with its names. */
void ar_propose_fold(char *const *names, size_t n, int port, size_t min, const struct ar_psl *psl,
		     struct ar_proposal_rule **out, size_t *n_out);

/* The proposed policy: without a policy, a document of its own; with one, the file's
 * text with allowed_hosts, proxy.max_bytes_out, proxy.allow_private (and mode) replaced
 * or added, every other byte as it was. -1 when the text is not a JSON object. */
int ar_propose_policy_text(const struct ar_proposal *p, const char *text, size_t len,
			   struct ar_buf *out, ar_error_t *err);
/* A unified diff (3 lines of context) from a to b, with the two file labels. */
void ar_unified_diff(const char *a, size_t alen, const char *b, size_t blen, const char *label_a,
		     const char *label_b, struct ar_buf *out);
/* The text report and the --json document. diff may be NULL (no policy). */
void ar_proposal_format_text(const struct ar_proposal *p, const char *policy_text, const char *diff,
			     struct ar_buf *out);
void ar_proposal_format_json(const struct ar_proposal *p, const char *policy_text, const char *diff,
			     struct ar_buf *out);

#endif

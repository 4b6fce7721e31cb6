/* agentrun audit FILE [--json]: per-host allowed/denied counts and bytes from a proxy
 * audit log; with --propose, the smallest policy that would have allowed the run
 * (docs/learn.md). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/audit.h"
#include "agentrun/cli.h"
#include "agentrun/log.h"
#include "agentrun/net.h"
#include "agentrun/policy.h"
#include "agentrun/propose.h"
#include "agentrun/util.h"

struct audit_opts {
	const char *file;
	bool json;
	bool propose;
	const char *policy;
	size_t wildcard_min;
};

static int set_wildcard_min(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	int64_t n;
	if (ar_parse_int(v, 2, 1000, &n) == -1)
		return ar_error_make(err, 0, "%s `%s`: expected 2..1000", opt->flag, v);
	((struct audit_opts *)ctx)->wildcard_min = (size_t)n;
	return 0;
}

static const struct ar_opt opts[] = {
    {"--json", 0, NULL, "print {\"entries\": [...], \"hosts\": {...}, \"summary\": {...}}",
     ar_opt_true, offsetof(struct audit_opts, json)},
    {"--propose", 0, NULL,
     "the smallest allowed_hosts, max_bytes_out and allow_private\nthat would have allowed the "
     "run (docs/learn.md)",
     ar_opt_true, offsetof(struct audit_opts, propose)},
    {"--policy", 'p', "P",
     "with --propose: compare with policy P: the rules that allowed\nnothing, what to add, as a "
     "unified diff of P",
     ar_opt_str, offsetof(struct audit_opts, policy)},
    {"--wildcard-min", 0, "N",
     "with --propose: distinct names under a parent for a\n*.parent rule (default 4)",
     set_wildcard_min, 0},
    {NULL},
};

const struct ar_cli_cmd ar_cli_audit = {
    .name = "audit",
    .fn = ar_cmd_audit,
    .summary = "summarise a proxy audit log, or a sandbox's",
    .synopsis = "audit FILE|NAME [--json]\n"
		"audit FILE|NAME --propose [--policy P] [--wildcard-min N] [--json]",
    .about = "Summarise a proxy audit log (JSON Lines): per-host request counts (allowed and\n"
	     "served; allowed but failed: the proxy answered 413, 502, 503 or 504; denied),\n"
	     "bytes out and in, and a closing summary line. NAME is a sandbox as `agentrun ps`\n"
	     "lists it (live or finished), or a policy name: its newest sandbox.\n"
	     "Lines that are not audit objects are counted and reported on stderr.\n\n"
	     "--propose: from the run's allowed connections, the smallest allowed_hosts (exact\n"
	     "names with their ports; *.parent past N names under it, never at or above a\n"
	     "public suffix), max_bytes_out (twice what was sent) and allow_private (the\n"
	     "private addresses used); with --policy, what to remove and add as a unified\n"
	     "diff of the file. The same audit gives the same proposal.",
    .opts = opts,
    .operand = "FILE or NAME",
    .exit_status = "0 ok (an empty log too), 2 bad input (missing or unreadable file,\n"
		   "a file with lines but no audit entry, bad flag; with --propose a policy\n"
		   "that does not load, no libpsl).",
    .usage_exit = AR_EXIT_USAGE,
};

/* NAME is a live sandbox `ps` lists with network none: it has no proxy, so nothing
 * was audited, which is an answer, not an error. */
static bool without_proxy(const char *name, ar_error_t *err)
{
	struct ar_net_state st;
	bool exact;
	if (strchr(name, '/') != NULL || ar_cli_sandbox_find(name, &st, &exact) == 0 ||
	    strcmp(st.network, "none") != 0)
		return false;
	ar_error_release(err);
	ar_warn("audit: %s has network none: no proxy, so nothing to audit", st.name);
	return true;
}

/* The proposed policy text and, against a policy, its diff (empty when none). */
static int proposal_texts(const struct ar_proposal *pr, const char *policy, struct ar_buf *text,
			  struct ar_buf *diff, ar_error_t *err)
{
	ar_autofree char *ptext = NULL;
	size_t plen = 0;
	if (policy && ar_read_file(policy, 1u << 24, &ptext, &plen, err) < 0)
		return -1;
	if (ar_propose_policy_text(pr, ptext, plen, text, err) == -1)
		return ar_error_wrap(err, "%s", policy);
	if (policy != NULL) {
		ar_autofree char *proposed = ar_xasprintf("%s (proposed)", policy);
		ar_unified_diff(ptext, plen, text->data ? text->data : "", text->len, policy,
				proposed, diff);
		if (diff->data == NULL)
			ar_buf_puts(diff, "");
	}
	return 0;
}

static int propose(const struct audit_opts *o, const char *data, size_t len, struct ar_buf *out,
		   ar_error_t *err)
{
	ar_autopolicy struct ar_policy *p = NULL;
	struct ar_psl *psl = NULL;
	struct ar_audit_entries es;
	struct ar_proposal pr;
	ar_autobuf struct ar_buf text = {0};
	ar_autobuf struct ar_buf diff = {0};
	if ((o->policy && ar_policy_load(o->policy, &p, err) == -1) || ar_psl_open(&psl, err) == -1)
		return -1;
	ar_audit_read_entries(data, len, &es);
	struct ar_propose_opts po = {.wildcard_min = o->wildcard_min, .psl = psl, .policy = p};
	ar_propose(&es, &po, &pr);
	int rc = proposal_texts(&pr, o->policy, &text, &diff, err);
	if (rc == 0 && o->json)
		ar_proposal_format_json(&pr, text.data, o->policy ? diff.data : NULL, out);
	else if (rc == 0)
		ar_proposal_format_text(&pr, text.data, o->policy ? diff.data : NULL, out);
	ar_proposal_free(&pr);
	ar_audit_entries_free(&es);
	ar_psl_close(psl);
	return rc;
}

int ar_cmd_audit(int argc, char **argv)
{
	struct audit_opts o = {0};
	ar_auto_error ar_error_t err = NULL;
	ar_autofree char *data = NULL;
	ar_autofree char *file = NULL;
	ar_autofree char *note = NULL;
	ar_autobuf struct ar_buf out = {0};
	struct ar_audit_summary s;
	size_t len = 0;

	ar_autoopts struct ar_opt_result r = {0};
	int status;
	if (ar_cli_parse(&ar_cli_audit, argc, argv, &o, &r, &status) != 0)
		return status;
	o.file = r.operands[0];
	if (!o.propose && (o.policy || o.wildcard_min))
		return ar_cli_usage_error("audit", AR_EXIT_USAGE,
					  "--policy and --wildcard-min go with --propose");
	file = ar_net_audit_resolve(o.file, &note, &err);
	if (note != NULL)
		ar_warn("audit: %s", note);
	if (file == NULL && without_proxy(o.file, &err)) /* an empty summary */
		data = ar_xstrdup("");
	else if (file == NULL || ar_read_file(file, 1u << 30, &data, &len, &err) < 0) {
		ar_error_wrap(&err, "audit");
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
	ar_audit_summarize(data, len, &s);
	/* lines, none of them an audit entry: the wrong file, not an empty log */
	if (s.requests == 0 && s.invalid_lines > 0) {
		ar_error_make(&err, 0,
			      "audit: %s: no audit entries (%" PRIu64
			      " line(s), none a proxy audit object; first: line %zu)",
			      o.file, s.invalid_lines, s.first_invalid);
		ar_error_print(&err);
		ar_audit_summary_free(&s);
		return AR_EXIT_USAGE;
	}
	if (s.invalid_lines > 0)
		ar_warn("audit: %s: %" PRIu64 " line(s) are not audit entries (first: line %zu)",
			file, s.invalid_lines, s.first_invalid);
	if (!o.propose && o.json)
		ar_audit_format_json(&s, &out);
	else if (!o.propose)
		ar_audit_format_text(&s, &out);
	ar_audit_summary_free(&s);
	if (o.propose && propose(&o, data, len, &out, &err) == -1) {
		ar_error_wrap(&err, "audit --propose");
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
	fwrite(out.data, 1, out.len, stdout);
	return AR_EXIT_OK;
}

/* agentrun audit FILE [--json]: per-host allowed/denied counts and bytes from a proxy audit log. */
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
#include "agentrun/util.h"

struct audit_opts {
	const char *file;
	bool json;
};

static const struct ar_opt opts[] = {
    {"--json", 0, NULL, "print {\"entries\": [...], \"hosts\": {...}, \"summary\": {...}}",
     ar_opt_true, offsetof(struct audit_opts, json)},
    {NULL},
};

const struct ar_cli_cmd ar_cli_audit = {
    .name = "audit",
    .fn = ar_cmd_audit,
    .summary = "summarise a proxy audit log, or a sandbox's",
    .synopsis = "audit FILE|NAME [--json]",
    .about = "Summarise a proxy audit log (JSON Lines): per-host request counts (allowed and\n"
	     "served; allowed but failed: the proxy answered 413, 502, 503 or 504; denied),\n"
	     "bytes out and in, and a closing summary line. NAME is a sandbox as `agentrun ps`\n"
	     "lists it (live or finished), or a policy name: its newest sandbox.\n"
	     "Lines that are not audit objects are counted and reported on stderr.",
    .opts = opts,
    .operand = "FILE or NAME",
    .exit_status = "0 ok (an empty log too), 2 bad input (missing or unreadable file,\n"
		   "a file with lines but no audit entry, bad flag).",
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
	if (o.json)
		ar_audit_format_json(&s, &out);
	else
		ar_audit_format_text(&s, &out);
	fwrite(out.data, 1, out.len, stdout);
	ar_audit_summary_free(&s);
	return AR_EXIT_OK;
}

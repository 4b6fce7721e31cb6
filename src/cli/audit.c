/* agentrun audit FILE [--json]: per-host allowed/denied counts and bytes from a proxy
 * audit log; with --propose, the smallest policy that would have allowed the run
 * (docs/learn.md). */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

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

static void usage(void)
{
	printf(
	    "Usage: agentrun audit FILE|NAME [--json]\n"
	    "       agentrun audit FILE|NAME --propose [--policy P] [--wildcard-min N] [--json]\n\n"
	    "Summarise a proxy audit log (JSON Lines): per-host request counts (allowed and\n"
	    "served; allowed but failed: the proxy answered 413, 502, 503 or 504; denied),\n"
	    "bytes out and in, and a closing summary line. NAME is a sandbox as `agentrun ps`\n"
	    "lists it (live or finished), or a policy name: its newest sandbox.\n\n"
	    "  --json     print {\"entries\": [...], \"hosts\": {...}, \"summary\": {...}}\n"
	    "  --propose  the smallest allowed_hosts, max_bytes_out and allow_private that\n"
	    "             would have allowed the run (docs/learn.md)\n"
	    "  --policy P compare with policy P: rules that allowed nothing, what to add,\n"
	    "             as a unified diff of P\n"
	    "  --wildcard-min N  distinct names under a parent for a *.parent rule (4)\n"
	    "  -h, --help this help\n\n"
	    "Exit status: 0 ok (an empty log too), 2 bad input (missing or unreadable file,\n"
	    "a file with lines but no audit entry, bad flag).\n"
	    "Lines that are not audit objects are counted and reported on stderr.\n");
}

static int parse_opts(int argc, char **argv, struct audit_opts *o)
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"propose", no_argument, NULL, 'P'},
	    {"policy", required_argument, NULL, 'p'},
	    {"wildcard-min", required_argument, NULL, 'w'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int64_t v;
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "hp:", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'P':
			o->propose = true;
			break;
		case 'p':
			o->policy = optarg;
			break;
		case 'w':
			if (ar_parse_int(optarg, 2, 1000, &v) == -1)
				return ar_cli_usage_error("audit", -AR_EXIT_USAGE,
							  "--wildcard-min `%s`: expected 2..1000",
							  optarg);
			o->wildcard_min = (size_t)v;
			break;
		case 'h':
			usage();
			return 1;
		default:
			return ar_cli_usage_error("audit", -AR_EXIT_USAGE, "unknown option `%s`",
						  argv[optind - 1]);
		}
	}
	if (optind == argc)
		return ar_cli_usage_error("audit", -AR_EXIT_USAGE, "missing FILE or NAME");
	if (optind != argc - 1)
		return ar_cli_usage_error("audit", -AR_EXIT_USAGE, "unexpected argument `%s`",
					  argv[optind + 1]);
	o->file = argv[optind];
	if (!o->propose && (o->policy || o->wildcard_min))
		return ar_cli_usage_error("audit", -AR_EXIT_USAGE,
					  "--policy and --wildcard-min go with --propose");
	return 0;
}

/* The proposed policy text and, against a policy, its diff (NULL without one). */
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

	int r = parse_opts(argc, argv, &o);
	if (r != 0)
		return r > 0 ? AR_EXIT_OK : -r;
	file = ar_net_audit_resolve(o.file, &note, &err);
	if (note != NULL)
		ar_warn("audit: %s", note);
	if (file == NULL || ar_read_file(file, 1u << 30, &data, &len, &err) < 0) {
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

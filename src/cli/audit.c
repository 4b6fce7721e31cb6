/* agentrun audit FILE [--json]: per-host allowed/denied counts and bytes from a proxy audit log. */
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
#include "agentrun/util.h"

struct audit_opts {
	const char *file;
	bool json;
};

static void usage(void)
{
	printf("Usage: agentrun audit FILE|NAME [--json]\n\n"
	       "Summarise a proxy audit log (JSON Lines): per-host request counts (allowed and\n"
	       "served; allowed but failed: the proxy answered 413, 502, 503 or 504; denied),\n"
	       "bytes out and in, and a closing summary line. NAME is a sandbox as `agentrun ps`\n"
	       "lists it (live or finished), or a policy name: its newest sandbox.\n\n"
	       "  --json     print {\"entries\": [...], \"hosts\": {...}, \"summary\": {...}}\n"
	       "  -h, --help this help\n\n"
	       "Exit status: 0 ok (an empty log too), 2 bad input (missing or unreadable file,\n"
	       "a file with lines but no audit entry, bad flag).\n"
	       "Lines that are not audit objects are counted and reported on stderr.\n");
}

static int parse_opts(int argc, char **argv, struct audit_opts *o)
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = true;
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
	return 0;
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
	if (o.json)
		ar_audit_format_json(&s, &out);
	else
		ar_audit_format_text(&s, &out);
	fwrite(out.data, 1, out.len, stdout);
	ar_audit_summary_free(&s);
	return AR_EXIT_OK;
}

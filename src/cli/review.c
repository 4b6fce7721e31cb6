/* agentrun review --policy P [--audit A] [--container C | --pid PID | --name N |
 * --manifest F] [--json | --sarif] [--fail-on SEV] [--write-kib N]: a policy reviewed
 * with evidence (docs/review.md). This file reads the inputs; src/review judges.
 * Exit 0 no finding at or above --fail-on, 1 some, 2 bad input. */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentrun/audit.h"
#include "agentrun/check.h"
#include "agentrun/cli.h"
#include "agentrun/log.h"
#include "agentrun/net.h"
#include "agentrun/policy.h"
#include "agentrun/propose.h"
#include "agentrun/review.h"
#include "agentrun/util.h"

enum { OUT_TEXT, OUT_JSON, OUT_SARIF };

struct review_opts {
	const char *policy;
	const char *audit;
	struct ar_check_target target;
	int targets;
	int format;
	enum ar_severity fail_on;
	uint64_t write_kib;
};

static void usage(void)
{
	printf("Usage: agentrun review --policy P [--audit FILE|NAME]\n"
	       "                       [--container C | --pid PID | --name N | --manifest F]\n"
	       "                       [--json | --sarif] [--fail-on SEV] [--write-kib N]\n\n"
	       "Review a policy before an agent goes live, with evidence: per allowed host what\n"
	       "the audited run did (requests, methods, bytes out, request bodies) and a verdict\n"
	       "(write channel, read, unused); wildcards over platforms where anyone can publish;\n"
	       "credentials in env; the kubeconfig's token lifetime and RBAC question; mounts of\n"
	       "home, .git, container runtime sockets, /run, SSH agents; limits; and drift of a\n"
	       "running target (check's findings). Each finding: id, severity, evidence, fix.\n\n"
	       "  -p, --policy P     the policy file (its lines locate the findings)\n"
	       "      --audit A      an audit log, or a sandbox as `agentrun ps` lists it\n"
	       "      --container C | --pid PID | --name N | --manifest F\n"
	       "                     also report drift of that target (as agentrun check)\n"
	       "      --json         {\"policy\", \"target\", \"audit\", \"hosts\", \"findings\",\n"
	       "                     \"summary\"}\n"
	       "      --sarif        SARIF 2.1.0, findings on the policy file's lines\n"
	       "      --fail-on SEV  exit 1 on findings at or above SEV: info, low, medium,\n"
	       "                     high (default), critical\n"
	       "      --write-kib N  bytes out past which a host is a write channel (64)\n"
	       "  -h, --help         this help\n\n"
	       "Exit status: 0 no finding at or above --fail-on, 1 some, 2 bad input.\n");
}

#define bad(...) ar_cli_usage_error("review", -AR_EXIT_USAGE, __VA_ARGS__)

static int parse_one(struct review_opts *o, int c, const char *arg)
{
	int64_t v;
	switch (c) {
	case 'p':
		o->policy = arg;
		return 0;
	case 'a':
		o->audit = arg;
		return 0;
	case 'c':
		o->target.container = arg, o->targets++;
		return 0;
	case 'P':
		if (ar_parse_int(arg, 1, 4194304, &v) < 0)
			return bad("--pid `%s`: not a process id", arg);
		o->target.pid_text = arg, o->target.pid = (int)v, o->targets++;
		return 0;
	case 'n':
		o->target.name = arg, o->targets++;
		return 0;
	case 'm':
		o->target.manifest = arg, o->targets++;
		return 0;
	case 'j':
	case 's':
		if (o->format != OUT_TEXT)
			return bad("%s", "--json and --sarif: choose one");
		o->format = c == 'j' ? OUT_JSON : OUT_SARIF;
		return 0;
	case 'f':
		if (ar_severity_parse(arg) < 0)
			return bad("--fail-on `%s`: expected info, low, medium, high or critical",
				   arg);
		o->fail_on = (enum ar_severity)ar_severity_parse(arg);
		return 0;
	case 'w':
		if (ar_parse_int(arg, 1, 1 << 30, &v) < 0)
			return bad("--write-kib `%s`: expected a number of KiB", arg);
		o->write_kib = (uint64_t)v;
		return 0;
	}
	return bad("%s", "internal: unknown option");
}

static int parse_opts(int argc, char **argv, struct review_opts *o)
{
	static const struct option longopts[] = {
	    {"policy", required_argument, NULL, 'p'},
	    {"audit", required_argument, NULL, 'a'},
	    {"container", required_argument, NULL, 'c'},
	    {"pid", required_argument, NULL, 'P'},
	    {"name", required_argument, NULL, 'n'},
	    {"manifest", required_argument, NULL, 'm'},
	    {"json", no_argument, NULL, 'j'},
	    {"sarif", no_argument, NULL, 's'},
	    {"fail-on", required_argument, NULL, 'f'},
	    {"write-kib", required_argument, NULL, 'w'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	o->fail_on = AR_SEV_HIGH;
	while ((c = getopt_long(argc, argv, "+:p:h", longopts, NULL)) != -1) {
		int r = 0;
		if (c == 'h') {
			usage();
			return 1;
		}
		if (c == ':')
			return bad("option `%s` needs a value", argv[optind - 1]);
		if (c == '?')
			return bad("unknown option `%s`", argv[optind - 1]);
		if ((r = parse_one(o, c, optarg)) != 0)
			return r;
	}
	if (optind < argc)
		return bad("unexpected argument `%s`", argv[optind]);
	if (o->policy == NULL)
		return bad("%s", "missing --policy P");
	if (o->targets > 1)
		return bad("%s", "give at most one of --container, --pid, --name, --manifest");
	return 0;
}

/* Everything review reads, owned here. */
struct inputs {
	struct ar_policy *p;
	char *policy_text;
	size_t policy_len;
	struct ar_audit_entries audit;
	bool have_audit;
	struct ar_psl *psl;
	char *kube_text;
	size_t kube_len;
	char *kube_error;
	struct ar_findings drift;
	char *subject;
};

static void inputs_free(struct inputs *in)
{
	ar_policy_free(in->p);
	free(in->policy_text);
	ar_audit_entries_free(&in->audit);
	ar_psl_close(in->psl);
	free(in->kube_text);
	free(in->kube_error);
	ar_findings_free(&in->drift);
	free(in->subject);
}

static int read_audit(const char *arg, struct inputs *in, ar_error_t *err)
{
	ar_autofree char *note = NULL, *data = NULL;
	size_t len = 0;
	ar_autofree char *file = ar_net_audit_resolve(arg, &note, err);
	if (note != NULL)
		ar_warn("review: %s", note);
	if (file == NULL || ar_read_file(file, 1u << 30, &data, &len, err) < 0)
		return ar_error_wrap(err, "--audit");
	ar_audit_read_entries(data, len, &in->audit);
	in->have_audit = true;
	if (in->audit.n == 0 && in->audit.invalid_lines > 0)
		return ar_error_make(err, 0,
				     "--audit %s: no audit entries (%" PRIu64
				     " line(s), none a proxy audit object)",
				     arg, in->audit.invalid_lines);
	return 0;
}

static int read_inputs(const struct review_opts *o, struct inputs *in, ar_error_t *err)
{
	ar_auto_error ar_error_t soft = NULL;
	if (ar_policy_load(o->policy, &in->p, err) < 0 ||
	    ar_read_file(o->policy, 1u << 24, &in->policy_text, &in->policy_len, err) < 0)
		return -1;
	if (o->audit != NULL && read_audit(o->audit, in, err) < 0)
		return -1;
	if (ar_psl_open(&in->psl, &soft) < 0)
		ar_warn("review: %s; public suffixes are judged by the platform list alone",
			soft->msg);
	if (in->p->kubeconfig != NULL &&
	    ar_read_file(in->p->kubeconfig, 1u << 22, &in->kube_text, &in->kube_len, &soft) < 0)
		in->kube_error = ar_xstrdup(soft ? soft->msg : "unreadable");
	if (o->targets == 1 &&
	    ar_check_drift(&o->target, o->policy, in->p, &in->drift, &in->subject, err) < 0)
		return -1;
	return 0;
}

int ar_cmd_review(int argc, char **argv)
{
	struct review_opts o = {0};
	__attribute__((cleanup(inputs_free))) struct inputs in = {0};
	ar_auto_error ar_error_t err = NULL;
	ar_autobuf struct ar_buf out = {0};
	struct ar_review r;

	int rc = parse_opts(argc, argv, &o);
	if (rc != 0)
		return rc > 0 ? AR_EXIT_OK : -rc;
	if (read_inputs(&o, &in, &err) < 0) {
		ar_error_wrap(&err, "review");
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
	struct ar_review_input ri = {
	    .p = in.p,
	    .policy_path = o.policy,
	    .policy_text = in.policy_text,
	    .policy_len = in.policy_len,
	    .audit = in.have_audit ? &in.audit : NULL,
	    .psl = in.psl,
	    .home = getenv("HOME"),
	    .ssh_auth_sock = getenv("SSH_AUTH_SOCK"),
	    .kubeconfig_text = in.kube_text,
	    .kubeconfig_len = in.kube_len,
	    .kubeconfig_error = in.kube_error,
	    .now = (int64_t)time(NULL),
	    .write_kib = o.write_kib,
	    .drift = o.targets ? &in.drift : NULL,
	    .target = in.subject,
	};
	ar_review_run(&ri, &r);
	void (*fmt[])(const struct ar_review *, struct ar_buf *) = {
	    [OUT_TEXT] = ar_review_format_text,
	    [OUT_JSON] = ar_review_format_json,
	    [OUT_SARIF] = ar_review_format_sarif,
	};
	fmt[o.format](&r, &out);
	fwrite(out.data, 1, out.len, stdout);
	rc = ar_review_count(&r, o.fail_on) > 0 ? 1 : AR_EXIT_OK;
	ar_review_free(&r);
	return fflush(stdout) == EOF ? AR_EXIT_USAGE : rc;
}

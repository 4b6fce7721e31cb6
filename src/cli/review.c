/* agentrun review --policy P [--audit A] [--container C | --pid PID | --name N |
 * --manifest F] [--json | --sarif] [--fail-on SEV] [--write-kib N]: a policy reviewed
 * with evidence (docs/review.md). This file reads the inputs; src/review judges.
 * Exit 0 no finding at or above --fail-on, 1 some, 2 bad input. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stddef.h>
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

struct review_opts {
	const char *policy;
	const char *audit;
	struct ar_check_target target;
	bool json, sarif;
	enum ar_severity fail_on;
	uint64_t write_kib;
};

#define OPT(f) offsetof(struct review_opts, f)

static int set_pid(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct review_opts *o = ctx;
	int64_t pid;
	if (ar_parse_int(v, 1, 4194304, &pid) < 0)
		return ar_error_make(err, 0, "--pid `%s`: not a process id", v);
	o->target.pid_text = v;
	o->target.pid = (int)pid;
	return 0;
}

static int set_fail_on(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	int sev = ar_severity_parse(v);
	if (sev < 0)
		return ar_error_make(
		    err, 0, "--fail-on `%s`: expected info, low, medium, high or critical", v);
	((struct review_opts *)ctx)->fail_on = (enum ar_severity)sev;
	return 0;
}

static int set_write_kib(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	int64_t kib;
	if (ar_parse_int(v, 1, 1 << 30, &kib) < 0)
		return ar_error_make(err, 0, "--write-kib `%s`: expected a number of KiB", v);
	((struct review_opts *)ctx)->write_kib = (uint64_t)kib;
	return 0;
}

static const struct ar_opt opts[] = {
    {"--policy", 'p', "P", "the policy file (its lines locate the findings)", ar_opt_str,
     OPT(policy)},
    {"--audit", 0, "FILE|NAME", "an audit log, or a sandbox as `agentrun ps` lists it", ar_opt_str,
     OPT(audit)},
    {"--container", 'c', "C", "also report drift of a docker container (as check)", ar_opt_str,
     OPT(target.container)},
    {"--pid", 0, "PID", "... of a running process", set_pid, 0},
    {"--name", 0, "N", "... of an agentrun sandbox", ar_opt_str, OPT(target.name)},
    {"--manifest", 0, "F", "... of Kubernetes objects (YAML or JSON)", ar_opt_str,
     OPT(target.manifest)},
    {"--json", 0, NULL,
     "print {\"policy\", \"target\", \"audit\", \"hosts\", \"findings\",\n\"summary\"}",
     ar_opt_true, OPT(json)},
    {"--sarif", 0, NULL, "SARIF 2.1.0, the findings on the policy file's lines", ar_opt_true,
     OPT(sarif)},
    {"--fail-on", 0, "SEV",
     "exit 1 on findings at or above SEV: info, low, medium,\nhigh (default), critical",
     set_fail_on, 0},
    {"--write-kib", 0, "N", "bytes out past which a host is a write channel (64)", set_write_kib,
     0},
    {NULL},
};

const struct ar_cli_cmd ar_cli_review = {
    .name = "review",
    .fn = ar_cmd_review,
    .summary = "review a policy with the evidence of an audit and a target",
    .synopsis = "review --policy P [--audit FILE|NAME]\n"
		" [--container C | --pid PID | --name N | --manifest F]\n"
		" [--json | --sarif] [--fail-on SEV] [--write-kib N]",
    .about = "Review a policy before an agent goes live, with evidence: per allowed host what\n"
	     "the audited run did (requests, methods, bytes out, request bodies) and a verdict\n"
	     "(write channel, read, unused); wildcards over platforms where anyone can publish;\n"
	     "credentials in env; the kubeconfig's token lifetime and RBAC question; mounts of\n"
	     "home, .git, container runtime sockets, /run, SSH agents; limits; and drift of a\n"
	     "running target (check's findings). Each finding: id, severity, evidence, fix\n"
	     "(docs/review.md).",
    .opts = opts,
    .exit_status = "0 no finding at or above --fail-on, 1 some, 2 bad input.",
    .usage_exit = AR_EXIT_USAGE,
};

#define bad(...) ar_cli_usage_error("review", AR_EXIT_USAGE, __VA_ARGS__)

/* What the table cannot say: one policy, at most one target, one output. */
static int check_opts(const struct review_opts *o)
{
	const struct ar_check_target *t = &o->target;
	if (o->policy == NULL)
		return bad("%s", "missing --policy P");
	if ((t->container != NULL) + (t->pid_text != NULL) + (t->name != NULL) +
		(t->manifest != NULL) >
	    1)
		return bad("%s", "give at most one of --container, --pid, --name, --manifest");
	if (o->json && o->sarif)
		return bad("%s", "--json and --sarif: choose one");
	return 0;
}

static bool has_target(const struct review_opts *o)
{
	const struct ar_check_target *t = &o->target;
	return t->container || t->pid_text || t->name || t->manifest;
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
	if (has_target(o) &&
	    ar_check_drift(&o->target, o->policy, in->p, &in->drift, &in->subject, err) < 0)
		return -1;
	return 0;
}

int ar_cmd_review(int argc, char **argv)
{
	struct review_opts o = {.fail_on = AR_SEV_HIGH};
	__attribute__((cleanup(inputs_free))) struct inputs in = {0};
	ar_autoopts struct ar_opt_result res = {0};
	ar_auto_error ar_error_t err = NULL;
	ar_autobuf struct ar_buf out = {0};
	struct ar_review r;

	int rc;
	if (ar_cli_parse(&ar_cli_review, argc, argv, &o, &res, &rc) != 0)
		return rc;
	if ((rc = check_opts(&o)) != 0)
		return rc;
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
	    .drift = has_target(&o) ? &in.drift : NULL,
	    .target = in.subject,
	};
	ar_review_run(&ri, &r);
	if (o.sarif)
		ar_review_format_sarif(&r, &out);
	else if (o.json)
		ar_review_format_json(&r, &out);
	else
		ar_review_format_text(&r, &out);
	fwrite(out.data, 1, out.len, stdout);
	rc = ar_review_count(&r, o.fail_on) > 0 ? 1 : AR_EXIT_OK;
	ar_review_free(&r);
	return fflush(stdout) == EOF ? AR_EXIT_USAGE : rc;
}

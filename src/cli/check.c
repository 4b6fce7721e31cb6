/* agentrun check --policy FILE (--inspect FILE | --container NAME | --pid PID | --name NAME)
 * [--json]:
 * drift of a docker container or of a process from a policy. Exit 0 no drift, 1 drift,
 * 2 bad input. The work is in src/check/. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/check.h"
#include "agentrun/cli.h"
#include "agentrun/net.h"
#include "agentrun/policy.h"
#include "agentrun/util.h"

struct check_opts {
	const char *policy;
	const char *inspect;
	const char *container;
	const char *pid_text;
	const char *name; /* an agentrun sandbox as `agentrun ps` lists it */
	pid_t pid;
	bool json;
	char *policy_buf; /* the policy --name found */
};

static void usage(void)
{
	printf(
	    "Usage: agentrun check --policy FILE (--inspect FILE | --container NAME | --pid PID |\n"
	    "                      --name NAME) [--json]\n\n"
	    "Compare what is running with a policy and print one finding per drift:\n"
	    "  DRIFT read-only rootfs expected true actual false\n"
	    "    fix: --read-only\n"
	    "  NAME vs policy P: N drift finding(s)\n\n"
	    "  --policy FILE      the policy the container or process should follow\n"
	    "  --inspect FILE     saved `docker inspect` output (array or object; - = stdin)\n"
	    "  --container NAME   run `docker inspect NAME` and check that container\n"
	    "  --pid PID          check a running process from /proc (needs root for\n"
	    "                     another user's process)\n"
	    "  --name NAME        an agentrun sandbox as `agentrun ps` lists it; --policy\n"
	    "                     defaults to the file it was started with\n"
	    "  --json             print {\"subject\", \"policy\", \"drift\", \"findings\": [...]}\n"
	    "  -h, --help         this help\n\n"
	    "Secrets in the environment are named, never printed.\n"
	    "Exit status: 0 no drift, 1 drift, 2 bad input (policy, inspect file, flag, pid,\n"
	    "docker missing or failing).\n");
}

#define bad(...) ar_cli_usage_error("check", -AR_EXIT_USAGE, __VA_ARGS__)

static int parse_opts(int argc, char **argv, struct check_opts *o)
{
	static const struct option longopts[] = {
	    {"policy", required_argument, NULL, 'p'},
	    {"inspect", required_argument, NULL, 'i'},
	    {"container", required_argument, NULL, 'c'},
	    {"pid", required_argument, NULL, 'P'},
	    {"name", required_argument, NULL, 'n'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->policy = optarg;
			break;
		case 'i':
			o->inspect = optarg;
			break;
		case 'c':
			o->container = optarg;
			break;
		case 'P':
			o->pid_text = optarg;
			break;
		case 'n':
			o->name = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage();
			return 1;
		case ':':
			return bad("option `%s` needs a value", argv[optind - 1]);
		default:
			return bad("unknown option `%s`", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad("unexpected argument `%s`", argv[optind]);
	if (o->policy == NULL && o->name == NULL)
		return bad("%s", "missing --policy FILE");
	if ((o->inspect != NULL) + (o->container != NULL) + (o->pid_text != NULL) +
		(o->name != NULL) !=
	    1)
		return bad("%s", "give exactly one of --inspect FILE, --container NAME, --pid PID, "
				 "--name NAME");
	if (o->container && o->container[0] == '\0')
		return bad("%s", "--container: empty name");
	int64_t pid;
	if (o->pid_text && ar_parse_int(o->pid_text, 1, 4194304, &pid) < 0)
		return bad("--pid `%s`: not a process id", o->pid_text);
	if (o->pid_text)
		o->pid = (pid_t)pid;
	return 0;
}

static int read_input(const char *path, char **data, size_t *len, ar_error_t *err)
{
	return ar_read_file(strcmp(path, "-") == 0 ? "/dev/stdin" : path, 0, data, len, err);
}

/* Docker facts from a saved file or the live container; *subject gets its name. */
static int docker_findings(const struct check_opts *o, const struct ar_policy *p,
			   struct ar_findings *out, char **subject, ar_error_t *err)
{
	ar_autofree char *data = NULL;
	size_t len = 0;
	ar_autodocker_facts struct ar_docker_facts *d = NULL;
	const char *origin = o->inspect ? o->inspect : o->container;
	int r = o->inspect ? read_input(o->inspect, &data, &len, err)
			   : ar_check_docker_inspect("docker", o->container, &data, &len, err);
	if (r < 0)
		return ar_error_wrap(err, "%s `%s`", o->inspect ? "--inspect" : "--container",
				     origin);
	if (ar_check_inspect_parse(data, len, origin, &d, err) < 0)
		return ar_error_wrap(err, "%s", o->inspect ? "--inspect" : "--container");
	ar_check_docker(p, d, out);
	*subject = ar_xstrdup(d->name[0] ? d->name : origin);
	return 0;
}

/* --name: the sandbox's command, and by default the policy it was started with. */
static int resolve_name(struct check_opts *o, ar_error_t *err)
{
	struct ar_net_state s;
	if (o->name == NULL)
		return 0;
	if (strchr(o->name, '/') != NULL || ar_net_state_read(o->name, &s, err) < 0)
		return ar_error_wrap(err, "--name `%s`: no such sandbox (see agentrun ps)",
				     o->name);
	if (!ar_net_proc_alive(s.owner, s.owner_start) || s.pid <= 0)
		return ar_error_make(err, 0, "--name `%s`: the sandbox is not running", o->name);
	o->pid = ar_net_state_command_pid(&s);
	if (o->policy == NULL && s.policy[0] == '\0')
		return ar_error_make(err, 0,
				     "--name `%s`: it runs the embedded default policy; give "
				     "--policy FILE",
				     o->name);
	if (o->policy == NULL)
		o->policy = o->policy_buf = ar_xstrdup(s.policy);
	return 0;
}

static int proc_findings(const struct check_opts *o, const struct ar_policy *p,
			 struct ar_findings *out, char **subject, ar_error_t *err)
{
	ar_autoproc_facts struct ar_proc_facts *f = NULL;
	struct ar_check_net_facts *net = NULL;
	struct ar_net_state s;
	if (ar_check_proc_read(o->pid, &f, err) < 0)
		return ar_error_wrap(err, "--pid %d", (int)o->pid);
	/* the network facts, through the sandbox's state when agentrun runs it */
	bool agentrun = ar_net_state_find_pid(o->pid, &s) == 0;
	if (p->network == AR_NETWORK_PROXY &&
	    ar_check_net_read(o->pid, agentrun ? s.proxy_pid : 0, p->proxy.port, &net, err) < 0)
		return ar_error_wrap(err, "--pid %d", (int)o->pid);
	f->net = net;
	ar_check_proc(p, f, out);
	ar_check_net_facts_free(net);
	f->net = NULL;
	*subject = o->name ? ar_xstrdup(o->name) : ar_xasprintf("pid %d", (int)o->pid);
	return 0;
}

static void opts_free(struct check_opts *o)
{
	free(o->policy_buf);
}

int ar_cmd_check(int argc, char **argv)
{
	__attribute__((cleanup(opts_free))) struct check_opts o = {0};
	ar_auto_error ar_error_t err = NULL;
	ar_autopolicy struct ar_policy *p = NULL;
	ar_autofindings struct ar_findings findings = {0};
	ar_autofree char *subject = NULL;
	ar_autobuf struct ar_buf out = {0};

	int r = parse_opts(argc, argv, &o);
	if (r != 0)
		return r > 0 ? AR_EXIT_OK : -r;
	if (resolve_name(&o, &err) < 0 || ar_policy_load(o.policy, &p, &err) < 0 ||
	    (o.pid_text || o.name ? proc_findings(&o, p, &findings, &subject, &err)
				  : docker_findings(&o, p, &findings, &subject, &err)) < 0) {
		ar_error_wrap(&err, "check");
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
	if (o.json)
		ar_check_format_json(&out, &findings, subject, p->name);
	else
		ar_check_format_text(&out, &findings, subject, p->name);
	fputs(out.data, stdout);
	if (fflush(stdout) == EOF)
		return AR_EXIT_USAGE;
	return findings.n ? AR_EXIT_DRIFT : AR_EXIT_OK;
}

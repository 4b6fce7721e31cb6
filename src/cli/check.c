/* agentrun check --policy FILE (--inspect FILE | --container NAME | --pid PID |
 * --name NAME | --bundle DIR | --pod FILE | --manifest FILE) [--json]: drift of a docker
 * container, a process or agentrun sandbox, an OCI bundle or Kubernetes objects from a
 * policy. Exit 0 no drift, 1 drift,
 * 2 bad input. The work is in src/check/. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/check.h"
#include "agentrun/cli.h"
#include "agentrun/k8s.h"
#include "agentrun/manifest.h"
#include "agentrun/net.h"
#include "agentrun/policy.h"
#include "agentrun/sandbox.h"
#include "agentrun/spec.h"
#include "agentrun/state.h"
#include "agentrun/util.h"

struct check_opts {
	const char *policy;
	const char *inspect;
	const char *container;
	const char *pid_text;
	const char *bundle; /* --bundle DIR: an OCI bundle's config.json */
	const char *name;   /* an agentrun sandbox as `agentrun ps` lists it */
	pid_t pid;
	const char *pod;
	const char *manifest;
	bool json;
	bool use_default; /* --name found a sandbox of the embedded default policy */
	char *policy_buf; /* the policy --name found */
	char *name_buf;	  /* the sandbox a policy name given to --name found */
	char *overrides;  /* run's overrides of the policy --name found (JSON) */
};

static int set_pid(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct check_opts *o = ctx;
	int64_t pid;
	if (ar_parse_int(v, 1, 4194304, &pid) < 0)
		return ar_error_make(err, 0, "--pid `%s`: not a process id (1 to 4194304)", v);
	o->pid_text = v;
	o->pid = (pid_t)pid;
	return 0;
}

static int set_container(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	if (v[0] == '\0')
		return ar_error_make(err, 0, "--container: empty name");
	((struct check_opts *)ctx)->container = v;
	return 0;
}

#define OPT(field) offsetof(struct check_opts, field)

static const struct ar_opt opts[] = {
    {"--policy", 'p', "FILE",
     "the policy the container or process should follow\n(with --name: the one it was "
     "started with)",
     ar_opt_str, OPT(policy)},
    {"--inspect", 0, "FILE",
     "saved `docker inspect` output (array or object; - =\nstdin; network objects after the "
     "container too)",
     ar_opt_str, OPT(inspect)},
    {"--container", 'c', "NAME", "run `docker inspect` on NAME and its networks", set_container, 0},
    {"--pid", 0, "PID",
     "check a running process from /proc (needs root for\nanother user's process)", set_pid, 0},
    {"--name", 0, "NAME",
     "an agentrun sandbox as `agentrun ps` lists it, or a\npolicy name (its newest live "
     "sandbox); --policy\ndefaults to the file it was started with",
     ar_opt_str, OPT(name)},
    {"--pod", 0, "FILE", "saved `kubectl get pod NAME -o json` (- = stdin)", ar_opt_str, OPT(pod)},
    {"--manifest", 0, "FILE",
     "Kubernetes objects before they are applied: YAML or\nJSON (agentrun render --format "
     "k8s, or written by hand)",
     ar_opt_str, OPT(manifest)},
    {"--bundle", 0, "DIR", "check an OCI bundle's DIR/config.json (render --format oci)",
     ar_opt_str, OPT(bundle)},
    {"--json", 0, NULL, "print {\"subject\", \"policy\", \"drift\", \"findings\",\n\"notes\"}",
     ar_opt_true, OPT(json)},
    {NULL},
};

#define SOURCES                                                                                    \
	"--inspect FILE, --container NAME, --pid PID, --bundle DIR, --pod FILE, --manifest FILE"

const struct ar_cli_cmd ar_cli_check = {
    .name = "check",
    .fn = ar_cmd_check,
    .summary = "report drift of a container, sandbox or process from a policy",
    .synopsis = "check --name NAME [--policy FILE] [--json]\n"
		"check --policy FILE (--inspect FILE | --container NAME | --pid PID\n"
		"                      | --bundle DIR | --pod FILE | --manifest FILE) [--json]",
    .about = "Compare what is running with a policy and print one finding per drift:\n"
	     "  DRIFT read-only rootfs expected true actual false\n"
	     "    fix: --read-only\n"
	     "  NAME vs policy P: N drift finding(s)\n\n"
	     "Notes (NOTE lines: a stopped container, a network not inspected) are not drift.\n"
	     "Secrets in the environment are named, never printed.",
    .opts = opts,
    .exit_status = "0 no drift, 1 drift, 2 bad input (policy, inspect file, flag, pid,\n"
		   "docker missing or failing).",
    .usage_exit = AR_EXIT_USAGE,
};

#define bad(...) ar_cli_usage_error("check", -1, __VA_ARGS__)

/* What the sources need, once every flag is read. */
static int check_sources(const struct check_opts *o)
{
	int n = (o->inspect != NULL) + (o->container != NULL) + (o->pid_text != NULL) +
		(o->name != NULL) + (o->bundle != NULL) + (o->pod != NULL) + (o->manifest != NULL);
	if (n == 0 && o->policy == NULL)
		return bad("%s", "give --name NAME (a sandbox `agentrun ps` lists), or --policy "
				 "FILE and one of " SOURCES);
	if (n == 0)
		return bad("%s", "give what to check: --name NAME or one of " SOURCES);
	if (n > 1)
		return bad("%s", "give exactly one of --name NAME, " SOURCES);
	if (o->policy == NULL && o->name == NULL)
		return bad("%s", "missing --policy FILE (only --name finds the policy itself)");
	return 0;
}

static int read_input(const char *path, char **data, size_t *len, ar_error_t *err)
{
	return ar_read_file(strcmp(path, "-") == 0 ? "/dev/stdin" : path, 0, data, len, err);
}

/* The live container's networks too: whether they are internal and whether the host
 * has an address on them is not in the container's own inspect. A network that cannot
 * be inspected (removed meanwhile) stays unknown, and check_agent_network says so. */
static void inspect_networks(struct ar_docker_facts *d)
{
	for (size_t i = 0; d->networks[i]; i++) {
		ar_auto_error ar_error_t err = NULL;
		ar_autofree char *data = NULL;
		size_t len = 0;
		if (ar_check_docker_inspect("docker", "network", d->networks[i], &data, &len,
					    &err) < 0 ||
		    ar_check_inspect_add_networks(data, len, d->networks[i], d, &err) < 0)
			continue;
	}
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
			   : ar_check_docker_inspect("docker", "container", o->container, &data,
						     &len, err);
	if (r < 0)
		return ar_error_wrap(err, "%s `%s`", o->inspect ? "--inspect" : "--container",
				     origin);
	if (ar_check_inspect_parse(data, len, origin, &d, err) < 0)
		return ar_error_wrap(err, "%s", o->inspect ? "--inspect" : "--container");
	if (o->container)
		inspect_networks(d);
	ar_autospec struct ar_spec *sp = NULL;
	if (ar_spec_build_container(p, &sp, err) < 0)
		return -1;
	ar_check_docker(sp, d, out);
	*subject = ar_xstrdup(d->name[0] ? d->name : origin);
	return 0;
}

/* --name: the sandbox's command, and by default the policy it was started with (its
 * absolute path, or the embedded default). */
static int resolve_name(struct check_opts *o, ar_error_t *err)
{
	struct ar_net_state s;
	bool exact;
	if (o->name == NULL)
		return 0;
	/* a sandbox (NAME-PID) or a policy name: its newest live sandbox */
	size_t n = strchr(o->name, '/') ? 0 : ar_cli_sandbox_find(o->name, &s, &exact);
	ar_auto_error ar_error_t none = NULL;
	if (n == 0 && strchr(o->name, '/') == NULL && ar_net_state_read(o->name, &s, &none) == 0 &&
	    s.pid <= 0 && ar_state_proc_alive(s.owner, s.owner_start))
		return ar_error_make(err, 0,
				     "--name `%s`: a netns `agentrun net up` prepared, with no "
				     "process of its own to check: check the container in it "
				     "(--pid PID)",
				     o->name);
	if (n == 0)
		return ar_error_make(err, 0, "--name `%s`: no such sandbox (see agentrun ps)",
				     o->name);
	if (n > 1)
		fprintf(stderr,
			"agentrun: check: %zu live sandboxes of policy %s; checking the newest, "
			"%s\n",
			n, o->name, s.name);
	o->name = o->name_buf = ar_xstrdup(s.name);
	o->pid = ar_net_state_command_pid(&s);
	if (o->policy != NULL)
		return 0;
	if (s.policy[0] != '\0' && s.policy[0] != '/')
		return ar_error_make(err, 0,
				     "--name `%s`: its policy file was not recorded; give --policy "
				     "FILE",
				     o->name);
	o->use_default = s.policy[0] == '\0';
	if (!o->use_default)
		o->policy = o->policy_buf = ar_xstrdup(s.policy);
	o->overrides = ar_state_record_overrides(s.name);
	return 0;
}

/* The policy --name found, with the overrides its run was started with (--memory,
 * --env, --mount...), each applied as run applied it; --no-cgroups is not a policy
 * change, so limits it left unenforced are still drift. */
static int load_policy(const struct check_opts *o, struct ar_policy **p, ar_error_t *err)
{
	if ((o->use_default ? ar_policy_default(p, err) : ar_policy_load(o->policy, p, err)) < 0)
		return -1;
	if (o->overrides == NULL)
		return 0;
	cJSON *a = cJSON_Parse(o->overrides);
	const cJSON *pair;
	struct ar_run_opts ro = {0};
	int r = cJSON_IsArray(a) ? 0 : -1;
	cJSON_ArrayForEach(pair, a)
	{
		const char *flag = cJSON_GetStringValue(cJSON_GetArrayItem(pair, 0));
		const char *value = cJSON_GetStringValue(cJSON_GetArrayItem(pair, 1));
		if (r == 0 && (flag == NULL || ar_override_apply(*p, &ro, flag, value, err) < 0))
			r = -1;
	}
	cJSON_Delete(a);
	if (r < 0)
		return ar_error_wrap(err, "--name `%s`: the overrides its run recorded", o->name);
	return 0;
}

static int proc_findings(const struct check_opts *o, const struct ar_policy *p,
			 struct ar_findings *out, char **subject, ar_error_t *err)
{
	ar_autoproc_facts struct ar_proc_facts *f = NULL;
	struct ar_check_net_facts *net = NULL;
	struct ar_net_state s;
	/* the network facts, through the sandbox's state when agentrun runs it (found, and a
	 * user's sandbox's user namespace entered, before the process is read) */
	bool agentrun = ar_net_state_find_pid(o->pid, &s) == 0;
	if (ar_check_enter_userns(o->pid, agentrun ? s.proxy_pid : 0, err) < 0 ||
	    ar_check_proc_read(o->pid, &f, err) < 0)
		return ar_error_wrap(err, "--pid %d", (int)o->pid);
	if (p->network == AR_NETWORK_PROXY &&
	    ar_check_net_read(o->pid, agentrun ? s.proxy_pid : 0, p->proxy.port, &net, err) < 0)
		return ar_error_wrap(err, "--pid %d", (int)o->pid);
	f->net = net;
	ar_autospec struct ar_spec *sp = NULL;
	if (ar_spec_build(p, NULL, &sp, err) < 0) {
		ar_check_net_facts_free(net);
		f->net = NULL;
		return -1;
	}
	ar_check_proc(sp, f, out);
	ar_check_net_facts_free(net);
	f->net = NULL;
	*subject = o->name ? ar_xstrdup(o->name) : ar_xasprintf("pid %d", (int)o->pid);
	return 0;
}

/* A pod's JSON or a manifest, read into objects and checked (docs/k8s.md). */
static int k8s_findings(const struct check_opts *o, const struct ar_policy *p,
			struct ar_findings *out, char **subject, ar_error_t *err)
{
	const char *flag = o->pod ? "--pod" : "--manifest";
	const char *path = o->pod ? o->pod : o->manifest;
	ar_autofree char *data = NULL;
	size_t len = 0;
	if (read_input(path, &data, &len, err) < 0)
		return ar_error_wrap(err, "%s", flag);
	cJSON *objs = ar_manifest_read(data, len, path, err);
	if (objs == NULL)
		return ar_error_wrap(err, "%s", flag);
	ar_autospec struct ar_spec *sp = NULL;
	if (ar_spec_build_container(p, &sp, err) < 0) {
		cJSON_Delete(objs);
		return -1;
	}
	int r = ar_check_k8s(sp, objs, o->pod ? AR_K8S_POD : AR_K8S_MANIFEST, out, subject, err);
	cJSON_Delete(objs);
	return r < 0 ? ar_error_wrap(err, "%s `%s`", flag, path) : 0;
}

static int bundle_findings(const struct check_opts *o, const struct ar_policy *p,
			   struct ar_findings *out, char **subject, ar_error_t *err)
{
	ar_autofree char *path = ar_xasprintf("%s/config.json", o->bundle);
	ar_autofree char *data = NULL, *owned = NULL, *policy = NULL;
	size_t len = 0;
	ar_autospec struct ar_spec *sp = NULL;
	const char *text, *origin;
	if (ar_read_file(path, 0, &data, &len, err) < 0)
		return ar_error_wrap(err, "--bundle");
	if (ar_spec_build(p, NULL, &sp, err) < 0 ||
	    ar_spec_seccomp_text(sp, &owned, &text, &origin, err) < 0)
		return -1;
	policy = p->path ? ar_xstrdup(p->path) : NULL;
	if (policy == NULL)
		return ar_error_make(err, errno, "resolve `%s`", o->policy);
	struct ar_check_bundle_opts bo = {
	    .origin = path, .policy_path = policy, .seccomp_json = text, .seccomp_origin = origin};
	if (ar_check_bundle(sp, data, len, &bo, out, err) < 0)
		return ar_error_wrap(err, "--bundle");
	*subject = ar_xasprintf("bundle %s", o->bundle);
	return 0;
}

/* The one source the options name. */
static int source_findings(const struct check_opts *o, const struct ar_policy *p,
			   struct ar_findings *out, char **subject, ar_error_t *err)
{
	if (o->bundle)
		return bundle_findings(o, p, out, subject, err);
	if (o->pod || o->manifest)
		return k8s_findings(o, p, out, subject, err);
	if (o->pid_text || o->name)
		return proc_findings(o, p, out, subject, err);
	return docker_findings(o, p, out, subject, err);
}

static void opts_free(struct check_opts *o)
{
	free(o->policy_buf);
	free(o->name_buf);
	free(o->overrides);
}

int ar_check_drift(const struct ar_check_target *t, const char *policy_path,
		   const struct ar_policy *p, struct ar_findings *out, char **subject,
		   ar_error_t *err)
{
	__attribute__((cleanup(opts_free))) struct check_opts o = {
	    .policy = policy_path,
	    .container = t->container,
	    .pid_text = t->pid_text,
	    .name = t->name,
	    .manifest = t->manifest,
	    .pid = t->pid,
	};
	if (resolve_name(&o, err) < 0)
		return -1;
	return source_findings(&o, p, out, subject, err);
}

int ar_cmd_check(int argc, char **argv)
{
	__attribute__((cleanup(opts_free))) struct check_opts o = {0};
	ar_auto_error ar_error_t err = NULL;
	ar_autopolicy struct ar_policy *p = NULL;
	ar_autofindings struct ar_findings findings = {0};
	ar_autofree char *subject = NULL;
	ar_autobuf struct ar_buf out = {0};

	ar_autoopts struct ar_opt_result res = {0};
	int r;
	if (ar_cli_parse(&ar_cli_check, argc, argv, &o, &res, &r) != 0)
		return r;
	if (check_sources(&o) < 0)
		return AR_EXIT_USAGE;
	if (resolve_name(&o, &err) < 0 || load_policy(&o, &p, &err) < 0 ||
	    source_findings(&o, p, &findings, &subject, &err) < 0) {
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

/* agentrun run [--policy FILE] [OVERRIDES] -- CMD [ARG...]: read the policy (or the
 * embedded default), apply the overrides to it, launch. Bad input exits 125 like
 * docker run (126/127 stay meaningful for the command). The options are
 * src/sandbox/options.c's table. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentrun/cli.h"
#include "agentrun/policy.h"
#include "agentrun/sandbox.h"
#include "agentrun/util.h"

/* The home /etc/passwd names for the caller (it may differ from $HOME, which the
 * caller sets): read directly, not through NSS, whose modules would cost every start
 * ~0.6 ms. An account only a directory service knows is covered by $HOME alone. */
static char *passwd_home(void)
{
	FILE *f = fopen("/etc/passwd", "re");
	struct passwd *pw = NULL;
	uid_t me = geteuid();
	while (f != NULL && (pw = fgetpwent(f)) != NULL && pw->pw_uid != me)
		;
	char *home = pw != NULL ? ar_xstrdup(pw->pw_dir) : NULL;
	if (f != NULL)
		fclose(f);
	return home;
}

const struct ar_cli_cmd ar_cli_run = {
    .name = "run",
    .fn = ar_cmd_run,
    .summary = "launch a command in a sandbox (the default command)",
    .synopsis = "[run] [--policy FILE|NAME] [OPTIONS] -- CMD [ARG...]",
    .about = "Run CMD in a sandbox: new namespaces, a read-only root, no capabilities,\n"
	     "no_new_privs, seccomp, cgroup limits. Without --policy the embedded default\n"
	     "policy applies (no network, a dynamic uid, pids 256, memory 512m). CMD starts\n"
	     "in the caller's working directory when the sandbox sees it, else in /.",
    .opts = ar_run_options,
    .mode = AR_OPT_STOP_AT_OPERAND,
    .takes_cmd = true,
    .exit_status = "the command's; 128+N when it was killed by signal N; 125 when\n"
		   "agentrun failed (bad input too), 126 when CMD is not executable, 127 when\n"
		   "it is not found.",
    .usage_exit = AR_EXIT_RUN_FAIL,
};

/* The overrides, in the order given, onto the policy. */
static int apply(const struct ar_opt_result *r, struct ar_policy *p, struct ar_run_opts *o,
		 ar_error_t *err)
{
	for (size_t i = 0; i < r->n_matches; i++) {
		const struct ar_opt_match *m = &r->matches[i];
		if (m->opt->set != NULL &&
		    ar_override_apply(p, o, m->opt->flag, m->value, err) == -1)
			return -1;
	}
	return 0;
}

/* The overrides as JSON for the sandbox's state ([flag, value] pairs; a relative
 * seccomp FILE made absolute), so that check --name expects what this run was started
 * with; NULL when there are none. */
static char *overrides_json(const struct ar_opt_result *r, const char *cwd)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < r->n_matches; i++) {
		const struct ar_opt_match *m = &r->matches[i];
		if (!ar_override_changes_policy(m->opt->flag))
			continue;
		ar_autofree char *abs = NULL;
		const char *v = m->value;
		if (v && strcmp(m->opt->flag, "--seccomp") == 0 && v[0] != '/' && cwd &&
		    strcmp(v, "default") != 0 && strcmp(v, "unconfined") != 0)
			v = abs = ar_xasprintf("%s/%s", cwd, v);
		cJSON *pair = cJSON_CreateArray();
		cJSON_AddItemToArray(pair, cJSON_CreateString(m->opt->flag));
		cJSON_AddItemToArray(pair, v ? cJSON_CreateString(v) : cJSON_CreateNull());
		cJSON_AddItemToArray(a, pair);
	}
	char *json = cJSON_GetArraySize(a) ? cJSON_PrintUnformatted(a) : NULL;
	cJSON_Delete(a);
	return json;
}

int ar_cmd_run(int argc, char **argv)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autopolicy struct ar_policy *p = NULL;
	ar_autoopts struct ar_opt_result r = {0};
	ar_autofree char *cwd = getcwd(NULL, 0);
	ar_autofree char *home = passwd_home();
	struct ar_run_opts o = {
	    .caller_private = {getenv("HOME"), home, getenv("XDG_RUNTIME_DIR")},
	    .term = getenv("TERM"),
	    .cwd = cwd,
	};
	int status = AR_EXIT_RUN_FAIL;

	if (ar_cli_parse(&ar_cli_run, argc, argv, NULL, &r, &status) != 0)
		return status;
	if (r.n_cmd == 0)
		return ar_cli_usage_error("run", AR_EXIT_RUN_FAIL,
					  "no command given (agentrun -- CMD [ARG...])");
	const char *policy = ar_opt_value(&r, "--policy");
	if ((policy ? ar_policy_load(policy, &p, &err) : ar_policy_default(&p, &err)) == -1 ||
	    apply(&r, p, &o, &err) == -1) {
		ar_error_print(&err);
		return AR_EXIT_RUN_FAIL;
	}
	/* absolute: check --name reads it from anywhere ("?", not a path, if it cannot be
	 * resolved: check --name then asks for --policy rather than take the default) */
	o.policy_path = p->path ? p->path : policy ? "?" : NULL;
	ar_autofree char *overrides = overrides_json(&r, cwd);
	o.overrides = overrides;
	if (ar_sandbox_run(p, &o, r.cmd, &status, &err) == -1)
		ar_error_print(&err);
	return status;
}

/* agentrun run [--policy FILE] [OVERRIDES] -- CMD [ARG...]: read the policy (or the
 * embedded default), apply the overrides to it, launch. Bad input exits 125 like
 * docker run (126/127 stay meaningful for the command). */
#define _GNU_SOURCE
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

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: agentrun [run] [--policy FILE] [OPTIONS] -- CMD [ARG...]\n\n"
		"Run CMD in a sandbox: new namespaces, a read-only root, no capabilities,\n"
		"no_new_privs, seccomp, cgroup limits. Without --policy the embedded default\n"
		"policy applies (no network, a dynamic uid, pids 256, memory 512m).\n\n"
		"Options:\n  %-34s %s\n",
		"-p, --policy FILE", "the policy (JSON); the options below override it");
	for (size_t i = 0; ar_override_at(i) != NULL; i++) {
		const struct ar_override *o = ar_override_at(i);
		char left[64];
		snprintf(left, sizeof(left), "%s%s%s", o->flag, o->value ? " " : "",
			 o->value ? o->value : "");
		fprintf(out, "  %-34s %s\n", left, o->help);
	}
	fprintf(out, "  %-34s %s\n\n", "--help", "this text");
	fprintf(out,
		"Exit status: the command's; 128+N when it was killed by signal N; 125 when\n"
		"agentrun failed, 126 when CMD is not executable, 127 when it is not found.\n");
}

/* --policy, or -p as render and check spell it too. */
static bool is_policy_flag(const char *name)
{
	return strcmp(name, "--policy") == 0 || strcmp(name, "-p") == 0;
}

/* Split "--flag=value" or "--flag value"; *i advances past what was used. */
static int next_option(int argc, char **argv, int *i, char **flag, const char **value,
		       bool *takes_value)
{
	ar_autofree char *name = NULL;
	char *eq = strchr(argv[*i], '=');

	name = eq ? ar_xstrndup(argv[*i], (size_t)(eq - argv[*i])) : ar_xstrdup(argv[*i]);
	if (is_policy_flag(name))
		*takes_value = true;
	else if (ar_override_lookup(name, takes_value) == -1)
		return -1;
	*value = NULL;
	if (*takes_value && eq)
		*value = eq + 1;
	else if (*takes_value && *i + 1 < argc)
		*value = argv[++*i];
	(*i)++;
	*flag = steal_pointer(&name);
	return 0;
}

/* First pass: find --policy, --help and where the command starts. */
static int scan(int argc, char **argv, const char **policy, int *cmd, bool *help)
{
	int i = 1;
	while (i < argc) {
		ar_autofree char *flag = NULL;
		const char *value;
		bool takes;
		if (strcmp(argv[i], "--") == 0) {
			*cmd = i + 1;
			return 0;
		}
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			*help = true;
			return 0;
		}
		if (argv[i][0] != '-')
			break;
		if (next_option(argc, argv, &i, &flag, &value, &takes) == -1)
			return ar_cli_usage_error("run", AR_EXIT_RUN_FAIL, "unknown option `%s`",
						  argv[i]);
		if (takes && value == NULL)
			return ar_cli_usage_error("run", AR_EXIT_RUN_FAIL, "%s needs a value",
						  flag);
		if (is_policy_flag(flag))
			*policy = value;
	}
	*cmd = i;
	return 0;
}

/* Second pass: apply the overrides, in order, to the policy. */
static int apply(int cmd, char **argv, struct ar_policy *p, struct ar_run_opts *o, ar_error_t *err)
{
	int i = 1;
	while (i < cmd && strcmp(argv[i], "--") != 0) {
		ar_autofree char *flag = NULL;
		const char *value;
		bool takes;
		if (next_option(cmd, argv, &i, &flag, &value, &takes) == -1)
			return ar_error_make(err, 0, "unknown option `%s`", argv[i]);
		if (!is_policy_flag(flag) && ar_override_apply(p, o, flag, value, err) == -1)
			return -1;
	}
	return 0;
}

int ar_cmd_run(int argc, char **argv)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autopolicy struct ar_policy *p = NULL;
	ar_autofree char *cwd = getcwd(NULL, 0);
	ar_autofree char *home = passwd_home();
	struct ar_run_opts o = {
	    .caller_private = {getenv("HOME"), home, getenv("XDG_RUNTIME_DIR")},
	    .term = getenv("TERM"),
	    .cwd = cwd,
	};
	const char *policy = NULL;
	int cmd = argc, status = AR_EXIT_RUN_FAIL;
	bool help = false;

	if (scan(argc, argv, &policy, &cmd, &help) != 0)
		return AR_EXIT_RUN_FAIL;
	if (help) {
		usage(stdout);
		return AR_EXIT_OK;
	}
	if (cmd >= argc)
		return ar_cli_usage_error("run", AR_EXIT_RUN_FAIL,
					  "no command given (agentrun -- CMD [ARG...])");
	if ((policy ? ar_policy_load(policy, &p, &err) : ar_policy_default(&p, &err)) == -1 ||
	    apply(cmd, argv, p, &o, &err) == -1 || ar_policy_validate(p, &err) == -1) {
		ar_error_print(&err);
		return AR_EXIT_RUN_FAIL;
	}
	o.policy_path = policy;
	if (ar_sandbox_run(p, &o, argv + cmd, &status, &err) == -1)
		ar_error_print(&err);
	return status;
}

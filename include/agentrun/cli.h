/* Subcommands: one file each under src/cli/, dispatched from the table in main.c.
 * Each takes argv with argv[0] = the subcommand name and returns the process exit status. */
#ifndef AGENTRUN_CLI_H
#define AGENTRUN_CLI_H

#define AR_EXIT_OK	 0
#define AR_EXIT_USAGE	 2   /* bad input or usage, every subcommand but run */
#define AR_EXIT_DRIFT	 1   /* check: drift found */
#define AR_EXIT_RUN_FAIL 125 /* run: agentrun itself failed */
#define AR_EXIT_NOEXEC	 126 /* run: command not executable */
#define AR_EXIT_NOENT	 127 /* run: command not found */

#include "agentrun/error.h"

#ifndef AGENTRUN_VERSION
#define AGENTRUN_VERSION "0.1.0"
#endif

int ar_cmd_run(int argc, char **argv);
int ar_cmd_proxy(int argc, char **argv);
int ar_cmd_render(int argc, char **argv);
int ar_cmd_check(int argc, char **argv);
int ar_cmd_audit(int argc, char **argv);
int ar_cmd_hook(int argc, char **argv);
int ar_cmd_version(int argc, char **argv);
int ar_cmd_ps(int argc, char **argv);
int ar_cmd_gc(int argc, char **argv);
int ar_cmd_net(int argc, char **argv);
int ar_cmd_review(int argc, char **argv);
/* review's drift: check's own readers and comparisons for one target (exactly one of
 * the four; src/cli/check.c). */
struct ar_check_target {
	const char *container;
	const char *pid_text; /* as given, for messages */
	int pid;
	const char *name;
	const char *manifest;
};
struct ar_policy;
struct ar_findings;
int ar_check_drift(const struct ar_check_target *t, const char *policy_path,
		   const struct ar_policy *p, struct ar_findings *out, char **subject,
		   ar_error_t *err);
/* gc of the named netns of `net up` whose proxy is gone (src/cli/net.c): how many. */
int ar_netns_gc(void);

/* "agentrun: SUBCMD: unknown option `--x`; see `agentrun SUBCMD --help`" and the usage exit code.
 */
int ar_cli_usage_error(const char *cmd, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif

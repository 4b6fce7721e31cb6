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
#include "agentrun/opts.h"

#ifndef AGENTRUN_VERSION
#define AGENTRUN_VERSION "0.1.0"
#endif

/* A subcommand: its option table and the text around it. The help (`agentrun CMD
 * --help`, `agentrun help CMD`) and the man page are printed from this, and the same
 * table parses the arguments (ar_cli_parse): a new flag is one row of opts. */
struct ar_cli_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;  /* one line, for `agentrun --help` */
	const char *synopsis; /* after "agentrun ", one form per line */
	const char *about;    /* what it does; a blank line separates paragraphs */
	const struct ar_opt *opts;
	enum ar_opt_mode mode;
	const char *operand;	 /* the one operand it needs ("FILE|NAME"); NULL: none */
	bool takes_cmd;		 /* a command after `--` */
	const char *exit_status; /* "0 ok, 2 bad input or usage." */
	int usage_exit;		 /* the status of a usage error (run: 125) */
};

/* The subcommands, in the order `agentrun --help` lists them (src/cli/commands.c). */
extern const struct ar_cli_cmd *const ar_cli_commands[];
const struct ar_cli_cmd *ar_cli_find(const char *name);
void ar_cli_help(const struct ar_cli_cmd *c, FILE *out);
void ar_cli_top_help(FILE *out);
/* The man page, agentrun(1), in roff: every subcommand's help (src/cli/man.c). */
void ar_cli_man(FILE *out);
/* Parse argv for c and apply the setters to ctx (ctx NULL: parse only). Returns 0 to
 * go on; else -1 with *status the exit status: 0 after --help, c->usage_exit after
 * an error it printed. */
int ar_cli_parse(const struct ar_cli_cmd *c, int argc, char **argv, void *ctx,
		 struct ar_opt_result *r, int *status);

struct ar_net_state;
struct ar_sandbox_record;
/* A network: none sandbox's record as the state a proxy one keeps (false for a proxy
 * one: read its state). */
bool ar_cli_record_as_state(const struct ar_sandbox_record *r, struct ar_net_state *s);
/* The live sandbox named arg as `agentrun ps` lists it (NAME-PID: *exact), or the
 * newest live sandbox of policy arg, into *out; returns how many matched (0: none). */
size_t ar_cli_sandbox_find(const char *arg, struct ar_net_state *out, bool *exact);

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

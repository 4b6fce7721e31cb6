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
/* gc of the named netns of `net up` whose proxy is gone (src/cli/net.c): how many. */
int ar_netns_gc(void);

/* "agentrun: SUBCMD: unknown option `--x`; see `agentrun SUBCMD --help`" and the usage exit code.
 */
int ar_cli_usage_error(const char *cmd, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif

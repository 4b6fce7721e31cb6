/* Entry point: dispatch argv[1] through the subcommand table; anything else is `run`. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "agentrun/cli.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
    {"run", ar_cmd_run, "launch a command in a sandbox (the default command)"},
    {"proxy", ar_cmd_proxy, "run the egress proxy on its own"},
    {"render", ar_cmd_render, "print the policy as docker commands, a script or OCI config"},
    {"check", ar_cmd_check, "report drift of a container, sandbox or process from a policy"},
    {"audit", ar_cmd_audit, "summarise a proxy audit log; --propose: the smallest policy"},
    {"review", ar_cmd_review, "review a policy with the evidence of an audit and a target"},
    {"hook", ar_cmd_hook, "the OCI hook (create-runtime, poststop) for runc, crun, podman"},
    {"version", ar_cmd_version, "print the version"},
    {"ps", ar_cmd_ps, "list the live sandboxes"},
    {"gc", ar_cmd_gc, "remove what dead sandboxes left behind"},
    {"net", ar_cmd_net, "a named netns wired to its proxy, for runsc (up, down)"},
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: agentrun [run] [--policy FILE] [OPTIONS] -- CMD [ARG...]\n"
	    "       agentrun COMMAND [OPTIONS]\n\n"
	    "Run an AI agent's command in a sandbox that can only reach an allow-list of hosts\n"
	    "through an auditing egress proxy.\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(out,
		"\nSee `agentrun COMMAND --help` for each command's options.\n"
		"Exit status: run returns the command's status (128+N on signal N; 125 agentrun\n"
		"failed, 126 not executable, 127 not found); check 0 no drift, 1 drift, 2 bad\n"
		"input; review 1 on findings at or above --fail-on; everything else 0 ok, 2 bad\n"
		"input or usage.\n");
}

int ar_cli_usage_error(const char *cmd, int code, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "agentrun: %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "; see `agentrun %s --help`\n", cmd);
	return code;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
			  strcmp(argv[1], "help") == 0)) {
		usage(stdout);
		return AR_EXIT_OK;
	}
	if (argc >= 2 && strcmp(argv[1], "--version") == 0)
		return ar_cmd_version(argc - 1, argv + 1);
	if (argc >= 2) {
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (strcmp(argv[1], commands[i].name) == 0)
				return commands[i].fn(argc - 1, argv + 1);
	}
	if (argc < 2) {
		usage(stderr);
		return AR_EXIT_USAGE;
	}
	if (argv[1][0] != '-') {
		fprintf(stderr,
			"agentrun: unknown command `%s`; to run a program, put it after "
			"`--` (agentrun -- %s); see `agentrun --help`\n",
			argv[1], argv[1]);
		return AR_EXIT_USAGE;
	}
	/* `agentrun --policy p.json -- cmd`: options before `--` belong to run */
	argv[0] = "run";
	return ar_cmd_run(argc, argv);
}

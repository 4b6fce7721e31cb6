/* Entry point: dispatch argv[1] through the subcommand table (src/cli/commands.c);
 * anything else is `run`. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "agentrun/cli.h"
#include "agentrun/util.h"

static bool is(const char *arg, const char *a, const char *b)
{
	return strcmp(arg, a) == 0 || (b != NULL && strcmp(arg, b) == 0);
}

/* agentrun help [COMMAND] */
static int help(int argc, char **argv)
{
	if (argc < 3) {
		ar_cli_top_help(stdout);
		return AR_EXIT_OK;
	}
	const struct ar_cli_cmd *c = ar_cli_find(argv[2]);
	if (c == NULL || argc > 3) {
		fprintf(stderr, "agentrun: help: %s `%s`; see `agentrun --help`\n",
			c == NULL ? "unknown command" : "unexpected argument", argv[c ? 3 : 2]);
		return AR_EXIT_USAGE;
	}
	ar_cli_help(c, stdout);
	return AR_EXIT_OK;
}

static int unknown_command(const char *name)
{
	struct ar_suggest s;
	ar_suggest_init(&s, name);
	for (size_t i = 0; ar_cli_commands[i] != NULL; i++)
		ar_suggest_add(&s, ar_cli_commands[i]->name);
	const char *near = ar_suggest_best(&s);
	fprintf(stderr, "agentrun: unknown command `%s`", name);
	if (near != NULL)
		fprintf(stderr, " (did you mean `%s`?)", near);
	fprintf(stderr,
		"; to run a program, put it after `--` (agentrun -- %s); see `agentrun "
		"--help`\n",
		name);
	return AR_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		ar_cli_top_help(stderr);
		return AR_EXIT_USAGE;
	}
	if (is(argv[1], "--help", "-h") || is(argv[1], "help", NULL))
		return help(argc, argv);
	if (is(argv[1], "--version", "-V"))
		return ar_cmd_version(argc - 1, argv + 1);
	const struct ar_cli_cmd *c = ar_cli_find(argv[1]);
	if (c != NULL)
		return c->fn(argc - 1, argv + 1);
	if (argv[1][0] != '-')
		return unknown_command(argv[1]);
	/* `agentrun --policy p.json -- cmd`: options before `--` belong to run */
	argv[0] = "run";
	return ar_cmd_run(argc, argv);
}

/* The subcommand table, the help every subcommand prints from its option table, and
 * the parse-then-apply every subcommand starts with. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "agentrun/cli.h"
#include "agentrun/util.h"

extern const struct ar_cli_cmd ar_cli_run, ar_cli_proxy, ar_cli_render, ar_cli_check, ar_cli_audit,
    ar_cli_review, ar_cli_hook, ar_cli_ps, ar_cli_gc, ar_cli_net, ar_cli_version;

const struct ar_cli_cmd *const ar_cli_commands[] = {
    &ar_cli_run,  &ar_cli_proxy, &ar_cli_render, &ar_cli_check, &ar_cli_audit,	 &ar_cli_review,
    &ar_cli_hook, &ar_cli_ps,	 &ar_cli_gc,	 &ar_cli_net,	&ar_cli_version, NULL,
};

const struct ar_cli_cmd *ar_cli_find(const char *name)
{
	for (size_t i = 0; ar_cli_commands[i] != NULL; i++)
		if (strcmp(ar_cli_commands[i]->name, name) == 0)
			return ar_cli_commands[i];
	return NULL;
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

/* Each line of text, indented; NULL prints nothing. */
static void lines(FILE *out, const char *indent, const char *text)
{
	while (text != NULL && *text) {
		const char *nl = strchr(text, '\n');
		int n = nl ? (int)(nl - text) : (int)strlen(text);
		fprintf(out, "%s%.*s\n", n ? indent : "", n, text);
		text = nl ? nl + 1 : text + n;
	}
}

void ar_cli_help(const struct ar_cli_cmd *c, FILE *out)
{
	const char *syn = c->synopsis;
	for (int first = 1; syn && *syn; first = 0) {
		const char *nl = strchr(syn, '\n');
		int n = nl ? (int)(nl - syn) : (int)strlen(syn);
		/* a line starting with a space continues the form above */
		fprintf(out, "%s%s%.*s\n", first ? "Usage:" : "      ",
			syn[0] == ' ' ? "" : " agentrun ", n, syn);
		syn = nl ? nl + 1 : syn + n;
	}
	fputc('\n', out);
	lines(out, "", c->about);
	fprintf(out, "\nOptions:\n");
	ar_opt_help(out, c->opts);
	fprintf(out, "\nExit status: %s\n", c->exit_status);
}

void ar_cli_top_help(FILE *out)
{
	fprintf(out, "Usage: agentrun [run] [--policy FILE|NAME] [OPTIONS] -- CMD [ARG...]\n"
		     "       agentrun COMMAND [OPTIONS]\n\n"
		     "Run an AI agent's command in a sandbox that can only reach an allow-list of "
		     "hosts\nthrough an auditing egress proxy.\n\nCommands:\n");
	for (size_t i = 0; ar_cli_commands[i] != NULL; i++)
		fprintf(out, "  %-9s %s\n", ar_cli_commands[i]->name, ar_cli_commands[i]->summary);
	fprintf(out,
		"\n"
		"  -h, --help     this help (`agentrun help COMMAND`: a command's help)\n"
		"  -V, --version  the version\n\n"
		"See `agentrun COMMAND --help` for each command's options, and agentrun(1).\n"
		"Exit status: run returns the command's status (128+N on signal N; 125 "
		"agentrun\nfailed, 126 not executable, 127 not found); check 0 no drift, 1 "
		"drift, 2 bad\ninput; hook and net 1 when they failed or refused; review 1 on "
		"findings at or\nabove --fail-on; everything else 0 ok, 2 bad input or usage.\n");
}

/* The operands the table's command takes, and nothing else. */
static int check_operands(const struct ar_cli_cmd *c, const struct ar_opt_result *r)
{
	size_t want = c->operand != NULL;
	if (r->n_operands < want)
		return ar_cli_usage_error(c->name, -1, "missing %s", c->operand);
	if (r->n_operands > want)
		return ar_cli_usage_error(c->name, -1, "unexpected argument `%s`%s",
					  r->operands[want],
					  c->takes_cmd ? " (a policy goes after --policy, the "
							 "command after --)"
						       : "");
	if (!c->takes_cmd && r->n_cmd > 0 && c->mode != AR_OPT_STOP_AT_OPERAND)
		return ar_cli_usage_error(c->name, -1, "unexpected argument `%s`", r->cmd[0]);
	return 0;
}

int ar_cli_parse(const struct ar_cli_cmd *c, int argc, char **argv, void *ctx,
		 struct ar_opt_result *r, int *status)
{
	ar_auto_error ar_error_t err = NULL;
	*status = c->usage_exit;
	if (ar_opt_parse(c->opts, c->mode, argc, argv, r, &err) == -1 ||
	    (!r->help && ctx != NULL && ar_opt_apply(r, ctx, &err) == -1)) {
		ar_cli_usage_error(c->name, c->usage_exit, "%s", err->msg);
		return -1;
	}
	if (r->help) {
		ar_cli_help(c, stdout);
		*status = AR_EXIT_OK;
		return -1;
	}
	return check_operands(c, r);
}

/* agentrun(1), in roff, from the subcommand table and its option tables: the man page
 * says what the parser accepts because both read the same rows. The build runs
 * ar-genman (cmake/genman.c) to write it; `cmake --install` installs it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "agentrun/cli.h"

/* roff text: a backslash or a minus escaped, a line never starting with . or '. */
static void roff(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if ((i == 0 || s[i - 1] == '\n') && (s[i] == '.' || s[i] == '\''))
			fputs("\\&", out);
		if (s[i] == '\\')
			fputs("\\e", out);
		else if (s[i] == '-')
			fputs("\\-", out);
		else
			fputc(s[i], out);
	}
}

static void roff_str(FILE *out, const char *s)
{
	roff(out, s, strlen(s));
}

/* Paragraphs of text, each kept as written (.nf) so the help's columns survive. */
static void block(FILE *out, const char *text)
{
	fputs(".nf\n", out);
	roff_str(out, text);
	fputs("\n.fi\n", out);
}

static void option(FILE *out, const struct ar_opt *o)
{
	fputs(".TP\n", out);
	if (o->short_flag)
		fprintf(out, "\\fB\\-%c\\fR, ", o->short_flag);
	fputs("\\fB", out);
	roff_str(out, o->flag);
	fputs("\\fR", out);
	if (o->value != NULL) {
		fputs(" \\fI", out);
		roff_str(out, o->value);
		fputs("\\fR", out);
	}
	fputs("\n", out);
	for (const char *h = o->help; *h;) { /* the help's line breaks are for 80 columns */
		const char *nl = strchr(h, '\n');
		size_t n = nl ? (size_t)(nl - h) : strlen(h);
		roff(out, h, n);
		fputs("\n", out);
		h += n + (nl != NULL);
	}
}

static void command(FILE *out, const struct ar_cli_cmd *c)
{
	fputs(".SS \"agentrun ", out);
	roff_str(out, c->name);
	fputs("\"\n", out);
	fputs(".nf\n", out);
	for (const char *s = c->synopsis; *s;) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		fputs(s[0] == ' ' ? "" : "\\fBagentrun\\fR ", out);
		roff(out, s, n);
		fputs("\n", out);
		s += n + (nl != NULL);
	}
	fputs(".fi\n.PP\n", out);
	block(out, c->about);
	for (const struct ar_opt *o = c->opts; o->flag != NULL; o++)
		option(out, o);
	option(out, &(struct ar_opt){"--help", 'h', NULL, "this help", NULL, 0});
	fputs(".PP\nExit status: ", out);
	roff_str(out, c->exit_status);
	fputs("\n", out);
}

void ar_cli_man(FILE *out)
{
	fprintf(out,
		".\\\" Generated from the option tables (src/cli/man.c); do not edit.\n"
		".TH AGENTRUN 1 \"\" \"agentrun %s\" \"User Commands\"\n"
		".SH NAME\nagentrun \\- run an AI agent's command in a sandbox that can only "
		"reach an allow\\-list of hosts\n.SH SYNOPSIS\n",
		AGENTRUN_VERSION);
	for (size_t i = 0; ar_cli_commands[i] != NULL; i++) {
		fputs(".br\n\\fBagentrun\\fR ", out);
		const char *syn = ar_cli_commands[i]->synopsis;
		const char *nl = strchr(syn, '\n');
		roff(out, syn, nl ? (size_t)(nl - syn) : strlen(syn));
		fputs("\n", out);
	}
	fputs(".SH DESCRIPTION\n", out);
	block(out,
	      "agentrun runs a command in a sandbox: namespaces, cgroup limits, a read-only\n"
	      "root with tmpfs scratch, no capabilities, no_new_privs, seccomp, and only the\n"
	      "mounts the job needs. With allowed_hosts in its policy the sandbox reaches the\n"
	      "network only through an egress proxy of its own, which allows a short list of\n"
	      "hosts, refuses the rest with a reason, and audits every attempt.");
	fputs(".SH COMMANDS\n", out);
	for (size_t i = 0; ar_cli_commands[i] != NULL; i++)
		command(out, ar_cli_commands[i]);
	fputs(".SH EXIT STATUS\n", out);
	block(out,
	      "run returns the command's status (128+N on signal N; 125 when agentrun\n"
	      "failed, 126 not executable, 127 not found); check 0 no drift, 1 drift, 2 bad\n"
	      "input; hook and net 1 when they refused or failed; everything else 0 ok, 2 bad\n"
	      "input or usage. Every error starts with `agentrun:` and names the file, field\n"
	      "or flag at fault.");
	fputs(".SH FILES\n", out);
	block(out, "/run/agentrun            the state of live sandboxes, their audits\n"
		   "PREFIX/share/agentrun/profiles   the shipped policies (--policy NAME)");
	fputs(".SH SEE ALSO\nbwrap(1), runc(8), docker(1)\n", out);
}

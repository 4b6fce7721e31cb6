/* Printers for the docker plan: shell text to paste, JSON argv lists, and a POSIX sh
 * script with up/run/down/audit. Each argument goes through ar_shell_quote or
 * ar_json_quote and nothing else, so what is printed is exactly what the plan holds. */
#define _GNU_SOURCE
#include <string.h>

#include "agentrun/render.h"
#include "agentrun/util.h"

#define TEXT_WIDTH  80
#define TEXT_INDENT "    "

static const char *const phase_names[] = {
    [AR_RENDER_UP] = "up",
    [AR_RENDER_RUN] = "run",
    [AR_RENDER_DOWN] = "down",
    [AR_RENDER_AUDIT] = "audit",
};

static size_t quoted_len(const char *s)
{
	ar_autobuf struct ar_buf b = {0};
	ar_shell_quote(&b, s);
	return b.len;
}

/* Length of the option at i with its values: up to the next `-...` argument or the
 * no-wrap boundary, so a flag and its value never land on different lines. */
static size_t group_len(const struct ar_render_step *s, size_t i)
{
	size_t n = quoted_len(s->argv[i]);
	for (size_t j = i + 1; j < s->nowrap_from && s->argv[j][0] != '-'; j++)
		n += 1 + quoted_len(s->argv[j]);
	return n;
}

static void print_command(const struct ar_render_step *s, struct ar_buf *out)
{
	size_t col = 0;
	for (size_t i = 0; i < s->argc; i++) {
		bool boundary =
		    i > 0 && (i == s->nowrap_from || (i < s->nowrap_from && s->argv[i][0] == '-'));
		if (boundary && col > strlen(TEXT_INDENT) &&
		    col + 1 + group_len(s, i) > TEXT_WIDTH - 2) {
			ar_buf_puts(out, " \\\n" TEXT_INDENT);
			col = strlen(TEXT_INDENT);
		} else if (i > 0) {
			ar_buf_putc(out, ' ');
			col++;
		}
		size_t before = out->len;
		ar_shell_quote(out, s->argv[i]);
		col += out->len - before;
	}
	ar_buf_putc(out, '\n');
}

static bool shown_in_plan(const struct ar_render_step *s)
{
	return s->phase == AR_RENDER_UP || s->phase == AR_RENDER_RUN;
}

/* Each line of the plan's note as a `# ` comment. */
static void print_note(const struct ar_render_plan *plan, struct ar_buf *out)
{
	for (const char *l = plan->note; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		ar_buf_printf(out, "# %.*s\n", (int)n, l);
		l += n + (nl != NULL);
	}
}

void ar_render_print_text(const struct ar_render_plan *plan, struct ar_buf *out)
{
	print_note(plan, out);
	for (size_t i = 0; i < plan->n_steps; i++)
		if (shown_in_plan(&plan->steps[i]))
			print_command(&plan->steps[i], out);
}

static void json_step(const struct ar_render_step *s, struct ar_buf *out)
{
	ar_buf_puts(out, "    {\"label\": ");
	ar_json_quote(out, s->label);
	ar_buf_puts(out, ", \"phase\": ");
	ar_json_quote(out, phase_names[s->phase]);
	ar_buf_puts(out, ", \"argv\": [");
	for (size_t i = 0; i < s->argc; i++) {
		if (i > 0)
			ar_buf_puts(out, ", ");
		ar_json_quote(out, s->argv[i]);
	}
	ar_buf_puts(out, "]}");
}

static void json_list(const struct ar_render_plan *plan, const char *key, bool plan_steps,
		      enum ar_render_phase phase, struct ar_buf *out)
{
	bool first = true;
	ar_buf_printf(out, "  \"%s\": [", key);
	for (size_t i = 0; i < plan->n_steps; i++) {
		const struct ar_render_step *s = &plan->steps[i];
		if (plan_steps ? !shown_in_plan(s) : s->phase != phase)
			continue;
		ar_buf_puts(out, first ? "\n" : ",\n");
		json_step(s, out);
		first = false;
	}
	ar_buf_puts(out, first ? "]" : "\n  ]");
}

void ar_render_print_json(const struct ar_render_plan *plan, struct ar_buf *out)
{
	ar_buf_puts(out, "{\n");
	json_list(plan, "steps", true, AR_RENDER_UP, out);
	ar_buf_puts(out, ",\n");
	json_list(plan, "down", false, AR_RENDER_DOWN, out);
	ar_buf_puts(out, ",\n");
	json_list(plan, "audit", false, AR_RENDER_AUDIT, out);
	if (plan->note) {
		ar_buf_puts(out, ",\n  \"note\": ");
		ar_json_quote(out, plan->note);
	}
	ar_buf_puts(out, "\n}\n");
}

/* `printf '%s\n' '+ CMD' >&2` then CMD: the echo is the same quoted text that runs. */
static void sh_command(const struct ar_render_step *s, struct ar_buf *out)
{
	ar_autobuf struct ar_buf line = {0};
	for (size_t i = 0; i < s->argc; i++) {
		if (i > 0)
			ar_buf_putc(&line, ' ');
		ar_shell_quote(&line, s->argv[i]);
	}
	ar_autobuf struct ar_buf echo = {0};
	ar_buf_puts(&echo, "+ ");
	ar_buf_puts(&echo, line.data);
	ar_buf_puts(out, "\tprintf '%s\\n' ");
	ar_shell_quote(out, echo.data);
	ar_buf_puts(out, " >&2\n\t");
	ar_buf_puts(out, line.data);
	/* teardown must work when some objects are already gone */
	if (s->phase == AR_RENDER_DOWN)
		ar_buf_puts(out, " >/dev/null 2>&1 || true");
	ar_buf_putc(out, '\n');
}

static void sh_function(const struct ar_policy *p, const struct ar_render_plan *plan,
			enum ar_render_phase phase, struct ar_buf *out)
{
	bool any = false;
	ar_buf_printf(out, "\n%s() {\n", phase_names[phase]);
	for (size_t i = 0; i < plan->n_steps; i++) {
		if (plan->steps[i].phase != phase)
			continue;
		sh_command(&plan->steps[i], out);
		any = true;
	}
	if (!any && phase == AR_RENDER_AUDIT)
		ar_buf_printf(out,
			      "\techo 'agentrun: policy %s has network none: there is no proxy "
			      "and no audit log' >&2\n\treturn 2\n",
			      p->name);
	else if (!any)
		ar_buf_puts(out, "\t: # network none: no networks, no proxy\n");
	ar_buf_puts(out, "}\n");
}

/* The origin is a path the user chose: keep it on one comment line. */
static void comment_safe(struct ar_buf *out, const char *s)
{
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		ar_buf_putc(out, *c < 0x20 || *c == 0x7f ? '?' : (char)*c);
}

void ar_render_print_sh(const struct ar_policy *p, const struct ar_render_plan *plan,
			struct ar_buf *out)
{
	/* the echoed copies of commands quote `$` and `'` on purpose */
	ar_buf_puts(out, "#!/bin/sh\n# shellcheck disable=SC1003,SC2016\n"
			 "# Generated by `agentrun render --format sh` from ");
	comment_safe(out, p->origin != NULL ? p->origin : "?");
	ar_buf_printf(out, " (policy %s).\n", p->name);
	ar_buf_puts(out, "# Usage: sh SCRIPT up|run|down|audit\n");
	if (p->network == AR_NETWORK_PROXY)
		ar_buf_printf(
		    out,
		    "#   up     create the networks and start the egress proxy\n"
		    "#   run    run the agent container in the foreground\n"
		    "#   down   remove the containers and networks (the audit volume "
		    "%s-audit is kept)\n"
		    "#   audit  summarise the proxy's audit log\n"
		    "# The agent's network %s is --internal with inhibit_ipv4: no outbound "
		    "NAT and no\n"
		    "# host address on it, so the host's services do not answer the agent\n"
		    "# (moby/libnetwork#1151). The proxy is also on %s and can reach them; it "
		    "refuses\n"
		    "# private addresses unless the policy's proxy.allow_private names them.\n",
		    p->name, p->net_name, p->egress_name);
	else
		ar_buf_puts(out, "#   up     nothing to do (network none: no networks, no proxy)\n"
				 "#   run    run the agent container in the foreground\n"
				 "#   down   remove the agent container\n"
				 "#   audit  fails: there is no proxy\n");
	print_note(plan, out);
	ar_buf_puts(out, "# Each command is echoed on stderr with `+ ` before it runs.\nset -eu\n");
	sh_function(p, plan, AR_RENDER_UP, out);
	sh_function(p, plan, AR_RENDER_RUN, out);
	sh_function(p, plan, AR_RENDER_DOWN, out);
	sh_function(p, plan, AR_RENDER_AUDIT, out);
	ar_buf_puts(out, "\nusage() {\n"
			 "\techo \"usage: $0 up|run|down|audit\" >&2\n"
			 "\texit 2\n"
			 "}\n\n"
			 "[ $# -eq 1 ] || usage\n"
			 "case \"$1\" in\n"
			 "up | run | down | audit) \"$1\" ;;\n"
			 "*) usage ;;\n"
			 "esac\n");
}

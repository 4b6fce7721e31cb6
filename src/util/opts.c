/* Option tables: the parser, the setters every table uses and the help rows. One
 * table per subcommand is the only place a flag is spelt (include/agentrun/opts.h). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/opts.h"
#include "agentrun/util.h"

static const struct ar_opt help_opt = {"--help", 'h', NULL, "this help", NULL, 0};

int ar_opt_str(void *ctx, const struct ar_opt *opt, const char *value, ar_error_t *err)
{
	*(const char **)((char *)ctx + opt->off) = value;
	return 0;
}

int ar_opt_true(void *ctx, const struct ar_opt *opt, const char *value, ar_error_t *err)
{
	*(bool *)((char *)ctx + opt->off) = true;
	return 0;
}

/* ---- parsing ---- */

static const struct ar_opt *find_long(const struct ar_opt *table, const char *name, size_t n)
{
	for (const struct ar_opt *o = table; o->flag != NULL; o++)
		if (strncmp(o->flag, name, n) == 0 && o->flag[n] == '\0')
			return o;
	return strncmp(help_opt.flag, name, n) == 0 && help_opt.flag[n] == '\0' ? &help_opt : NULL;
}

static const struct ar_opt *find_short(const struct ar_opt *table, char c)
{
	for (const struct ar_opt *o = table; o->flag != NULL; o++)
		if (o->short_flag == c)
			return o;
	return c == help_opt.short_flag ? &help_opt : NULL;
}

static int unknown(const struct ar_opt *table, const char *arg, size_t n, ar_error_t *err)
{
	ar_autofree char *name = ar_xstrndup(arg, n);
	struct ar_suggest s;
	ar_suggest_init(&s, name);
	for (const struct ar_opt *o = table; o->flag != NULL; o++)
		ar_suggest_add(&s, o->flag);
	const char *near = ar_suggest_best(&s);
	if (near != NULL)
		return ar_error_make(err, 0, "unknown option `%s` (did you mean `%s`?)", name,
				     near);
	return ar_error_make(err, 0, "unknown option `%s`", name);
}

static void add_match(struct ar_opt_result *r, const struct ar_opt *o, const char *value)
{
	r->matches = ar_xrealloc(r->matches, (r->n_matches + 1) * sizeof(*r->matches));
	r->matches[r->n_matches++] = (struct ar_opt_match){o, value};
}

/* One option at argv[*i]; *i is left on the last word it used. */
static int one_option(const struct ar_opt *table, int argc, char **argv, int *i,
		      struct ar_opt_result *r, ar_error_t *err)
{
	const char *arg = argv[*i], *inline_value = NULL;
	const struct ar_opt *o;
	if (arg[1] == '-') {
		const char *eq = strchr(arg, '=');
		size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
		if ((o = find_long(table, arg, n)) == NULL)
			return unknown(table, arg, n, err);
		inline_value = eq ? eq + 1 : NULL;
	} else {
		if ((o = find_short(table, arg[1])) == NULL)
			return unknown(table, arg, 2, err);
		inline_value = arg[2] ? arg + 2 : NULL;
	}
	if (o == &help_opt) {
		r->help = true;
		return 0;
	}
	if (o->value == NULL && inline_value != NULL)
		return ar_error_make(err, 0, "option `%s` takes no value", o->flag);
	if (o->value != NULL && inline_value == NULL) {
		if (*i + 1 >= argc)
			return ar_error_make(err, 0, "option `%s` needs a value (%s %s)", o->flag,
					     o->flag, o->value);
		inline_value = argv[++*i];
	}
	add_match(r, o, inline_value);
	return 0;
}

int ar_opt_parse(const struct ar_opt *table, enum ar_opt_mode mode, int argc, char **argv,
		 struct ar_opt_result *r, ar_error_t *err)
{
	*r = (struct ar_opt_result){0};
	r->operands = ar_xcalloc((size_t)argc + 1, sizeof(char *));
	for (int i = 1; i < argc && !r->help; i++) {
		const char *arg = argv[i];
		if (strcmp(arg, "--") == 0) {
			r->dashdash = true;
			r->cmd = argv + i + 1;
			r->n_cmd = (size_t)(argc - i - 1);
			return 0;
		}
		if (arg[0] != '-' || arg[1] == '\0') { /* "-" is stdin: an operand */
			if (mode == AR_OPT_STOP_AT_OPERAND) {
				r->cmd = argv + i;
				r->n_cmd = (size_t)(argc - i);
				return 0;
			}
			r->operands[r->n_operands++] = argv[i];
			continue;
		}
		if (one_option(table, argc, argv, &i, r, err) == -1)
			return -1;
	}
	r->cmd = argv + argc;
	return 0;
}

int ar_opt_apply(const struct ar_opt_result *r, void *ctx, ar_error_t *err)
{
	for (size_t i = 0; i < r->n_matches; i++) {
		const struct ar_opt_match *m = &r->matches[i];
		if (m->opt->set != NULL && m->opt->set(ctx, m->opt, m->value, err) == -1)
			return -1;
	}
	return 0;
}

const char *ar_opt_value(const struct ar_opt_result *r, const char *flag)
{
	const char *v = NULL;
	for (size_t i = 0; i < r->n_matches; i++)
		if (strcmp(r->matches[i].opt->flag, flag) == 0)
			v = r->matches[i].value;
	return v;
}

void ar_opt_result_free(struct ar_opt_result *r)
{
	free(r->matches);
	free(r->operands);
	r->matches = NULL;
	r->operands = NULL;
}

/* ---- help ---- */

void ar_opt_left(const struct ar_opt *o, char *buf, size_t size)
{
	char s[8] = "    ";
	if (o->short_flag)
		snprintf(s, sizeof(s), "-%c, ", o->short_flag);
	snprintf(buf, size, "%s%s%s%s", s, o->flag, o->value ? " " : "", o->value ? o->value : "");
}

#define HELP_COL 26

static void help_row(FILE *out, const struct ar_opt *o)
{
	char left[80];
	ar_opt_left(o, left, sizeof(left));
	const char *h = o->help;
	/* a long left column gets the text on the next line, as man pages do */
	if (strlen(left) + 4 > HELP_COL)
		fprintf(out, "  %s\n%*s", left, HELP_COL, "");
	else
		fprintf(out, "  %-*s", HELP_COL - 2, left);
	for (;;) {
		const char *nl = strchr(h, '\n');
		fprintf(out, "%.*s\n", nl ? (int)(nl - h) : (int)strlen(h), h);
		if (nl == NULL)
			break;
		h = nl + 1;
		fprintf(out, "%*s", HELP_COL, "");
	}
}

void ar_opt_help(FILE *out, const struct ar_opt *table)
{
	for (const struct ar_opt *o = table; o->flag != NULL; o++)
		help_row(out, o);
	help_row(out, &help_opt);
}

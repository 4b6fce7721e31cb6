/* Option tables (src/util/opts.c): one table per subcommand both parses argv and
 * prints the help and the man page, so a flag is one row and its documentation
 * cannot drift from its parser (crun's shape). Pure: no I/O but the help printer. */
#ifndef AGENTRUN_OPTS_H
#define AGENTRUN_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "agentrun/error.h"

struct ar_opt;
/* Store the option's value in ctx; errors name the flag. */
typedef int (*ar_opt_set_fn)(void *ctx, const struct ar_opt *opt, const char *value,
			     ar_error_t *err);

struct ar_opt {
	const char *flag;  /* "--policy"; NULL ends a table */
	char short_flag;   /* 'p', or 0 */
	const char *value; /* "FILE" in the help; NULL for a switch */
	const char *help;  /* '\n' continues it on the next line */
	ar_opt_set_fn set;
	size_t off; /* where ar_opt_str and ar_opt_true store, in ctx */
};

/* The stock setters: a `const char *` or a `bool` at ctx + off. */
int ar_opt_str(void *ctx, const struct ar_opt *opt, const char *value, ar_error_t *err);
int ar_opt_true(void *ctx, const struct ar_opt *opt, const char *value, ar_error_t *err);

/* How operands (words not starting with '-') are read. */
enum ar_opt_mode {
	AR_OPT_PERMUTE,		/* operands anywhere before `--` (audit FILE --json) */
	AR_OPT_STOP_AT_OPERAND, /* the first operand starts the command (run) */
};

struct ar_opt_match {
	const struct ar_opt *opt;
	const char *value;
};

struct ar_opt_result {
	struct ar_opt_match *matches; /* in argv order */
	size_t n_matches;
	char **operands; /* before `--`: in argv, not owned */
	size_t n_operands;
	char **cmd; /* after `--` (or from the first operand with STOP_AT_OPERAND) */
	size_t n_cmd;
	bool dashdash; /* a `--` was given */
	bool help;     /* -h or --help: nothing else was read */
};

/* Read argv[1..argc) against table (plus -h/--help). --flag=VALUE, --flag VALUE,
 * -f VALUE and -fVALUE. Does not call the setters: see ar_opt_apply. Errors:
 * "unknown option `--x` (did you mean `--y`?)", "option `--x` needs a value (--x FILE)". */
int ar_opt_parse(const struct ar_opt *table, enum ar_opt_mode mode, int argc, char **argv,
		 struct ar_opt_result *r, ar_error_t *err);
/* Call each match's setter with ctx, in argv order. */
int ar_opt_apply(const struct ar_opt_result *r, void *ctx, ar_error_t *err);
/* The last value given for flag, or NULL. */
const char *ar_opt_value(const struct ar_opt_result *r, const char *flag);
void ar_opt_result_free(struct ar_opt_result *r);
#define ar_autoopts __attribute__((cleanup(ar_opt_result_free)))

/* The options section of a help text, one row per option and -h, --help last:
 *   "  -p, --policy FILE        the policy" */
void ar_opt_help(FILE *out, const struct ar_opt *table);
/* "-p, --policy FILE" (or "    --json"): the left column of a row; buf of size. */
void ar_opt_left(const struct ar_opt *o, char *buf, size_t size);

#endif

/* Unit tests for the option tables (src/util/opts.c) and "did you mean" (suggest.c). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/opts.h"
#include "agentrun/util.h"

struct ctx {
	const char *policy, *format;
	bool json;
	int calls;
};

static int count_format(void *ctx, const struct ar_opt *o, const char *v, ar_error_t *err)
{
	struct ctx *c = ctx;
	if (strcmp(v, "bad") == 0)
		return ar_error_make(err, 0, "%s `%s`: no such format", o->flag, v);
	c->format = v;
	c->calls++;
	return 0;
}

static const struct ar_opt table[] = {
    {"--policy", 'p', "FILE", "the policy", ar_opt_str, offsetof(struct ctx, policy)},
    {"--format", 'f', "FORMAT", "a format\nsecond line", count_format, 0},
    {"--json", 0, NULL, "JSON", ar_opt_true, offsetof(struct ctx, json)},
    {NULL},
};

/* Parse a NULL-terminated argv; returns the message on failure (caller frees). */
static char *parse(enum ar_opt_mode mode, struct ar_opt_result *r, char **argv)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	ar_error_t err = NULL;
	if (ar_opt_parse(table, mode, argc, argv, r, &err) == 0)
		return NULL;
	char *msg = ar_xstrdup(err->msg);
	ar_error_release(&err);
	return msg;
}

static void test_forms(void **state)
{
	char *argv[] = {
	    "x",   "--policy=a.json", "-fjson", "FILE1", "--json", "-p", "b.json", "-", "--",
	    "cmd", "--json",	      NULL};
	ar_autoopts struct ar_opt_result r = {0};
	assert_null(parse(AR_OPT_PERMUTE, &r, argv));
	assert_int_equal(r.n_matches, 4);
	assert_int_equal(r.n_operands, 2);
	assert_string_equal(r.operands[0], "FILE1");
	assert_string_equal(r.operands[1], "-"); /* stdin, an operand */
	assert_true(r.dashdash);
	assert_int_equal(r.n_cmd, 2);
	assert_string_equal(r.cmd[0], "cmd");
	assert_string_equal(r.cmd[1], "--json");		     /* after --: the command's */
	assert_string_equal(ar_opt_value(&r, "--policy"), "b.json"); /* the last one */
	struct ctx c = {0};
	ar_auto_error ar_error_t err = NULL;
	assert_int_equal(ar_opt_apply(&r, &c, &err), 0);
	assert_string_equal(c.policy, "b.json");
	assert_string_equal(c.format, "json");
	assert_true(c.json);
	assert_int_equal(c.calls, 1);
}

static void test_stop_at_operand(void **state)
{
	char *argv[] = {"run", "--json", "sh", "-c", "--policy", NULL};
	ar_autoopts struct ar_opt_result r = {0};
	assert_null(parse(AR_OPT_STOP_AT_OPERAND, &r, argv));
	assert_int_equal(r.n_matches, 1);
	assert_false(r.dashdash);
	assert_int_equal(r.n_cmd, 3);
	assert_string_equal(r.cmd[0], "sh");
}

static void test_help(void **state)
{
	char *argv[] = {"x", "--json", "-h", "--bogus", NULL};
	ar_autoopts struct ar_opt_result r = {0};
	assert_null(parse(AR_OPT_PERMUTE, &r, argv));
	assert_true(r.help); /* nothing after it is read */
}

static void test_errors(void **state)
{
	static const struct {
		char *argv[4];
		const char *msg;
	} cases[] = {
	    {{"x", "--polcy", "a"}, "unknown option `--polcy` (did you mean `--policy`?)"},
	    {{"x", "--frobnicate"}, "unknown option `--frobnicate`"},
	    {{"x", "-z"}, "unknown option `-z`"},
	    {{"x", "--policy"}, "option `--policy` needs a value (--policy FILE)"},
	    {{"x", "-p"}, "option `--policy` needs a value (--policy FILE)"},
	    {{"x", "--json=1"}, "option `--json` takes no value"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		ar_autoopts struct ar_opt_result r = {0};
		char *argv[5] = {0};
		memcpy(argv, cases[i].argv, sizeof(cases[i].argv));
		ar_autofree char *msg = parse(AR_OPT_PERMUTE, &r, argv);
		assert_non_null(msg);
		assert_string_equal(msg, cases[i].msg);
	}
	/* a setter's own error */
	char *argv[] = {"x", "--format", "bad", NULL};
	ar_autoopts struct ar_opt_result r = {0};
	assert_null(parse(AR_OPT_PERMUTE, &r, argv));
	struct ctx c = {0};
	ar_auto_error ar_error_t err = NULL;
	assert_int_equal(ar_opt_apply(&r, &c, &err), -1);
	assert_string_equal(err->msg, "--format `bad`: no such format");
}

static void test_help_text(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ar_opt_help(f, table);
	fclose(f);
	assert_string_equal(buf, "  -p, --policy FILE       the policy\n"
				 "  -f, --format FORMAT     a format\n"
				 "                          second line\n"
				 "      --json              JSON\n"
				 "  -h, --help              this help\n");
	free(buf);
}

static void test_suggest(void **state)
{
	static const char *const keys[] = {"limits", "mounts", "name", "network"};
	static const struct {
		const char *word, *want;
	} cases[] = {
	    {"limts", "limits"}, {"Name", "name"},   {"netwrk", "network"},
	    {"x", NULL},	 {"colour", NULL},   {"name", NULL}, /* itself: no suggestion */
	    {"mount", "mounts"}, {"nteworkk", NULL}, /* three edits of eight: too far */
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		struct ar_suggest s;
		ar_suggest_init(&s, cases[i].word);
		for (size_t k = 0; k < AR_ARRAY_SIZE(keys); k++)
			ar_suggest_add(&s, keys[k]);
		const char *got = ar_suggest_best(&s);
		if (cases[i].want == NULL)
			assert_null(got);
		else
			assert_string_equal(got, cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_forms),     cmocka_unit_test(test_stop_at_operand),
	    cmocka_unit_test(test_help),      cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_help_text), cmocka_unit_test(test_suggest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

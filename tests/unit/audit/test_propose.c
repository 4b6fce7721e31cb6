/* Unit tests for the proposal's pure parts (docs/learn.md): the entries reader,
 * wildcard folding with the real Public Suffix List (libpsl, as the command loads it),
 * budget headroom, the rules kept and removed against a policy, the policy text edits
 * (every other byte kept) and the unified diff. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/audit.h"
#include "agentrun/propose.h"

static struct ar_psl *psl;

static int open_psl(void **state)
{
	ar_error_t err = NULL;
	if (ar_psl_open(&psl, &err) == -1) {
		fprintf(stderr, "libpsl: %s\n", err->msg);
		return -1;
	}
	return 0;
}

static int close_psl(void **state)
{
	ar_psl_close(psl);
	return 0;
}

static void test_headroom(void **state)
{
	assert_int_equal(ar_propose_headroom(0), AR_PROPOSE_BUDGET_MIN);
	assert_int_equal(ar_propose_headroom(2000), AR_PROPOSE_BUDGET_MIN);
	assert_int_equal(ar_propose_headroom(2048), 4100); /* 4096 up to two digits */
	assert_int_equal(ar_propose_headroom(50101), 110000);
	assert_int_equal(ar_propose_headroom(50000), 100000);
	assert_int_equal(ar_propose_headroom(1234567), 2500000);
	assert_true(ar_propose_headroom(UINT64_MAX) >= UINT64_MAX / 2);
}

/* fold(names..., NULL) -> "rule[names] rule[names] ..." */
static char *fold(size_t min, int port, ...)
{
	char *names[32];
	size_t n = 0;
	va_list ap;
	va_start(ap, port);
	for (char *s; (s = va_arg(ap, char *)) != NULL;)
		names[n++] = s;
	va_end(ap);
	struct ar_proposal_rule *r = NULL;
	size_t nr = 0;
	ar_propose_fold(names, n, port, min, psl, &r, &nr);
	struct ar_buf b = {0};
	for (size_t i = 0; i < nr; i++) {
		ar_buf_printf(&b, "%s%s[%zu]", i ? " " : "", r[i].rule, r[i].n_names);
		free(r[i].rule);
		ar_strv_free(r[i].names);
	}
	free(r);
	char *out = ar_xstrdup(b.data ? b.data : "");
	ar_buf_free(&b);
	return out;
}

static void expect_fold(char *got, const char *want)
{
	if (strcmp(got, want) != 0)
		fail_msg("got  %s\nwant %s", got, want);
	free(got);
}

static void test_fold(void **state)
{
	/* four names under one parent: a wildcard at the deepest parent */
	expect_fold(fold(4, 443, "a.cdn.example.com", "b.cdn.example.com", "c.cdn.example.com",
			 "d.cdn.example.com", "api.example.com", NULL),
		    "*.cdn.example.com:443[4] api.example.com:443[1]");
	/* three: exact names (duplicates count once) */
	expect_fold(fold(4, 443, "a.cdn.example.com", "b.cdn.example.com", "c.cdn.example.com",
			 "c.cdn.example.com", NULL),
		    "a.cdn.example.com:443[1] b.cdn.example.com:443[1] c.cdn.example.com:443[1]");
	/* spread over two parents, four in all: the registrable domain */
	expect_fold(fold(4, 8080, "a.x.example.com", "b.x.example.com", "c.y.example.com",
			 "d.y.example.com", NULL),
		    "*.example.com:8080[4]");
	/* never at a public suffix: four github.io sites stay exact, */
	expect_fold(fold(4, 443, "a.github.io", "b.github.io", "c.github.io", "d.github.io", NULL),
		    "a.github.io:443[1] b.github.io:443[1] c.github.io:443[1] d.github.io:443[1]");
	/* nor above one (s3.amazonaws.com is a suffix: *.amazonaws.com would cover
	 * every bucket), nor over a country's second level */
	expect_fold(fold(4, 443, "a.s3.amazonaws.com", "b.s3.amazonaws.com", "c.s3.amazonaws.com",
			 "d.s3.amazonaws.com", NULL),
		    "a.s3.amazonaws.com:443[1] b.s3.amazonaws.com:443[1] c.s3.amazonaws.com:443[1] "
		    "d.s3.amazonaws.com:443[1]");
	expect_fold(fold(4, 443, "a.co.uk", "b.co.uk", "c.co.uk", "d.co.uk", NULL),
		    "a.co.uk:443[1] b.co.uk:443[1] c.co.uk:443[1] d.co.uk:443[1]");
	/* under one registrable domain of a shared platform: fine */
	expect_fold(fold(4, 443, "a.me.github.io", "b.me.github.io", "c.me.github.io",
			 "d.me.github.io", NULL),
		    "*.me.github.io:443[4]");
	/* the apex is not under its wildcard; a lower minimum folds sooner */
	expect_fold(fold(2, 443, "example.com", "a.example.com", "b.example.com", NULL),
		    "*.example.com:443[2] example.com:443[1]");
	/* nested: the deeper group first, the rest by what is left */
	expect_fold(fold(4, 443, "1.a.ex.org", "2.a.ex.org", "3.a.ex.org", "4.a.ex.org", "x.ex.org",
			 "y.ex.org", NULL),
		    "*.a.ex.org:443[4] x.ex.org:443[1] y.ex.org:443[1]");
	expect_fold(fold(4, 443, NULL), "");
}

static const char audit_log[] =
    "{\"method\":\"GET\",\"host\":\"a.t.example\",\"port\":80,\"addr\":\"127.0.0.1\",\"allowed\":"
    "true,\"status\":200,\"bytes_out\":100,\"bytes_in\":5,\"learned\":true}\n"
    "{\"method\":\"POST\",\"host\":\"a.t.example\",\"port\":80,\"addr\":\"127.0.0.1\",\"allowed\":"
    "true,\"status\":200,\"bytes_out\":3000,\"bytes_in\":5,\"learned\":true,\"body_bytes\":2900}\n"
    "{\"method\":\"CONNECT\",\"host\":\"api.github.com\",\"port\":443,\"addr\":\"140.82.1.1\","
    "\"allowed\":true,\"status\":200,\"bytes_out\":700,\"rule\":\"*.github.com:443\"}\n"
    "{\"method\":\"CONNECT\",\"host\":\"10.1.2.3\",\"port\":22,\"addr\":\"10.1.2.3\",\"allowed\":"
    "true,\"status\":200,\"bytes_out\":7}\n"
    "{\"method\":\"DNS\",\"host\":\"dns.only.example\",\"port\":53,\"allowed\":true,\"status\":0,"
    "\"learned\":true}\n"
    "{\"method\":\"GET\",\"host\":\"evil.example\",\"port\":80,\"allowed\":false,\"status\":403}\n"
    "torn {\n";

static void test_entries(void **state)
{
	struct ar_audit_entries es;
	ar_audit_read_entries(audit_log, strlen(audit_log), &es);
	assert_int_equal(es.n, 6);
	assert_int_equal(es.invalid_lines, 1);
	assert_int_equal(es.first_invalid, 7);
	assert_true(es.v[1].learned && es.v[1].has_body);
	assert_int_equal(es.v[1].body_bytes, 2900);
	assert_false(es.v[2].has_body);
	assert_string_equal(es.v[2].rule, "*.github.com:443");
	assert_true(ar_audit_entry_is_dns(&es.v[4]));
	assert_false(es.v[5].allowed);
	ar_audit_entries_free(&es);
}

static const char policy_text[] = "{\n"
				  "  \"name\": \"t\",\n"
				  "  \"allowed_hosts\": [\"*.github.com:443\", \"gone.example\"],\n"
				  "  \"limits\": {\"memory\": \"1g\"},\n"
				  "  \"proxy\": {\n"
				  "    \"sni\": \"check\",\n"
				  "    \"allow_private\": [\"127.0.0.0/8\", \"192.168.0.0/16\"]\n"
				  "  }\n"
				  "}\n";

static void propose_against(const char *text, struct ar_proposal *pr, struct ar_buf *out)
{
	struct ar_audit_entries es;
	struct ar_policy *p = NULL;
	ar_error_t err = NULL;
	assert_int_equal(ar_policy_parse(text, strlen(text), "p.json", &p, &err), 0);
	ar_audit_read_entries(audit_log, strlen(audit_log), &es);
	struct ar_propose_opts o = {.psl = psl, .policy = p};
	ar_propose(&es, &o, pr);
	assert_int_equal(ar_propose_policy_text(pr, text, strlen(text), out, &err), 0);
	ar_audit_entries_free(&es);
	ar_policy_free(p);
}

static void test_against_policy(void **state)
{
	struct ar_proposal pr;
	struct ar_buf out = {0};
	propose_against(policy_text, &pr, &out);
	assert_int_equal(pr.requests, 4); /* DNS and the refusal propose nothing */
	assert_int_equal(pr.learned, 2);
	assert_int_equal(pr.n_rules, 3);
	assert_string_equal(pr.rules[0].rule, "*.github.com:443");
	assert_false(pr.rules[0].added);
	assert_string_equal(pr.rules[1].rule, "10.1.2.3:22"); /* a literal: exactly */
	assert_string_equal(pr.rules[2].rule, "a.t.example:80");
	assert_int_equal(pr.rules[2].requests, 2);
	assert_int_equal(pr.n_removed, 1);
	assert_string_equal(pr.removed[0], "gone.example");
	assert_int_equal(pr.n_budgets, 2);
	assert_string_equal(pr.budgets[0].host, "a.t.example");
	assert_int_equal(pr.budgets[0].max_bytes_out, 6200);
	assert_string_equal(pr.budgets[1].host, "api.github.com");
	/* 127.0.0.1 held by the policy's range; 10.1.2.3 is a literal's: no range */
	assert_int_equal(pr.n_allow_private, 1);
	assert_string_equal(pr.allow_private[0], "127.0.0.0/8");
	assert_int_equal(pr.n_private_removed, 1);
	assert_string_equal(pr.private_removed[0], "192.168.0.0/16");
	assert_string_equal(
	    out.data, "{\n"
		      "  \"name\": \"t\",\n"
		      "  \"allowed_hosts\": [\"*.github.com:443\", \"10.1.2.3:22\", "
		      "\"a.t.example:80\"],\n"
		      "  \"limits\": {\"memory\": \"1g\"},\n"
		      "  \"proxy\": {\n"
		      "    \"sni\": \"check\",\n"
		      "    \"allow_private\": [\"127.0.0.0/8\"],\n"
		      "    \"max_bytes_out\": {\"a.t.example\": 6200, \"api.github.com\": 4096}\n"
		      "  }\n"
		      "}\n");
	ar_buf_free(&out);
	ar_proposal_free(&pr);
}

/* Members the file lacks are added after its last one, on its lines or inline. */
static void test_policy_insertions(void **state)
{
	struct ar_proposal pr;
	struct ar_buf out = {0};
	propose_against("{\"name\": \"t\", \"mode\": \"learn\"}", &pr, &out);
	assert_string_equal(out.data,
			    "{\"name\": \"t\", \"mode\": \"enforce\", \"allowed_hosts\": "
			    "[\"10.1.2.3:22\", \"a.t.example:80\", \"api.github.com:443\"], "
			    "\"proxy\": {\"max_bytes_out\": {\"a.t.example\": 6200, "
			    "\"api.github.com\": 4096}, \"allow_private\": [\"127.0.0.1\"]}}");
	ar_buf_free(&out);
	ar_proposal_free(&pr);
	propose_against("{\n\t\"name\": \"t\",\n\t\"proxy\": {\n\t\t\"sni\": \"off\"\n\t}\n}", &pr,
			&out);
	assert_string_equal(out.data,
			    "{\n\t\"name\": \"t\",\n\t\"proxy\": {\n\t\t\"sni\": \"off\",\n"
			    "\t\t\"max_bytes_out\": {\"a.t.example\": 6200, "
			    "\"api.github.com\": 4096},\n"
			    "\t\t\"allow_private\": [\"127.0.0.1\"]\n\t},\n"
			    "\t\"allowed_hosts\": [\"10.1.2.3:22\", \"a.t.example:80\", "
			    "\"api.github.com:443\"]\n}");
	ar_buf_free(&out);
	ar_proposal_free(&pr);
}

static void test_diff(void **state)
{
	struct ar_buf d = {0};
	const char *a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n";
	const char *b = "1\n2\n3\nfour\n5\n6\n7\n8\n9\n10\n11\n12\n13";
	ar_unified_diff(a, strlen(a), b, strlen(b), "a", "b", &d);
	assert_string_equal(d.data, "--- a\n+++ b\n"
				    "@@ -1,7 +1,7 @@\n 1\n 2\n 3\n-4\n+four\n 5\n 6\n 7\n"
				    "@@ -10,3 +10,4 @@\n 10\n 11\n 12\n+13\n"
				    "\\ No newline at end of file\n");
	ar_buf_reset(&d);
	ar_unified_diff(a, strlen(a), a, strlen(a), "a", "b", &d);
	assert_true(d.len == 0);
	ar_unified_diff("", 0, "x\n", 2, "a", "b", &d);
	assert_string_equal(d.data, "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+x\n");
	ar_buf_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_headroom),	      cmocka_unit_test(test_fold),
	    cmocka_unit_test(test_entries),	      cmocka_unit_test(test_against_policy),
	    cmocka_unit_test(test_policy_insertions), cmocka_unit_test(test_diff),
	};
	return cmocka_run_group_tests(tests, open_psl, close_psl);
}

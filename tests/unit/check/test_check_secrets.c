/* Unit tests for the secrets findings of every check (src/check/findings.c): a policy
 * secret's variable must hold its placeholder (a real value is drift, never shown); a
 * placeholder is no "secret in environment". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/check.h"
#include "agentrun/policy.h"

static void test_policy_secret_env(void **state)
{
	static const char json[] =
	    "{\"allowed_hosts\": [\"api.example\"], \"secrets\": {\"GH_TOKEN\": {\"from\": "
	    "\"env:X\", \"hosts\": [\"api.example\"]}}}";
	ar_auto_error ar_error_t err = NULL;
	ar_autopolicy struct ar_policy *p = NULL;
	assert_int_equal(ar_policy_parse(json, sizeof(json) - 1, "p.json", &p, &err), 0);
	char *placeholder[] = {
	    "GH_TOKEN=agentrun-secret-GH_TOKEN-0123456789abcdef0123456789abcdef",
	    "OTHER_TOKEN=agentrun-secret-OTHER_TOKEN-0123456789abcdef0123456789abcdef", "PATH=/bin",
	    NULL};
	ar_autofindings struct ar_findings ok = {0};
	ar_findings_add_secrets(&ok, p, placeholder, "unset %s");
	assert_int_equal(ok.n, 0);
	char *real[] = {"GH_TOKEN=ghp_0123456789012345678901234567890123", "PATH=/bin", NULL};
	ar_autofindings struct ar_findings drift = {0};
	ar_findings_add_secrets(&drift, p, real, "unset %s");
	assert_int_equal(drift.n, 1);
	assert_string_equal(drift.v[0].what, "secret GH_TOKEN");
	assert_string_equal(drift.v[0].actual, "a real value (not shown)");
	assert_null(strstr(drift.v[0].fix, "ghp_"));
	/* a near placeholder (wrong name, short random part) is a value */
	char *near[] = {"GH_TOKEN=agentrun-secret-API_KEY-0123456789abcdef0123456789abcdef",
			"X_TOKEN=agentrun-secret-X_TOKEN-0123", NULL};
	ar_autofindings struct ar_findings near_f = {0};
	ar_findings_add_secrets(&near_f, p, near, "unset %s");
	assert_int_equal(near_f.n, 2);
	/* without a policy: the old rule (a secret-looking name or value) */
	ar_autofindings struct ar_findings none = {0};
	ar_findings_add_secrets(&none, NULL, real, "unset %s");
	assert_int_equal(none.n, 1);
	assert_string_equal(none.v[0].what, "secret in environment GH_TOKEN");
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_policy_secret_env)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The address plan (src/net/plan.c): ranges, the /30s cut from them, the URL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/net.h"

static void test_default_range(void **state)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_net_range r;
	struct ar_net_plan p;

	assert_int_equal(ar_net_range_parse(AR_NET_DEFAULT_RANGE, &r, &err), 0);
	assert_int_equal(ar_net_range_count(&r), 16384);
	ar_net_plan_at(&r, 0, 3128, &p);
	assert_string_equal(p.proxy_ip, "10.254.0.1");
	assert_string_equal(p.sandbox_ip, "10.254.0.2");
	assert_string_equal(p.proxy_url, "http://10.254.0.1:3128");
	ar_net_plan_at(&r, 64, 8080, &p);
	assert_string_equal(p.proxy_ip, "10.254.1.1");
	assert_string_equal(p.sandbox_ip, "10.254.1.2");
	ar_net_plan_at(&r, 16383, 3128, &p);
	assert_string_equal(p.proxy_ip, "10.254.255.253");
	assert_string_equal(p.sandbox_ip, "10.254.255.254");
}

static void test_small_range(void **state)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_net_range r;
	assert_int_equal(ar_net_range_parse("192.168.7.0/30", &r, &err), 0);
	assert_int_equal(ar_net_range_count(&r), 1);
	assert_int_equal(ar_net_range_parse("172.31.0.0/24", &r, &err), 0);
	assert_int_equal(ar_net_range_count(&r), 64);
}

static void test_bad_ranges(void **state)
{
	static const char *const bad[] = {"10.254.0.0", "10.254.0.0/31", "10.254.0.0/7",
					  "fd00::/64",	"10.254.0.1/16", "x/16",
					  "10.254.0.0/"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ar_auto_error ar_error_t err = NULL;
		struct ar_net_range r;
		assert_int_equal(ar_net_range_parse(bad[i], &r, &err), -1);
		assert_non_null(strstr(err->msg, bad[i]));
	}
}

static void test_env_override(void **state)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_net_range r;
	setenv(AR_NET_RANGE_ENV, "10.9.0.0/29", 1);
	assert_int_equal(ar_net_range_current(&r, &err), 0);
	assert_int_equal(ar_net_range_count(&r), 2);
	setenv(AR_NET_RANGE_ENV, "nope", 1);
	assert_int_equal(ar_net_range_current(&r, &err), -1);
	assert_non_null(strstr(err->msg, AR_NET_RANGE_ENV));
	unsetenv(AR_NET_RANGE_ENV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_range),
	    cmocka_unit_test(test_small_range),
	    cmocka_unit_test(test_bad_ranges),
	    cmocka_unit_test(test_env_override),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

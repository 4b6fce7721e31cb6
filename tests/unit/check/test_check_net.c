/* The network findings of check (src/check/netcheck.c), pure: facts built by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/check.h"
#include "agentrun/policy.h"
#include "agentrun/util.h"

static struct ar_policy *proxy_policy(void)
{
	static const char json[] = "{\"name\": \"n\", \"allowed_hosts\": [\"a.example:443\"], "
				   "\"proxy\": {\"transparent\": false}}";
	struct ar_policy *p = NULL;
	ar_auto_error ar_error_t err = NULL;
	assert_int_equal(ar_policy_parse(json, strlen(json), "p.json", &p, &err), 0);
	return p;
}

static char **strv(const char *a, const char *b, const char *c)
{
	char **v = ar_xcalloc(4, sizeof(char *));
	size_t n = 0;
	const char *in[] = {a, b, c};
	for (size_t i = 0; i < 3; i++)
		if (in[i])
			v[n++] = ar_xstrdup(in[i]);
	return v;
}

/* A healthy sandbox on 10.254.3.0/30 (index 192 of the default range). */
static struct ar_check_net_facts *healthy(void)
{
	struct ar_check_net_facts *f = ar_xcalloc(1, sizeof(*f));
	snprintf(f->eth0_ip, sizeof(f->eth0_ip), "10.254.3.2");
	f->eth0_prefix = 30;
	f->routes = strv("10.254.3.0/30 dev eth0", NULL, NULL);
	snprintf(f->proxy_url, sizeof(f->proxy_url), "http://10.254.3.1:3128");
	f->peer_read = true;
	f->peer_links = strv("lo", "veth0", NULL);
	snprintf(f->peer_expected, sizeof(f->peer_expected), "tcp listen 10.254.3.1:3128");
	f->peer_sockets = strv("tcp listen 10.254.3.1:3128", NULL, NULL);
	return f;
}

static void check(struct ar_check_net_facts *f, char **devs, size_t want, const char *what,
		  const char *actual)
{
	ar_autopolicy struct ar_policy *p = proxy_policy();
	ar_autofindings struct ar_findings out = {0};
	ar_check_net(p, devs, f, &out);
	assert_int_equal(out.n, want);
	if (want > 0) {
		assert_string_equal(out.v[0].what, what);
		assert_string_equal(out.v[0].actual, actual);
		assert_non_null(out.v[0].fix);
	}
	ar_check_net_facts_free(f);
	ar_strv_free(devs);
}

static void test_healthy(void **state)
{
	check(healthy(), strv("eth0", "lo", NULL), 0, NULL, NULL);
}

static void test_extra_interface(void **state)
{
	check(healthy(), strv("eth0", "lo", "tap0"), 1, "network interfaces", "eth0,lo,tap0");
}

static void test_routes(void **state)
{
	struct ar_check_net_facts *f = healthy();
	ar_strv_free(f->routes);
	f->routes = strv("10.254.3.0/30 dev eth0", "192.168.0.0/16 dev eth0", NULL);
	check(f, strv("eth0", "lo", NULL), 1, "route 192.168.0.0/16 dev eth0", "present");
}

static void test_eth0_not_on_the_plan(void **state)
{
	struct ar_check_net_facts *f = healthy();
	snprintf(f->eth0_ip, sizeof(f->eth0_ip), "10.9.9.9");
	f->eth0_prefix = 24;
	f->proxy_url[0] = '\0';
	ar_strv_free(f->routes);
	f->routes = strv("10.9.9.0/24 dev eth0", NULL, NULL);
	/* the address, and its /24 is no /30 of the plan */
	ar_autopolicy struct ar_policy *p = proxy_policy();
	ar_autofindings struct ar_findings out = {0};
	char **devs = strv("eth0", "lo", NULL);
	ar_check_net(p, devs, f, &out);
	assert_int_equal(out.n, 2);
	assert_string_equal(out.v[0].what, "eth0 address");
	assert_string_equal(out.v[0].actual, "10.9.9.9/24");
	assert_string_equal(out.v[1].what, "route 10.9.9.0/24 dev eth0");
	ar_check_net_facts_free(f);
	ar_strv_free(devs);
}

static void test_peer(void **state)
{
	struct ar_check_net_facts *f = healthy();
	ar_strv_free(f->peer_sockets);
	f->peer_sockets = strv("tcp listen 10.254.3.1:3128", "udp 0.0.0.0:53", NULL);
	check(f, strv("eth0", "lo", NULL), 1, "proxy netns sockets",
	      "tcp listen 10.254.3.1:3128,udp 0.0.0.0:53");
	f = healthy();
	ar_strv_free(f->peer_links);
	f->peer_links = strv("lo", "veth0", "eth9");
	check(f, strv("eth0", "lo", NULL), 1, "proxy netns interfaces", "lo,veth0,eth9");
	f = healthy();
	f->peer_read = false;
	check(f, strv("eth0", "lo", NULL), 1, "proxy netns", "not found");
}

/* Transparent capture: the DNS stub's sockets and one listener per captured port
 * (80, 443 and the rules' ports) belong in the proxy netns, and its rule and routes. */
static void test_capture(void **state)
{
	static const char json[] =
	    "{\"name\": \"n\", \"allowed_hosts\": [\"a.example:443\", \"b.example:6443\"]}";
	const char *sockets[] = {"tcp listen 0.0.0.0:443",     "tcp listen 0.0.0.0:53",
				 "tcp listen 0.0.0.0:6443",    "tcp listen 0.0.0.0:80",
				 "tcp listen 10.254.3.1:3128", "udp 0.0.0.0:53"};
	for (int round = 0; round < 3; round++) {
		ar_autopolicy struct ar_policy *p = NULL;
		ar_auto_error ar_error_t err = NULL;
		ar_autofindings struct ar_findings out = {0};
		assert_int_equal(ar_policy_parse(json, strlen(json), "p.json", &p, &err), 0);
		assert_true(p->proxy.transparent);
		struct ar_check_net_facts *f = healthy();
		ar_strv_free(f->peer_sockets);
		f->peer_sockets = ar_xcalloc(8, sizeof(char *));
		for (size_t i = 0; i < 6; i++)
			if (round != 1 || i != 5) /* round 1: no UDP 53 */
				f->peer_sockets[i - (round == 1 && i > 5)] = ar_xstrdup(sockets[i]);
		f->capture = round == 2 ? 0 : 1;
		f->capture_missing = round == 2 ? "rule iif veth0 lookup 100" : NULL;
		char **devs = strv("eth0", "lo", NULL);
		ar_check_net(p, devs, f, &out);
		assert_int_equal(out.n, round == 0 ? 0 : 1);
		if (round == 1)
			assert_string_equal(out.v[0].what, "proxy netns sockets");
		if (round == 2) {
			assert_string_equal(out.v[0].what, "transparent capture");
			assert_string_equal(out.v[0].actual, "rule iif veth0 lookup 100");
		}
		ar_check_net_facts_free(f);
		ar_strv_free(devs);
	}
}

static void test_proxy_url(void **state)
{
	struct ar_check_net_facts *f = healthy();
	assert_true(ar_check_net_is_proxy_url(f, "http://10.254.3.1:3128", 3128));
	assert_false(ar_check_net_is_proxy_url(f, "http://10.254.4.1:3128", 3128));
	/* without facts: the first address of any /30 of the range */
	assert_true(ar_check_net_is_proxy_url(NULL, "http://10.254.7.5:3128", 3128));
	assert_false(ar_check_net_is_proxy_url(NULL, "http://10.254.7.6:3128", 3128));
	assert_false(ar_check_net_is_proxy_url(NULL, "http://10.254.7.5:8080", 3128));
	assert_false(ar_check_net_is_proxy_url(NULL, "http://10.1.7.5:3128", 3128));
	assert_false(ar_check_net_is_proxy_url(NULL, "http://10.254.7.5:3128/x", 3128));
	ar_check_net_facts_free(f);
}

/* network none: nothing of this half applies */
static void test_network_none(void **state)
{
	ar_autopolicy struct ar_policy *p = proxy_policy();
	ar_autofindings struct ar_findings out = {0};
	struct ar_check_net_facts *f = healthy();
	p->network = AR_NETWORK_NONE;
	ar_check_net(p, NULL, f, &out);
	assert_int_equal(out.n, 0);
	ar_check_net_facts_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_healthy),	 cmocka_unit_test(test_extra_interface),
	    cmocka_unit_test(test_routes),	 cmocka_unit_test(test_eth0_not_on_the_plan),
	    cmocka_unit_test(test_peer),	 cmocka_unit_test(test_proxy_url),
	    cmocka_unit_test(test_network_none), cmocka_unit_test(test_capture),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

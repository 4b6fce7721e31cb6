/* Unit tests for the policy reader: the full example, defaults, every error class
 * with its exact message, derived names, env helpers, the shipped profiles and the
 * embedded default. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/error.h"
#include "agentrun/policy.h"
#include "agentrun/util.h"

static struct ar_policy *parse_ok(const char *json)
{
	struct ar_policy *p = NULL;
	ar_error_t err = NULL;
	int r = ar_policy_parse(json, strlen(json), "p.json", &p, &err);
	if (r != 0)
		fail_msg("unexpected error for %s: %s", json, err ? err->msg : "(none)");
	assert_non_null(p);
	return p;
}

/* Parse must fail with exactly `want` and leave *out untouched. */
static void expect_err(const char *json, const char *want)
{
	struct ar_policy *p = NULL;
	ar_error_t err = NULL;
	int r = ar_policy_parse(json, strlen(json), "p.json", &p, &err);
	if (r != -1 || err == NULL) {
		ar_policy_free(p);
		fail_msg("expected failure for %s", json);
	}
	assert_null(p);
	if (strcmp(err->msg, want) != 0)
		fail_msg("for %s\n  got:  %s\n  want: %s", json, err->msg, want);
	ar_error_release(&err);
}

static void test_full_example(void **state)
{
	ar_autopolicy struct ar_policy *p = NULL;
	ar_auto_error ar_error_t err = NULL;

	assert_int_equal(ar_policy_load(AR_TEST_DATA "/full.json", &p, &err), 0);
	assert_null(err);
	assert_string_equal(p->origin, AR_TEST_DATA "/full.json");
	assert_string_equal(p->name, "triage");
	assert_string_equal(p->image, "python:3.12-alpine");
	assert_null(p->rootfs);
	assert_int_equal(p->n_allowed_hosts, 3);
	assert_string_equal(p->allowed_hosts[0], "api.anthropic.com");
	assert_string_equal(p->allowed_hosts[1], "*.github.com:443");
	assert_string_equal(p->allowed_hosts[2], "cc-lab-control-plane:6443");
	assert_null(p->allowed_hosts[3]);
	assert_string_equal(p->kubeconfig, "/home/me/.kube/agent-config");
	assert_string_equal(p->kubeconfig_target, "/home/agent/.kube/config");
	assert_int_equal(p->n_mounts, 3);
	assert_string_equal(p->mounts[0].source, "/srv/logs");
	assert_string_equal(p->mounts[0].target, "/logs");
	assert_true(p->mounts[0].readonly);
	assert_string_equal(p->mounts[1].source, "/srv/scratch");
	assert_string_equal(p->mounts[1].target, "/work/out");
	assert_false(p->mounts[1].readonly);
	assert_string_equal(p->mounts[2].source, "/srv/data");
	assert_true(p->mounts[2].readonly); /* default */
	assert_int_equal(p->n_tmpfs, 2);
	assert_string_equal(p->tmpfs[0], "/tmp");
	assert_string_equal(p->tmpfs[1], "/var/tmp");
	assert_null(p->tmpfs[2]);
	assert_int_equal(p->limits.pids, 64);
	assert_int_equal(p->limits.memory, 256LL << 20);
	assert_string_equal(p->limits.memory_str, "256m");
	assert_int_equal(p->limits.cpus_milli, 1000);
	assert_string_equal(p->limits.cpus_str, "1");
	assert_string_equal(p->user, "1000:1001");
	assert_int_equal(p->uid, 1000);
	assert_int_equal(p->gid, 1001);
	assert_int_equal(p->n_env, 3);
	assert_string_equal(p->env[0].key, "ANTHROPIC_BASE_URL");
	assert_string_equal(p->env[0].value, "https://api.anthropic.com");
	assert_string_equal(p->env[1].key, "ZED");
	assert_string_equal(p->env[2].key, "_a");
	assert_string_equal(p->seccomp, "default");
	assert_int_equal(p->network, AR_NETWORK_PROXY);
	assert_int_equal(p->proxy.port, 3128);
	assert_int_equal(p->proxy.sni, AR_SNI_REQUIRE);
	assert_int_equal(p->proxy.n_budgets, 2);
	assert_string_equal(p->proxy.budgets[0].host, "api.anthropic.com");
	assert_int_equal(p->proxy.budgets[0].max_bytes_out, 2000000);
	assert_string_equal(p->proxy.budgets[1].host, "b.example");
	assert_int_equal(p->proxy.budgets[1].max_bytes_out, 5);
	assert_string_equal(p->net_name, "triage-net");
	assert_string_equal(p->egress_name, "triage-egress");
	assert_string_equal(p->proxy_name, "triage-proxy");
	assert_string_equal(p->agent_name, "triage-agent");
	assert_string_equal(p->proxy_url, "http://triage-proxy:3128");
	assert_int_equal(ar_policy_validate(p, &err), 0);
}

static void test_defaults(void **state)
{
	ar_autopolicy struct ar_policy *p = parse_ok("{}");

	assert_string_equal(p->origin, "p.json");
	assert_string_equal(p->name, "agent");
	assert_null(p->image);
	assert_null(p->rootfs);
	assert_null(p->kubeconfig);
	assert_string_equal(p->kubeconfig_target, AR_DEFAULT_KUBECONFIG_TARGET);
	assert_int_equal(p->n_allowed_hosts, 0);
	assert_non_null(p->allowed_hosts);
	assert_null(p->allowed_hosts[0]);
	assert_int_equal(p->n_mounts, 0);
	assert_int_equal(p->n_tmpfs, 1);
	assert_string_equal(p->tmpfs[0], "/tmp");
	assert_int_equal(p->limits.pids, 64);
	assert_int_equal(p->limits.memory, 256LL << 20);
	assert_string_equal(p->limits.memory_str, "256m");
	assert_int_equal(p->limits.cpus_milli, 1000);
	assert_string_equal(p->limits.cpus_str, "1");
	assert_string_equal(p->user, "1000");
	assert_int_equal(p->uid, 1000);
	assert_int_equal(p->gid, 1000);
	assert_int_equal(p->n_env, 0);
	assert_string_equal(p->seccomp, "default");
	assert_int_equal(p->network, AR_NETWORK_NONE);
	assert_int_equal(p->proxy.port, 3128);
	assert_int_equal(p->proxy.sni, AR_SNI_CHECK);
	assert_int_equal(p->proxy.n_budgets, 0);
	assert_string_equal(p->agent_name, "agent-agent");
	assert_string_equal(p->proxy_url, "http://agent-proxy:3128");
}

/* null means absent: every key set to null gives the defaults */
static void test_null_is_absent(void **state)
{
	ar_autopolicy struct ar_policy *p = parse_ok(
	    "{\"name\": null, \"image\": null, \"rootfs\": null, \"allowed_hosts\": null,"
	    " \"kubeconfig\": null, \"mounts\": null, \"tmpfs\": null,"
	    " \"limits\": {\"pids\": null, \"memory\": null, \"cpus\": null, \"required\": null},"
	    " \"user\": null, \"env\": {\"A\": null}, \"seccomp\": null, \"network\": null,"
	    " \"proxy\": {\"port\": null, \"max_bytes_out\": null, \"sni\": null}}");
	assert_string_equal(p->name, "agent");
	assert_null(p->image);
	assert_int_equal(p->n_tmpfs, 1);
	assert_string_equal(p->tmpfs[0], "/tmp");
	assert_int_equal(p->limits.pids, 64);
	assert_string_equal(p->limits.memory_str, "256m");
	assert_string_equal(p->user, "1000");
	assert_int_equal(p->n_env, 0);
	assert_int_equal(p->network, AR_NETWORK_NONE);
	assert_int_equal(p->proxy.port, 3128);
}

static void test_network_default_follows_hosts(void **state)
{
	ar_autopolicy struct ar_policy *a = parse_ok("{\"allowed_hosts\": [\"example.org\"]}");
	ar_autopolicy struct ar_policy *b = parse_ok("{\"allowed_hosts\": []}");
	ar_autopolicy struct ar_policy *c = parse_ok("{\"network\": \"proxy\"}");
	assert_int_equal(a->network, AR_NETWORK_PROXY);
	assert_int_equal(b->network, AR_NETWORK_NONE);
	assert_int_equal(c->network, AR_NETWORK_PROXY);
	assert_int_equal(c->n_allowed_hosts, 0);
	assert_int_equal(a->mode, AR_MODE_ENFORCE);
}

/* "mode": learn observes the proxy's traffic: network defaults to proxy, and "none"
 * conflicts with it. */
static void test_mode(void **state)
{
	ar_autopolicy struct ar_policy *a = parse_ok("{\"mode\": \"learn\"}");
	ar_autopolicy struct ar_policy *b = parse_ok("{\"mode\": \"enforce\"}");
	assert_int_equal(a->mode, AR_MODE_LEARN);
	assert_int_equal(a->network, AR_NETWORK_PROXY);
	assert_int_equal(b->mode, AR_MODE_ENFORCE);
	assert_int_equal(b->network, AR_NETWORK_NONE);
	expect_err("{\"mode\": \"observe\"}",
		   "p.json: mode: must be \"enforce\" or \"learn\", got \"observe\"");
	expect_err("{\"mode\": \"learn\", \"network\": \"none\"}",
		   "p.json: network: \"none\" conflicts with mode \"learn\" (learn mode observes "
		   "the proxy's traffic); use \"proxy\"");
}

static void test_numbers_and_spellings(void **state)
{
	ar_autopolicy struct ar_policy *p =
	    parse_ok("{\"limits\": {\"pids\": 1, \"memory\": 8388608, \"cpus\": 0.5}, \"user\": 7,"
		     " \"tmpfs\": [], \"seccomp\": \"/etc/agentrun/strict.json\","
		     " \"proxy\": {\"port\": 8080, \"sni\": \"check\"}, \"name\": \"a\"}");
	assert_int_equal(p->limits.pids, 1);
	assert_int_equal(p->limits.memory, 8388608);
	assert_string_equal(p->limits.memory_str, "8388608");
	assert_int_equal(p->limits.cpus_milli, 500);
	assert_string_equal(p->limits.cpus_str, "0.5");
	assert_false(p->limits.required);
	assert_string_equal(p->user, "7");
	assert_int_equal(p->uid, 7);
	assert_int_equal(p->gid, 7);
	assert_int_equal(p->n_tmpfs, 0);
	assert_null(p->tmpfs[0]);
	assert_string_equal(p->seccomp, "/etc/agentrun/strict.json");
	assert_int_equal(p->proxy.sni, AR_SNI_CHECK);
	assert_string_equal(p->proxy_url, "http://a-proxy:8080");

	ar_autopolicy struct ar_policy *q =
	    parse_ok("{\"limits\": {\"memory\": \"1g\", \"cpus\": 2}, \"seccomp\": \"unconfined\","
		     " \"name\": \"abcdefghijklmnopqrstuvwxyz01234\"}");
	assert_int_equal(q->limits.memory, 1LL << 30);
	assert_int_equal(q->limits.cpus_milli, 2000);
	assert_string_equal(q->limits.cpus_str, "2");
	ar_autopolicy struct ar_policy *r = parse_ok("{\"limits\": {\"required\": true}}");
	assert_true(r->limits.required);
	assert_int_equal(r->limits.pids, 64);
	assert_string_equal(q->seccomp, "unconfined");
	assert_string_equal(q->egress_name, "abcdefghijklmnopqrstuvwxyz01234-egress");
}

/* proxy.dns_pool: kept as written; every overlap refused with the field named. */
static void test_proxy_dns_pool(void **state)
{
	static const struct {
		const char *pool, *want;
	} bad[] = {
	    {"\"fd00::/8\"",
	     "must be an IPv4 CIDR range such as \"198.18.0.0/15\", got \"fd00::/8\""},
	    {"\"100.80.0.1\"", "must be an IPv4 CIDR range"},
	    {"\"100.80.0.0/7\"", "\"100.80.0.0/7\": the prefix must be /8 to /30"},
	    {"\"100.80.0.0/31\"", "the prefix must be /8 to /30"},
	    {"\"100.80.0.1/16\"", "\"100.80.0.1/16\": host bits set"},
	    {"\"0.0.0.0/8\"", "overlaps 0.0.0.0/8"},
	    {"\"127.1.0.0/16\"", "overlaps 127.0.0.0/8, loopback"},
	    {"\"169.254.0.0/24\"", "overlaps 169.254.0.0/16, link-local"},
	    {"\"240.0.0.0/8\"", "overlaps 224.0.0.0/3"},
	    {"\"10.0.0.0/8\"", "overlaps 10.254.0.0/16, the network range"},
	    {"\"172.16.0.0/12\"", "overlaps proxy.allow_private[0] \"172.16.5.0/24\""},
	    {"true", "expected a string, got boolean"},
	};
	ar_autopolicy struct ar_policy *p =
	    parse_ok("{\"proxy\": {\"dns_pool\": \"100.80.0.0/16\"}}");
	assert_string_equal(p->proxy.dns_pool, "100.80.0.0/16");
	ar_autopolicy struct ar_policy *d = parse_ok("{}");
	assert_null(d->proxy.dns_pool);
	for (size_t i = 0; i < AR_ARRAY_SIZE(bad); i++) {
		char json[256];
		snprintf(json, sizeof(json),
			 "{\"proxy\": {\"allow_private\": [\"172.16.5.0/24\"], \"dns_pool\": %s}}",
			 bad[i].pool);
		struct ar_policy *q = NULL;
		ar_auto_error ar_error_t err = NULL;
		assert_int_equal(ar_policy_parse(json, strlen(json), "p.json", &q, &err), -1);
		assert_null(q);
		if (strncmp(err->msg, "p.json: proxy.dns_pool: ", 24) != 0 ||
		    strstr(err->msg, bad[i].want) == NULL)
			fail_msg("for %s\n  got:  %s\n  want: ...%s...", json, err->msg,
				 bad[i].want);
	}
}

static void test_proxy_private_and_transparent(void **state)
{
	ar_autopolicy struct ar_policy *p =
	    parse_ok("{\"allowed_hosts\": [\"kind-cp:6443\"], \"proxy\": {\"allow_private\": "
		     "[\"172.16.0.0/12\", \"fd00::/8\", \"127.0.0.1\"], \"transparent\": false}}");
	assert_int_equal(p->proxy.n_allow_private, 3);
	assert_string_equal(p->proxy.allow_private[0], "172.16.0.0/12");
	assert_string_equal(p->proxy.allow_private[2], "127.0.0.1");
	assert_null(p->proxy.allow_private[3]);
	assert_false(p->proxy.transparent);
	ar_autopolicy struct ar_policy *d = parse_ok("{\"allowed_hosts\": [\"a.example\"]}");
	assert_int_equal(d->proxy.n_allow_private, 0);
	assert_true(d->proxy.transparent);
	expect_err("{\"proxy\": {\"allow_private\": [\"10.0.0.0/33\"]}}",
		   "p.json: proxy.allow_private[0]: must be an address or CIDR range such as "
		   "\"172.16.0.0/12\" or \"fd00::/8\", got \"10.0.0.0/33\"");
	expect_err("{\"proxy\": {\"allow_private\": [\"kind\"]}}",
		   "p.json: proxy.allow_private[0]: must be an address or CIDR range such as "
		   "\"172.16.0.0/12\" or \"fd00::/8\", got \"kind\"");
	expect_err("{\"proxy\": {\"allow_private\": \"10.0.0.0/8\"}}",
		   "p.json: proxy.allow_private: expected an array of strings, got string");
	expect_err("{\"limits\": {\"required\": 1}}",
		   "p.json: limits.required: expected a boolean, got number");
	expect_err("{\"proxy\": {\"transparent\": \"yes\"}}",
		   "p.json: proxy.transparent: expected a boolean, got string");
}

static void test_unknown_keys(void **state)
{
	expect_err("{\"limitz\": {}}", "p.json: limitz: unknown key (did you mean \"limits\"?)");
	expect_err("{\"limitz\": null}", "p.json: limitz: unknown key (did you mean \"limits\"?)");
	expect_err("{\"limits\": {\"memroy\": \"1g\"}}",
		   "p.json: limits.memroy: unknown key (did you mean \"memory\"?)");
	expect_err("{\"mounts\": [{\"source\": \"/a\", \"target\": \"/b\", \"ro\": true}]}",
		   "p.json: mounts[0].ro: unknown key");
	expect_err("{\"proxy\": {\"listen\": 1}}", "p.json: proxy.listen: unknown key");
	expect_err("{\"Name\": \"x\"}", "p.json: Name: unknown key (did you mean \"name\"?)");
	expect_err("{\"name\": \"a\", \"name\": \"b\"}", "p.json: name: duplicate key");
	expect_err("{\"limits\": {\"pids\": 1, \"pids\": 2}}",
		   "p.json: limits.pids: duplicate key");
}

static void test_wrong_types(void **state)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
	    {"{\"name\": 1}", "p.json: name: expected a string, got number"},
	    {"{\"image\": true}", "p.json: image: expected a string, got boolean"},
	    {"{\"rootfs\": []}", "p.json: rootfs: expected a string, got array"},
	    {"{\"allowed_hosts\": \"a.com\"}",
	     "p.json: allowed_hosts: expected an array of strings, got string"},
	    {"{\"allowed_hosts\": [\"a.com\", 3]}",
	     "p.json: allowed_hosts[1]: expected a string, got number"},
	    {"{\"kubeconfig\": {}}", "p.json: kubeconfig: expected a string, got object"},
	    {"{\"mounts\": {}}", "p.json: mounts: expected an array of objects, got object"},
	    {"{\"mounts\": [\"/a:/b\"]}", "p.json: mounts[0]: expected an object, got string"},
	    {"{\"mounts\": [{\"source\": 1, \"target\": \"/b\"}]}",
	     "p.json: mounts[0].source: expected a string, got number"},
	    {"{\"mounts\": [{\"source\": \"/a\", \"target\": \"/b\", \"readonly\": \"yes\"}]}",
	     "p.json: mounts[0].readonly: expected a boolean, got string"},
	    {"{\"tmpfs\": \"/tmp\"}", "p.json: tmpfs: expected an array of strings, got string"},
	    {"{\"tmpfs\": [\"/tmp\", 1]}", "p.json: tmpfs[1]: expected a string, got number"},
	    {"{\"limits\": []}", "p.json: limits: expected an object, got array"},
	    {"{\"limits\": {\"pids\": \"64\"}}",
	     "p.json: limits.pids: expected a number, got string"},
	    {"{\"limits\": {\"memory\": true}}",
	     "p.json: limits.memory: expected a string or a number, got boolean"},
	    {"{\"limits\": {\"cpus\": []}}",
	     "p.json: limits.cpus: expected a string or a number, got array"},
	    {"{\"user\": false}", "p.json: user: expected a string, got boolean"},
	    {"{\"env\": []}", "p.json: env: expected an object of strings, got array"},
	    {"{\"env\": {\"A\": 1}}", "p.json: env.A: expected a string, got number"},
	    {"{\"seccomp\": 0}", "p.json: seccomp: expected a string, got number"},
	    {"{\"network\": false}", "p.json: network: expected a string, got boolean"},
	    {"{\"proxy\": \"on\"}", "p.json: proxy: expected an object, got string"},
	    {"{\"proxy\": {\"port\": \"3128\"}}",
	     "p.json: proxy.port: expected a number, got string"},
	    {"{\"proxy\": {\"sni\": 1}}", "p.json: proxy.sni: expected a string, got number"},
	    {"{\"proxy\": {\"max_bytes_out\": [1]}}",
	     "p.json: proxy.max_bytes_out: expected an object of host: bytes, got array"},
	    {"{\"proxy\": {\"max_bytes_out\": {\"a.com\": \"1m\"}}}",
	     "p.json: proxy.max_bytes_out[\"a.com\"]: expected a number, got string"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++)
		expect_err(cases[i].json, cases[i].want);
}

static void test_bad_names(void **state)
{
	static const char *const bad[] = {
	    "{\"name\": \"Triage\"}",
	    "{\"name\": \"-triage\"}",
	    "{\"name\": \"\"}",
	    "{\"name\": \"abcdefghijklmnopqrstuvwxyz012345\"}", /* 32 characters */
	    "{\"name\": \"tri_age\"}",
	    "{\"name\": \"tri.age\"}",
	    "{\"name\": \"caf\\u00e9\"}",
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(bad); i++)
		expect_err(bad[i], "p.json: name: must match ^[a-z0-9][a-z0-9-]{0,30}$");
	ar_autopolicy struct ar_policy *p = parse_ok("{\"name\": \"0-a-\"}");
	assert_string_equal(p->net_name, "0-a--net");
}

static void test_limits_errors(void **state)
{
	expect_err("{\"limits\": {\"memory\": \"lots\"}}",
		   "p.json: limits.memory: cannot parse \"lots\" (use 256m, 1g or bytes)");
	expect_err("{\"limits\": {\"memory\": \"256 m\"}}",
		   "p.json: limits.memory: cannot parse \"256 m\" (use 256m, 1g or bytes)");
	expect_err("{\"limits\": {\"memory\": 0}}",
		   "p.json: limits.memory: cannot parse \"0\" (use 256m, 1g or bytes)");
	expect_err("{\"limits\": {\"memory\": 1.5}}",
		   "p.json: limits.memory: cannot parse \"1.5\" (use 256m, 1g or bytes)");
	expect_err("{\"limits\": {\"memory\": \"-1g\"}}",
		   "p.json: limits.memory: cannot parse \"-1g\" (use 256m, 1g or bytes)");
	expect_err("{\"limits\": {\"memory\": \"1m\"}}",
		   "p.json: limits.memory: \"1m\" is below the minimum of 6m");
	expect_err("{\"limits\": {\"cpus\": \"half\"}}",
		   "p.json: limits.cpus: cannot parse \"half\" (use 0.5, 2 or a number of CPUs "
		   "above 0 with at most 3 decimals)");
	expect_err("{\"limits\": {\"cpus\": 0}}",
		   "p.json: limits.cpus: cannot parse \"0\" (use 0.5, 2 or a number of CPUs "
		   "above 0 with at most 3 decimals)");
	expect_err("{\"limits\": {\"cpus\": \"0.0001\"}}",
		   "p.json: limits.cpus: cannot parse \"0.0001\" (use 0.5, 2 or a number of CPUs "
		   "above 0 with at most 3 decimals)");
	expect_err("{\"limits\": {\"pids\": 0}}",
		   "p.json: limits.pids: must be an integer from 1 to 4194304, got 0");
	expect_err("{\"limits\": {\"pids\": -5}}",
		   "p.json: limits.pids: must be an integer from 1 to 4194304, got -5");
	expect_err("{\"limits\": {\"pids\": 1.5}}",
		   "p.json: limits.pids: must be an integer from 1 to 4194304, got 1.5");
	expect_err("{\"limits\": {\"pids\": 1e300}}",
		   "p.json: limits.pids: must be an integer from 1 to 4194304, got 1e+300");
}

static void test_user_errors(void **state)
{
	static const char *const bad[] = {"nobody",	"1000:staff", "",   ":1000",
					  "1000:",	"-1",	      "+5", "1000:1000:1",
					  "4294967295", " 1000"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(bad); i++) {
		char json[128], want[256];
		snprintf(json, sizeof(json), "{\"user\": \"%s\"}", bad[i]);
		snprintf(want, sizeof(want),
			 "p.json: user: must be a numeric \"UID\" or \"UID:GID\" such as \"1000\" "
			 "or \"1000:1000\", got \"%s\" (user names are not resolved)",
			 bad[i]);
		expect_err(json, want);
	}
	expect_err("{\"user\": -1}",
		   "p.json: user: must be an integer from 0 to 4294967294, got -1");
	/* uid or gid 0 is host root (no user namespace maps it) */
	static const struct {
		const char *json, *msg;
	} root[] = {
	    {"{\"user\": 0}", "p.json: user: uid 0 is root on the host; use a non-root uid"},
	    {"{\"user\": \"0\"}", "p.json: user: uid 0 is root on the host; use a non-root uid"},
	    {"{\"user\": \"0:1000\"}",
	     "p.json: user: uid 0 is root on the host; use a non-root uid"},
	    {"{\"user\": \"000\"}", "p.json: user: uid 0 is root on the host; use a non-root uid"},
	    {"{\"user\": \"1000:0\"}",
	     "p.json: user: gid 0 is root's group on the host; use a non-root gid"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(root); i++)
		expect_err(root[i].json, root[i].msg);
	ar_autopolicy struct ar_policy *one = parse_ok("{\"user\": \"1:1\"}");
	assert_int_equal(one->uid, 1);
	assert_int_equal(one->gid, 1);
	ar_autopolicy struct ar_policy *p = parse_ok("{\"user\": \"4294967294:7\"}");
	assert_int_equal(p->uid, 4294967294u);
	assert_int_equal(p->gid, 7);
}

static void test_path_errors(void **state)
{
	expect_err("{\"rootfs\": \"rootfs\"}",
		   "p.json: rootfs: must be an absolute path, got \"rootfs\"");
	expect_err("{\"rootfs\": \"/\"}",
		   "p.json: rootfs: must not be \"/\" (leave it null for a read-only view of the "
		   "host root with sensitive places hidden)");
	expect_err("{\"kubeconfig\": \"~/.kube/config\"}",
		   "p.json: kubeconfig: must be an absolute path, got \"~/.kube/config\"");
	expect_err("{\"kubeconfig\": \"/home/me/../root/.kube/config\"}",
		   "p.json: kubeconfig: must not contain \"..\" components, got "
		   "\"/home/me/../root/.kube/config\"");
	expect_err("{\"mounts\": [{\"source\": \"logs\", \"target\": \"/logs\"}]}",
		   "p.json: mounts[0].source: must be an absolute path, got \"logs\"");
	expect_err("{\"mounts\": [{\"source\": \"/srv/logs/..\", \"target\": \"/logs\"}]}",
		   "p.json: mounts[0].source: must not contain \"..\" components, got "
		   "\"/srv/logs/..\"");
	expect_err("{\"mounts\": [{\"source\": \"/a\", \"target\": \"/\"}]}",
		   "p.json: mounts[0].target: must not be \"/\", got \"/\"");
	expect_err("{\"mounts\": [{\"source\": \"/a\", \"target\": \"//./\"}]}",
		   "p.json: mounts[0].target: must not be \"/\", got \"//./\"");
	expect_err("{\"mounts\": [{\"source\": \"/a\", \"target\": \"/proc/sys\"}]}",
		   "p.json: mounts[0].target: is managed by the sandbox (/proc, /sys and /dev are "
		   "built by agentrun), got \"/proc/sys\"");
	expect_err(
	    "{\"mounts\": [{\"source\": \"/a\", \"target\": \"/x/../etc\"}]}",
	    "p.json: mounts[0].target: must not contain \"..\" components, got \"/x/../etc\"");
	expect_err("{\"mounts\": [{\"target\": \"/logs\"}]}",
		   "p.json: mounts[0]: missing \"source\" (a mount needs source and target)");
	expect_err("{\"mounts\": [{\"source\": \"/a\", \"target\": null}]}",
		   "p.json: mounts[0]: missing \"target\" (a mount needs source and target)");
	expect_err("{\"mounts\": [{\"source\": \"/a\", \"target\": \"/l\"},"
		   " {\"source\": \"/b\", \"target\": \"/l/\"}]}",
		   "p.json: mounts[1].target: \"/l\" is already the target of mounts[0]");
	expect_err("{\"mounts\": [{\"source\": \"/a\", \"target\": \"/tmp\"}]}",
		   "p.json: mounts[0].target: \"/tmp\" is also tmpfs[0]");
	expect_err("{\"tmpfs\": [\"/tmp\", \"tmp\"]}",
		   "p.json: tmpfs[1]: must be an absolute path, got \"tmp\"");
	expect_err("{\"tmpfs\": [\"/\"]}", "p.json: tmpfs[0]: must not be \"/\", got \"/\"");
	expect_err("{\"tmpfs\": [\"/sys/fs\"]}",
		   "p.json: tmpfs[0]: is managed by the sandbox (/proc, /sys and /dev are built "
		   "by agentrun), got \"/sys/fs\"");
	expect_err("{\"tmpfs\": [\"/tmp\", \"/tmp/\"]}",
		   "p.json: tmpfs[1]: \"/tmp\" is already tmpfs[0]");
	expect_err("{\"tmpfs\": [\"/tmp\\n\"]}",
		   "p.json: tmpfs[0]: must not contain control characters, got \"/tmp\\n\"");
	/* messages stay on one line and bounded whatever the input */
	expect_err("{\"tmpfs\": [\"/a\\u001b[31m\"]}",
		   "p.json: tmpfs[0]: must not contain control characters, got \"/a\\x1b[31m\"");
	expect_err("{\"bad\\nkey\": 1}", "p.json: bad\\nkey: unknown key");
	expect_err("{\"mounts\": [{\"source\": \"/a\", \"target\": \"/home/agent/.kube/config\"}],"
		   " \"kubeconfig\": \"/k\"}",
		   "p.json: mounts[0].target: \"/home/agent/.kube/config\" is where kubeconfig is "
		   "mounted");
	expect_err("{\"seccomp\": \"strict.json\"}",
		   "p.json: seccomp: must be \"default\", \"unconfined\" or an absolute path to an "
		   "OCI seccomp profile, got \"strict.json\"");

	ar_autopolicy struct ar_policy *p = parse_ok("{\"tmpfs\": [\"/dev/shm\"]}");
	assert_string_equal(p->tmpfs[0], "/dev/shm");
}

static void test_value_errors(void **state)
{
	expect_err("{\"network\": \"host\"}",
		   "p.json: network: must be \"proxy\" or \"none\", got \"host\"");
	expect_err("{\"network\": \"none\", \"allowed_hosts\": [\"a.com\", \"b.com\"]}",
		   "p.json: network: \"none\" conflicts with allowed_hosts (2 host(s)); remove "
		   "allowed_hosts or use \"proxy\"");
	expect_err("{\"allowed_hosts\": [\"\"]}", "p.json: allowed_hosts[0]: must not be empty");
	/* rules are compiled while reading; the message names the element */
	expect_err("{\"allowed_hosts\": [\"a.com\", \"*.com\"]}",
		   "p.json: allowed_hosts[1]: rule \"*.com\": a wildcard over a single label (a "
		   "top-level domain) is too broad");
	expect_err("{\"allowed_hosts\": [\"a.com:99999\"]}",
		   "p.json: allowed_hosts[0]: rule \"a.com:99999\": bad port (expected a number "
		   "from 1 to 65535)");
	expect_err("{\"allowed_hosts\": [\"https://a.com/\"]}",
		   "p.json: allowed_hosts[0]: rule \"https://a.com/\": a rule is a host with an "
		   "optional :port, not a URL");
	expect_err("{\"image\": \"--privileged\"}",
		   "p.json: image: must be a non-empty image reference without spaces, not "
		   "starting with '-'");
	expect_err("{\"image\": \"a b\"}",
		   "p.json: image: must be a non-empty image reference without spaces, not "
		   "starting with '-'");
	expect_err("{\"env\": {\"1A\": \"x\"}}",
		   "p.json: env: key \"1A\" must match ^[A-Za-z_][A-Za-z0-9_]*$");
	expect_err("{\"env\": {\"A-B\": \"x\"}}",
		   "p.json: env: key \"A-B\" must match ^[A-Za-z_][A-Za-z0-9_]*$");
	expect_err("{\"env\": {\"A\": \"x\", \"A\": \"y\"}}", "p.json: env: duplicate key \"A\"");
	expect_err("{\"allowed_hosts\": [\"a.com\"], \"env\": {\"HTTPS_PROXY\": \"http://x:1\"}}",
		   "p.json: env.HTTPS_PROXY: is set by agentrun to the proxy's address when "
		   "network is \"proxy\"");
	expect_err("{\"network\": \"proxy\", \"env\": {\"no_proxy\": \"*\"}}",
		   "p.json: env.no_proxy: is set by agentrun to the proxy's address when network "
		   "is \"proxy\"");
	expect_err("{\"kubeconfig\": \"/k\", \"env\": {\"KUBECONFIG\": \"/x\"}}",
		   "p.json: env.KUBECONFIG: is set by agentrun to the kubeconfig target when "
		   "kubeconfig is given");
	expect_err("{\"seccomp\": \"Default\"}",
		   "p.json: seccomp: must be \"default\", \"unconfined\" or an absolute path to an "
		   "OCI seccomp profile, got \"Default\"");
	expect_err("{\"proxy\": {\"port\": 0}}",
		   "p.json: proxy.port: must be an integer from 1 to 65535, got 0");
	expect_err("{\"proxy\": {\"port\": 65536}}",
		   "p.json: proxy.port: must be an integer from 1 to 65535, got 65536");
	expect_err("{\"proxy\": {\"sni\": \"on\"}}",
		   "p.json: proxy.sni: must be \"off\", \"check\" or \"require\", got \"on\"");
	expect_err("{\"proxy\": {\"max_bytes_out\": {\"a.com\": 0}}}",
		   "p.json: proxy.max_bytes_out[\"a.com\"]: must be an integer from 1 to "
		   "9007199254740992, got 0");
	expect_err("{\"proxy\": {\"max_bytes_out\": {\"A.com.\": 1, \"a.COM\": 2}}}",
		   "p.json: proxy.max_bytes_out: host \"a.com\" is listed twice");
	expect_err("{\"proxy\": {\"max_bytes_out\": {\".\": 1}}}",
		   "p.json: proxy.max_bytes_out: \".\" is not a host name");
	expect_err("{\"proxy\": {\"max_bytes_out\": {\"a b\": 1}}}",
		   "p.json: proxy.max_bytes_out: \"a b\" is not a host name");
}

static void test_invalid_json(void **state)
{
	expect_err("{\n  \"name\": \"a\",\n  \"image\": \"b\"\n  \"user\": \"1\"\n}",
		   "p.json: invalid JSON at line 4, column 3");
	expect_err("", "p.json: invalid JSON at line 1, column 1");
	expect_err("{\"name\": \"a\"} trailing", "p.json: invalid JSON at line 1, column 15");
	expect_err("{}\n\n{}", "p.json: invalid JSON at line 3, column 1");
	expect_err("{\"name\": [1,\n2,",
		   "p.json: invalid JSON at line 2, column 2"); /* truncated */
	expect_err(
	    "{\"kubeconfig\": \"/a\\u0000/../b\"}",
	    "p.json: invalid JSON at line 1, column 19: \\u0000 in a string is not supported");
	expect_err("[]", "p.json: expected a JSON object at the top level, got array");
	expect_err("\"x\"", "p.json: expected a JSON object at the top level, got string");
	expect_err("null", "p.json: expected a JSON object at the top level, got null");
	expect_err("42", "p.json: expected a JSON object at the top level, got number");

	/* a buffer is read up to len, not to a NUL, and whitespace may follow the value */
	struct ar_policy *p = NULL;
	ar_error_t err = NULL;
	assert_int_equal(ar_policy_parse("{}  \n{garbage", 5, "b.json", &p, &err), 0);
	ar_policy_free(p);
	p = NULL;
	assert_int_equal(ar_policy_parse("{}\0{}", 5, "b.json", &p, &err), -1);
	assert_string_equal(err->msg, "b.json: invalid JSON at line 1, column 3");
	ar_error_release(&err);
	/* a raw NUL byte inside a string: cJSON would keep "/a" (util's ar_json_refuse_nul) */
	assert_int_equal(ar_policy_parse("{\"name\": \"a\0b\"}", 15, "b.json", &p, &err), -1);
	assert_null(p);
	assert_string_equal(err->msg, "b.json: invalid JSON at line 1, column 12: a NUL byte");
	ar_error_release(&err);
	/* an escaped backslash before u0000 is not a NUL escape */
	ar_autopolicy struct ar_policy *q = parse_ok("{\"env\": {\"A\": \"\\\\u0000\"}}");
	assert_string_equal(ar_policy_getenv(q, "A"), "\\u0000");
}

static void test_long_message_is_cut(void **state)
{
	struct ar_buf json = {0};
	struct ar_policy *p = NULL;
	ar_error_t err = NULL;

	ar_buf_puts(&json, "{\"limits\": {\"memory\": \"");
	for (int i = 0; i < 5000; i++)
		ar_buf_putc(&json, 'x');
	ar_buf_puts(&json, "\"}}");
	assert_int_equal(ar_policy_parse(json.data, json.len, "p.json", &p, &err), -1);
	assert_int_equal(strlen(err->msg), 1024 + 3);
	assert_memory_equal(err->msg, "p.json: limits.memory: cannot parse \"xxx", 40);
	assert_string_equal(err->msg + 1024, "...");
	ar_error_release(&err);
	ar_buf_free(&json);
}

/* the same env keys are fine when agentrun does not set them */
static void test_env_reserved_only_when_set(void **state)
{
	ar_autopolicy struct ar_policy *p =
	    parse_ok("{\"env\": {\"HTTPS_PROXY\": \"http://10.0.0.1:1\", \"KUBECONFIG\": \"/k\"}}");
	assert_string_equal(ar_policy_getenv(p, "HTTPS_PROXY"), "http://10.0.0.1:1");
	assert_string_equal(ar_policy_getenv(p, "KUBECONFIG"), "/k");
}

static void test_load_errors(void **state)
{
	struct ar_policy *p = NULL;
	ar_error_t err = NULL;
	assert_int_equal(ar_policy_load(AR_TEST_DATA "/does-not-exist.json", &p, &err), -1);
	assert_null(p);
	assert_string_equal(err->msg, "policy: open `" AR_TEST_DATA
				      "/does-not-exist.json`: No such file or directory");
	ar_error_release(&err);
	assert_int_equal(ar_policy_load(AR_TEST_DATA "/bad-line.json", &p, &err), -1);
	assert_string_equal(err->msg, AR_TEST_DATA "/bad-line.json: limits.memory: cannot parse "
						   "\"lots\" (use 256m, 1g or bytes)");
	ar_error_release(&err);
}

static void test_derive_and_env(void **state)
{
	ar_autopolicy struct ar_policy *p = parse_ok("{\"name\": \"x\", \"env\": {\"B\": \"2\"}}");
	ar_auto_error ar_error_t err = NULL;

	free(p->name);
	p->name = ar_xstrdup("renamed");
	p->proxy.port = 9000;
	ar_policy_derive(p);
	assert_string_equal(p->net_name, "renamed-net");
	assert_string_equal(p->egress_name, "renamed-egress");
	assert_string_equal(p->proxy_name, "renamed-proxy");
	assert_string_equal(p->agent_name, "renamed-agent");
	assert_string_equal(p->proxy_url, "http://renamed-proxy:9000");

	ar_policy_setenv(p, "C", "3");
	ar_policy_setenv(p, "A", "1");
	ar_policy_setenv(p, "B", "two");
	ar_policy_setenv(p, "AB", "x");
	assert_int_equal(p->n_env, 4);
	assert_string_equal(p->env[0].key, "A");
	assert_string_equal(p->env[1].key, "AB");
	assert_string_equal(p->env[2].key, "B");
	assert_string_equal(p->env[3].key, "C");
	assert_string_equal(ar_policy_getenv(p, "B"), "two");
	assert_string_equal(ar_policy_getenv(p, "A"), "1");
	assert_null(ar_policy_getenv(p, "D"));
	assert_int_equal(ar_policy_validate(p, &err), 0);
}

static void test_validate_after_overrides(void **state)
{
	ar_autopolicy struct ar_policy *p = parse_ok("{\"allowed_hosts\": [\"a.com\"]}");
	ar_error_t err = NULL;

	p->network = AR_NETWORK_NONE;
	assert_int_equal(ar_policy_validate(p, &err), -1);
	assert_string_equal(err->msg, "p.json: network: \"none\" conflicts with allowed_hosts (1 "
				      "host(s)); remove allowed_hosts or use \"proxy\"");
	ar_error_release(&err);
	p->network = AR_NETWORK_PROXY;
	p->limits.pids = 0;
	assert_int_equal(ar_policy_validate(p, &err), -1);
	assert_string_equal(err->msg,
			    "p.json: limits.pids: must be an integer from 1 to 4194304, got 0");
	ar_error_release(&err);
	p->limits.pids = 10;
	p->limits.memory = 1024;
	assert_int_equal(ar_policy_validate(p, &err), -1);
	assert_string_equal(err->msg,
			    "p.json: limits.memory: 1024 bytes is below the minimum of 6m");
	ar_error_release(&err);
	p->limits.memory = 64LL << 20;
	p->limits.cpus_milli = 0;
	assert_int_equal(ar_policy_validate(p, &err), -1);
	assert_string_equal(err->msg, "p.json: limits.cpus: must be above 0");
	ar_error_release(&err);
	p->limits.cpus_milli = 250;
	free(p->name);
	p->name = ar_xstrdup("Bad");
	assert_int_equal(ar_policy_validate(p, &err), -1);
	assert_string_equal(err->msg, "p.json: name: must match ^[a-z0-9][a-z0-9-]{0,30}$");
	ar_error_release(&err);
	free(p->name);
	p->name = ar_xstrdup("good");
	free(p->user);
	p->user = ar_xstrdup("root");
	assert_int_equal(ar_policy_validate(p, &err), -1);
	assert_string_equal(err->msg,
			    "p.json: user: must be a numeric \"UID\" or \"UID:GID\", got \"root\"");
	ar_error_release(&err);
	free(p->user);
	p->user = ar_xstrdup("5:6");
	assert_int_equal(ar_policy_validate(p, &err), -1);
	assert_string_equal(err->msg, "p.json: user: \"5:6\" disagrees with uid 1000 gid 1000");
	ar_error_release(&err);
	/* an override (--user) to root is refused like the file's field */
	free(p->user);
	p->user = ar_xstrdup("0");
	p->uid = 0;
	p->gid = 0;
	assert_int_equal(ar_policy_validate(p, &err), -1);
	assert_string_equal(err->msg,
			    "p.json: user: uid 0 is root on the host; use a non-root uid");
	ar_error_release(&err);
	free(p->user);
	p->user = ar_xstrdup("5:6");
	p->uid = 5;
	p->gid = 6;
	assert_int_equal(ar_policy_validate(p, &err), 0);
	/* an --allow override goes through the same rule compiler */
	p->allowed_hosts = ar_xrealloc(p->allowed_hosts, 3 * sizeof(char *));
	p->allowed_hosts[1] = ar_xstrdup("*.co.uk");
	p->allowed_hosts[2] = NULL;
	p->n_allowed_hosts = 2;
	assert_int_equal(ar_policy_validate(p, &err), -1);
	assert_string_equal(err->msg, "p.json: allowed_hosts[1]: rule \"*.co.uk\": a wildcard over "
				      "a public suffix is too broad");
	ar_error_release(&err);
}

static void test_shipped_profiles(void **state)
{
	ar_autopolicy struct ar_policy *t = NULL;
	ar_autopolicy struct ar_policy *o = NULL;
	ar_auto_error ar_error_t err = NULL;

	assert_int_equal(ar_policy_load(AR_SOURCE_DIR "/profiles/triage.json", &t, &err), 0);
	assert_string_equal(t->name, "triage");
	assert_int_equal(t->network, AR_NETWORK_PROXY);
	assert_int_equal(t->n_allowed_hosts, 3);
	assert_non_null(t->kubeconfig);
	assert_int_equal(t->n_mounts, 1);
	assert_int_equal(t->limits.pids, 64);

	assert_int_equal(ar_policy_load(AR_SOURCE_DIR "/profiles/offline.json", &o, &err), 0);
	assert_string_equal(o->name, "offline");
	assert_int_equal(o->network, AR_NETWORK_NONE);
	assert_int_equal(o->n_allowed_hosts, 0);
}

static void test_embedded_default(void **state)
{
	ar_autopolicy struct ar_policy *p = NULL;
	ar_auto_error ar_error_t err = NULL;

	assert_int_equal(ar_policy_default(&p, &err), 0);
	assert_string_equal(p->origin, "<embedded default>");
	assert_string_equal(p->name, "default");
	assert_int_equal(p->network, AR_NETWORK_NONE);
	assert_int_equal(p->n_allowed_hosts, 0);
	assert_int_equal(p->limits.pids, 256);
	assert_int_equal(p->limits.memory, 512LL << 20);
	assert_string_equal(p->limits.memory_str, "512m");
	assert_int_equal(p->limits.cpus_milli, 1000);
	assert_string_equal(p->user, "65534");
	assert_int_equal(p->uid, 65534);
	assert_int_equal(p->gid, 65534);
	assert_int_equal(p->n_tmpfs, 1);
	assert_string_equal(p->tmpfs[0], "/tmp");
	assert_string_equal(p->seccomp, "default");
	assert_null(p->rootfs);
	assert_null(p->kubeconfig);
	assert_int_equal(p->n_mounts, 0);
	assert_int_equal(p->n_env, 0);
	assert_string_equal(p->proxy_name, "default-proxy");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_full_example),
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_proxy_dns_pool),
	    cmocka_unit_test(test_null_is_absent),
	    cmocka_unit_test(test_network_default_follows_hosts),
	    cmocka_unit_test(test_mode),
	    cmocka_unit_test(test_numbers_and_spellings),
	    cmocka_unit_test(test_unknown_keys),
	    cmocka_unit_test(test_wrong_types),
	    cmocka_unit_test(test_bad_names),
	    cmocka_unit_test(test_limits_errors),
	    cmocka_unit_test(test_user_errors),
	    cmocka_unit_test(test_path_errors),
	    cmocka_unit_test(test_value_errors),
	    cmocka_unit_test(test_invalid_json),
	    cmocka_unit_test(test_long_message_is_cut),
	    cmocka_unit_test(test_env_reserved_only_when_set),
	    cmocka_unit_test(test_load_errors),
	    cmocka_unit_test(test_derive_and_env),
	    cmocka_unit_test(test_validate_after_overrides),
	    cmocka_unit_test(test_shipped_profiles),
	    cmocka_unit_test(test_embedded_default),
	    cmocka_unit_test(test_proxy_private_and_transparent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

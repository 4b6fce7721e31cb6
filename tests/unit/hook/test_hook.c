/* Unit tests for the OCI hook: the state reader, the records (exclusive create,
 * remove), the host-netns refusal and the network step's two answers. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agentrun/hook.h"
#include "agentrun/net.h"
#include "agentrun/spec.h"
#include "agentrun/policy.h"
#include "agentrun/util.h"

static struct ar_oci_state *state(const char *json)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_oci_state *s = NULL;
	if (ar_oci_state_parse(json, strlen(json), &s, &err) < 0)
		fail_msg("state: %s", err->msg);
	return s;
}

static void test_state(void **st)
{
	ar_autooci_state struct ar_oci_state *s =
	    state("{\"ociVersion\": \"1.0.2\", \"id\": \"web-1\", \"status\": \"creating\","
		  " \"pid\": 4242, \"bundle\": \"/srv/b\", \"annotations\":"
		  " {\"io.agentrun.policy\": \"/etc/p.json\", \"x\": \"y\"}}");
	assert_string_equal(s->oci_version, "1.0.2");
	assert_string_equal(s->id, "web-1");
	assert_string_equal(s->status, "creating");
	assert_int_equal(s->pid, 4242);
	assert_string_equal(s->bundle, "/srv/b");
	assert_int_equal(s->n_annotations, 2);
	assert_string_equal(ar_oci_state_annotation(s, "io.agentrun.policy"), "/etc/p.json");
	assert_string_equal(ar_oci_state_annotation(s, "x"), "y");
	assert_null(ar_oci_state_annotation(s, "z"));

	/* poststop: runc's pid 0, or none */
	ar_autooci_state struct ar_oci_state *z =
	    state("{\"ociVersion\": \"1.0.2\", \"id\": \"a\", \"status\": \"stopped\", \"pid\": 0,"
		  " \"bundle\": \"/b\"}");
	assert_int_equal(z->pid, 0);
	assert_int_equal(z->n_annotations, 0);
	/* runsc's poststop says -1 */
	ar_autooci_state struct ar_oci_state *m = state(
	    "{\"ociVersion\": \"1.0.2-dev\", \"id\": \"a\", \"status\": \"stopped\", \"pid\": -1,"
	    " \"bundle\": \"/b\"}");
	assert_int_equal(m->pid, 0);
}

/* a NUL would cut the id or the bundle path cJSON hands over: refused */
static void test_state_nul(void **st)
{
	static const char raw[] = "{\"ociVersion\": \"1\", \"id\": \"a\0b\", \"status\": \"s\","
				  " \"bundle\": \"/b\"}";
	static const char esc[] = "{\"ociVersion\": \"1\", \"id\": \"a\", \"status\": \"s\","
				  " \"bundle\": \"/b\\u0000/../etc\"}";
	ar_auto_error ar_error_t err = NULL;
	struct ar_oci_state *s = NULL;
	assert_int_equal(ar_oci_state_parse(raw, sizeof(raw) - 1, &s, &err), -1);
	assert_null(s);
	assert_string_equal(err->msg, "state: invalid JSON at line 1, column 29: a NUL byte");
	ar_error_release(&err);
	assert_int_equal(ar_oci_state_parse(esc, sizeof(esc) - 1, &s, &err), -1);
	assert_null(s);
	assert_string_equal(
	    err->msg,
	    "state: invalid JSON at line 1, column 60: \\u0000 in a string is not supported");
}

static void test_state_errors(void **st)
{
	static const struct {
		const char *json, *msg;
	} cases[] = {
	    {"", "state: not valid JSON"},
	    {"{\"ociVersion\": \"1\"", "state: not valid JSON"},
	    {"[]", "state: expected a JSON object"},
	    {"{\"id\": \"a\", \"status\": \"s\", \"bundle\": \"/b\"}",
	     "state: ociVersion: missing"},
	    {"{\"ociVersion\": \"1\", \"status\": \"s\", \"bundle\": \"/b\"}",
	     "state: id: missing"},
	    {"{\"ociVersion\": \"1\", \"id\": 7, \"status\": \"s\", \"bundle\": \"/b\"}",
	     "state: id: expected a string"},
	    {"{\"ociVersion\": \"1\", \"id\": \"a\", \"bundle\": \"/b\"}",
	     "state: status: missing"},
	    {"{\"ociVersion\": \"1\", \"id\": \"a\", \"status\": \"s\"}", "state: bundle: missing"},
	    {"{\"ociVersion\": \"1\", \"id\": \"a\", \"status\": \"s\", \"bundle\": \"b\"}",
	     "state: bundle: expected an absolute path"},
	    {"{\"ociVersion\": \"1\", \"id\": \"a\", \"status\": \"s\", \"bundle\": \"/b\","
	     " \"pid\": -3}",
	     "state: pid: expected a process id (-1 to 4194304)"},
	    {"{\"ociVersion\": \"1\", \"id\": \"a\", \"status\": \"s\", \"bundle\": \"/b\","
	     " \"pid\": 1.5}",
	     "state: pid: expected a process id (-1 to 4194304)"},
	    {"{\"ociVersion\": \"1\", \"id\": \"a\", \"status\": \"s\", \"bundle\": \"/b\","
	     " \"pid\": \"12\"}",
	     "state: pid: expected a process id (-1 to 4194304)"},
	    {"{\"ociVersion\": \"1\", \"id\": \"../x\", \"status\": \"s\", \"bundle\": \"/b\"}",
	     "state: id: `../x` is not a container id (letters, digits, `_.+-`, at most 1024)"},
	    {"{\"ociVersion\": \"1\", \"id\": \"..\", \"status\": \"s\", \"bundle\": \"/b\"}",
	     "state: id: `..` is not a container id (letters, digits, `_.+-`, at most 1024)"},
	    {"{\"ociVersion\": \"1\", \"id\": \"a\\nb\", \"status\": \"s\", \"bundle\": \"/b\"}",
	     "state: id: `a\\nb` is not a container id (letters, digits, `_.+-`, at most 1024)"},
	    {"{\"ociVersion\": \"1\", \"id\": \"a\", \"status\": \"s\", \"bundle\": \"/b\","
	     " \"annotations\": []}",
	     "state: annotations: expected an object"},
	    {"{\"ociVersion\": \"1\", \"id\": \"a\", \"status\": \"s\", \"bundle\": \"/b\","
	     " \"annotations\": {\"k\": 1}}",
	     "state: annotations: `k`: expected a string"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		ar_auto_error ar_error_t err = NULL;
		struct ar_oci_state *s = (void *)1;
		assert_int_equal(ar_oci_state_parse(cases[i].json, strlen(cases[i].json), &s, &err),
				 -1);
		assert_null(s);
		if (strcmp(err->msg, cases[i].msg) != 0)
			fail_msg("case %zu: got [%s] want [%s]", i, err->msg, cases[i].msg);
	}
}

static struct ar_policy *policy(const char *network)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_policy *p = NULL;
	ar_autofree char *json =
	    ar_xasprintf("{\"name\": \"t\", \"network\": \"%s\", \"allowed_hosts\": [%s]}", network,
			 strcmp(network, "proxy") == 0 ? "\"a.example\"" : "");
	if (ar_policy_parse(json, strlen(json), "p.json", &p, &err) < 0)
		fail_msg("policy: %s", err->msg);
	return p;
}

static void test_records(void **st)
{
	char tmpl[] = "/tmp/ar-hook-test.XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	ar_autofree char *dir = ar_xasprintf("%s/hooks", tmpl);
	ar_autopolicy struct ar_policy *p = policy("none");
	ar_autooci_state struct ar_oci_state *s =
	    state("{\"ociVersion\": \"1.0.2\", \"id\": \"c1\", \"status\": \"creating\", \"pid\": "
		  "4194000,"
		  " \"bundle\": \"/srv/b\"}");
	ar_auto_error ar_error_t err = NULL;
	assert_int_equal(ar_hook_record_create(dir, s, "/etc/p.json", p, &err), 0);
	ar_autofree char *path = ar_xasprintf("%s/c1", dir);
	ar_autofree char *text = NULL;
	assert_int_equal(ar_read_file(path, 0, &text, NULL, &err), 0);
	assert_string_equal(text,
			    "{\"id\": \"c1\", \"pid\": 4194000, \"bundle\": \"/srv/b\", \"policy\":"
			    " \"/etc/p.json\", \"name\": \"t\", \"network\": \"none\"}\n");

	/* the recorded process (4194000) is gone: a stale record, replaced */
	ar_autofree char *live_json = ar_xasprintf(
	    "{\"ociVersion\": \"1.0.2\", \"id\": \"c1\", \"status\": \"creating\", \"pid\": %d,"
	    " \"bundle\": \"/srv/b\"}",
	    (int)getpid());
	ar_autooci_state struct ar_oci_state *live = state(live_json);
	assert_int_equal(ar_hook_record_create(dir, live, "/etc/p.json", p, &err), 0);
	ar_autofree char *replaced = NULL;
	assert_int_equal(ar_read_file(path, 0, &replaced, NULL, &err), 0);
	assert_non_null(strstr(replaced, "\"pid\": "));
	assert_null(strstr(replaced, "4194000"));

	/* a second create while the first container's process lives: refused, the first
	 * record untouched */
	assert_int_equal(ar_hook_record_create(dir, s, "/etc/other.json", p, &err), -1);
	assert_non_null(strstr(err->msg, "container `c1` is already recorded"));
	ar_autofree char *again = NULL;
	ar_auto_error ar_error_t e2 = NULL;
	assert_int_equal(ar_read_file(path, 0, &again, NULL, &e2), 0);
	assert_string_equal(again, replaced);

	bool existed = false;
	assert_int_equal(ar_hook_record_remove(dir, "c1", &existed, &e2), 0);
	assert_true(existed);
	assert_int_equal(ar_hook_record_remove(dir, "c1", &existed, &e2), 0);
	assert_false(existed);
	/* poststop without a record (a failed create) is fine */
	assert_int_equal(ar_hook_poststop(dir, s, &e2), 0);
	/* nothing left: no temporary files either */
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(rmdir(tmpl), 0);
}

static void test_create_runtime_refusals(void **st)
{
	ar_autopolicy struct ar_policy *p = policy("none");
	ar_autooci_state struct ar_oci_state *nopid =
	    state("{\"ociVersion\": \"1.0.2\", \"id\": \"c2\", \"status\": \"creating\","
		  " \"bundle\": \"/srv/b\"}");
	ar_auto_error ar_error_t err = NULL;
	assert_int_equal(ar_hook_create_runtime("/nonexistent/hooks", nopid, "/p", p, &err), -1);
	assert_string_equal(err->msg,
			    "state: pid: missing (create-runtime needs the container's process)");

	/* this test runs in the host's netns: a container sharing it is refused */
	ar_autofree char *json = ar_xasprintf(
	    "{\"ociVersion\": \"1.0.2\", \"id\": \"c2\", \"status\": \"creating\", \"pid\": %d,"
	    " \"bundle\": \"/srv/b\"}",
	    (int)getpid());
	ar_autooci_state struct ar_oci_state *self = state(json);
	ar_auto_error ar_error_t e2 = NULL;
	assert_int_equal(ar_hook_create_runtime("/nonexistent/hooks", self, "/p", p, &e2), -1);
	assert_non_null(strstr(e2->msg, "shares the host's network namespace"));

	ar_autooci_state struct ar_oci_state *gone =
	    state("{\"ociVersion\": \"1.0.2\", \"id\": \"c2\", \"status\": \"creating\","
		  " \"pid\": 4194304, \"bundle\": \"/srv/b\"}");
	ar_auto_error ar_error_t e3 = NULL;
	assert_int_equal(ar_hook_check_netns(gone->pid, &e3), -1);
	assert_non_null(strstr(e3->msg, "state: pid 4194304: not a running process"));
}

static void test_wire(void **st)
{
	ar_autopolicy struct ar_policy *none = policy("none");
	ar_autooci_state struct ar_oci_state *s = state(
	    "{\"ociVersion\": \"1.0.2\", \"id\": \"c3\", \"status\": \"creating\", \"pid\": 1,"
	    " \"bundle\": \"/srv/b\"}");
	ar_auto_error ar_error_t err = NULL;
	ar_autospec struct ar_spec *sp = NULL;
	assert_int_equal(ar_spec_build(none, NULL, &sp, &err), 0);
	assert_int_equal(hook_wire_network(sp, s, "/p.yaml", &err), 0);
	/* network: proxy is wired for real in tests/integration/oci_*.sh (root, a netns) */
}

/* The fixed plan: the address render wrote into the config before any container. */
static void test_plan(void **st)
{
	struct ar_net_plan plan;
	char name[64];
	ar_hook_plan(3128, &plan);
	assert_string_equal(plan.proxy_ip, AR_SPEC_PROXY_ADDR);
	assert_string_equal(plan.sandbox_ip, "10.254.0.2");
	assert_string_equal(plan.proxy_url, "http://" AR_SPEC_PROXY_ADDR ":3128");
	ar_hook_state_name("triage", 42, name, sizeof(name));
	assert_string_equal(name, "triage-42");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_state),
	    cmocka_unit_test(test_state_errors),
	    cmocka_unit_test(test_state_nul),
	    cmocka_unit_test(test_records),
	    cmocka_unit_test(test_create_runtime_refusals),
	    cmocka_unit_test(test_wire),
	    cmocka_unit_test(test_plan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for the review's pure parts (docs/review.md): the JWT payload decoder,
 * token lifetimes in a kubeconfig, severities, the policy-file lines of findings, the
 * write-channel verdict and its byte budget, and the outputs being JSON. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/review.h"

static void test_jwt(void **state)
{
	char *p = ar_jwt_payload("eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjEyMywiaWF0IjoxMH0.c2ln");
	assert_string_equal(p, "{\"exp\":123,\"iat\":10}");
	free(p);
	p = ar_jwt_payload("a.eyJ4IjoxfQ==.s"); /* padding some writers keep */
	assert_string_equal(p, "{\"x\":1}");
	free(p);
	assert_null(ar_jwt_payload("not-a-jwt"));
	assert_null(ar_jwt_payload("a..b"));
	assert_null(ar_jwt_payload("a.b.c.d"));
	assert_null(ar_jwt_payload("a.e$30.c"));
	assert_null(ar_jwt_payload("a.AAAA.c")); /* NUL bytes: not a payload */
}

static void test_severity(void **state)
{
	assert_int_equal(ar_severity_parse("high"), AR_SEV_HIGH);
	assert_int_equal(ar_severity_parse("critical"), AR_SEV_CRITICAL);
	assert_int_equal(ar_severity_parse("HIGH"), -1);
	assert_string_equal(ar_severity_name(AR_SEV_LOW), "low");
}

static const char *kube(const char *token)
{
	static char buf[1024];
	snprintf(buf, sizeof(buf),
		 "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: %s\n",
		 token);
	return buf;
}

static size_t count(const struct ar_review *r, const char *id)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n; i++)
		n += strcmp(r->f[i].id, id) == 0;
	return n;
}

static void test_kubeconfig(void **state)
{
	struct ar_review r = {0};
	/* {"iat":1000,"exp":4000}: 3000 s > 3600? no; {"iat":1000,"exp":9000}: yes */
	const char *k = kube("h.eyJpYXQiOjEwMDAsImV4cCI6NDAwMH0.s");
	ar_review_kubeconfig(k, strlen(k), "k", 1000, &r);
	assert_int_equal(count(&r, "kubeconfig-long-lived-token"), 0);
	assert_int_equal(count(&r, "kubeconfig-rbac"), 1);
	assert_non_null(strstr(r.f[0].fix, "auth can-i --list"));
	ar_review_free(&r);
	k = kube("h.eyJpYXQiOjEwMDAsImV4cCI6OTAwMH0.s");
	ar_review_kubeconfig(k, strlen(k), "k", 1000, &r);
	assert_int_equal(count(&r, "kubeconfig-long-lived-token"), 1);
	assert_non_null(strstr(r.f[0].evidence, "lives 8000 s"));
	ar_review_free(&r);
	/* without iat, against now; without exp: never expires; no JWT: static */
	k = kube("h.eyJleHAiOjIwMDB9.s"); /* {"exp":2000} */
	ar_review_kubeconfig(k, strlen(k), "k", 1000, &r);
	assert_int_equal(count(&r, "kubeconfig-long-lived-token"), 0);
	ar_review_free(&r);
	k = kube("h.eyJzdWIiOiJ4In0.s"); /* {"sub":"x"} */
	ar_review_kubeconfig(k, strlen(k), "k", 1000, &r);
	assert_non_null(strstr(r.f[0].evidence, "without exp"));
	ar_review_free(&r);
	k = kube("0123456789abcdef");
	ar_review_kubeconfig(k, strlen(k), "k", 1000, &r);
	assert_non_null(strstr(r.f[0].evidence, "static bearer token"));
	ar_review_free(&r);
	ar_review_kubeconfig("{}", 2, "k", 1000, &r);
	assert_int_equal(count(&r, "kubeconfig-unreadable"), 1);
	ar_review_free(&r);
}

static const char policy_text[] =
    "{\n"
    "  \"name\": \"t\",\n"
    "  \"allowed_hosts\": [\n"
    "    \"api.example.com\",\n"
    "    \"up.example.com\"\n"
    "  ],\n"
    "  \"proxy\": {\"max_bytes_out\": {\"up.example.com\": 100000}},\n"
    "  \"env\": {\"API_KEY\": \"x\"},\n"
    "  \"limits\": {\"pids\": 64, \"memory\": \"256m\", \"cpus\": \"1\"}\n"
    "}\n";

static const char audit_text[] =
    "{\"method\":\"POST\",\"host\":\"up.example.com\",\"port\":443,\"allowed\":true,"
    "\"status\":200,\"bytes_out\":900,\"body_bytes\":800}\n"
    "{\"method\":\"GET\",\"host\":\"api.example.com\",\"port\":443,\"allowed\":true,"
    "\"status\":200,\"bytes_out\":90000}\n"
    "{\"method\":\"DNS\",\"host\":\"api.example.com\",\"port\":53,\"allowed\":true,"
    "\"status\":0}\n";

static void run(struct ar_review *r, uint64_t kib)
{
	struct ar_policy *p = NULL;
	ar_error_t err = NULL;
	struct ar_audit_entries es;
	assert_int_equal(ar_policy_parse(policy_text, strlen(policy_text), "p.json", &p, &err), 0);
	ar_audit_read_entries(audit_text, strlen(audit_text), &es);
	struct ar_review_input in = {.p = p,
				     .policy_path = "p.json",
				     .policy_text = policy_text,
				     .policy_len = strlen(policy_text),
				     .audit = &es,
				     .write_kib = kib};
	ar_review_run(&in, r);
	ar_audit_entries_free(&es);
	ar_policy_free(p);
}

static void test_hosts_and_lines(void **state)
{
	struct ar_review r;
	run(&r, 64);
	assert_int_equal(r.n_hosts, 2);
	/* 90000 bytes out, no body: a write channel past 64 KiB, on its line */
	assert_string_equal(r.hosts[0].verdict, "write channel");
	assert_string_equal(r.hosts[0].methods, "GET");
	assert_int_equal(r.hosts[0].requests, 1); /* the DNS answer is no request */
	/* a body, but a budget bounds it: low */
	assert_string_equal(r.hosts[1].verdict, "write channel");
	assert_int_equal(r.hosts[1].bodies, 1);
	assert_int_equal(r.hosts[1].largest_body, 800);
	size_t seen = 0;
	for (size_t i = 0; i < r.n; i++) {
		const struct ar_review_finding *f = &r.f[i];
		if (strcmp(f->key, "allowed_hosts[0]") == 0) {
			assert_int_equal(f->line, 4);
			assert_int_equal(f->severity, AR_SEV_MEDIUM);
			seen++;
		} else if (strcmp(f->key, "allowed_hosts[1]") == 0) {
			assert_int_equal(f->line, 5);
			assert_int_equal(f->severity, AR_SEV_LOW);
			seen++;
		} else if (strcmp(f->id, "secret-in-env") == 0) {
			assert_int_equal(f->line, 8);
			seen++;
		}
	}
	assert_int_equal(seen, 3);
	assert_int_equal(r.n, 3); /* limits set at their defaults: nothing else */
	ar_review_free(&r);
	/* a higher threshold: the GET-only host reads */
	run(&r, 128);
	assert_string_equal(r.hosts[0].verdict, "read");
	ar_review_free(&r);
}

static void test_outputs_are_json(void **state)
{
	struct ar_review r;
	void (*fmt[])(const struct ar_review *, struct ar_buf *) = {ar_review_format_json,
								    ar_review_format_sarif};
	run(&r, 64);
	for (size_t i = 0; i < 2; i++) {
		struct ar_buf b = {0};
		fmt[i](&r, &b);
		cJSON *doc = cJSON_Parse(b.data);
		assert_non_null(doc);
		cJSON_Delete(doc);
		ar_buf_free(&b);
	}
	ar_review_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_jwt),
	    cmocka_unit_test(test_severity),
	    cmocka_unit_test(test_kubeconfig),
	    cmocka_unit_test(test_hosts_and_lines),
	    cmocka_unit_test(test_outputs_are_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

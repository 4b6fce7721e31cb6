/* Unit tests for the secrets module: the policy's `secrets`, placeholders, the head
 * rewrite (request line, header values, Basic credentials, query strings), leak
 * detection, response masking and the streaming body scan. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agentrun/policy.h"
#include "agentrun/secrets.h"
#include "agentrun/util.h"

static const char policy_json[] =
    "{\"name\": \"t\", \"allowed_hosts\": [\"api.example.com\", \"*.gh.example:443\", "
    "\"other.example\"],"
    " \"secrets\": {\"API_KEY\": {\"from\": \"env:AR_TEST_API_KEY\", \"hosts\": "
    "[\"api.example.com\"]},"
    " \"GH_TOKEN\": {\"from\": \"env:AR_TEST_GH\", \"hosts\": [\"*.gh.example:443\"]}}}";

/* API_KEY is secret 0, GH_TOKEN 1: the set is sorted by name (GH_TOKEN first). */
struct fx {
	struct ar_policy *p;
	struct ar_secrets *s;
	size_t api, gh;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	ar_auto_error ar_error_t err = NULL;
	setenv("AR_TEST_API_KEY", "sk-REAL-api-value", 1);
	setenv("AR_TEST_GH", "ghp_REALgithubvalue", 1);
	assert_int_equal(
	    ar_policy_parse(policy_json, sizeof(policy_json) - 1, "p.json", &f->p, &err), 0);
	assert_int_equal(ar_secrets_new(f->p, &f->s, &err), 0);
	assert_int_equal(ar_secrets_load(f->s, &err), 0);
	f->gh = strcmp(f->s->s[0].name, "GH_TOKEN") == 0 ? 0 : 1;
	f->api = 1 - f->gh;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	ar_secrets_free(f->s);
	ar_policy_free(f->p);
	free(f);
	return 0;
}

static void test_placeholders(void **state)
{
	struct fx *f = *state;
	const struct ar_secret *a = &f->s->s[f->api];
	assert_string_equal(a->name, "API_KEY");
	assert_true(strncmp(a->placeholder, "agentrun-secret-API_KEY-", 24) == 0);
	assert_int_equal(a->plen, strlen("agentrun-secret-API_KEY-") + 32);
	for (size_t i = 24; i < a->plen; i++)
		assert_non_null(strchr("0123456789abcdef", a->placeholder[i]));
	/* a second set has other placeholders */
	ar_auto_error ar_error_t err = NULL;
	ar_autosecrets struct ar_secrets *again = NULL;
	assert_int_equal(ar_secrets_new(f->p, &again, &err), 0);
	assert_string_not_equal(again->s[f->api].placeholder, a->placeholder);
	assert_null(again->s[f->api].value);
	assert_string_equal(a->value, "sk-REAL-api-value");
}

static uint64_t bound(struct fx *f, const char *host, int port)
{
	struct ar_host h;
	ar_auto_error ar_error_t err = NULL;
	assert_int_equal(ar_host_canonicalize(host, &h, &err), 0);
	return ar_secrets_bound(f->s, &h, port);
}

static void test_bound(void **state)
{
	struct fx *f = *state;
	assert_int_equal(bound(f, "api.example.com", 443), 1ULL << f->api);
	assert_int_equal(bound(f, "API.Example.COM.", 80), 1ULL << f->api);
	assert_int_equal(bound(f, "x.gh.example", 443), 1ULL << f->gh);
	assert_int_equal(bound(f, "x.gh.example", 80), 0);
	assert_int_equal(bound(f, "gh.example", 443), 0);
	assert_int_equal(bound(f, "other.example", 443), 0);
}

/* The head rewritten for a host that may get `mask`: the refused set, the text. */
static uint64_t rewrite(struct fx *f, uint64_t mask, const char *fmt, char **out, uint64_t *used)
{
	const char *pa = f->s->s[f->api].placeholder, *pg = f->s->s[f->gh].placeholder;
	/* {A}: API_KEY's placeholder, {G}: GH_TOKEN's */
	ar_autobuf struct ar_buf h = {0};
	for (const char *p = fmt; *p; p++) {
		if (strncmp(p, "{A}", 3) == 0 || strncmp(p, "{G}", 3) == 0) {
			ar_buf_puts(&h, p[1] == 'A' ? pa : pg);
			p += 2;
		} else {
			ar_buf_putc(&h, *p);
		}
	}
	ar_autobuf struct ar_buf b = {0};
	uint64_t refused = ar_secrets_rewrite_head(f->s, mask, h.data, h.len, &b, used);
	*out = ar_buf_steal(&b);
	return refused;
}

static void test_rewrite_header_and_query(void **state)
{
	struct fx *f = *state;
	char *out = NULL;
	uint64_t used = 0;
	uint64_t api = 1ULL << f->api;
	uint64_t r = rewrite(f, api,
			     "GET /v1?key={A}&x=1 HTTP/1.1\r\nHost: api.example.com\r\n"
			     "X-Api-Key: {A}\r\nAuthorization: Bearer {A}\r\n\r\n",
			     &out, &used);
	assert_int_equal(r, 0);
	assert_int_equal(used, api);
	assert_string_equal(out, "GET /v1?key=sk-REAL-api-value&x=1 HTTP/1.1\r\n"
				 "Host: api.example.com\r\nX-Api-Key: sk-REAL-api-value\r\n"
				 "Authorization: Bearer sk-REAL-api-value\r\n\r\n");
	free(out);
	/* nothing to put in: the head is unchanged, nothing used */
	r = rewrite(f, api, "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n", &out, &used);
	assert_int_equal(r, 0);
	assert_int_equal(used, 0);
	assert_string_equal(out, "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
	free(out);
}

static void test_rewrite_basic(void **state)
{
	struct fx *f = *state;
	char *out = NULL;
	uint64_t used = 0;
	uint64_t gh = 1ULL << f->gh;
	ar_autobuf struct ar_buf cred = {0}, enc = {0}, want = {0};
	ar_buf_printf(&cred, "x-access-token:%s", f->s->s[f->gh].placeholder);
	ar_base64_encode((const unsigned char *)cred.data, cred.len, &enc);
	ar_autofree char *fmt = ar_xasprintf(
	    "GET /repo.git/info/refs HTTP/1.1\r\nauthorization:  basic %s\r\n\r\n", enc.data);
	uint64_t r = rewrite(f, gh, fmt, &out, &used);
	assert_int_equal(r, 0);
	assert_int_equal(used, gh);
	ar_buf_puts(&want, "GET /repo.git/info/refs HTTP/1.1\r\nauthorization:  basic ");
	ar_base64_encode((const unsigned char *)"x-access-token:ghp_REALgithubvalue",
			 strlen("x-access-token:ghp_REALgithubvalue"), &want);
	ar_buf_puts(&want, "\r\n\r\n");
	assert_string_equal(out, want.data);
	free(out);
	/* the same credentials to a host GH_TOKEN is not for: refused, by name */
	r = rewrite(f, 1ULL << f->api, fmt, &out, &used);
	assert_int_equal(r, gh);
	free(out);
}

static void test_refuse_unbound(void **state)
{
	struct fx *f = *state;
	char *out = NULL;
	uint64_t used = 0;
	uint64_t api = 1ULL << f->api, gh = 1ULL << f->gh;
	/* GH_TOKEN's placeholder on the way to API_KEY's host */
	assert_int_equal(
	    rewrite(f, api, "GET /?t={G} HTTP/1.1\r\nX-Api-Key: {A}\r\n\r\n", &out, &used), gh);
	free(out);
	/* any placeholder to a host no secret is for; case changed; percent-encoded */
	assert_int_equal(rewrite(f, 0, "GET / HTTP/1.1\r\nX: {A}\r\n\r\n", &out, &used), api);
	free(out);
	ar_autofree char *upper = ar_xstrdup(f->s->s[f->api].placeholder);
	for (char *p = upper; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	assert_int_equal(ar_secrets_find(f->s, upper, strlen(upper)), api);
	ar_autobuf struct ar_buf pct = {0};
	for (const char *p = f->s->s[f->api].placeholder; *p; p++)
		ar_buf_printf(&pct, "%%%02X", (unsigned char)*p);
	assert_int_equal(ar_secrets_find(f->s, pct.data, pct.len), api);
	/* a prefix alone, or a wrong random part, is nothing */
	const char *near = "agentrun-secret-API_KEY-00000000000000000000000000000000";
	assert_int_equal(ar_secrets_find(f->s, near, strlen(near)), 0);
}

static void test_find_name(void **state)
{
	struct fx *f = *state;
	const char *pa = f->s->s[f->api].placeholder;
	ar_autofree char *q = ar_xasprintf("%.20s.%s.evil.example", pa, pa + 20);
	for (char *p = q; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	assert_int_equal(ar_secrets_find_name(f->s, q), 1ULL << f->api);
	assert_int_equal(ar_secrets_find_name(f->s, "api.example.com"), 0);
}

static void test_mask(void **state)
{
	struct fx *f = *state;
	const char *in = "HTTP/1.1 200 OK\r\nX-Echo: Bearer sk-REAL-api-value!\r\n\r\n";
	ar_autobuf struct ar_buf out = {0};
	assert_true(ar_secrets_mask(f->s, in, strlen(in), &out));
	assert_null(strstr(out.data, "sk-REAL"));
	assert_non_null(strstr(out.data, f->s->s[f->api].placeholder));
	ar_autobuf struct ar_buf none = {0};
	assert_false(ar_secrets_mask(f->s, "HTTP/1.1 200 OK\r\n\r\n", 19, &none));
}

static void test_scan_split(void **state)
{
	struct fx *f = *state;
	const char *pg = f->s->s[f->gh].placeholder;
	ar_autofree char *body = ar_xasprintf("{\"body\": \"see %s here\"}", pg);
	size_t len = strlen(body);
	/* every split point, and byte by byte */
	for (size_t cut = 0; cut <= len; cut++) {
		struct ar_secrets_scan st = {0};
		uint64_t m = ar_secrets_scan_feed(f->s, &st, body, cut);
		m |= ar_secrets_scan_feed(f->s, &st, body + cut, len - cut);
		assert_int_equal(m, 1ULL << f->gh);
	}
	struct ar_secrets_scan st = {0};
	uint64_t m = 0;
	for (size_t i = 0; i < len; i++)
		m |= ar_secrets_scan_feed(f->s, &st, body + i, 1);
	assert_int_equal(m, 1ULL << f->gh);
	struct ar_secrets_scan clean = {0};
	assert_int_equal(ar_secrets_scan_feed(f->s, &clean, "nothing", 7), 0);
}

static void test_base64(void **state)
{
	static const char *const cases[][2] = {
	    {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ar_autobuf struct ar_buf e = {0}, d = {0};
		ar_base64_encode((const unsigned char *)cases[i][0], strlen(cases[i][0]), &e);
		assert_string_equal(e.data ? e.data : "", cases[i][1]);
		assert_int_equal(ar_base64_decode(cases[i][1], strlen(cases[i][1]), &d), 0);
		assert_string_equal(d.data ? d.data : "", cases[i][0]);
	}
	ar_autobuf struct ar_buf bad = {0};
	assert_int_equal(ar_base64_decode("Zm9", 3, &bad), -1);
	assert_int_equal(ar_base64_decode("Z=9v", 4, &bad), -1);
	assert_int_equal(ar_base64_decode("Zm!v", 4, &bad), -1);
}

/* Bad input names the secret and the field. */
static void test_policy_errors(void **state)
{
	static const struct {
		const char *secrets, *want;
	} cases[] = {
	    {"{\"K\": {\"hosts\": [\"a.example\"]}}", "p.json: secrets.K: missing \"from\""},
	    {"{\"K\": {\"from\": \"env:K\"}}", "p.json: secrets.K: missing \"hosts\""},
	    {"{\"K\": {\"from\": \"vault:K\", \"hosts\": [\"a.example\"]}}",
	     "p.json: secrets.K.from: must be env:NAME or file:PATH"},
	    {"{\"K\": {\"from\": \"file:rel\", \"hosts\": [\"a.example\"]}}",
	     "p.json: secrets.K.from: \"file:rel\""},
	    {"{\"K\": {\"from\": \"env:1X\", \"hosts\": [\"a.example\"]}}",
	     "p.json: secrets.K.from: \"env:1X\""},
	    {"{\"K\": {\"from\": \"env:K\", \"hosts\": [\"b.example\"]}}",
	     "p.json: secrets.K.hosts[0]: \"b.example\" is not in allowed_hosts"},
	    {"{\"K-1\": {\"from\": \"env:K\", \"hosts\": [\"a.example\"]}}",
	     "p.json: secrets.K-1: the name must be a variable name"},
	    {"{\"HTTPS_PROXY\": {\"from\": \"env:K\", \"hosts\": [\"a.example\"]}}",
	     "p.json: secrets.HTTPS_PROXY: is set by agentrun"},
	    {"{\"SSL_CERT_FILE\": {\"from\": \"env:K\", \"hosts\": [\"a.example\"]}}",
	     "p.json: secrets.SSL_CERT_FILE: is set by agentrun"},
	    {"{\"K\": {\"from\": \"env:K\", \"hosts\": [\"a.example\"], \"x\": 1}}",
	     "p.json: secrets.K.x: unknown key"},
	    {"{\"K\": {\"from\": \"env:K\", \"hosts\": [\"*.com\"]}}", "secrets.K.hosts"},
	    {"[]", "p.json: secrets: expected an object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ar_autofree char *json = ar_xasprintf(
		    "{\"allowed_hosts\": [\"a.example\"], \"secrets\": %s}", cases[i].secrets);
		ar_auto_error ar_error_t err = NULL;
		struct ar_policy *p = NULL;
		int r = ar_policy_parse(json, strlen(json), "p.json", &p, &err);
		if (r == 0)
			fail_msg("case %zu parsed: %s", i, cases[i].secrets);
		if (strstr(err->msg, cases[i].want) == NULL)
			fail_msg("case %zu: %s\n  wanted: %s", i, err->msg, cases[i].want);
	}
	/* a secret needs the proxy; its name is no policy env key */
	const char *none = "{\"network\": \"none\", \"secrets\": {\"K\": {\"from\": \"env:K\","
			   " \"hosts\": [\"a.example\"]}}}";
	ar_auto_error ar_error_t err = NULL;
	struct ar_policy *p = NULL;
	assert_int_equal(ar_policy_parse(none, strlen(none), "p.json", &p, &err), -1);
	assert_non_null(strstr(err->msg, "secrets.K: needs network \"proxy\""));
	ar_error_release(&err);
	const char *dup =
	    "{\"allowed_hosts\": [\"a.example\"], \"env\": {\"K\": \"v\"}, "
	    "\"secrets\": {\"K\": {\"from\": \"env:K\", \"hosts\": [\"a.example\"]}}}";
	assert_int_equal(ar_policy_parse(dup, strlen(dup), "p.json", &p, &err), -1);
	assert_non_null(strstr(err->msg, "env.K: is a secret's name"));
}

static void test_sources(void **state)
{
	struct fx *f = *state;
	ar_auto_error ar_error_t err = NULL;
	/* loading wiped the env: values in place (the environment block a fork shares) */
	assert_string_equal(getenv("AR_TEST_API_KEY"), "");
	assert_string_equal(f->s->s[f->api].value, "sk-REAL-api-value");
	setenv("AR_TEST_API_KEY", "sk-REAL-api-value", 1);
	setenv("AR_TEST_GH", "ghp_REALgithubvalue", 1);
	assert_int_equal(ar_secrets_check_sources(f->s, &err), 0);
	unsetenv("AR_TEST_GH");
	assert_int_equal(ar_secrets_check_sources(f->s, &err), -1);
	assert_non_null(
	    strstr(err->msg, "p.json: secrets.GH_TOKEN.from: env:AR_TEST_GH is not set"));
	ar_error_release(&err);
	setenv("AR_TEST_GH", "", 1);
	assert_int_equal(ar_secrets_check_sources(f->s, &err), -1);
	ar_error_release(&err);
	setenv("AR_TEST_GH", "a\r\nX-Injected: 1", 1);
	assert_int_equal(ar_secrets_check_sources(f->s, &err), -1);
	assert_non_null(strstr(err->msg, "control character"));
	ar_error_release(&err);
	setenv("AR_TEST_GH", "ghp_REALgithubvalue", 1);
	/* file: the one trailing newline is not the value's; empty and missing are errors */
	char path[] = "/tmp/ar-secret-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "tok\n", 4), 4);
	close(fd);
	ar_autofree char *json = ar_xasprintf(
	    "{\"allowed_hosts\": [\"a.example\"], \"secrets\": {\"F\": {\"from\": \"file:%s\", "
	    "\"hosts\": [\"a.example\"]}}}",
	    path);
	ar_autopolicy struct ar_policy *p = NULL;
	assert_int_equal(ar_policy_parse(json, strlen(json), "p.json", &p, &err), 0);
	ar_autosecrets struct ar_secrets *s = NULL;
	assert_int_equal(ar_secrets_new(p, &s, &err), 0);
	assert_int_equal(ar_secrets_load(s, &err), 0);
	assert_string_equal(s->s[0].value, "tok");
	assert_int_equal(truncate(path, 0), 0);
	assert_int_equal(ar_secrets_check_sources(s, &err), -1);
	assert_non_null(strstr(err->msg, "secrets.F.from: file:"));
	assert_non_null(strstr(err->msg, "is empty"));
	ar_error_release(&err);
	unlink(path);
	assert_int_equal(ar_secrets_check_sources(s, &err), -1);
	assert_non_null(strstr(err->msg, "cannot be read"));
}

static void test_kubeconfig(void **state)
{
	static const char yaml[] =
	    "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
	    "    server: https://kube.example:6443/prefix\n"
	    "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n"
	    "users:\n- name: u\n  user:\n    token: real-token\n"
	    "- name: other\n  user:\n    token: not-this\n"
	    "contexts:\n- name: x\n  context: {cluster: c, user: u, namespace: ns}\n"
	    "current-context: x\n";
	ar_auto_error ar_error_t err = NULL;
	struct ar_kubeconfig k;
	assert_int_equal(ar_kubeconfig_parse(yaml, sizeof(yaml) - 1, "kc", "/", &k, &err), 0);
	assert_string_equal(k.token, "real-token");
	assert_string_equal(k.rule, "kube.example:6443");
	assert_string_equal(k.ns, "ns");
	assert_string_equal(k.ca_pem, "-----BEGIN CERTIFICATE-----\n");
	ar_autobuf struct ar_buf out = {0};
	ar_kubeconfig_render(&k, "agentrun-secret-KUBECONFIG_TOKEN-00", "PEM", &out);
	assert_null(strstr(out.data, "real-token"));
	assert_non_null(strstr(out.data, "agentrun-secret-KUBECONFIG_TOKEN-00"));
	assert_non_null(strstr(out.data, "\"server\":\t\"https://kube.example:6443/prefix\""));
	assert_non_null(strstr(out.data, "UEVN")); /* base64("PEM") */
	ar_kubeconfig_free(&k);
	static const struct {
		const char *from, *to, *want;
	} bad[] = {
	    {"token: real-token", "client-certificate-data: eA==", "has no token"},
	    {"https://kube", "http://kube", "is not https://"},
	    {"current-context: x", "current-context: y", "no current-context"},
	    {"    server: https", "    insecure-skip-tls-verify: true\n    server: https",
	     "insecure-skip-tls-verify"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ar_autobuf struct ar_buf t = {0};
		const char *at = strstr(yaml, bad[i].from);
		ar_buf_append(&t, yaml, (size_t)(at - yaml));
		ar_buf_puts(&t, bad[i].to);
		ar_buf_puts(&t, at + strlen(bad[i].from));
		ar_error_release(&err);
		assert_int_equal(ar_kubeconfig_parse(t.data, t.len, "kc", "/", &k, &err), -1);
		if (strstr(err->msg, bad[i].want) == NULL)
			fail_msg("case %zu: %s", i, err->msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_placeholders, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bound, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rewrite_header_and_query, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rewrite_basic, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refuse_unbound, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_find_name, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mask, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_scan_split, setup, teardown),
	    cmocka_unit_test(test_base64),
	    cmocka_unit_test(test_kubeconfig),
	    cmocka_unit_test(test_policy_errors),
	    cmocka_unit_test_setup_teardown(test_sources, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

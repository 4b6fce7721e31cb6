/* check --manifest and --pod: the YAML/JSON manifest reader (features and refusals), the
 * round trip render -> check (the golden files are `render --format k8s` output, kept
 * equal to it by tests/integration/k8s_schema.sh) with one finding per drifted field,
 * and saved `kubectl get pod -o json` fixtures. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "../../../src/check/internal.h"
#include "agentrun/check.h"
#include "agentrun/k8s.h"
#include "agentrun/manifest.h"
#include "agentrun/spec.h"
#include "agentrun/policy.h"
#include "agentrun/util.h"

static struct ar_policy *load_policy(const char *rel)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_policy *p = NULL;
	ar_autofree char *path = ar_xasprintf("%s/%s", AR_SOURCE_DIR, rel);
	if (ar_policy_load(path, &p, &err) < 0)
		fail_msg("%s: %s", path, err->msg);
	return p;
}

static cJSON *read_text(const char *text, const char *origin)
{
	ar_auto_error ar_error_t err = NULL;
	cJSON *o = ar_manifest_read(text, strlen(text), origin, &err);
	if (o == NULL)
		fail_msg("%s: %s", origin, err->msg);
	return o;
}

static cJSON *read_rel(const char *rel)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autofree char *path = ar_xasprintf("%s/%s", AR_SOURCE_DIR, rel);
	ar_autofree char *text = NULL;
	size_t len;
	if (ar_read_file(path, 0, &text, &len, &err) < 0)
		fail_msg("%s", err->msg);
	return read_text(text, rel);
}

static void expect_error(const char *text, const char *needle)
{
	ar_auto_error ar_error_t err = NULL;
	cJSON *o = ar_manifest_read(text, strlen(text), "m.yaml", &err);
	if (o != NULL) {
		cJSON_Delete(o);
		fail_msg("accepted: %s", text);
	}
	if (strstr(err->msg, needle) == NULL)
		fail_msg("error `%s` lacks `%s`", err->msg, needle);
}

/* ---- the reader ---- */

static const char features[] = "# a comment\n"
			       "---\n"
			       "apiVersion: v1   # trailing comment\n"
			       "kind: ConfigMap\n"
			       "metadata:\n"
			       "  name: 'it''s'\n"
			       "  labels: {a: b, \"c\": 'd e'}\n"
			       "data:\n"
			       "  lit: |\n"
			       "    line one\n"
			       "    # not a comment\n"
			       "\n"
			       "    line three\n"
			       "  strip: |-\n"
			       "    x\n"
			       "  fold: >\n"
			       "    a\n"
			       "    b\n"
			       "  hash: \"a # b\"\n"
			       "  esc: \"tab\\there \\u00e9\"\n"
			       "  url: http://x:80/y\n"
			       "list:\n"
			       "- 1\n"
			       "- -2.5\n"
			       "- yes\n"
			       "- Off\n"
			       "- ~\n"
			       "- [x, [y], {}]\n"
			       "- - nested\n"
			       "  - seq\n"
			       "- k8s:k8s-app: kube-dns\n"
			       "  other: 1\n"
			       "empty:\n"
			       "...\n"
			       "---\n"
			       "kind: List\n"
			       "items:\n"
			       "  - {kind: A}\n"
			       "  - kind: B\n";

static void test_reader_features(void **state)
{
	(void)state;
	cJSON *all = read_text(features, "features.yaml");
	assert_int_equal(cJSON_GetArraySize(all), 3);
	cJSON *o = cJSON_GetArrayItem(all, 0);
	assert_string_equal(k8s_str(o, "metadata.name"), "it's");
	assert_string_equal(k8s_str(o, "metadata.labels.c"), "d e");
	assert_string_equal(k8s_str(o, "data.lit"), "line one\n# not a comment\n\nline three\n");
	assert_string_equal(k8s_str(o, "data.strip"), "x");
	assert_string_equal(k8s_str(o, "data.fold"), "a b\n");
	assert_string_equal(k8s_str(o, "data.hash"), "a # b");
	assert_string_equal(k8s_str(o, "data.esc"), "tab\there \xc3\xa9");
	assert_string_equal(k8s_str(o, "data.url"), "http://x:80/y");
	cJSON *l = cJSON_GetObjectItem(o, "list");
	assert_int_equal(cJSON_GetArraySize(l), 8);
	assert_true(cJSON_GetArrayItem(l, 0)->valuedouble == 1);
	assert_true(cJSON_GetArrayItem(l, 1)->valuedouble == -2.5);
	assert_true(cJSON_IsTrue(cJSON_GetArrayItem(l, 2)));
	assert_true(cJSON_IsFalse(cJSON_GetArrayItem(l, 3)));
	assert_true(cJSON_IsNull(cJSON_GetArrayItem(l, 4)));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetArrayItem(l, 5)), 3);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(l, 6), 1)->valuestring, "seq");
	cJSON *m = cJSON_GetArrayItem(l, 7);
	assert_string_equal(cJSON_GetObjectItem(m, "k8s:k8s-app")->valuestring, "kube-dns");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "empty")));
	assert_string_equal(k8s_str(cJSON_GetArrayItem(all, 1), "kind"), "A");
	assert_string_equal(k8s_str(cJSON_GetArrayItem(all, 2), "kind"), "B");
	cJSON_Delete(all);
}

static void test_reader_block_in_seq(void **state)
{
	(void)state;
	cJSON *all = read_text("a:\n- |\n  x\n   y\n- >-\n  p\n  q\n- k: |\n    z\n", "b.yaml");
	cJSON *a = cJSON_GetObjectItem(cJSON_GetArrayItem(all, 0), "a");
	assert_string_equal(cJSON_GetArrayItem(a, 0)->valuestring, "x\n y\n");
	assert_string_equal(cJSON_GetArrayItem(a, 1)->valuestring, "p q");
	assert_string_equal(k8s_str(cJSON_GetArrayItem(a, 2), "k"), "z\n");
	cJSON_Delete(all);
}

static void test_reader_json(void **state)
{
	(void)state;
	cJSON *all = read_text("  [{\"kind\": \"Pod\"}, {\"kind\": \"List\", \"items\": "
			       "[{\"kind\": \"Job\"}]}]",
			       "j.json");
	assert_int_equal(cJSON_GetArraySize(all), 2);
	assert_string_equal(k8s_str(cJSON_GetArrayItem(all, 1), "kind"), "Job");
	cJSON_Delete(all);
}

static void test_reader_errors(void **state)
{
	(void)state;
	expect_error("a: 1\n\tb: 2\n", "m.yaml:2: a tab");
	expect_error("a: &x 1\n", "m.yaml:1: anchors");
	expect_error("a: \"open\n", "m.yaml:1: unterminated");
	expect_error("a: 1\na: 2\n", "m.yaml:2: duplicate key `a`");
	expect_error("a: b\n  c\n", "m.yaml:2: unexpected indentation");
	expect_error("a:\n  b: 1\n c: 2\n", "m.yaml:3:");
	expect_error("--- {a: 1}\n", "content after `---`");
	expect_error("a: [1, 2\n", "flow collection");
	expect_error("- 1\n", "a document must be an object");
	expect_error("{\"a\": \n", "m.yaml:1: invalid JSON");
	expect_error("a: |x\n  y\n", "block scalar header");
	expect_error("a: \"\\q\"\n", "bad escape");
	expect_error("a: \"\\u0000\"\n", "bad escape");
}

static void test_quantity(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		bool cpu;
		int64_t want; /* -1: refused */
	} rows[] = {
	    {"256Mi", false, 268435456},
	    {"1Gi", false, 1073741824},
	    {"1.5Gi", false, 1610612736},
	    {"128M", false, 128000000},
	    {"1e3", false, 1000},
	    {"1", true, 1000},
	    {"0.5", true, 500},
	    {"500m", true, 500},
	    {"2500m", true, 2500},
	    {"12x", false, -1},
	    {"", false, -1},
	    {"-1", false, -1},
	    {"Mi", false, -1},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(rows); i++) {
		cJSON *v = cJSON_CreateString(rows[i].s);
		int64_t got = -1;
		int r = k8s_quantity(v, rows[i].cpu, &got);
		cJSON_Delete(v);
		if (rows[i].want < 0)
			assert_int_equal(r, -1);
		else if (r != 0 || got != rows[i].want)
			fail_msg("%s: got %d %" PRId64 ", want %" PRId64, rows[i].s, r, got,
				 rows[i].want);
	}
}

/* ---- round trip and drift ---- */

static int check_objects(const struct ar_policy *p, const cJSON *objs, enum ar_k8s_subject k,
			 struct ar_findings *f)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autofree char *subject = NULL;
	ar_autospec struct ar_spec *sp = NULL;
	if (ar_spec_build_container(p, &sp, &err) < 0)
		fail_msg("spec: %s", err->msg);
	int r = ar_check_k8s(sp, objs, k, f, &subject, &err);
	if (r < 0)
		fail_msg("check: %s", err->msg);
	return r;
}

static void test_round_trip(void **state)
{
	(void)state;
	static const char *const profiles[] = {"triage", "offline", "triage-cilium"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(profiles); i++) {
		ar_autofree char *pol = ar_xasprintf(
		    "profiles/%s.json", strcmp(profiles[i], "offline") ? "triage" : "offline");
		ar_autofree char *gold =
		    ar_xasprintf("tests/integration/k8s/golden/%s.yaml", profiles[i]);
		ar_autopolicy struct ar_policy *p = load_policy(pol);
		cJSON *objs = read_rel(gold);
		ar_autofindings struct ar_findings f = {0};
		check_objects(p, objs, AR_K8S_MANIFEST, &f);
		for (size_t k = 0; k < f.n; k++)
			print_error("%s: %s expected %s actual %s\n", profiles[i], f.v[k].what,
				    f.v[k].expected, f.v[k].actual);
		assert_int_equal(f.n, 0);
		cJSON_Delete(objs);
	}
}

/* The object at the head of a path: "job" (the Job), "np" (the agent's NetworkPolicy). */
static cJSON *head(cJSON *objs, const char *h)
{
	const char *kind = strcmp(h, "job") == 0 ? "Job" : "NetworkPolicy";
	cJSON *o;
	cJSON_ArrayForEach(o, objs) if (strcmp(k8s_str(o, "kind"), kind) == 0) return o;
	fail_msg("no %s", kind);
	return NULL;
}

/* Set (json != NULL), delete (json NULL) or append ("+" as the last segment) at path. */
static void mutate(cJSON *objs, const char *path, const char *json)
{
	ar_autofree char *copy = ar_xstrdup(path);
	char *save = NULL, *seg = strtok_r(copy, ".", &save);
	cJSON *cur = head(objs, seg), *parent = NULL;
	char *last = NULL;
	for (seg = strtok_r(NULL, ".", &save); seg != NULL; seg = strtok_r(NULL, ".", &save)) {
		parent = cur;
		last = seg;
		cur = cJSON_IsArray(parent) && strcmp(seg, "+") != 0
			  ? cJSON_GetArrayItem(parent, atoi(seg))
			  : cJSON_GetObjectItemCaseSensitive(parent, seg);
		if (cur == NULL && save != NULL && *save != '\0')
			fail_msg("%s: no %s", path, seg);
	}
	cJSON *v = json != NULL ? cJSON_Parse(json) : NULL;
	if (json != NULL && v == NULL)
		fail_msg("bad json %s", json);
	if (strcmp(last, "+") == 0)
		cJSON_AddItemToArray(parent, v);
	else if (cJSON_IsArray(parent))
		v ? (void)cJSON_ReplaceItemInArray(parent, atoi(last), v)
		  : cJSON_DeleteItemFromArray(parent, atoi(last));
	else if (v == NULL)
		cJSON_DeleteItemFromObjectCaseSensitive(parent, last);
	else if (cur != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(parent, last, v);
	else
		cJSON_AddItemToObject(parent, last, v);
}

#define PS  "job.spec.template.spec."
#define CTR PS "containers.0."

static const struct drift {
	const char *path, *json, *what; /* what NULL: no finding */
} drifts[] = {
    {PS "hostNetwork", "true", "hostNetwork"},
    {PS "hostPID", "true", "hostPID"},
    {PS "hostIPC", "true", "hostIPC"},
    {PS "automountServiceAccountToken", NULL, "automountServiceAccountToken"},
    {PS "enableServiceLinks", "true", "enableServiceLinks"},
    {PS "volumes.+", "{\"name\": \"h\", \"hostPath\": {\"path\": \"/\"}}", "hostPath volume h"},
    {CTR "securityContext.privileged", "true", "container agent privileged"},
    {CTR "securityContext.allowPrivilegeEscalation", NULL,
     "container agent allowPrivilegeEscalation"},
    {CTR "securityContext.readOnlyRootFilesystem", "false",
     "container agent readOnlyRootFilesystem"},
    {CTR "securityContext.capabilities.drop", "[\"NET_RAW\"]", "container agent capabilities.drop"},
    {CTR "securityContext.capabilities.add", "[\"NET_ADMIN\"]", "container agent capabilities.add"},
    {CTR "securityContext.runAsNonRoot", "false", "container agent runAsNonRoot"},
    {PS "securityContext.runAsUser", "0", "container agent runAsUser"},
    {PS "securityContext.runAsGroup", NULL, "container agent runAsGroup"},
    {PS "securityContext.seccompProfile", NULL, "container agent seccompProfile"},
    {CTR "securityContext.seccompProfile", "{\"type\": \"Unconfined\"}",
     "container agent seccompProfile"},
    {CTR "resources.limits.memory", "\"512Mi\"", "memory limit"},
    {CTR "resources.limits.cpu", "\"1500m\"", "cpu limit"},
    {CTR "resources.limits.cpu", "\"1000m\"", NULL},
    {PS "volumes.0.emptyDir.medium", NULL, "tmpfs /tmp"},
    {CTR "volumeMounts.2.readOnly", "false", "kubeconfig mount"},
    {CTR "volumeMounts.3.readOnly", NULL, "mount /logs"},
    {CTR "env.0.value", "\"http://evil:3128\"", "env HTTP_PROXY"},
    {CTR "env.6.value", "\"https://other\"", "env ANTHROPIC_BASE_URL"},
    {CTR "env.7", NULL, "env KUBECONFIG"},
    {CTR "env.+", "{\"name\": \"GITHUB_TOKEN\", \"value\": \"ghp_s3cr3t\"}",
     "secret in environment GITHUB_TOKEN"},
    {CTR "env.+", "{\"name\": \"API_TOKEN\", \"valueFrom\": {\"secretKeyRef\": {}}}", NULL},
    {PS "initContainers",
     "[{\"name\": \"init\", \"securityContext\": {\"privileged\": true, "
     "\"allowPrivilegeEscalation\": false, \"readOnlyRootFilesystem\": true, "
     "\"capabilities\": {\"drop\": [\"ALL\"]}}}]",
     "init container init privileged"},
    {"np.spec.policyTypes", "[\"Ingress\"]", "NetworkPolicy"},
    {"np.spec.egress.+", "{\"to\": [{\"ipBlock\": {\"cidr\": \"0.0.0.0/0\"}}]}",
     "NetworkPolicy triage-agent egress"},
    {"np.spec.egress.+", "{\"ports\": [{\"port\": 443}]}", "NetworkPolicy triage-agent egress"},
};

static void test_drift(void **state)
{
	(void)state;
	ar_autopolicy struct ar_policy *p = load_policy("profiles/triage.json");
	for (size_t i = 0; i < AR_ARRAY_SIZE(drifts); i++) {
		cJSON *objs = read_rel("tests/integration/k8s/golden/triage.yaml");
		mutate(objs, drifts[i].path, drifts[i].json);
		ar_autofindings struct ar_findings f = {0};
		check_objects(p, objs, AR_K8S_MANIFEST, &f);
		cJSON_Delete(objs);
		size_t want = drifts[i].what != NULL;
		if (f.n != want || (want && strcmp(f.v[0].what, drifts[i].what) != 0))
			fail_msg("%s: %zu findings, first `%s`, want `%s`", drifts[i].path, f.n,
				 f.n ? f.v[0].what : "-", drifts[i].what ? drifts[i].what : "-");
		for (size_t k = 0; k < f.n; k++)
			assert_null(strstr(f.v[k].actual, "s3cr3t"));
	}
}

/* A NetworkPolicy selecting other pods does not count; the namespace must match. */
static void test_netpol_selector(void **state)
{
	(void)state;
	ar_autopolicy struct ar_policy *p = load_policy("profiles/triage.json");
	static const char *const edits[][2] = {
	    {"np.spec.podSelector", "{\"matchLabels\": {\"app.kubernetes.io/component\": \"x\"}}"},
	    {"np.metadata.namespace", "\"elsewhere\""},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(edits); i++) {
		cJSON *objs = read_rel("tests/integration/k8s/golden/triage.yaml");
		mutate(objs, edits[i][0], edits[i][1]);
		ar_autofindings struct ar_findings f = {0};
		check_objects(p, objs, AR_K8S_MANIFEST, &f);
		cJSON_Delete(objs);
		assert_int_equal(f.n, 1);
		assert_string_equal(f.v[0].what, "NetworkPolicy");
	}
	/* an empty selector selects every pod in the namespace */
	cJSON *objs = read_rel("tests/integration/k8s/golden/triage.yaml");
	mutate(objs, "np.spec.podSelector", "{}");
	ar_autofindings struct ar_findings f = {0};
	check_objects(p, objs, AR_K8S_MANIFEST, &f);
	cJSON_Delete(objs);
	assert_int_equal(f.n, 0);
}

/* ---- kubectl get pod -o json ---- */

static void test_pod_compliant(void **state)
{
	(void)state;
	ar_autopolicy struct ar_policy *p = load_policy("profiles/triage.json");
	cJSON *objs = read_rel("tests/unit/check/data/k8s/pod-compliant.json");
	ar_autofindings struct ar_findings f = {0};
	check_objects(p, objs, AR_K8S_POD, &f);
	cJSON_Delete(objs);
	assert_int_equal(f.n, 0);
}

static void test_pod_bastion(void **state)
{
	(void)state;
	static const char *const whats[] = {
	    "hostNetwork",
	    "hostPID",
	    "hostIPC",
	    "automountServiceAccountToken",
	    "enableServiceLinks",
	    "hostPath volume host-root",
	    "hostPath volume docker-sock",
	    "hostPath volume kube",
	    "container bastion privileged",
	    "container bastion allowPrivilegeEscalation",
	    "container bastion readOnlyRootFilesystem",
	    "container bastion capabilities.drop",
	    "container bastion capabilities.add",
	    "container bastion runAsNonRoot",
	    "container bastion runAsUser",
	    "container bastion runAsGroup",
	    "container bastion seccompProfile",
	    "memory limit",
	    "cpu limit",
	    "tmpfs /tmp",
	    "kubeconfig mount",
	    "mount /logs",
	    "env HTTP_PROXY",
	    "env HTTPS_PROXY",
	    "env http_proxy",
	    "env https_proxy",
	    "env ANTHROPIC_BASE_URL",
	    "env KUBECONFIG",
	    "secret in environment AWS_SECRET_ACCESS_KEY",
	    "secret in environment GITHUB_TOKEN",
	};
	ar_autopolicy struct ar_policy *p = load_policy("profiles/triage.json");
	cJSON *objs = read_rel("tests/unit/check/data/k8s/pod-bastion.json");
	ar_autofindings struct ar_findings f = {0};
	check_objects(p, objs, AR_K8S_POD, &f);
	cJSON_Delete(objs);
	assert_true(f.n >= 15);
	assert_int_equal(f.n, AR_ARRAY_SIZE(whats));
	ar_autobuf struct ar_buf out = {0};
	ar_check_format_text(&out, &f, "Pod/bastion", p->name);
	for (size_t i = 0; i < f.n; i++)
		assert_string_equal(f.v[i].what, whats[i]);
	/* the literal values of the secrets, and DB_PASSWORD (a secretKeyRef), never show */
	assert_null(strstr(out.data, "wJalrXUtnFEMI"));
	assert_null(strstr(out.data, "ghp_example"));
	assert_null(strstr(out.data, "DB_PASSWORD"));
	assert_non_null(strstr(out.data, "fix: spec.hostNetwork: false\n"));
}

static void test_pod_needs_pod(void **state)
{
	(void)state;
	ar_autopolicy struct ar_policy *p = load_policy("profiles/triage.json");
	cJSON *objs = read_rel("tests/integration/k8s/golden/triage.yaml");
	ar_auto_error ar_error_t err = NULL;
	ar_autofindings struct ar_findings f = {0};
	char *subject = NULL;
	ar_autospec struct ar_spec *sp = NULL;
	assert_int_equal(ar_spec_build_container(p, &sp, &err), 0);
	assert_int_equal(ar_check_k8s(sp, objs, AR_K8S_POD, &f, &subject, &err), -1);
	assert_non_null(strstr(err->msg, "no Pod"));
	cJSON_Delete(objs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reader_features),
	    cmocka_unit_test(test_reader_json),
	    cmocka_unit_test(test_reader_block_in_seq),
	    cmocka_unit_test(test_reader_errors),
	    cmocka_unit_test(test_quantity),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_drift),
	    cmocka_unit_test(test_netpol_selector),
	    cmocka_unit_test(test_pod_compliant),
	    cmocka_unit_test(test_pod_bastion),
	    cmocka_unit_test(test_pod_needs_pod),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

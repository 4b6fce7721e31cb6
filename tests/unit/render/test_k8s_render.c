/* render --format k8s / k8s-json: the objects and their fields per policy and flag, read
 * back from the v1/List with cJSON, the YAML scalar quoting, and the errors. (Schema
 * validity and goldens: tests/integration/k8s_schema.sh.) */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "../../../src/render/k8s_tree.h"
#include "agentrun/k8s.h"
#include "agentrun/policy.h"
#include "agentrun/util.h"
#include "agentrun/spec.h"

/* The objects of p's container spec, as render makes them. */
static int k8s_render(const struct ar_policy *p, const struct ar_render_options *o,
		      const struct ar_k8s_options *k, struct ar_buf *out, ar_error_t *err)
{
	ar_autospec struct ar_spec *sp = NULL;
	if (ar_spec_build_container(p, &sp, err) < 0)
		return -1;
	return ar_render_k8s(sp, o, k, out, err);
}

static const char full_json[] =
    "{\"name\": \"t\", \"image\": \"img:1\", \"allowed_hosts\": [\"a.example.com\","
    " \"*.b.example.com:8443\", \"10.0.0.5\"], \"kubeconfig\": \"/k\","
    " \"seccomp\": \"/etc/agentrun/s.json\", \"tmpfs\": [\"/tmp\", \"/run\"],"
    " \"limits\": {\"pids\": 64, \"memory\": \"10000001\", \"cpus\": \"0.25\"},"
    " \"user\": \"1000:2000\", \"env\": {\"TRUE\": \"true\", \"NUM\": \"12\"},"
    " \"network\": \"proxy\", \"proxy\": {\"port\": 8080, \"sni\": \"check\","
    " \"max_bytes_out\": {\"a.example.com\": 5}, \"allow_private\": [\"172.18.0.0/16\", "
    "\"fd00::1\"]}}";

static const char none_json[] =
    "{\"name\": \"n\", \"network\": \"none\", \"tmpfs\": [], \"user\": \"1000\","
    " \"limits\": {\"pids\": 8, \"memory\": \"1g\", \"cpus\": \"2\"}}";

static struct ar_policy *parse(const char *json)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_policy *p = NULL;
	if (ar_policy_parse(json, strlen(json), "t.json", &p, &err) < 0)
		fail_msg("%s", err->msg);
	return p;
}

static cJSON *render_list(const char *json, const struct ar_k8s_options *k0, const char *image)
{
	ar_autopolicy struct ar_policy *p = parse(json);
	struct ar_k8s_options k = *k0;
	k.json = true;
	char *cmd[] = {"run", "it", NULL};
	struct ar_render_options o = {.image = image, .cmd = cmd, .n_cmd = 2};
	ar_autobuf struct ar_buf out = {0};
	ar_auto_error ar_error_t err = NULL;
	if (k8s_render(p, &o, &k, &out, &err) < 0)
		fail_msg("%s", err->msg);
	cJSON *l = cJSON_Parse(out.data);
	assert_non_null(l);
	assert_string_equal(cJSON_GetObjectItem(l, "kind")->valuestring, "List");
	return l;
}

static cJSON *get(cJSON *o, const char *path)
{
	char key[64];
	while (o != NULL && *path) {
		size_t n = strcspn(path, "/");
		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		o = cJSON_IsArray(o) ? cJSON_GetArrayItem(o, atoi(key))
				     : cJSON_GetObjectItemCaseSensitive(o, key);
		path += n + (path[n] == '/');
	}
	return o;
}

static cJSON *object(cJSON *list, const char *kind, const char *name)
{
	cJSON *o;
	cJSON_ArrayForEach(o, cJSON_GetObjectItem(list, "items"))
	{
		if (strcmp(get(o, "kind")->valuestring, kind) == 0 &&
		    (name == NULL || strcmp(get(o, "metadata/name")->valuestring, name) == 0))
			return o;
	}
	return NULL;
}

static char *args_joined(cJSON *arr)
{
	ar_autobuf struct ar_buf b = {0};
	cJSON *a;
	cJSON_ArrayForEach(a, arr) ar_buf_printf(&b, "%s ", a->valuestring);
	return ar_buf_steal(&b);
}

static void test_full(void **state)
{
	(void)state;
	struct ar_k8s_options k = {.runtime_class = "gvisor", .namespace = "agents"};
	cJSON *l = render_list(full_json, &k, NULL);
	assert_non_null(object(l, "Namespace", "agents"));
	cJSON *job = object(l, "Job", "t-agent");
	cJSON *ps = get(job, "spec/template/spec");
	assert_string_equal(get(job, "metadata/namespace")->valuestring, "agents");
	assert_int_equal(get(job, "spec/backoffLimit")->valueint, 0);
	assert_string_equal(get(ps, "runtimeClassName")->valuestring, "gvisor");
	assert_int_equal(get(ps, "securityContext/runAsUser")->valueint, 1000);
	assert_int_equal(get(ps, "securityContext/runAsGroup")->valueint, 2000);
	assert_int_equal(get(ps, "securityContext/fsGroup")->valueint, 2000);
	assert_string_equal(get(ps, "securityContext/seccompProfile/localhostProfile")->valuestring,
			    "agentrun/s.json");
	cJSON *c = get(ps, "containers/0");
	assert_string_equal(get(c, "image")->valuestring, "img:1");
	ar_autofree char *args = args_joined(get(c, "args"));
	assert_string_equal(args, "run it ");
	assert_string_equal(get(c, "resources/limits/memory")->valuestring, "10000001");
	assert_string_equal(get(c, "resources/limits/cpu")->valuestring, "250m");
	assert_string_equal(get(ps, "volumes/1/emptyDir/medium")->valuestring, "Memory");
	assert_string_equal(get(ps, "volumes/1/emptyDir/sizeLimit")->valuestring, "10000001");
	assert_int_equal(get(ps, "volumes/2/projected/sources/0/serviceAccountToken/"
				 "expirationSeconds")
			     ->valueint,
			 3600);
	assert_string_equal(get(c, "env/0/value")->valuestring, "http://t-proxy:8080");
	cJSON *proxy = get(object(l, "Deployment", "t-proxy"), "spec/template/spec");
	ar_autofree char *pargs = args_joined(get(proxy, "containers/0/args"));
	assert_string_equal(
	    pargs, "proxy --listen 0.0.0.0:8080 --busy-poll 0 --allow a.example.com --allow "
		   "*.b.example.com:8443 --allow 10.0.0.5 --max-bytes-out "
		   "a.example.com=5 --sni check --allow-private 172.18.0.0/16 "
		   "--allow-private fd00::1 --audit /var/log/agentrun/audit.jsonl ");
	assert_string_equal(get(proxy, "securityContext/seccompProfile/type")->valuestring,
			    "RuntimeDefault");
	cJSON *np = object(l, "NetworkPolicy", "t-proxy");
	assert_string_equal(get(np, "spec/egress/0/to/0/ipBlock/except/3")->valuestring,
			    "169.254.0.0/16");
	assert_string_equal(get(np, "spec/egress/2/to/0/ipBlock/cidr")->valuestring, "fd00::1/128");
	assert_null(object(l, "CiliumNetworkPolicy", NULL));
	cJSON_Delete(l);
}

/* Secrets: a Secret NAME-secrets mounted into the proxy alone (the values never in the
 * manifest), the proxy's flags with the agent's placeholders, and the agent's CA bundle
 * fetched from the proxy by an init container into an emptyDir read at /etc/agentrun. */
static void test_secrets(void **state)
{
	(void)state;
	struct ar_k8s_options k = {0};
	cJSON *l = render_list("{\"name\": \"s\", \"image\": \"i\", \"allowed_hosts\": "
			       "[\"api.x.test\"], \"secrets\": {\"K\": {\"from\": \"env:HOST_K\","
			       " \"hosts\": [\"api.x.test\"]}}}",
			       &k, NULL);
	cJSON *ps = get(object(l, "Job", "s-agent"), "spec/template/spec");
	cJSON *agent = get(ps, "containers/0");
	const char *ph = NULL;
	cJSON *e;
	cJSON_ArrayForEach(e, get(agent, "env")) if (strcmp(get(e, "name")->valuestring, "K") == 0)
	    ph = get(e, "value")->valuestring;
	assert_non_null(ph);
	assert_int_equal(strncmp(ph, "agentrun-secret-K-", 18), 0);
	assert_int_equal(strlen(ph), 18 + 32);
	ar_autofree char *agent_text = cJSON_PrintUnformatted(ps);
	assert_null(strstr(agent_text, "HOST_K"));
	assert_null(strstr(agent_text, "s-secrets"));
	/* the CA: an init container fetches it from the proxy into the emptyDir "ca" */
	cJSON *init = get(ps, "initContainers/0");
	assert_string_equal(get(init, "name")->valuestring, "ca");
	assert_non_null(strstr(get(init, "command/2")->valuestring,
			       "http://s-proxy:3128/agentrun/ca-bundle.pem"));
	assert_false(cJSON_IsTrue(get(init, "securityContext/allowPrivilegeEscalation")));
	cJSON *m;
	bool ca_mounted = false;
	cJSON_ArrayForEach(m, get(agent, "volumeMounts")) ca_mounted =
	    ca_mounted || (strcmp(get(m, "name")->valuestring, "ca") == 0 &&
			   strcmp(get(m, "mountPath")->valuestring, "/etc/agentrun") == 0 &&
			   cJSON_IsTrue(get(m, "readOnly")));
	assert_true(ca_mounted);
	/* the proxy: the Secret, read-only, and its flags */
	cJSON *proxy = get(object(l, "Deployment", "s-proxy"), "spec/template/spec");
	ar_autofree char *pargs = args_joined(get(proxy, "containers/0/args"));
	ar_autofree char *want = ar_xasprintf(
	    "--sni check --secret K=file:/run/agentrun/secrets/K --secret-host K=api.x.test "
	    "--secret-placeholder K=%s --audit",
	    ph);
	assert_non_null(strstr(pargs, want));
	bool secret_vol = false;
	cJSON_ArrayForEach(m, get(proxy, "volumes")) secret_vol =
	    secret_vol || (get(m, "secret/secretName") != NULL &&
			   strcmp(get(m, "secret/secretName")->valuestring, "s-secrets") == 0 &&
			   get(m, "secret/defaultMode")->valueint == 0440);
	assert_true(secret_vol);
	cJSON_Delete(l);
}

static void test_cilium(void **state)
{
	(void)state;
	struct ar_k8s_options k = {.cilium = true, .no_namespace = true};
	cJSON *l = render_list(full_json, &k, NULL);
	assert_null(object(l, "Namespace", NULL));
	cJSON *np = object(l, "NetworkPolicy", "t-proxy");
	assert_int_equal(cJSON_GetArraySize(get(np, "spec/policyTypes")), 1);
	assert_null(get(np, "spec/egress"));
	cJSON *cnp = object(l, "CiliumNetworkPolicy", "t-proxy-fqdn");
	cJSON *eg = get(cnp, "spec/egress");
	assert_string_equal(get(eg, "0/toPorts/0/rules/dns/0/matchPattern")->valuestring, "*");
	assert_string_equal(get(eg, "1/toFQDNs/0/matchName")->valuestring, "a.example.com");
	assert_string_equal(get(eg, "1/toPorts/0/ports/1/port")->valuestring, "80");
	assert_string_equal(get(eg, "2/toFQDNs/0/matchPattern")->valuestring, "*.b.example.com");
	assert_string_equal(get(eg, "2/toPorts/0/ports/0/port")->valuestring, "8443");
	assert_string_equal(get(eg, "3/toCIDR/0")->valuestring, "10.0.0.5/32");
	assert_string_equal(get(eg, "4/toCIDR/0")->valuestring, "172.18.0.0/16");
	cJSON_Delete(l);
}

static void test_network_none(void **state)
{
	(void)state;
	struct ar_k8s_options k = {0};
	cJSON *l = render_list(none_json, &k, "busybox");
	assert_null(object(l, "Deployment", NULL));
	assert_null(object(l, "Service", NULL));
	assert_null(object(l, "ConfigMap", NULL));
	cJSON *np = object(l, "NetworkPolicy", "n-agent");
	assert_int_equal(cJSON_GetArraySize(get(np, "spec/egress")), 0);
	assert_true(cJSON_IsArray(get(np, "spec/egress")));
	cJSON *c = get(object(l, "Job", "n-agent"), "spec/template/spec/containers/0");
	assert_int_equal(cJSON_GetArraySize(get(c, "env")), 0);
	assert_string_equal(get(c, "resources/limits/memory")->valuestring, "1Gi");
	assert_string_equal(get(c, "resources/limits/cpu")->valuestring, "2");
	cJSON_Delete(l);
}

static void test_errors(void **state)
{
	(void)state;
	static const struct {
		const char *json, *image, *ns, *rc, *msg;
	} rows[] = {
	    {none_json, NULL, NULL, NULL, "`image` is not set"},
	    {none_json, "x", "Bad_NS", NULL, "--namespace `Bad_NS`: not a DNS label"},
	    {none_json, "x", NULL, "-x", "--runtime-class `-x`"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(rows); i++) {
		ar_autopolicy struct ar_policy *p = parse(rows[i].json);
		struct ar_render_options o = {.image = rows[i].image};
		struct ar_k8s_options k = {.namespace = rows[i].ns, .runtime_class = rows[i].rc};
		ar_autobuf struct ar_buf out = {0};
		ar_auto_error ar_error_t err = NULL;
		assert_int_equal(k8s_render(p, &o, &k, &out, &err), -1);
		if (strstr(err->msg, rows[i].msg) == NULL)
			fail_msg("`%s` lacks `%s`", err->msg, rows[i].msg);
		assert_int_equal(out.len, 0);
	}
}

/* Strings YAML would read as something else are quoted; comments stay comments. */
static void test_yaml_scalars(void **state)
{
	(void)state;
	struct kn *o = kn_new_map();
	static const char *const quoted[] = {"true", "No", "12", "1.5", "~",   "null", "a: b",
					     "#x",   "-x", "*",	 "",	"x y", "a\nb"};
	static const char *const plain[] = {"abc", "a.b-c_d", "/x/y", "ALL"};
	struct kn *l = kn_list(o, "q");
	for (size_t i = 0; i < AR_ARRAY_SIZE(quoted); i++)
		kn_str(l, NULL, quoted[i]);
	struct kn *pl = kn_list(o, "p");
	for (size_t i = 0; i < AR_ARRAY_SIZE(plain); i++)
		kn_str(pl, NULL, plain[i]);
	kn_note(kn_int(o, "n", 3), "two\nlines");
	kn_map(o, "e");
	ar_autobuf struct ar_buf out = {0};
	kn_print_yaml(o, &out);
	assert_string_equal(out.data, "---\nq:\n- \"true\"\n- \"No\"\n- \"12\"\n- \"1.5\"\n"
				      "- \"~\"\n- \"null\"\n- \"a: b\"\n- \"#x\"\n- \"-x\"\n"
				      "- \"*\"\n- \"\"\n- \"x y\"\n- \"a\\nb\"\np:\n- abc\n"
				      "- a.b-c_d\n- /x/y\n- ALL\n# two\n# lines\nn: 3\ne: {}\n");
	kn_free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_full),	 cmocka_unit_test(test_cilium),
	    cmocka_unit_test(test_network_none), cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_yaml_scalars), cmocka_unit_test(test_secrets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

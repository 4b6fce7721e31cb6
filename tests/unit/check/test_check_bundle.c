/* Unit tests for check --bundle: a config.json rendered from the policy has no drift;
 * each field drifted on its own gives exactly one finding naming it. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>

#include "../spec_fixture.h"

#include "agentrun/check.h"
#include "agentrun/render.h"

#define POLICY_PATH "/etc/agentrun/triage.json"

static const char triage_json[] =
    "{\"name\": \"triage\", \"allowed_hosts\": [\"api.anthropic.com\"],"
    " \"kubeconfig\": \"/home/me/.kube/agent-config\","
    " \"mounts\": [{\"source\": \"/srv/logs\", \"target\": \"/logs\", \"readonly\": true}],"
    " \"tmpfs\": [\"/tmp\"], \"user\": \"1000\","
    " \"env\": {\"ANTHROPIC_BASE_URL\": \"https://api.anthropic.com\"}, \"network\": \"proxy\"}";

static const char profile[] = "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\":"
			      " [\"read\"], \"action\": \"SCMP_ACT_ALLOW\"}]}";

static char *render(const struct ar_spec *sp, const char *netns)
{
	static char *const cmd[] = {"/bin/sh", "-c", "true"};
	struct ar_render_options o = {.cmd = cmd,
				      .n_cmd = 3,
				      .hook_path = "/usr/bin/agentrun",
				      .policy_path = POLICY_PATH,
				      .netns = netns};
	ar_autobuf struct ar_buf out = {0};
	ar_auto_error ar_error_t err = NULL;
	if (ar_render_oci(sp, &o, profile, "profile.json", &out, &err) < 0)
		fail_msg("render: %s", err->msg);
	return ar_buf_steal(&out);
}

static void check(const struct ar_spec *sp, const char *json, struct ar_findings *f)
{
	struct ar_check_bundle_opts o = {.origin = "b/config.json",
					 .policy_path = POLICY_PATH,
					 .seccomp_json = profile,
					 .seccomp_origin = "profile.json"};
	ar_auto_error ar_error_t err = NULL;
	if (ar_check_bundle(sp, json, strlen(json), &o, f, &err) < 0)
		fail_msg("check: %s", err->msg);
}

/* ---- one drift each ---- */

static cJSON *at(cJSON *root, const char *path)
{
	ar_autofree char *copy = ar_xstrdup(path);
	char *save = NULL;
	for (char *k = strtok_r(copy, ".", &save); k && root; k = strtok_r(NULL, ".", &save))
		root = cJSON_GetObjectItemCaseSensitive(root, k);
	assert_non_null(root);
	return root;
}

static void set_num(cJSON *root, const char *parent, const char *key, double v)
{
	cJSON_ReplaceItemInObjectCaseSensitive(at(root, parent), key, cJSON_CreateNumber(v));
}

static void del_str(cJSON *arr, const char *prefix)
{
	for (int i = 0; i < cJSON_GetArraySize(arr); i++) {
		cJSON *e = cJSON_GetArrayItem(arr, i);
		const char *s = cJSON_IsString(e) ? e->valuestring
				: cJSON_GetObjectItem(e, "destination")
				    ? cJSON_GetObjectItem(e, "destination")->valuestring
				    : cJSON_GetObjectItem(e, "type")->valuestring;
		if (strncmp(s, prefix, strlen(prefix)) == 0) {
			cJSON_DeleteItemFromArray(arr, i);
			return;
		}
	}
	fail_msg("no %s", prefix);
}

static void add_mount(cJSON *root, const char *src, const char *dst)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "destination", dst);
	cJSON_AddStringToObject(m, "type", "bind");
	cJSON_AddStringToObject(m, "source", src);
	cJSON_AddItemToArray(at(root, "mounts"), m);
}

static void d_uid(cJSON *r)
{
	set_num(r, "process.user", "uid", 0);
}
static void d_gid(cJSON *r)
{
	set_num(r, "process.user", "gid", 0);
}
static void d_caps(cJSON *r)
{
	cJSON_AddItemToArray(at(r, "process.capabilities.effective"),
			     cJSON_CreateString("CAP_SYS_ADMIN"));
}
static void d_nnp(cJSON *r)
{
	cJSON_ReplaceItemInObject(at(r, "process"), "noNewPrivileges", cJSON_CreateFalse());
}
static void d_ro(cJSON *r)
{
	cJSON_ReplaceItemInObject(at(r, "root"), "readonly", cJSON_CreateFalse());
}
static void d_pids(cJSON *r)
{
	set_num(r, "linux.resources.pids", "limit", 4096);
}
static void d_mem(cJSON *r)
{
	set_num(r, "linux.resources.memory", "limit", 1 << 30);
}
static void d_swap(cJSON *r)
{
	set_num(r, "linux.resources.memory", "swap", -1);
}
static void d_quota(cJSON *r)
{
	set_num(r, "linux.resources.cpu", "quota", 400000);
}
static void d_period(cJSON *r)
{
	set_num(r, "linux.resources.cpu", "period", 50000);
}
static void d_seccomp(cJSON *r)
{
	cJSON_DeleteItemFromObject(at(r, "linux"), "seccomp");
}
static void d_env_value(cJSON *r)
{
	del_str(at(r, "process.env"), "ANTHROPIC_BASE_URL=");
	cJSON_AddItemToArray(at(r, "process.env"),
			     cJSON_CreateString("ANTHROPIC_BASE_URL=http://x"));
}
static void d_env_proxy(cJSON *r)
{
	del_str(at(r, "process.env"), "HTTP_PROXY=");
}
static void d_env_secret(cJSON *r)
{
	cJSON_AddItemToArray(at(r, "process.env"), cJSON_CreateString("AWS_SECRET_ACCESS_KEY=s3"));
}
static void d_mount_rw(cJSON *r)
{
	del_str(at(r, "mounts"), "/logs");
	add_mount(r, "/srv/logs", "/logs");
}
static void d_mount_tmp(cJSON *r)
{
	del_str(at(r, "mounts"), "/tmp");
}
static void d_mount_sock(cJSON *r)
{
	add_mount(r, "/var/run/docker.sock", "/var/run/docker.sock");
}
static void d_mount_extra(cJSON *r)
{
	add_mount(r, "/srv/data", "/data");
}
static void d_masked(cJSON *r)
{
	del_str(at(r, "linux.maskedPaths"), "/sys/kernel/debug");
}
static void d_readonly(cJSON *r)
{
	del_str(at(r, "linux.readonlyPaths"), "/proc/sys");
}
static void d_ns_pid(cJSON *r)
{
	del_str(at(r, "linux.namespaces"), "pid");
}
static void d_ns_host(cJSON *r)
{
	cJSON *ns;
	cJSON_ArrayForEach(
	    ns, at(r, "linux.namespaces")) if (strcmp(cJSON_GetObjectItem(ns, "type")->valuestring,
						      "network") == 0)
	    cJSON_AddStringToObject(ns, "path", "/proc/1/ns/net");
}
static void d_devices(cJSON *r)
{
	cJSON *rule = cJSON_CreateObject();
	cJSON_AddTrueToObject(rule, "allow");
	cJSON_AddStringToObject(rule, "type", "b");
	cJSON_AddStringToObject(rule, "access", "rwm");
	cJSON_AddItemToArray(at(r, "linux.resources.devices"), rule);
}
static void d_device_node(cJSON *r)
{
	cJSON *dev = cJSON_CreateObject();
	cJSON_AddStringToObject(dev, "path", "/dev/sda");
	cJSON_AddStringToObject(dev, "type", "b");
	cJSON *list = cJSON_CreateArray();
	cJSON_AddItemToArray(list, dev);
	cJSON_AddItemToObject(at(r, "linux"), "devices", list);
}
static void d_gids(cJSON *r)
{
	cJSON *gids = cJSON_CreateArray();
	cJSON_AddItemToArray(gids, cJSON_CreateNumber(0));
	cJSON_AddItemToObject(at(r, "process.user"), "additionalGids", gids);
}
static void d_sysctl(cJSON *r)
{
	cJSON *sysctl = cJSON_CreateObject();
	cJSON_AddStringToObject(sysctl, "kernel.msgmax", "65536");
	cJSON_AddItemToObject(at(r, "linux"), "sysctl", sysctl);
}
static void d_hook(cJSON *r)
{
	cJSON_DeleteItemFromObject(at(r, "hooks"), "poststop");
}
static void d_hook_policy(cJSON *r)
{
	cJSON *args = at(cJSON_GetArrayItem(at(r, "hooks.createRuntime"), 0), "args");
	cJSON_ReplaceItemInArray(args, 4, cJSON_CreateString("/tmp/other.json"));
}

static const struct {
	void (*drift)(cJSON *);
	const char *what;
} drifts[] = {
    {d_uid, "user uid"},
    {d_gid, "user gid"},
    {d_caps, "capabilities effective"},
    {d_nnp, "no_new_privs"},
    {d_ro, "read-only rootfs"},
    {d_pids, "pids limit"},
    {d_mem, "memory limit"},
    {d_swap, "memory+swap limit"},
    {d_quota, "cpu quota"},
    {d_period, "cpu period"},
    {d_seccomp, "seccomp"},
    {d_env_value, "env ANTHROPIC_BASE_URL"},
    {d_env_proxy, "env HTTP_PROXY"},
    {d_env_secret, "secret in environment AWS_SECRET_ACCESS_KEY"},
    {d_mount_rw, "mount /logs"},
    {d_mount_tmp, "mount /tmp"},
    {d_mount_sock, "sensitive mount /var/run/docker.sock"},
    {d_mount_extra, "extra mount /data"},
    {d_masked, "masked path /sys/kernel/debug"},
    {d_readonly, "read-only path /proc/sys"},
    {d_ns_pid, "namespace pid"},
    {d_ns_host, "namespace network"},
    {d_devices, "device cgroup rules"},
    {d_device_node, "devices"},
    {d_gids, "group-add"},
    {d_sysctl, "sysctls"},
    {d_hook, "hook poststop"},
    {d_hook_policy, "hook createRuntime"},
};

static void test_each_drift(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	ar_autospec struct ar_spec *sp = NULL;
	ar_auto_error ar_error_t err = NULL;
	assert_int_equal(ar_spec_build(p, NULL, &sp, &err), 0);
	ar_autofree char *clean = render(sp, NULL);
	ar_autofindings struct ar_findings none = {0};
	check(sp, clean, &none);
	assert_int_equal(none.n, 0);

	for (size_t i = 0; i < AR_ARRAY_SIZE(drifts); i++) {
		cJSON *root = cJSON_Parse(clean);
		drifts[i].drift(root);
		ar_autofree char *text = cJSON_Print(root);
		cJSON_Delete(root);
		ar_autofindings struct ar_findings f = {0};
		check(sp, text, &f);
		if (f.n != 1)
			fail_msg("%s: %zu findings (first: %s)", drifts[i].what, f.n,
				 f.n ? f.v[0].what : "-");
		assert_string_equal(f.v[0].what, drifts[i].what);
	}
}

static void test_details(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	ar_autospec struct ar_spec *sp = NULL;
	ar_auto_error ar_error_t err = NULL;
	assert_int_equal(ar_spec_build(p, NULL, &sp, &err), 0);
	ar_autofree char *clean = render(sp, NULL);
	cJSON *root = cJSON_Parse(clean);
	d_mount_rw(root);
	d_env_secret(root);
	ar_autofree char *text = cJSON_Print(root);
	cJSON_Delete(root);
	ar_autofindings struct ar_findings f = {0};
	check(sp, text, &f);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.v[0].what, "secret in environment AWS_SECRET_ACCESS_KEY");
	assert_string_equal(f.v[1].expected, "bind /srv/logs (rbind,ro,nosuid,nodev)");
	assert_string_equal(f.v[1].actual, "bind /srv/logs ()");
	/* the secret is named, its value never printed */
	ar_autobuf struct ar_buf out = {0};
	ar_check_format_text(&out, &f, "bundle b", "triage");
	assert_null(strstr(out.data, "s3"));
}

static void test_prepared_netns_and_none(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	ar_autospec struct ar_spec *sp = NULL;
	ar_auto_error ar_error_t err = NULL;
	assert_int_equal(ar_spec_build(p, NULL, &sp, &err), 0);
	/* a prepared netns under /run/agentrun/netns and no hooks: as rendered */
	ar_autofree char *prepared = render(sp, "/run/agentrun/netns/n1");
	ar_autofindings struct ar_findings f = {0};
	check(sp, prepared, &f);
	assert_int_equal(f.n, 0);

	/* network none: a proxy variable is drift */
	ar_autopolicy struct ar_policy *off =
	    ar_test_policy("{\"name\": \"off\", \"network\": \"none\"}");
	ar_autospec struct ar_spec *osp = NULL;
	assert_int_equal(ar_spec_build(off, NULL, &osp, &err), 0);
	ar_autofree char *clean = render(osp, NULL);
	cJSON *root = cJSON_Parse(clean);
	cJSON_AddItemToArray(at(root, "process.env"), cJSON_CreateString("https_proxy=http://x:1"));
	ar_autofree char *text = cJSON_Print(root);
	cJSON_Delete(root);
	ar_autofindings struct ar_findings g = {0};
	check(osp, text, &g);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.v[0].what, "proxy variable https_proxy");
	assert_string_equal(g.v[0].expected, "unset");
}

static void test_errors(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	ar_autospec struct ar_spec *sp = NULL;
	ar_auto_error ar_error_t e0 = NULL;
	assert_int_equal(ar_spec_build(p, NULL, &sp, &e0), 0);
	struct ar_check_bundle_opts o = {.origin = "b/config.json", .seccomp_json = profile};
	static const struct {
		const char *json, *msg;
	} cases[] = {
	    {"{", "b/config.json: not valid JSON"},
	    {"[]", "b/config.json: not an OCI config (no `process` object)"},
	    {"{\"process\": 1}", "b/config.json: not an OCI config (no `process` object)"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		ar_auto_error ar_error_t err = NULL;
		ar_autofindings struct ar_findings f = {0};
		assert_int_equal(
		    ar_check_bundle(sp, cases[i].json, strlen(cases[i].json), &o, &f, &err), -1);
		assert_string_equal(err->msg, cases[i].msg);
	}
	/* cJSON would cut a path at a NUL: "/logs\u0000/../etc" must not read as "/logs" */
	static const char nul[] = "{\"process\": {\"cwd\": \"/\0\"}}";
	static const char esc[] = "{\"process\": {},\n\"mounts\": [{\"destination\": "
				  "\"/logs\\u0000/../etc\"}]}";
	ar_auto_error ar_error_t e1 = NULL;
	ar_autofindings struct ar_findings f1 = {0};
	assert_int_equal(ar_check_bundle(sp, nul, sizeof(nul) - 1, &o, &f1, &e1), -1);
	assert_string_equal(e1->msg,
			    "b/config.json: invalid JSON at line 1, column 23: a NUL byte");
	ar_error_release(&e1);
	assert_int_equal(ar_check_bundle(sp, esc, sizeof(esc) - 1, &o, &f1, &e1), -1);
	assert_string_equal(e1->msg, "b/config.json: invalid JSON at line 2, column 34: \\u0000 in "
				     "a string is not supported");
	assert_int_equal(f1.n, 0);
	/* a hostile bundle: wrong types everywhere is drift, not a crash */
	const char *odd = "{\"process\": {\"user\": 5, \"env\": [1, \"X\"], \"capabilities\": "
			  "{\"bounding\": [\"CAP_X\"]}}, \"mounts\": {\"a\": 1}, \"linux\": "
			  "{\"namespaces\": [1, {\"type\": 2}], \"maskedPaths\": \"x\"}, "
			  "\"hooks\": {\"poststop\": [1]}}";
	ar_auto_error ar_error_t err = NULL;
	ar_autofindings struct ar_findings f = {0};
	assert_int_equal(ar_check_bundle(sp, odd, strlen(odd), &o, &f, &err), 0);
	assert_true(f.n > 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_each_drift),
	    cmocka_unit_test(test_details),
	    cmocka_unit_test(test_prepared_netns_and_none),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for the OCI config (render --format oci) read from the agent spec. Policies are built
 * with ar_policy_parse from JSON strings; JSON outputs are read back with cJSON. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>

#include "../spec_fixture.h"

#include "agentrun/render.h"

static const char triage_json[] = AR_TEST_TRIAGE_JSON("");

static const char simple_profile[] =
    "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 1,"
    " \"architectures\": [\"SCMP_ARCH_X86_64\"],"
    " \"syscalls\": [{\"names\": [\"read\", \"write\"], \"action\": \"SCMP_ACT_ALLOW\"},"
    " {\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1,"
    " \"args\": [{\"index\": 1, \"value\": 21522, \"valueTwo\": 4294967295,"
    " \"op\": \"SCMP_CMP_MASKED_EQ\"}]}]}";

static cJSON *render_oci_with(const struct ar_policy *p, const char *seccomp,
			      const struct ar_render_options *opts)
{
	struct ar_render_options o = *opts;
	o.cmd = ar_test_triage_cmd;
	o.n_cmd = AR_ARRAY_SIZE(ar_test_triage_cmd);
	ar_autobuf struct ar_buf out = {0};
	ar_auto_error ar_error_t err = NULL;
	ar_autospec struct ar_spec *sp = NULL;
	if (ar_spec_build(p, NULL, &sp, &err) < 0 ||
	    ar_render_oci(sp, &o, seccomp, "profile.json", &out, &err) < 0)
		fail_msg("oci: %s", err->msg);
	cJSON *root = cJSON_Parse(out.data);
	assert_non_null(root);
	return root;
}

static cJSON *render_oci(const struct ar_policy *p, const char *seccomp)
{
	static const struct ar_render_options none = {0};
	return render_oci_with(p, seccomp, &none);
}

static const cJSON *find_mount(const cJSON *root, const char *dst)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(root, "mounts"))
	{
		if (strcmp(cJSON_GetObjectItem(m, "destination")->valuestring, dst) == 0)
			return m;
	}
	fail_msg("no mount at %s", dst);
	return NULL;
}

static char *options_of(const cJSON *m)
{
	ar_autobuf struct ar_buf b = {0};
	const cJSON *o;
	cJSON_ArrayForEach(o, cJSON_GetObjectItem(m, "options"))
	{
		if (b.len > 0)
			ar_buf_putc(&b, ',');
		ar_buf_puts(&b, o->valuestring);
	}
	return ar_buf_steal(&b);
}

static int64_t num(const cJSON *obj, const char *a, const char *b)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, a), b);
	assert_true(cJSON_IsNumber(v));
	return (int64_t)v->valuedouble;
}

static void test_oci_process(const cJSON *root)
{
	const cJSON *proc = cJSON_GetObjectItem(root, "process");
	const cJSON *args = cJSON_GetObjectItem(proc, "args");
	assert_int_equal(cJSON_GetArraySize(args), 3);
	assert_string_equal(cJSON_GetArrayItem(args, 2)->valuestring, "echo 'hi' $HOME");
	assert_int_equal(num(proc, "user", "uid"), 1000);
	assert_int_equal(num(proc, "user", "gid"), 1000);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(proc, "noNewPrivileges")));
	static const char *const env[] = {
	    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp",
	    "AB_FIRST=x y", "ANTHROPIC_BASE_URL=https://api.anthropic.com",
	    "KUBECONFIG=/home/agent/.kube/config", "HTTP_PROXY=http://10.254.0.1:3128",
	    "HTTPS_PROXY=http://10.254.0.1:3128", "http_proxy=http://10.254.0.1:3128",
	    "https_proxy=http://10.254.0.1:3128", "NO_PROXY=localhost,127.0.0.1",
	    "no_proxy=localhost,127.0.0.1",
	    /* network proxy and a kubeconfig: its token is a secret, the CA bundle's file
	     * is the bundle's */
	    "SSL_CERT_FILE=/etc/agentrun/ca-bundle.pem",
	    "REQUESTS_CA_BUNDLE=/etc/agentrun/ca-bundle.pem",
	    "CURL_CA_BUNDLE=/etc/agentrun/ca-bundle.pem",
	    "NODE_EXTRA_CA_CERTS=/etc/agentrun/ca-bundle.pem",
	    "GIT_SSL_CAINFO=/etc/agentrun/ca-bundle.pem"};
	/* the spec's environment, as a set (its order is the builder's) */
	const cJSON *e = cJSON_GetObjectItem(proc, "env"), *v;
	assert_int_equal(cJSON_GetArraySize(e), AR_ARRAY_SIZE(env));
	for (size_t i = 0; i < AR_ARRAY_SIZE(env); i++) {
		bool found = false;
		cJSON_ArrayForEach(v, e) found = found || strcmp(v->valuestring, env[i]) == 0;
		if (!found)
			fail_msg("env %s missing", env[i]);
	}
	const cJSON *caps = cJSON_GetObjectItem(proc, "capabilities"), *set;
	assert_int_equal(cJSON_GetArraySize(caps), 5);
	cJSON_ArrayForEach(set, caps) assert_int_equal(cJSON_GetArraySize(set), 0);
	const cJSON *rl = cJSON_GetArrayItem(cJSON_GetObjectItem(proc, "rlimits"), 0);
	assert_string_equal(cJSON_GetObjectItem(rl, "type")->valuestring, "RLIMIT_NOFILE");
}

static void test_oci(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	cJSON *root = render_oci(p, simple_profile);

	assert_string_equal(cJSON_GetObjectItem(root, "ociVersion")->valuestring, "1.0.2");
	test_oci_process(root);
	const cJSON *r = cJSON_GetObjectItem(root, "root");
	assert_string_equal(cJSON_GetObjectItem(r, "path")->valuestring, "rootfs");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "readonly")));
	assert_string_equal(cJSON_GetObjectItem(root, "hostname")->valuestring, "triage");

	struct {
		const char *dst, *type, *src, *opts;
	} mounts[] = {
	    {"/proc", "proc", "proc", "nosuid,noexec,nodev"},
	    {"/sys", "sysfs", "sysfs", "nosuid,noexec,nodev,ro"},
	    {"/dev/mqueue", "mqueue", "mqueue", "nosuid,noexec,nodev"},
	    {"/tmp", "tmpfs", "tmpfs", "nosuid,nodev,mode=1777"},
	    /* the bundle's own kubeconfig, which the hook writes: never the policy's file */
	    {"/home/agent/.kube/config", "bind", "agentrun-kubeconfig", "rbind,ro,nosuid,nodev"},
	    {"/etc/agentrun/ca-bundle.pem", "bind", "agentrun-ca-bundle.pem",
	     "rbind,ro,nosuid,nodev"},
	    {"/logs", "bind", "/srv/logs", "rbind,ro,nosuid,nodev"},
	    {"/out", "bind", "/srv/out", "rbind,rw,nosuid,nodev"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(mounts); i++) {
		const cJSON *m = find_mount(root, mounts[i].dst);
		assert_string_equal(cJSON_GetObjectItem(m, "type")->valuestring, mounts[i].type);
		assert_string_equal(cJSON_GetObjectItem(m, "source")->valuestring, mounts[i].src);
		ar_autofree char *o = options_of(m);
		assert_string_equal(o, mounts[i].opts);
	}

	const cJSON *lin = cJSON_GetObjectItem(root, "linux");
	const cJSON *res = cJSON_GetObjectItem(lin, "resources");
	assert_int_equal(num(res, "memory", "limit"), 268435456);
	assert_int_equal(num(res, "memory", "swap"), 268435456);
	assert_int_equal(num(res, "pids", "limit"), 64);
	assert_int_equal(num(res, "cpu", "quota"), 100000);
	assert_int_equal(num(res, "cpu", "period"), 100000);
	static const char *const ns[] = {"pid", "network", "ipc", "uts", "mount", "cgroup"};
	const cJSON *nss = cJSON_GetObjectItem(lin, "namespaces");
	assert_int_equal(cJSON_GetArraySize(nss), AR_ARRAY_SIZE(ns));
	for (size_t i = 0; i < AR_ARRAY_SIZE(ns); i++)
		assert_string_equal(
		    cJSON_GetObjectItem(cJSON_GetArrayItem(nss, (int)i), "type")->valuestring,
		    ns[i]);
	/* the spec's one table: sysrq-trigger and the kernel's security and debug
	 * filesystems masked, as run masks them */
	ar_autobuf struct ar_buf masked = {0}, ro = {0};
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(lin, "maskedPaths"))
	    ar_buf_printf(&masked, "%s ", e->valuestring);
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(lin, "readonlyPaths"))
	    ar_buf_printf(&ro, "%s ", e->valuestring);
	assert_string_equal(masked.data,
			    "/proc/acpi /proc/asound /proc/kcore /proc/keys /proc/latency_stats "
			    "/proc/timer_list /proc/timer_stats /proc/sched_debug /proc/scsi "
			    "/proc/sysrq-trigger /sys/firmware /sys/devices/virtual/powercap "
			    "/sys/kernel/security /sys/kernel/debug ");
	assert_string_equal(ro.data, "/proc/bus /proc/fs /proc/irq /proc/sys ");
	/* no hooks and no annotation without the paths the CLI resolves */
	assert_null(cJSON_GetObjectItem(root, "hooks"));
	assert_null(cJSON_GetObjectItem(root, "annotations"));

	/* the profile is carried unchanged, numbers exact */
	const cJSON *sc = cJSON_GetObjectItem(lin, "seccomp");
	cJSON *want = cJSON_Parse(simple_profile);
	assert_true(cJSON_Compare(sc, want, true));
	cJSON_Delete(want);
	cJSON_Delete(root);
}

static void test_oci_no_proxy_no_seccomp(void **state)
{
	ar_autopolicy struct ar_policy *p =
	    ar_test_policy("{\"name\": \"off\", \"network\": \"none\", \"user\": \"7:8\","
			   " \"rootfs\": \"/srv/rootfs\", \"limits\": {\"cpus\": \"0.5\"}}");
	cJSON *root = render_oci(p, NULL);
	const cJSON *env = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "process"), "env");
	assert_int_equal(cJSON_GetArraySize(env), 2);
	assert_string_equal(cJSON_GetArrayItem(env, 0)->valuestring,
			    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	assert_string_equal(cJSON_GetArrayItem(env, 1)->valuestring, "HOME=/tmp");
	assert_int_equal(num(cJSON_GetObjectItem(root, "process"), "user", "gid"), 8);
	assert_string_equal(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(root, "root"), "path")->valuestring,
	    "/srv/rootfs");
	const cJSON *lin = cJSON_GetObjectItem(root, "linux");
	assert_null(cJSON_GetObjectItem(lin, "seccomp"));
	assert_int_equal(num(cJSON_GetObjectItem(lin, "resources"), "cpu", "quota"), 50000);
	cJSON_Delete(root);
}

static void test_oci_docker_profile(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	cJSON *root =
	    render_oci(p, "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"archMap\": [{\"architecture\":"
			  " \"SCMP_ARCH_X86_64\", \"subArchitectures\": [\"SCMP_ARCH_X86\"]}],"
			  " \"syscalls\": [{\"name\": \"read\", \"action\": \"SCMP_ACT_ALLOW\","
			  " \"includes\": {}, \"excludes\": {}, \"comment\": \"c\"}]}");
	const cJSON *sc = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "linux"), "seccomp");
	cJSON *want = cJSON_Parse("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"architectures\":"
				  " [\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\"], \"syscalls\":"
				  " [{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\"}]}");
	assert_true(cJSON_Compare(sc, want, true));
	cJSON_Delete(want);
	cJSON_Delete(root);
}

static void expect_oci_error(const struct ar_policy *p, size_t n_cmd, const char *seccomp,
			     const char *msg)
{
	struct ar_render_options o = {.cmd = ar_test_triage_cmd, .n_cmd = n_cmd};
	ar_autobuf struct ar_buf out = {0};
	ar_auto_error ar_error_t err = NULL;
	ar_autospec struct ar_spec *sp = NULL;
	assert_int_equal(ar_spec_build(p, NULL, &sp, &err), 0);
	assert_int_equal(ar_render_oci(sp, &o, seccomp, "profile.json", &out, &err), -1);
	assert_string_equal(err->msg, msg);
	assert_int_equal(out.len, 0);
}

static void test_oci_errors(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	expect_oci_error(p, 0, NULL,
			 "--format oci needs the command after `--`: an OCI bundle has no image "
			 "default command");
	expect_oci_error(p, 1,
			 "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": "
			 "[\"x\"], \"action\": \"SCMP_ACT_ALLOW\", \"includes\": {\"caps\": "
			 "[\"CAP_SYS_ADMIN\"]}}]}",
			 "profile.json: syscalls[0].includes: docker-only condition, no "
			 "runtime-spec equivalent; write the profile in runtime-spec form");
	expect_oci_error(p, 1, "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"bogus\": 1}",
			 "profile.json: unknown key `bogus`");
	expect_oci_error(p, 1, "[1]", "profile.json: not a JSON object");
	expect_oci_error(p, 1, "{\"syscalls\": []}", "profile.json: defaultAction: missing");
	expect_oci_error(p, 1,
			 "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": "
			 "[\"x\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 0, "
			 "\"value\": 18446744073709551615, \"op\": \"SCMP_CMP_EQ\"}]}]}",
			 "profile.json: syscalls[0]: number value cannot be carried exactly");
}

static void test_oci_default_profile_file(void **state)
{
	/* the repository's own default profile must convert (it is what the CLI embeds) */
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	ar_autofree char *json = NULL;
	ar_auto_error ar_error_t err = NULL;
	ar_autofree char *path = ar_xasprintf("%s/seccomp/default.json", AR_SOURCE_DIR);
	assert_int_equal(ar_read_file(path, 0, &json, NULL, &err), 0);
	cJSON *root = render_oci(p, json);
	const cJSON *sc = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "linux"), "seccomp");
	cJSON *want = cJSON_Parse(json);
	const cJSON *defact = cJSON_GetObjectItem(want, "defaultAction");
	assert_string_equal(cJSON_GetObjectItem(sc, "defaultAction")->valuestring,
			    defact->valuestring);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(sc, "syscalls")),
			 cJSON_GetArraySize(cJSON_GetObjectItem(want, "syscalls")));
	cJSON_Delete(want);
	cJSON_Delete(root);
}

static void test_oci_hooks_rootfs_netns(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	struct ar_render_options o = {.hook_path = "/usr/bin/agentrun",
				      .policy_path = "/etc/agentrun/triage.json",
				      .rootfs = "/srv/root"};
	cJSON *root = render_oci_with(p, NULL, &o);
	const cJSON *hooks = cJSON_GetObjectItem(root, "hooks");
	static const char *const stages[][2] = {{"createRuntime", "create-runtime"},
						{"poststop", "poststop"}};
	assert_int_equal(cJSON_GetArraySize(hooks), 2);
	for (size_t i = 0; i < AR_ARRAY_SIZE(stages); i++) {
		const cJSON *h = cJSON_GetArrayItem(cJSON_GetObjectItem(hooks, stages[i][0]), 0);
		assert_string_equal(cJSON_GetObjectItem(h, "path")->valuestring,
				    "/usr/bin/agentrun");
		const cJSON *args = cJSON_GetObjectItem(h, "args");
		static const char *want[] = {"agentrun", "hook", NULL, "--policy",
					     "/etc/agentrun/triage.json"};
		want[2] = stages[i][1];
		assert_int_equal(cJSON_GetArraySize(args), 5);
		for (int j = 0; j < 5; j++)
			assert_string_equal(cJSON_GetArrayItem(args, j)->valuestring, want[j]);
		assert_int_equal(cJSON_GetObjectItem(h, "timeout")->valueint, 10);
	}
	assert_string_equal(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(root, "annotations"), AR_OCI_POLICY_ANNOTATION)
		->valuestring,
	    "/etc/agentrun/triage.json");
	assert_string_equal(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(root, "root"), "path")->valuestring,
	    "/srv/root");
	cJSON_Delete(root);

	/* a prepared netns: joined by path, and no hooks (the netns is `net up`'s) */
	o.netns = "/run/agentrun/netns/n1";
	root = render_oci_with(p, NULL, &o);
	assert_null(cJSON_GetObjectItem(root, "hooks"));
	const cJSON *ns;
	int with_path = 0;
	cJSON_ArrayForEach(ns,
			   cJSON_GetObjectItem(cJSON_GetObjectItem(root, "linux"), "namespaces"))
	{
		const cJSON *path = cJSON_GetObjectItem(ns, "path");
		if (path == NULL)
			continue;
		with_path++;
		assert_string_equal(cJSON_GetObjectItem(ns, "type")->valuestring, "network");
		assert_string_equal(path->valuestring, "/run/agentrun/netns/n1");
	}
	assert_int_equal(with_path, 1);
	cJSON_Delete(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_oci),
	    cmocka_unit_test(test_oci_no_proxy_no_seccomp),
	    cmocka_unit_test(test_oci_docker_profile),
	    cmocka_unit_test(test_oci_errors),
	    cmocka_unit_test(test_oci_default_profile_file),
	    cmocka_unit_test(test_oci_hooks_rootfs_netns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

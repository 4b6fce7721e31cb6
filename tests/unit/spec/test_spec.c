/* Unit tests for the agent spec: what it derives from a policy, and that run's mount
 * plan masks exactly the spec's table. */
#define _GNU_SOURCE
#include "../spec_fixture.h"

static void test_triage(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(AR_TEST_SPEC_JSON);
	ar_autospec struct ar_spec *s = ar_test_spec(p, NULL);
	assert_int_equal(s->uid, 1000);
	assert_int_equal(s->gid, 1001);
	assert_true(s->readonly_root && s->no_new_privs && s->no_capabilities);
	assert_null(s->rootfs);
	assert_string_equal(s->seccomp, "default");

	static const char *const env[] = {
	    "PATH=" AR_SPEC_PATH,
	    "HOME=/tmp",
	    "A=1",
	    "B=2",
	    "KUBECONFIG=/home/agent/.kube/config",
	    "HTTP_PROXY=http://10.254.0.1:8080",
	    "HTTPS_PROXY=http://10.254.0.1:8080",
	    "http_proxy=http://10.254.0.1:8080",
	    "https_proxy=http://10.254.0.1:8080",
	    "NO_PROXY=localhost,127.0.0.1",
	    "no_proxy=localhost,127.0.0.1",
	    /* network proxy and a kubeconfig: its token is a secret, so the CA variables */
	    "SSL_CERT_FILE=" AR_SPEC_CA_BUNDLE,
	    "REQUESTS_CA_BUNDLE=" AR_SPEC_CA_BUNDLE,
	    "CURL_CA_BUNDLE=" AR_SPEC_CA_BUNDLE,
	    "NODE_EXTRA_CA_CERTS=" AR_SPEC_CA_BUNDLE,
	    "GIT_SSL_CAINFO=" AR_SPEC_CA_BUNDLE,
	};
	/* the same set; the order of the proxy block is the builder's (ar_spec_env) */
	assert_int_equal(ar_strv_len(s->env), AR_ARRAY_SIZE(env));
	for (size_t i = 0; i < AR_ARRAY_SIZE(env); i++) {
		const char *eq = strchr(env[i], '=');
		ar_autofree char *key = ar_xstrndup(env[i], (size_t)(eq - env[i]));
		assert_non_null(ar_spec_getenv(s, key));
		assert_string_equal(ar_spec_getenv(s, key), eq + 1);
	}
	assert_string_equal(s->env[0], env[0]);
	assert_string_equal(s->env[1], env[1]);
	assert_string_equal(ar_spec_getenv(s, "B"), "2");
	assert_null(ar_spec_getenv(s, "HTTP"));

	struct {
		enum ar_spec_mount_kind kind;
		const char *source, *target, *field;
		bool ro;
	} mounts[] = {
	    {AR_SPEC_MNT_TMPFS, NULL, "/tmp", "p.json: tmpfs[0]", false},
	    {AR_SPEC_MNT_TMPFS, NULL, "/work", "p.json: tmpfs[1]", false},
	    {AR_SPEC_MNT_BIND, "/srv/logs", "/logs", "p.json: mounts[0]", true},
	    {AR_SPEC_MNT_BIND, "/srv/out", "/out", "p.json: mounts[1]", false},
	    /* an OCI bundle's own file, which the hook writes (a placeholder token) */
	    {AR_SPEC_MNT_BIND, AR_SPEC_KUBECONFIG_FILE, "/home/agent/.kube/config",
	     "p.json: kubeconfig", true},
	    {AR_SPEC_MNT_BIND, AR_SPEC_CA_BUNDLE_FILE, AR_SPEC_CA_BUNDLE,
	     "p.json: secrets (the CA bundle)", true},
	};
	assert_int_equal(s->n_mounts, AR_ARRAY_SIZE(mounts));
	for (size_t i = 0; i < AR_ARRAY_SIZE(mounts); i++) {
		assert_int_equal(s->mounts[i].kind, mounts[i].kind);
		if (mounts[i].source)
			assert_string_equal(s->mounts[i].source, mounts[i].source);
		else
			assert_null(s->mounts[i].source);
		assert_string_equal(s->mounts[i].target, mounts[i].target);
		assert_string_equal(s->mounts[i].field, mounts[i].field);
		assert_int_equal(s->mounts[i].readonly, mounts[i].ro);
	}
	assert_int_equal(s->limits.pids, 32);
	assert_int_equal(s->limits.memory, INT64_C(1) << 30);
	assert_int_equal(s->limits.memory_swap, INT64_C(1) << 30);
	assert_int_equal(s->limits.cpu_quota, 50000);
	assert_int_equal(s->limits.cpu_period, 100000);
	assert_int_equal(s->net.mode, AR_NETWORK_PROXY);
	assert_string_equal(s->net.proxy_url, "http://10.254.0.1:8080");
}

static void test_proxy_url_and_none(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(AR_TEST_SPEC_JSON);
	struct ar_spec_opts o = {.proxy_url = "http://10.254.7.1:8080"};
	ar_autospec struct ar_spec *s = ar_test_spec(p, &o);
	assert_string_equal(ar_spec_getenv(s, "https_proxy"), "http://10.254.7.1:8080");

	ar_autopolicy struct ar_policy *off = ar_test_policy(
	    "{\"name\": \"off\", \"network\": \"none\", \"seccomp\": \"unconfined\"}");
	o.term = "xterm";
	ar_autospec struct ar_spec *n = ar_test_spec(off, &o);
	assert_int_equal(n->net.mode, AR_NETWORK_NONE);
	assert_null(n->net.proxy_url);
	assert_null(ar_spec_getenv(n, "HTTP_PROXY"));
	assert_null(ar_spec_getenv(n, "NO_PROXY"));
	/* run's own settings come through the one builder */
	assert_string_equal(ar_spec_getenv(n, "TERM"), "xterm");
	ar_autofree char *owned = NULL;
	const char *text, *origin;
	ar_auto_error ar_error_t err = NULL;
	assert_int_equal(ar_spec_seccomp_text(n, &owned, &text, &origin, &err), 0);
	assert_null(text);
}

static void test_seccomp_text(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(
	    "{\"name\": \"x\", \"network\": \"none\", \"seccomp\": \"/nonexistent/p.json\"}");
	ar_autospec struct ar_spec *s = ar_test_spec(p, NULL);
	ar_autofree char *owned = NULL;
	const char *text, *origin;
	ar_auto_error ar_error_t err = NULL;
	assert_int_equal(ar_spec_seccomp_text(s, &owned, &text, &origin, &err), -1);
	assert_non_null(strstr(err->msg, "p.json: seccomp"));
	assert_non_null(strstr(err->msg, "/nonexistent/p.json"));

	ar_autopolicy struct ar_policy *d =
	    ar_test_policy("{\"name\": \"x\", \"network\": \"none\"}");
	ar_autospec struct ar_spec *ds = ar_test_spec(d, NULL);
	ar_auto_error ar_error_t err2 = NULL;
	ar_autofree char *owned2 = NULL;
	assert_int_equal(ar_spec_seccomp_text(ds, &owned2, &text, &origin, &err2), 0);
	assert_non_null(strstr(text, "defaultAction"));
	assert_string_equal(origin, "seccomp/default.json");
}

/* What only the back end knows comes in the options: run's leased ids and its user
 * namespace, the caller's own places, the proxy's placeholders' CA bundle and kubeconfig. */
static void test_run_opts(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(AR_TEST_SPEC_JSON);
	struct ar_spec_opts o = {
	    .caller_private = (const char *[AR_SPEC_CALLER_PRIVATE_MAX]){"/opt/me", "/tmp", NULL},
	    .ca_bundle = "/run/agentrun/x/ca-bundle.pem",
	    .ca_bundle_target = "/etc/ssl/certs/ca-certificates.crt",
	    .kubeconfig = "/run/agentrun/x/kubeconfig",
	    .ids_set = true,
	    .uid = 61184,
	    .gid = 61184,
	    .idmap = {.userns = true, .outer_uid = 1000, .outer_gid = 1000},
	};
	ar_autospec struct ar_spec *s = ar_test_spec(p, &o);
	assert_int_equal(s->uid, 61184);
	assert_true(s->idmap.userns);
	assert_int_equal(s->idmap.outer_uid, 1000);
	/* the listed credentials and the caller's own place, not a policy tmpfs */
	assert_int_equal(s->n_hidden, ar_spec_n_hidden_paths + 1);
	assert_string_equal(s->hidden[s->n_hidden - 1], "/opt/me");
	/* two tmpfs, two mounts, the kubeconfig (the sandbox's own: no copy), the CA bundle */
	assert_int_equal(s->n_mounts, 6);
	assert_string_equal(s->mounts[4].source, "/run/agentrun/x/kubeconfig");
	assert_false(s->mounts[4].copy);
	assert_string_equal(s->mounts[5].source, "/run/agentrun/x/ca-bundle.pem");
	assert_string_equal(s->mounts[5].target, "/etc/ssl/certs/ca-certificates.crt");
	assert_non_null(strstr(s->hosts, "127.0.1.1\ttriage\n"));

	/* without options (an OCI bundle): the policy's ids, no user namespace, the bundle's
	 * own kubeconfig and CA bundle (network proxy: the token is a secret) */
	ar_autospec struct ar_spec *r = ar_test_spec(p, NULL);
	assert_int_equal(r->uid, 1000);
	assert_false(r->idmap.userns);
	assert_int_equal(r->n_mounts, 6);
	assert_string_equal(r->mounts[4].source, AR_SPEC_KUBECONFIG_FILE);
	assert_false(r->mounts[4].copy);
	assert_string_equal(r->mounts[5].source, AR_SPEC_CA_BUNDLE_FILE);
	assert_int_equal(r->n_hidden, ar_spec_n_hidden_paths);
}

/* A container runtime's part of the environment is run's without PATH, HOME and TERM: the
 * same entries, in the same order, with the same values. */
static void test_container_env(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(AR_TEST_SPEC_JSON);
	ar_autospec struct ar_spec *s = ar_test_spec(p, &(struct ar_spec_opts){.term = "xterm"});
	size_t n = ar_strv_len(s->container_env);
	assert_int_equal(ar_strv_len(s->env), n + 3);
	assert_string_equal(s->env[0], "PATH=" AR_SPEC_PATH);
	assert_string_equal(s->env[1], "HOME=/tmp");
	assert_string_equal(s->env[2], "TERM=xterm");
	for (size_t i = 0; i < n; i++)
		assert_string_equal(s->env[i + 3], s->container_env[i]);
	assert_string_equal(s->container_env[0], "HTTP_PROXY=http://10.254.0.1:8080");
	for (size_t i = 0; i < n; i++)
		assert_true(strncmp(s->container_env[i], "PATH=", 5) != 0);
	/* the container spec: the proxy by its container name */
	ar_autospec struct ar_spec *c = NULL;
	ar_auto_error ar_error_t err = NULL;
	assert_int_equal(ar_spec_build_container(p, &c, &err), 0);
	assert_string_equal(c->container_env[0], "HTTP_PROXY=http://triage-proxy:8080");
	assert_string_equal(c->hostname, "triage");
}

static void test_tables(void **state)
{
	/* the three masks that used to differ between run and render */
	static const char *const must_mask[] = {"/proc/sysrq-trigger", "/sys/kernel/security",
						"/sys/kernel/debug"};
	for (size_t j = 0; j < AR_ARRAY_SIZE(must_mask); j++) {
		bool found = false;
		for (size_t i = 0; i < ar_spec_n_system_paths; i++)
			if (strcmp(ar_spec_system_paths[i].path, must_mask[j]) == 0) {
				assert_int_equal(ar_spec_system_paths[i].kind, AR_SPEC_MASKED);
				found = true;
			}
		assert_true(found);
	}
	assert_int_equal(ar_spec_n_namespaces, 6);
	assert_string_equal(ar_spec_namespaces[1].oci, "network");
	assert_string_equal(ar_spec_namespaces[1].proc, "net");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_triage),	  cmocka_unit_test(test_proxy_url_and_none),
	    cmocka_unit_test(test_seccomp_text),  cmocka_unit_test(test_run_opts),
	    cmocka_unit_test(test_container_env), cmocka_unit_test(test_tables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

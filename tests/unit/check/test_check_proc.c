/* check of a process: the pure /proc parsers on captured text (status, mountinfo,
 * cgroup membership and limit files, net/dev, routes, environ) and the process
 * expectations on facts built from them, with exact finding lists. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/check.h"
#include "agentrun/spec.h"
#include "agentrun/policy.h"
#include "agentrun/util.h"

struct row {
	const char *what, *expected, *actual, *fix; /* fix NULL: not compared */
};

/* check against p's spec, as `check --pid` does */
static void check_proc(const struct ar_policy *p, const struct ar_proc_facts *f,
		       struct ar_findings *out)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autospec struct ar_spec *sp = NULL;
	if (ar_spec_build(p, NULL, &sp, &err) < 0)
		fail_msg("spec: %s", err->msg);
	ar_check_proc(sp, f, out);
}

static struct ar_policy *load_policy(const char *name)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_policy *p = NULL;
	ar_autofree char *path = ar_xasprintf("%s/%s", AR_TEST_DATA, name);
	if (ar_policy_load(path, &p, &err) < 0)
		fail_msg("%s: %s", path, err->msg);
	return p;
}

static char *load_text(const char *name)
{
	ar_auto_error ar_error_t err = NULL;
	char *data = NULL;
	ar_autofree char *path = ar_xasprintf("%s/%s", AR_TEST_DATA, name);
	if (ar_read_file(path, 0, &data, NULL, &err) < 0)
		fail_msg("%s: %s", path, err->msg);
	return data;
}

static void expect_rows(const struct ar_findings *f, const struct row *rows, size_t n)
{
	for (size_t i = 0; i < f->n && i < n; i++) {
		assert_string_equal(f->v[i].what, rows[i].what);
		assert_string_equal(f->v[i].expected, rows[i].expected);
		assert_string_equal(f->v[i].actual, rows[i].actual);
		if (rows[i].fix)
			assert_string_equal(f->v[i].fix, rows[i].fix);
	}
	if (f->n != n) {
		for (size_t i = 0; i < f->n; i++)
			print_message("got: %s expected %s actual %s\n", f->v[i].what,
				      f->v[i].expected, f->v[i].actual);
		fail_msg("%zu finding(s), expected %zu", f->n, n);
	}
}

#define ROWS(...)      ((const struct row[]){__VA_ARGS__})
#define NROWS(...)     (sizeof((const struct row[]){__VA_ARGS__}) / sizeof(struct row))
#define EXPECT(f, ...) expect_rows(f, ROWS(__VA_ARGS__), NROWS(__VA_ARGS__))

static char **strv(const char *const *v)
{
	size_t n = 0;
	while (v[n])
		n++;
	char **sv = ar_xcalloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		sv[i] = ar_xstrdup(v[i]);
	return sv;
}

/* Facts as the /proc reader would build them, from captured files. */
static struct ar_proc_facts *facts_from(const char *status, const char *mountinfo)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autofree char *st = load_text(status);
	ar_autofree char *mi = load_text(mountinfo);
	struct ar_proc_facts *f = ar_xcalloc(1, sizeof(*f));
	f->pid = 42;
	if (ar_check_parse_status(st, &f->status, &err) < 0 ||
	    ar_check_parse_mountinfo(mi, &f->mounts, &f->n_mounts, &err) < 0)
		fail_msg("%s", err->msg);
	f->visible_sensitive = strv((const char *const[]){NULL});
	f->env = strv((const char *const[]){"PATH=/usr/bin:/bin", "HOME=/home/agent", NULL});
	f->netdevs = strv((const char *const[]){"lo", NULL});
	return f;
}

/* The unshare + setpriv process of tests/integration/check_pid.sh, captured. */
static struct ar_proc_facts *sandbox_facts(void)
{
	struct ar_proc_facts *f = facts_from("status-sandbox.txt", "mountinfo-sandbox.txt");
	f->pids_max = 64;
	f->memory_max = 256 << 20;
	f->cpus_milli = 1000;
	return f;
}

static void test_sandbox(void **state)
{
	(void)state;
	ar_autopolicy struct ar_policy *p = load_policy("policy-sandbox.json");
	ar_autoproc_facts struct ar_proc_facts *f = sandbox_facts();
	ar_autofindings struct ar_findings out = {0};
	check_proc(p, f, &out);
	/* util-linux has no seccomp switch: the one thing that sandbox lacks */
	EXPECT(&out, {"seccomp", "filter", "disabled",
		      "policy \"seccomp\": \"default\" (agentrun run loads it)"});
}

static void test_sandbox_clean_with_seccomp(void **state)
{
	(void)state;
	ar_autopolicy struct ar_policy *p = load_policy("policy-sandbox.json");
	ar_autoproc_facts struct ar_proc_facts *f = sandbox_facts();
	ar_autofindings struct ar_findings out = {0};
	f->status.seccomp = 2;
	check_proc(p, f, &out);
	expect_rows(&out, NULL, 0);
	/* a policy that asks for no seccomp is satisfied without it */
	f->status.seccomp = 0;
	free(p->seccomp);
	p->seccomp = ar_xstrdup("unconfined");
	check_proc(p, f, &out);
	expect_rows(&out, NULL, 0);
}

static void test_host_shell(void **state)
{
	(void)state;
	ar_autopolicy struct ar_policy *p = load_policy("policy-agent.json");
	ar_autoproc_facts struct ar_proc_facts *f =
	    facts_from("status-host.txt", "mountinfo-host.txt");
	ar_autofindings struct ar_findings out = {0};
	ar_autofree char *dev = load_text("netdev-host.txt");
	ar_autofree char *r4 = load_text("route-host.txt");
	ar_autofree char *r6 = load_text("ipv6-route-host.txt");
	for (int k = 0; k < AR_SPEC_N_NAMESPACES; k++)
		f->ns_shared[k] = 1;
	f->pids_max = f->memory_max = f->cpus_milli = AR_LIMIT_UNLIMITED;
	ar_strv_free(f->netdevs);
	f->netdevs = ar_check_parse_netdev(dev);
	f->default_route = ar_check_parse_default_route(r4, r6);
	ar_strv_free(f->env);
	f->env = strv((const char *const[]){"HTTPS_PROXY=http://proxy.corp:8080",
					    "GITHUB_TOKEN=ghp_secretvalue", "TERM=xterm", NULL});
	ar_strv_free(f->visible_sensitive);
	f->visible_sensitive = strv(
	    (const char *const[]){"/var/run/docker.sock", "/root/.ssh", "/home/me/.kube", NULL});
	check_proc(p, f, &out);
	EXPECT(
	    &out, {"user", "1000", "0", "policy \"user\": \"1000\" (agentrun run switches to it)"},
	    {"group", "1000", "0", NULL},
	    {"capabilities CapPrm", "0000000000000000", "000001fffeffffff",
	     "agentrun run drops every capability from all five sets"},
	    {"capabilities CapEff", "0000000000000000", "000001fffeffffff", NULL},
	    {"capabilities CapBnd", "0000000000000000", "000001fffeffffff", NULL},
	    {"no_new_privs", "1", "0", "agentrun run sets no_new_privs"},
	    {"seccomp", "filter", "disabled", NULL},
	    {"read-only rootfs", "true", "false",
	     "agentrun run mounts the root read-only (policy \"rootfs\" or the host view)"},
	    {"tmpfs /tmp", "tmpfs:rw", "absent", "policy \"tmpfs\" lists /tmp"},
	    {"kubeconfig mount", "ro", "absent",
	     "policy \"kubeconfig\": \"/home/me/.kube/agent-config\" (mounted read-only at "
	     "/home/agent/.kube/config)"},
	    {"mount /logs", "ro", "absent", "policy \"mounts\": /srv/logs -> /logs read-only"},
	    {"sensitive path /var/run/docker.sock", "hidden", "visible",
	     "agentrun run hides it (read-only host view or policy \"rootfs\")"},
	    {"sensitive path /root/.ssh", "hidden", "visible", NULL},
	    {"sensitive path /home/me/.kube", "hidden", "visible", NULL},
	    {"namespace pid", "private", "host", "agentrun run (a new pid namespace)"},
	    /* in the spec's order (ar_spec_namespaces) */
	    {"namespace net", "private", "host", NULL}, {"namespace ipc", "private", "host", NULL},
	    {"namespace uts", "private", "host", NULL}, {"namespace mnt", "private", "host", NULL},
	    {"namespace cgroup", "private", "host", NULL},
	    {"pids limit", "64", "unlimited", "policy \"limits\": {\"pids\": 64}"},
	    {"memory limit", "268435456", "unlimited", "policy \"limits\": {\"memory\": \"256m\"}"},
	    {"cpu limit", "1", "unlimited", "policy \"limits\": {\"cpus\": \"1\"}"},
	    {"default route", "absent", "via eth0",
	     "agentrun run (the sandbox netns has no default route)"},
	    {"proxy variable HTTP_PROXY", "http://(first address of a /30):3128", "unset",
	     "policy \"network\": \"proxy\" (agentrun run sets it)"},
	    {"proxy variable HTTPS_PROXY", "http://(first address of a /30):3128",
	     "http://proxy.corp:8080", NULL},
	    {"proxy variable http_proxy", "http://(first address of a /30):3128", "unset", NULL},
	    {"proxy variable https_proxy", "http://(first address of a /30):3128", "unset", NULL},
	    {"env ANTHROPIC_BASE_URL", "https://api.anthropic.com", "unset",
	     "policy \"env\": {\"ANTHROPIC_BASE_URL\": ...}"},
	    {"env KUBECONFIG", "/home/agent/.kube/config", "unset",
	     "policy \"kubeconfig\" (agentrun run sets KUBECONFIG)"},
	    {"secret in environment GITHUB_TOKEN", "absent", "set",
	     "unset GITHUB_TOKEN; mount the secret read-only as a file (policy \"mounts\")"});
	for (size_t i = 0; i < out.n; i++)
		assert_null(strstr(out.v[i].actual, "ghp_secretvalue"));
}

static void test_agentrun_proxy_sandbox(void **state)
{
	(void)state;
	/* a proxied agentrun sandbox: proxy variables in the 10.254.N.1 form, kubeconfig and
	 * logs mounted read-only, eth0 with no default route */
	static const char mounts[] =
	    "46 45 254:0 / / ro,relatime - ext4 /dev/vda rw\n"
	    "47 46 0:41 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw\n"
	    "48 46 254:0 /home/me/.kube/agent-config /home/agent/.kube/config ro,relatime - "
	    "ext4 /dev/vda rw\n"
	    "49 46 254:0 /srv/logs /logs ro,relatime - ext4 /dev/vda rw\n";
	ar_autopolicy struct ar_policy *p = load_policy("policy-agent.json");
	ar_autoproc_facts struct ar_proc_facts *f = sandbox_facts();
	ar_autofindings struct ar_findings out = {0};
	ar_auto_error ar_error_t err = NULL;
	f->status.seccomp = 2;
	ar_mountinfo_free(f->mounts, f->n_mounts);
	assert_int_equal(ar_check_parse_mountinfo(mounts, &f->mounts, &f->n_mounts, &err), 0);
	ar_strv_free(f->env);
	f->env = strv((const char *const[]){
	    "HTTP_PROXY=http://10.254.7.1:3128", "HTTPS_PROXY=http://10.254.7.1:3128",
	    "http_proxy=http://10.254.7.1:3128", "https_proxy=http://10.254.7.1:3128",
	    "ANTHROPIC_BASE_URL=https://api.anthropic.com", "KUBECONFIG=/home/agent/.kube/config",
	    NULL});
	ar_strv_free(f->netdevs);
	f->netdevs = strv((const char *const[]){"lo", "eth0", NULL});
	/* the kubeconfig's own directory is reachable on purpose */
	ar_strv_free(f->visible_sensitive);
	f->visible_sensitive = strv((const char *const[]){"/home/agent/.kube", NULL});
	check_proc(p, f, &out);
	expect_rows(&out, NULL, 0);

	/* each of these breaks exactly one expectation (a password in a URL is also a
	 * secret in the environment) */
	free(f->env[1]);
	f->env[1] = ar_xstrdup("HTTPS_PROXY=http://10.254.7.1:8080");
	free(f->env[2]);
	f->env[2] = ar_xstrdup("http_proxy=http://user:pw@10.254.7.1:3128");
	f->mounts[3].readonly = false;
	f->default_route = ar_xstrdup("eth0");
	check_proc(p, f, &out);
	EXPECT(&out, {"mount /logs", "ro", "rw", NULL},
	       {"default route", "absent", "via eth0", NULL},
	       {"proxy variable HTTPS_PROXY", "http://(first address of a /30):3128",
		"http://10.254.7.1:8080", NULL},
	       {"proxy variable http_proxy", "http://(first address of a /30):3128",
		"(set, with credentials)", NULL},
	       {"secret in environment http_proxy", "absent", "set", NULL});
}

static void test_network_none(void **state)
{
	(void)state;
	ar_autopolicy struct ar_policy *p = load_policy("policy-sandbox.json");
	ar_autoproc_facts struct ar_proc_facts *f = sandbox_facts();
	ar_autofindings struct ar_findings out = {0};
	f->status.seccomp = 2;
	ar_strv_free(f->netdevs);
	f->netdevs = strv((const char *const[]){"lo", "eth0", NULL});
	ar_strv_free(f->env);
	f->env = strv((const char *const[]){"https_proxy=http://10.254.1.1:3128", NULL});
	check_proc(p, f, &out);
	EXPECT(&out,
	       {"network interfaces", "lo", "lo,eth0",
		"policy \"network\": \"none\" (agentrun run leaves only loopback)"},
	       {"proxy variable https_proxy", "unset", "http://10.254.1.1:3128",
		"policy \"network\": \"none\" (no proxy to point at)"});
}

static void test_partial_failures(void **state)
{
	(void)state;
	/* unreadable facts are reported as unknown, never as compliant */
	ar_autopolicy struct ar_policy *p = load_policy("policy-sandbox.json");
	ar_autoproc_facts struct ar_proc_facts *f = sandbox_facts();
	ar_autofindings struct ar_findings out = {0};
	f->status.seccomp = -1;
	f->status.no_new_privs = -1;
	f->ns_shared[AR_SPEC_NS_NET] = -1;
	f->pids_max = AR_LIMIT_UNKNOWN;
	f->memory_max = 128 << 20;
	f->cpus_milli = 500;
	check_proc(p, f, &out);
	EXPECT(&out, {"no_new_privs", "1", "unknown", NULL}, {"seccomp", "filter", "unknown", NULL},
	       {"namespace net", "private", "unknown", NULL}, {"pids limit", "64", "unknown", NULL},
	       {"memory limit", "268435456", "134217728", NULL}, {"cpu limit", "1", "0.5", NULL});
}

/* Transparent capture: the sandbox's default route goes to the proxy (eth0). */
static void test_capture_default_route(void **state)
{
	(void)state;
	ar_autopolicy struct ar_policy *p = load_policy("policy-agent.json");
	ar_autoproc_facts struct ar_proc_facts *f = sandbox_facts();
	ar_autofindings struct ar_findings out = {0};
	p->proxy.transparent = true;
	ar_strv_free(f->env);
	f->env = NULL;
	check_proc(p, f, &out);
	bool seen = false;
	for (size_t i = 0; i < out.n; i++)
		if (strcmp(out.v[i].what, "default route") == 0) {
			assert_string_equal(out.v[i].expected, "via eth0");
			assert_string_equal(out.v[i].actual, "absent");
			seen = true;
		}
	assert_true(seen);
	ar_findings_free(&out);
	out = (struct ar_findings){0};
	f->default_route = ar_xstrdup("eth0");
	check_proc(p, f, &out);
	for (size_t i = 0; i < out.n; i++)
		assert_string_not_equal(out.v[i].what, "default route");
}

static void test_environ_unreadable(void **state)
{
	(void)state;
	ar_autopolicy struct ar_policy *p = load_policy("policy-agent.json");
	ar_autoproc_facts struct ar_proc_facts *f = sandbox_facts();
	ar_autofindings struct ar_findings out = {0};
	static const char mounts[] = "46 45 254:0 / / ro,relatime - ext4 /dev/vda rw\n"
				     "47 46 0:41 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw\n"
				     "48 46 254:0 /home/me/.kube/agent-config "
				     "/home/agent/.kube/config ro - ext4 /dev/vda rw\n"
				     "49 46 254:0 /srv/logs /logs ro,relatime - ext4 /dev/vda rw\n";
	ar_auto_error ar_error_t err = NULL;
	ar_mountinfo_free(f->mounts, f->n_mounts);
	assert_int_equal(ar_check_parse_mountinfo(mounts, &f->mounts, &f->n_mounts, &err), 0);
	f->status.seccomp = 2;
	ar_strv_free(f->env);
	f->env = NULL;
	check_proc(p, f, &out);
	/* one finding, not four "unset" proxy variables and two "unset" env entries */
	EXPECT(&out, {"environment", "readable", "unknown",
		      "run agentrun check as root (or as the process's user)"});
}

static void test_ids_differ(void **state)
{
	(void)state;
	ar_autopolicy struct ar_policy *p = load_policy("policy-sandbox.json");
	ar_autoproc_facts struct ar_proc_facts *f = sandbox_facts();
	ar_autofindings struct ar_findings out = {0};
	f->status.seccomp = 2;
	f->status.uid[2] = 0; /* saved set-user-ID still root */
	f->status.cap_amb = 0x20;
	check_proc(p, f, &out);
	EXPECT(&out, {"user", "1000", "1000,1000,0,1000", NULL},
	       {"capabilities CapAmb", "0000000000000000", "0000000000000020", NULL});
}

static void test_tmpfs_states(void **state)
{
	(void)state;
	ar_autopolicy struct ar_policy *p = load_policy("policy-sandbox.json");
	ar_autoproc_facts struct ar_proc_facts *f = sandbox_facts();
	ar_autofindings struct ar_findings ro = {0};
	ar_autofindings struct ar_findings disk = {0};
	struct ar_mountinfo *tmp =
	    (struct ar_mountinfo *)ar_check_mount_at(f->mounts, f->n_mounts, "/tmp");
	assert_non_null(tmp);
	f->status.seccomp = 2;
	tmp->readonly = true; /* a read-only tmpfs hides a place, it is no scratch space */
	check_proc(p, f, &ro);
	EXPECT(&ro, {"tmpfs /tmp", "tmpfs:rw", "tmpfs:ro", "policy \"tmpfs\" lists /tmp"});
	tmp->readonly = false;
	free(tmp->fstype);
	tmp->fstype = ar_xstrdup("ext4");
	check_proc(p, f, &disk);
	EXPECT(&disk, {"tmpfs /tmp", "tmpfs:rw", "ext4:rw", NULL});
}

static void test_sensitive_mounts(void **state)
{
	(void)state;
	ar_autopolicy struct ar_policy *p = load_policy("policy-sandbox.json");
	ar_autoproc_facts struct ar_proc_facts *f =
	    facts_from("status-sandbox.txt", "mountinfo-v2.txt");
	ar_autofindings struct ar_findings out = {0};
	f->status.seccomp = 2;
	f->pids_max = 64;
	f->memory_max = 256 << 20;
	f->cpus_milli = 1000;
	check_proc(p, f, &out);
	EXPECT(&out, {"read-only rootfs", "true", "false", NULL},
	       {"sensitive mount /srv/aws", "absent", "/home/me/.aws:/srv/aws",
		"remove it from the policy \"mounts\""},
	       {"sensitive mount /var/run/docker.sock", "absent",
		"/docker.sock:/var/run/docker.sock", NULL});
}

static void test_parse_status(void **state)
{
	(void)state;
	ar_auto_error ar_error_t err = NULL;
	struct ar_proc_status s;
	ar_autofree char *host = load_text("status-host.txt");
	ar_autofree char *sbx = load_text("status-sandbox.txt");
	assert_int_equal(ar_check_parse_status(host, &s, &err), 0);
	assert_int_equal(s.uid[0], 0);
	assert_int_equal(s.gid[3], 0);
	assert_int_equal(s.cap_inh, 0);
	assert_int_equal(s.cap_eff, 0x000001fffeffffffULL);
	assert_int_equal(s.cap_bnd, 0x000001fffeffffffULL);
	assert_int_equal(s.no_new_privs, 0);
	assert_int_equal(s.seccomp, 0);
	assert_int_equal(ar_check_parse_status(sbx, &s, &err), 0);
	assert_int_equal(s.uid[1], 1000);
	assert_int_equal(s.gid[0], 1000);
	assert_int_equal(s.cap_bnd, 0);
	assert_int_equal(s.no_new_privs, 1);

	/* an old kernel without NoNewPrivs/Seccomp lines: unknown, not zero */
	static const char old[] =
	    "Name:\tx\nUid:\t5\t6\t7\t8\nGid:\t1\t1\t1\t1\n"
	    "CapInh:\t0\nCapPrm:\t0\nCapEff:\t0\nCapBnd:\tffffffff\nCapAmb:\t0\n";
	assert_int_equal(ar_check_parse_status(old, &s, &err), 0);
	assert_int_equal(s.uid[0], 5);
	assert_int_equal(s.uid[3], 8);
	assert_int_equal(s.cap_bnd, 0xffffffffULL);
	assert_int_equal(s.no_new_privs, -1);
	assert_int_equal(s.seccomp, -1);

	assert_int_equal(ar_check_parse_status("Uid:\t1\t2\t3\nGid:\t1\t1\t1\t1\n", &s, &err), -1);
	assert_string_equal(err->msg, "Uid: unparsable value");
	ar_error_release(&err);
	assert_int_equal(ar_check_parse_status("Uid:\t1\t1\t1\t1\n", &s, &err), -1);
	assert_string_equal(err->msg, "Gid: missing");
	ar_error_release(&err);
	assert_int_equal(
	    ar_check_parse_status("Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nCapInh:\tzz\n", &s, &err),
	    -1);
	assert_string_equal(err->msg, "CapInh: unparsable value");
}

static void test_parse_mountinfo(void **state)
{
	(void)state;
	ar_auto_error ar_error_t err = NULL;
	struct ar_mountinfo *m = NULL;
	size_t n = 0;
	ar_autofree char *v2 = load_text("mountinfo-v2.txt");
	assert_int_equal(ar_check_parse_mountinfo(v2, &m, &n, &err), 0);
	assert_int_equal(n, 8);
	assert_string_equal(m[0].target, "/");
	assert_string_equal(m[0].fstype, "ext4");
	assert_string_equal(m[0].source, "/dev/nvme0n1p2");
	assert_false(m[0].readonly);
	/* octal escapes and optional fields */
	assert_string_equal(m[5].root, "/home/me/My Docs");
	assert_string_equal(m[5].target, "/mnt/docs dir");
	assert_true(m[5].readonly);
	assert_string_equal(m[2].super_opts, "rw,nsdelegate,memory_recursiveprot");
	const struct ar_mountinfo *tmp = ar_check_mount_at(m, n, "/tmp");
	assert_non_null(tmp);
	assert_string_equal(tmp->fstype, "tmpfs");
	assert_null(ar_check_mount_at(m, n, "/run"));
	ar_mountinfo_free(m, n);

	/* the last mount at a point is the visible one; superblock ro counts */
	static const char stacked[] = "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
				      "2 1 0:5 / / rw - squashfs /dev/loop0 ro\n";
	assert_int_equal(ar_check_parse_mountinfo(stacked, &m, &n, &err), 0);
	assert_string_equal(ar_check_mount_at(m, n, "/")->fstype, "squashfs");
	assert_true(ar_check_mount_at(m, n, "/")->readonly);
	ar_mountinfo_free(m, n);

	assert_int_equal(ar_check_parse_mountinfo("1 0 8:1 / / rw ext4\n", &m, &n, &err), -1);
	assert_string_equal(err->msg, "line 1: unparsable");
}

static void test_cgroup_paths(void **state)
{
	(void)state;
	ar_auto_error ar_error_t err = NULL;
	ar_autofree char *hybrid = load_text("cgroup-hybrid.txt");
	ar_autofree char *v2 = load_text("cgroup-v2.txt");
	ar_autofree char *mem = ar_check_cgroup_path(hybrid, "memory");
	ar_autofree char *pids = ar_check_cgroup_path(hybrid, "pids");
	ar_autofree char *unified = ar_check_cgroup_path(hybrid, "");
	ar_autofree char *v2mem = ar_check_cgroup_path(v2, "memory");
	ar_autofree char *v2path = ar_check_cgroup_path(v2, "");
	ar_autofree char *systemd = ar_check_cgroup_path(hybrid, "name=systemd");
	assert_string_equal(mem, "/process_api/ef3291513af42f0564d528429e815775");
	assert_string_equal(pids, "/");
	assert_string_equal(unified, "/");
	assert_string_equal(systemd, "/");
	assert_null(v2mem);
	assert_string_equal(v2path, "/user.slice/user-1000.slice/session-3.scope");
	ar_autofree char *combined = ar_check_cgroup_path("4:cpu,cpuacct:/a/b\n", "cpu");
	ar_autofree char *acct = ar_check_cgroup_path("4:cpu,cpuacct:/a/b\n", "cpuacct");
	ar_autofree char *cpuset = ar_check_cgroup_path("4:cpu,cpuacct:/a/b\n", "cpuset");
	assert_string_equal(combined, "/a/b");
	assert_string_equal(acct, "/a/b");
	assert_null(cpuset);

	struct ar_mountinfo *m = NULL;
	size_t n = 0;
	ar_autofree char *mi = load_text("mountinfo-host.txt");
	assert_int_equal(ar_check_parse_mountinfo(mi, &m, &n, &err), 0);
	assert_string_equal(ar_check_cgroup_mount(m, n, "memory")->target, "/sys/fs/cgroup/memory");
	assert_string_equal(ar_check_cgroup_mount(m, n, "cpu")->target, "/sys/fs/cgroup/cpu");
	assert_string_equal(ar_check_cgroup_mount(m, n, "pids")->target, "/sys/fs/cgroup/pids");
	assert_string_equal(ar_check_cgroup_mount(m, n, "")->target, "/sys/fs/cgroup/unified");
	assert_null(ar_check_cgroup_mount(m, n, "hugetlb"));
	ar_mountinfo_free(m, n);
	ar_autofree char *miv2 = load_text("mountinfo-v2.txt");
	assert_int_equal(ar_check_parse_mountinfo(miv2, &m, &n, &err), 0);
	assert_null(ar_check_cgroup_mount(m, n, "memory"));
	assert_string_equal(ar_check_cgroup_mount(m, n, "")->target, "/sys/fs/cgroup");
	ar_mountinfo_free(m, n);
}

static void test_cgroup_values(void **state)
{
	int64_t v;
	(void)state;
	assert_int_equal(ar_check_parse_cg_max("max\n", &v), 0);
	assert_int_equal(v, AR_LIMIT_UNLIMITED);
	assert_int_equal(ar_check_parse_cg_max("268435456\n", &v), 0);
	assert_int_equal(v, 268435456);
	assert_int_equal(ar_check_parse_cg_max("64", &v), 0);
	assert_int_equal(v, 64);
	assert_int_equal(ar_check_parse_cg_max("maximum\n", &v), -1);
	assert_int_equal(ar_check_parse_cg_max("", &v), -1);
	assert_int_equal(ar_check_parse_cg_max("-5\n", &v), -1);

	assert_int_equal(ar_check_parse_cg_v1_memory("9223372036854771712\n", &v), 0);
	assert_int_equal(v, AR_LIMIT_UNLIMITED);
	assert_int_equal(ar_check_parse_cg_v1_memory("268435456\n", &v), 0);
	assert_int_equal(v, 268435456);
	assert_int_equal(ar_check_parse_cg_v1_memory("lots\n", &v), -1);

	assert_int_equal(ar_check_parse_cg_cpu_max("max 100000\n", &v), 0);
	assert_int_equal(v, AR_LIMIT_UNLIMITED);
	assert_int_equal(ar_check_parse_cg_cpu_max("100000 100000\n", &v), 0);
	assert_int_equal(v, 1000);
	assert_int_equal(ar_check_parse_cg_cpu_max("50000 100000\n", &v), 0);
	assert_int_equal(v, 500);
	assert_int_equal(ar_check_parse_cg_cpu_max("150000 100000", &v), 0);
	assert_int_equal(v, 1500);
	assert_int_equal(ar_check_parse_cg_cpu_max("9223372036854771712 100000\n", &v), 0);
	assert_int_equal(v, INT64_MAX / 100000); /* saturated, not overflowed */
	assert_int_equal(ar_check_parse_cg_cpu_max("100000\n", &v), -1);
	assert_int_equal(ar_check_parse_cg_cpu_max("100000 0\n", &v), -1);

	assert_int_equal(ar_check_parse_cg_v1_cpu("-1\n", "100000\n", &v), 0);
	assert_int_equal(v, AR_LIMIT_UNLIMITED);
	assert_int_equal(ar_check_parse_cg_v1_cpu("200000\n", "100000\n", &v), 0);
	assert_int_equal(v, 2000);
	assert_int_equal(ar_check_parse_cg_v1_cpu("x", "100000\n", &v), -1);
}

static void test_net(void **state)
{
	(void)state;
	ar_autofree char *dev = load_text("netdev-host.txt");
	ar_autofree char *r4 = load_text("route-host.txt");
	ar_autofree char *r6 = load_text("ipv6-route-host.txt");
	ar_autostrv char **devs = ar_check_parse_netdev(dev);
	assert_int_equal(ar_strv_len(devs), 4);
	assert_string_equal(devs[0], "lo");
	assert_string_equal(devs[3], "eth0");
	ar_autofree char *d4 = ar_check_parse_default_route(r4, NULL);
	ar_autofree char *d6 = ar_check_parse_default_route(NULL, r6);
	ar_autofree char *both = ar_check_parse_default_route(r4, r6);
	assert_string_equal(d4, "eth0");
	assert_string_equal(d6, "eth0");
	assert_string_equal(both, "eth0");

	/* a fresh netns: only lo, and the kernel's reject routes on lo */
	static const char lo_dev[] =
	    "Inter-|   Receive                                                |  Transmit\n"
	    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets "
	    "errs drop fifo colls carrier compressed\n"
	    "    lo:       0       0    0    0    0     0          0         0        0       0 "
	    "   0    0    0     0       0          0\n";
	static const char lo_r6[] =
	    "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
	    "00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n";
	static const char r4_hdr[] =
	    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask"
	    "\t\tMTU\tWindow\tIRTT\n";
	/* the veth of an agentrun sandbox: a /30, no default */
	static const char veth_r4[] =
	    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask"
	    "\t\tMTU\tWindow\tIRTT\n"
	    "eth0\t0000FE0A\t00000000\t0001\t0\t0\t0\tFCFFFFFF\t0\t0\t0\n";
	ar_autostrv char **lo = ar_check_parse_netdev(lo_dev);
	assert_int_equal(ar_strv_len(lo), 1);
	assert_string_equal(lo[0], "lo");
	assert_null(ar_check_parse_default_route(r4_hdr, lo_r6));
	assert_null(ar_check_parse_default_route(veth_r4, NULL));
	assert_null(ar_check_parse_default_route(NULL, NULL));
	ar_autostrv char **none = ar_check_parse_netdev("");
	assert_null(none[0]);
}

static void test_environ(void **state)
{
	(void)state;
	static const char env[] = "PATH=/bin\0GITHUB_TOKEN=x\0\0EMPTY=\0LAST=1";
	ar_autostrv char **sv = ar_check_parse_environ(env, sizeof(env) - 1);
	assert_int_equal(ar_strv_len(sv), 4);
	assert_string_equal(sv[0], "PATH=/bin");
	assert_string_equal(sv[3], "LAST=1");
	assert_string_equal(ar_check_env_get(sv, "EMPTY"), "");
	assert_string_equal(ar_check_env_get(sv, "GITHUB_TOKEN"), "x");
	assert_null(ar_check_env_get(sv, "PAT"));
	ar_autostrv char **empty = ar_check_parse_environ("", 0);
	assert_null(empty[0]);
}

static void test_ns_names(void **state)
{
	/* /proc/PID/ns/ names, in the spec's order */
	static const char *const names[] = {"pid", "net", "ipc", "uts", "mnt", "cgroup"};
	(void)state;
	for (int k = 0; k < AR_SPEC_N_NAMESPACES; k++)
		assert_string_equal(ar_spec_namespaces[k].proc, names[k]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sandbox),
	    cmocka_unit_test(test_sandbox_clean_with_seccomp),
	    cmocka_unit_test(test_host_shell),
	    cmocka_unit_test(test_agentrun_proxy_sandbox),
	    cmocka_unit_test(test_network_none),
	    cmocka_unit_test(test_partial_failures),
	    cmocka_unit_test(test_environ_unreadable),
	    cmocka_unit_test(test_capture_default_route),
	    cmocka_unit_test(test_ids_differ),
	    cmocka_unit_test(test_tmpfs_states),
	    cmocka_unit_test(test_sensitive_mounts),
	    cmocka_unit_test(test_parse_status),
	    cmocka_unit_test(test_parse_mountinfo),
	    cmocka_unit_test(test_cgroup_paths),
	    cmocka_unit_test(test_cgroup_values),
	    cmocka_unit_test(test_net),
	    cmocka_unit_test(test_environ),
	    cmocka_unit_test(test_ns_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

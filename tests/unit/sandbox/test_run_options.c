/* Unit tests for the pure parts of `run`: the CLI overrides writing into the policy,
 * the command's environment, the mount plan and the mountinfo walker. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/policy.h"
#include "agentrun/sandbox.h"
#include "agentrun/util.h"

static struct ar_policy *default_policy(void)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_policy *p = NULL;
	assert_int_equal(ar_policy_default(&p, &err), 0);
	assert_non_null(p);
	return p;
}

/* Apply one override; on failure return the message (caller frees). */
static char *apply(struct ar_policy *p, struct ar_run_opts *o, const char *flag, const char *v)
{
	ar_error_t err = NULL;
	if (ar_override_apply(p, o, flag, v, &err) == 0)
		return NULL;
	char *msg = ar_xstrdup(err->msg);
	ar_error_release(&err);
	return msg;
}

static void test_limits(void **state)
{
	ar_autopolicy struct ar_policy *p = default_policy();
	struct ar_run_opts o = {0};

	assert_null(apply(p, &o, "--memory", "64m"));
	assert_int_equal(p->limits.memory, 64 << 20);
	assert_string_equal(p->limits.memory_str, "64m");
	assert_null(apply(p, &o, "--pids", "33"));
	assert_int_equal(p->limits.pids, 33);
	assert_null(apply(p, &o, "--cpus", "0.5"));
	assert_int_equal(p->limits.cpus_milli, 500);
	assert_string_equal(p->limits.cpus_str, "0.5");
	assert_null(apply(p, &o, "--no-cgroups", NULL));
	assert_true(o.no_cgroups);
	assert_false(p->limits.required);
	assert_null(apply(p, &o, "--require-limits", NULL));
	assert_true(p->limits.required);
}

static void test_bad_values(void **state)
{
	static const struct {
		const char *flag, *value, *msg;
	} cases[] = {
	    {"--memory", "x",
	     "--memory x: expected a size of at least 6m (e.g. 256m, 1g, 1048576)"},
	    {"--memory", "0",
	     "--memory 0: expected a size of at least 6m (e.g. 256m, 1g, 1048576)"},
	    /* a value that parses but is out of range: the policy's check, named by the flag */
	    {"--memory", "5m", "--memory 5m: limits.memory: \"5m\" is below the minimum of 6m"},
	    {"--pids", "0", "--pids 0: limits.pids: must be an integer from 1 to 4194304, got 0"},
	    {"--pids", "-3",
	     "--pids -3: limits.pids: must be an integer from 1 to 4194304, got -3"},
	    {"--pids", "x", "--pids x: expected a number of processes (e.g. 64)"},
	    {"--cpus", "fast",
	     "--cpus fast: expected a number of CPUs from 0.001 to 1024 with at most 3 decimals "
	     "(e.g. 0.5, 2)"},
	    {"--cpus", "0.0001",
	     "--cpus 0.0001: expected a number of CPUs from 0.001 to 1024 with at most 3 decimals "
	     "(e.g. 0.5, 2)"},
	    {"--user", "root",
	     "--user root: expected a numeric UID or UID:GID (e.g. 1000, 1000:1000)"},
	    {"--user", "1:x",
	     "--user 1:x: expected a numeric UID or UID:GID (e.g. 1000, 1000:1000)"},
	    {"--user", "0", "--user 0: user: uid 0 is root on the host; use a non-root uid"},
	    {"--env", "NOEQUALS", "--env NOEQUALS: expected KEY=VALUE"},
	    {"--env", "=v", "--env =v: expected KEY=VALUE"},
	    {"--env", "1X=v", "--env 1X=v: env: key \"1X\" must match ^[A-Za-z_][A-Za-z0-9_]*$"},
	    {"--tmpfs", "tmp", "--tmpfs tmp: expected an absolute path"},
	    {"--mount", "/a", "--mount /a: expected SRC:DST[:rw]"},
	    {"--mount", "a:/b", "--mount a:/b: expected SRC:DST[:rw] with absolute paths"},
	    {"--mount", "/a:/b:rx",
	     "--mount /a:/b:rx: expected SRC:DST[:rw] (the mode is ro or rw)"},
	    {"--mount", "/a:/tmp", "--mount /a:/tmp: target: \"/tmp\" is also tmpfs[0]"},
	    {"--rootfs", "rel", "--rootfs rel: expected an absolute directory path"},
	    {"--seccomp", "", "--seccomp \"\": expected FILE, default or unconfined"},
	    {"--memory", NULL, "option `--memory` needs a value (--memory SIZE)"},
	    {"--frobnicate", "1", "unknown option `--frobnicate`"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		ar_autopolicy struct ar_policy *p = default_policy();
		struct ar_run_opts o = {0};
		ar_autofree char *msg = apply(p, &o, cases[i].flag, cases[i].value);
		assert_non_null(msg);
		assert_string_equal(msg, cases[i].msg);
	}
}

static void test_user_env_paths(void **state)
{
	ar_autopolicy struct ar_policy *p = default_policy();
	struct ar_run_opts o = {0};

	assert_null(apply(p, &o, "--user", "1000:1001"));
	assert_int_equal(p->uid, 1000);
	assert_int_equal(p->gid, 1001);
	assert_string_equal(p->user, "1000:1001");
	/* the flag parses, then validation refuses host root, naming the flag (exit 125) */
	ar_autofree char *root = apply(p, &o, "--user", "1000:0");
	assert_string_equal(
	    root, "--user 1000:0: user: gid 0 is root's group on the host; use a non-root gid");
	assert_string_equal(p->origin, "<embedded default>"); /* the file's origin again */
	ar_auto_error ar_error_t err = NULL;
	assert_null(apply(p, &o, "--user", "1000:1001"));
	assert_int_equal(ar_policy_validate(p, &err), 0);
	assert_null(apply(p, &o, "--env", "B=2=3"));
	assert_null(apply(p, &o, "--env", "A="));
	assert_string_equal(ar_policy_getenv(p, "B"), "2=3");
	assert_string_equal(ar_policy_getenv(p, "A"), "");
	assert_null(apply(p, &o, "--tmpfs", "//scratch//"));
	assert_string_equal(p->tmpfs[p->n_tmpfs - 1], "/scratch");
	assert_null(apply(p, &o, "--mount", "/srv/logs:/logs"));
	assert_null(apply(p, &o, "--mount", "/srv/out/:/out:rw"));
	assert_int_equal(p->n_mounts, 2);
	assert_string_equal(p->mounts[0].source, "/srv/logs");
	assert_string_equal(p->mounts[0].target, "/logs");
	assert_true(p->mounts[0].readonly);
	assert_string_equal(p->mounts[1].source, "/srv/out");
	assert_false(p->mounts[1].readonly);
	assert_null(apply(p, &o, "--rootfs", "/srv/root"));
	assert_string_equal(p->rootfs, "/srv/root");
	assert_null(apply(p, &o, "--seccomp", "unconfined"));
	assert_string_equal(p->seccomp, "unconfined");
	assert_int_equal(ar_policy_validate(p, &err), 0);
}

/* The table run parses and documents: --policy first, every flag once. */
static void test_table(void **state)
{
	size_t n = 0;
	for (const struct ar_opt *e = ar_run_options; e->flag != NULL; e++, n++)
		for (const struct ar_opt *f = ar_run_options; f < e; f++)
			assert_string_not_equal(e->flag, f->flag);
	assert_true(n >= 15);
	assert_string_equal(ar_run_options[0].flag, "--policy");
	assert_null(ar_run_options[0].set); /* read before the policy is loaded */
	assert_string_equal(ar_run_options[1].flag, "--memory");
	/* --learn: learn mode, which needs the proxy network */
	ar_autopolicy struct ar_policy *p = default_policy();
	struct ar_run_opts o = {0};
	assert_int_equal(ar_override_apply(p, &o, "--learn", NULL, NULL), 0);
	assert_int_equal(p->mode, AR_MODE_LEARN);
	assert_int_equal(p->network, AR_NETWORK_PROXY);
}

/* --allow-private appends to proxy.allow_private (NULL-terminated); bad CIDRs name the flag;
 * --audit, --proxy-log and --proxy-busy-poll land in the run options. */
static void test_network_overrides(void **state)
{
	ar_autopolicy struct ar_policy *p = default_policy();
	ar_auto_error ar_error_t err = NULL;
	struct ar_run_opts o = {0};
	assert_int_equal(ar_override_apply(p, &o, "--allow-private", "127.0.0.1", &err), 0);
	assert_int_equal(ar_override_apply(p, &o, "--allow-private", "10.0.0.0/8", &err), 0);
	assert_int_equal(p->proxy.n_allow_private, 2);
	assert_string_equal(p->proxy.allow_private[1], "10.0.0.0/8");
	assert_null(p->proxy.allow_private[2]);
	assert_int_equal(ar_override_apply(p, &o, "--allow-private", "10.0.0/99", &err), -1);
	assert_non_null(strstr(err->msg, "--allow-private"));
	assert_int_equal(ar_override_apply(p, &o, "--audit", "/tmp/a.jsonl", NULL), 0);
	assert_string_equal(o.audit_path, "/tmp/a.jsonl");
	assert_int_equal(ar_override_apply(p, &o, "--proxy-log", "/tmp/l", NULL), 0);
	assert_string_equal(o.proxy_log, "/tmp/l");
	/* --proxy-busy-poll: 0 is "never" (-1), a cap up to 10000 us, nothing else */
	assert_int_equal(ar_override_apply(p, &o, "--proxy-busy-poll", "250", NULL), 0);
	assert_int_equal(o.proxy_busy_poll_us, 250);
	assert_int_equal(ar_override_apply(p, &o, "--proxy-busy-poll", "0", NULL), 0);
	assert_int_equal(o.proxy_busy_poll_us, -1);
	ar_auto_error ar_error_t bad = NULL;
	assert_int_equal(ar_override_apply(p, &o, "--proxy-busy-poll", "10001", &bad), -1);
	assert_non_null(strstr(bad->msg, "--proxy-busy-poll 10001"));
	assert_int_equal(o.proxy_busy_poll_us, -1);
}

/* The proxy variables come after TERM, in the one order of ar_proxy_env_foreach. */
static void test_env_net(void **state)
{
	ar_autopolicy struct ar_policy *p = default_policy();
	struct ar_run_opts o = {.term = "xterm"};
	ar_policy_setenv(p, "FOO", "bar");
	ar_autostrv char **env = ar_spec_env(p, o.term, "http://10.254.0.1:3128");
	assert_int_equal(ar_strv_len(env), 10);
	assert_string_equal(env[2], "TERM=xterm");
	assert_string_equal(env[3], "HTTP_PROXY=http://10.254.0.1:3128");
	assert_string_equal(env[6], "https_proxy=http://10.254.0.1:3128");
	assert_string_equal(env[7], "NO_PROXY=localhost,127.0.0.1");
	assert_string_equal(env[8], "no_proxy=localhost,127.0.0.1");
	assert_string_equal(env[9], "FOO=bar");
}

static void test_parse_user(void **state)
{
	uid_t u;
	gid_t g;
	assert_int_equal(ar_parse_user("65534", &u, &g), 0);
	assert_int_equal(u, 65534);
	assert_int_equal(g, 65534);
	assert_int_equal(ar_parse_user("1:2", &u, &g), 0);
	assert_int_equal(u, 1);
	assert_int_equal(g, 2);
	assert_int_equal(ar_parse_user("", &u, &g), -1);
	assert_int_equal(ar_parse_user("1:", &u, &g), -1);
	assert_int_equal(ar_parse_user(":1", &u, &g), -1);
	assert_int_equal(ar_parse_user("-1", &u, &g), -1);
	assert_int_equal(ar_parse_user("4294967295", &u, &g), -1); /* (uid_t)-1 */
	assert_int_equal(ar_parse_user("1:2:3", &u, &g), -1);
}

static void test_env(void **state)
{
	ar_autopolicy struct ar_policy *p = default_policy();
	struct ar_run_opts o = {.term = "xterm"};
	ar_policy_setenv(p, "FOO", "bar");
	ar_policy_setenv(p, "HOME", "/work");
	p->kubeconfig = ar_xstrdup("/k");

	ar_autostrv char **env = ar_spec_env(p, o.term, NULL);
	assert_int_equal(ar_strv_len(env), 5);
	assert_string_equal(env[0], "PATH=" AR_SPEC_PATH);
	assert_string_equal(env[1], "HOME=/work"); /* the policy replaces the default */
	assert_string_equal(env[2], "TERM=xterm");
	assert_string_equal(env[3], "FOO=bar");
	assert_string_equal(env[4], "KUBECONFIG=" AR_DEFAULT_KUBECONFIG_TARGET);

	struct ar_run_opts none = {0};
	free(p->tmpfs[0]);
	p->tmpfs[0] = NULL;
	p->n_tmpfs = 0;
	ar_policy_setenv(p, "HOME", "/h");
	ar_autostrv char **env2 = ar_spec_env(p, none.term, NULL);
	assert_string_equal(env2[1], "HOME=/h");
	assert_null(env2[4]);
}

static void test_env_home_default(void **state)
{
	ar_autopolicy struct ar_policy *p = default_policy();
	ar_autostrv char **env = ar_spec_env(p, NULL, NULL);
	assert_int_equal(ar_strv_len(env), 2);
	assert_string_equal(env[1], "HOME=/tmp"); /* the first tmpfs: writable */
}

static size_t find_op(const struct ar_mount_plan *plan, enum ar_mount_kind kind, const char *t)
{
	for (size_t i = 0; i < plan->n_ops; i++)
		if (plan->ops[i].kind == kind && strcmp(plan->ops[i].target, t) == 0)
			return i;
	return SIZE_MAX;
}

/* The plan of p's spec, as run makes it (the caller's places hidden too). */
static int plan_of(const struct ar_policy *p, const char *const *caller_private,
		   struct ar_mount_plan *plan, ar_error_t *err)
{
	ar_autospec struct ar_spec *s = NULL;
	*plan = (struct ar_mount_plan){0};
	if (ar_spec_build(p, &(struct ar_spec_opts){.caller_private = caller_private}, &s, err) < 0)
		return -1;
	ar_mount_plan_build(s, plan);
	return 0;
}

static void test_plan_host_root(void **state)
{
	ar_autopolicy struct ar_policy *p = default_policy();
	ar_auto_error ar_error_t err = NULL;
	struct ar_mount_plan plan;
	struct ar_run_opts o = {0};

	assert_null(apply(p, &o, "--mount", "/srv/logs:/logs"));
	p->kubeconfig = ar_xstrdup("/home/me/.kube/agent");
	assert_int_equal(
	    plan_of(p,
		    (const char *[AR_SPEC_CALLER_PRIVATE_MAX]){"/srv/me", "/opt/me", "/etc/run-me"},
		    &plan, &err),
	    0);
	assert_true(plan.host_root);
	/* credentials inside the allowed directories hidden, and the caller's own places
	 * ($HOME, passwd's home, $XDG_RUNTIME_DIR) wherever they are;
	 * /root, /home, /run are absent from the view (mount.c), not hidden here; /tmp
	 * is a policy tmpfs */
	static const char *const hidden[] = {"/etc/shadow",  "/etc/gshadow", "/etc/kubernetes",
					     "/etc/rancher", "/srv/me",	     "/opt/me",
					     "/etc/run-me"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(hidden); i++)
		assert_int_not_equal(find_op(&plan, AR_MNT_HIDE, hidden[i]), SIZE_MAX);
	assert_int_equal(find_op(&plan, AR_MNT_HIDE, "/home"), SIZE_MAX);
	assert_int_equal(find_op(&plan, AR_MNT_HIDE, "/tmp"), SIZE_MAX);
	size_t proc = find_op(&plan, AR_MNT_PROC, "/proc");
	size_t kcore = find_op(&plan, AR_MNT_MASK, "/proc/kcore");
	size_t sysrq = find_op(&plan, AR_MNT_MASK, "/proc/sysrq-trigger");
	size_t procsys = find_op(&plan, AR_MNT_RO_SELF, "/proc/sys");
	size_t fw = find_op(&plan, AR_MNT_MASK, "/sys/firmware");
	size_t sys = find_op(&plan, AR_MNT_SYSFS, "/sys");
	size_t dev = find_op(&plan, AR_MNT_DEV, "/dev");
	size_t tmp = find_op(&plan, AR_MNT_TMPFS, "/tmp");
	size_t logs = find_op(&plan, AR_MNT_BIND, "/logs");
	size_t kube = find_op(&plan, AR_MNT_BIND, AR_DEFAULT_KUBECONFIG_TARGET);
	/* the order: hides, proc and its masks, sys and its masks, dev, policy mounts */
	assert_true(find_op(&plan, AR_MNT_HIDE, "/etc/shadow") < proc);
	assert_true(proc < kcore && proc < sysrq && proc < procsys);
	assert_true(procsys < sys && sys < fw && fw < dev);
	assert_true(dev < tmp && tmp < logs && logs < kube && kube != SIZE_MAX);
	assert_true(plan.ops[logs].readonly);
	assert_string_equal(plan.ops[logs].source, "/srv/logs");
	assert_string_equal(plan.ops[logs].what, "--mount /srv/logs:/logs");
	assert_string_equal(plan.ops[kube].source, "/home/me/.kube/agent");
	assert_true(plan.ops[kube].readonly);
	assert_false(plan.ops[tmp].readonly);
	ar_mount_plan_free(&plan);
	assert_int_equal(plan.n_ops, 0);
}

static void test_plan_rootfs_and_home(void **state)
{
	ar_autopolicy struct ar_policy *p = default_policy();
	ar_auto_error ar_error_t err = NULL;
	struct ar_mount_plan plan;

	p->rootfs = ar_xstrdup("/srv/image");
	assert_int_equal(
	    plan_of(p, (const char *[AR_SPEC_CALLER_PRIVATE_MAX]){"/root"}, &plan, &err), 0);
	assert_false(plan.host_root);
	assert_string_equal(plan.rootfs, "/srv/image");
	for (size_t i = 0; i < plan.n_ops; i++)
		assert_int_not_equal(plan.ops[i].kind, AR_MNT_HIDE);
	size_t proc = find_op(&plan, AR_MNT_PROC, "/proc");
	assert_string_equal(plan.ops[proc].what, "<embedded default>: rootfs");
	ar_mount_plan_free(&plan);

	/* a $HOME below a hidden directory, or "/", adds nothing */
	free(p->rootfs);
	p->rootfs = NULL;
	assert_int_equal(plan_of(p,
				 (const char *[AR_SPEC_CALLER_PRIVATE_MAX]){"/etc/kubernetes/me"},
				 &plan, &err),
			 0);
	assert_int_equal(find_op(&plan, AR_MNT_HIDE, "/etc/kubernetes/me"), SIZE_MAX);
	size_t n = plan.n_ops;
	ar_mount_plan_free(&plan);
	assert_int_equal(plan_of(p, (const char *[AR_SPEC_CALLER_PRIVATE_MAX]){"/"}, &plan, &err),
			 0);
	assert_int_equal(plan.n_ops, n);
	ar_mount_plan_free(&plan);
	assert_int_equal(
	    plan_of(p, (const char *[AR_SPEC_CALLER_PRIVATE_MAX]){"relative"}, &plan, &err), 0);
	assert_int_equal(plan.n_ops, n);
	ar_mount_plan_free(&plan);
}

static void test_plan_bad_target(void **state)
{
	ar_autopolicy struct ar_policy *p = default_policy();
	ar_auto_error ar_error_t err = NULL;
	struct ar_mount_plan plan;
	struct ar_run_opts o = {0};

	/* the flag is refused as it applies, naming itself */
	ar_autofree char *msg = apply(p, &o, "--mount", "/a:/");
	assert_string_equal(msg, "--mount /a:/: target: must not be \"/\", got \"/\"");
	/* and the spec refuses what a policy struct could still hold (the flag's mount,
	 * applied before its check, replaced by one without a flag) */
	for (size_t i = 0; i < p->n_mounts; i++) {
		free(p->mounts[i].source);
		free(p->mounts[i].target);
		free(p->mounts[i].flag);
	}
	free(p->mounts);
	p->mounts = ar_xcalloc(1, sizeof(*p->mounts));
	p->mounts[0] = (struct ar_mount){.source = ar_xstrdup("/a"), .target = ar_xstrdup("/")};
	p->n_mounts = 1;
	assert_int_equal(plan_of(p, NULL, &plan, &err), -1);
	assert_string_equal(
	    err->msg, "<embedded default>: mounts[0]: target must be an absolute path below /");
	assert_int_equal(plan.n_ops, 0);
}

/* What run records for check --name: the options that change the policy, not the
 * run's own (every row of the table is one or the other). */
static void test_changes_policy(void **state)
{
	const char *policy[] = {"--memory",  "--pids",		 "--cpus",	    "--user",
				"--env",     "--tmpfs",		 "--mount",	    "--rootfs",
				"--seccomp", "--require-limits", "--allow-private", "--learn"};
	const char *run[] = {"--policy",	  "--no-cgroups", "--audit",	   "--proxy-log",
			     "--proxy-busy-poll", "--no-tty",	  "--no-such-flag"};
	for (size_t i = 0; i < sizeof(policy) / sizeof(policy[0]); i++)
		assert_true(ar_override_changes_policy(policy[i]));
	for (size_t i = 0; i < sizeof(run) / sizeof(run[0]); i++)
		assert_false(ar_override_changes_policy(run[i]));
	size_t n = 0;
	for (const struct ar_opt *o = ar_run_options; o->flag != NULL; o++)
		n++;
	assert_int_equal(n, sizeof(policy) / sizeof(policy[0]) + 6);
}

static void test_path_under(void **state)
{
	assert_true(ar_path_under("/home", "/home"));
	assert_true(ar_path_under("/home/a/b", "/home"));
	assert_false(ar_path_under("/homes", "/home"));
	assert_false(ar_path_under("/hom", "/home"));
	assert_true(ar_path_under("/x", "/"));
}

static int collect(const char *mountpoint, void *data)
{
	struct ar_buf *b = data;
	ar_buf_printf(b, "%s|", mountpoint);
	return strcmp(mountpoint, "/stop") == 0 ? 42 : 0;
}

static void test_mountinfo(void **state)
{
	static const char info[] = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
				   "60 27 0:50 / /tmp rw - tmpfs tmpfs rw\n"
				   "61 60 254:0 /usr /tmp/usr ro - ext4 /dev/vda rw\n"
				   "62 60 0:51 / /tmp/with\\040space ro - tmpfs tmpfs rw\n"
				   "63 27 0:52 / /tmpx rw - tmpfs tmpfs rw\n"
				   "64 27 0:53 / /var/tmp rw shared:4 - tmpfs tmpfs rw";
	struct ar_buf b = {0};

	assert_int_equal(ar_mountinfo_foreach(info, "/tmp", collect, &b), 0);
	assert_string_equal(b.data, "/tmp|/tmp/usr|/tmp/with space|");
	ar_buf_reset(&b);
	assert_int_equal(ar_mountinfo_foreach(info, "/", collect, &b), 0);
	assert_string_equal(b.data, "/|/tmp|/tmp/usr|/tmp/with space|/tmpx|/var/tmp|");
	ar_buf_reset(&b);
	assert_int_equal(ar_mountinfo_foreach("1 2 3:4 / /stop rw - x x\n5 6 7:8 / /stop/b rw", "/",
					      collect, &b),
			 42);
	assert_string_equal(b.data, "/stop|");
	ar_buf_reset(&b);
	assert_int_equal(ar_mountinfo_foreach("1 2 3:4\n", "/", collect, &b), -1);
	assert_int_equal(ar_mountinfo_foreach("1 2 3:4 / relative rw\n", "/", collect, &b), -1);
	assert_int_equal(ar_mountinfo_foreach("", "/", collect, &b), 0);
	ar_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_bad_values),
	    cmocka_unit_test(test_user_env_paths),
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_network_overrides),
	    cmocka_unit_test(test_env_net),
	    cmocka_unit_test(test_parse_user),
	    cmocka_unit_test(test_env),
	    cmocka_unit_test(test_env_home_default),
	    cmocka_unit_test(test_plan_host_root),
	    cmocka_unit_test(test_plan_rootfs_and_home),
	    cmocka_unit_test(test_plan_bad_target),
	    cmocka_unit_test(test_changes_policy),
	    cmocka_unit_test(test_path_under),
	    cmocka_unit_test(test_mountinfo),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

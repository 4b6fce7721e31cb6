/* ar_cgroup_plan / ar_cgroup_make (root only; skipped otherwise): planning creates
 * nothing and a planned handle is destroyed without touching the host; on v1 the
 * sandbox moves itself in only with one `tasks` file per cgroup; teardown removes
 * every directory. `agentrun run` creates v1 cgroups after the clone through these. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agentrun/cgroup.h"
#include "agentrun/util.h"
#include "../need.h"

static char cg_name[64];
static struct ar_cgroup *cur;

static struct ar_policy policy(void)
{
	struct ar_policy p = {0};
	p.name = "plantest";
	p.limits.memory = 64 << 20;
	p.limits.pids = 32;
	p.limits.cpus_milli = 500;
	return p;
}

static int setup(void **state)
{
	(void)state;
	snprintf(cg_name, sizeof(cg_name), "agentrun-plantest-%d", (int)getpid());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	ar_cgroup_destroy(cur, NULL);
	cur = NULL;
	return 0;
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static void plan(const struct ar_policy *p)
{
	ar_auto_error ar_error_t err = NULL;

	if (ar_cgroup_plan(&p->limits, cg_name, &cur, &err) == -1)
		fail_msg("ar_cgroup_plan: %s", err->msg);
}

static void test_plan_creates_nothing(void **state)
{
	struct ar_policy p = policy();
	ar_auto_error ar_error_t err = NULL;

	AR_NEED(geteuid() == 0, "root");

	(void)state;
	plan(&p);
	const char *path = ar_cgroup_path(cur);
	if (ar_cgroup_self_entry(cur)) {
		assert_string_equal(ar_cgroup_kind(cur), "v1");
		assert_non_null(strstr(path, cg_name)); /* located, */
	}
	if (*path)
		assert_false(exists(path)); /* not created */
	assert_int_equal(ar_cgroup_destroy(cur, &err), 0);
	cur = NULL;
}

/* In a forked child: enter with `use` of the n fds; exit 0 when it succeeded and
 * /proc/self/cgroup then names the cgroup, 1 when it failed, 2 otherwise. */
static int child_enter(const int *fds, size_t use)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autofree char *self = NULL;

	if (ar_cgroup_enter_self(cur, fds, use, &err) == -1)
		return strstr(err->msg, "files to move the sandbox") ? 1 : 2;
	if (ar_read_file("/proc/self/cgroup", 0, &self, NULL, NULL) == -1)
		return 2;
	return strstr(self, cg_name) ? 0 : 2;
}

static int run_child(const int *fds, size_t use)
{
	int st = 0;
	pid_t pid = fork();

	assert_int_not_equal(pid, -1);
	if (pid == 0)
		_exit(child_enter(fds, use));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_make_enter_destroy(void **state)
{
	struct ar_policy p = policy();
	ar_auto_error ar_error_t err = NULL;
	int fds[4];

	AR_NEED(geteuid() == 0, "root");

	(void)state;
	plan(&p);
	if (!ar_cgroup_self_entry(cur))
		skip(); /* v2: the parent moves the sandbox (test_cgroup_live): not a lack */
	ar_autofree char *path = ar_xstrdup(ar_cgroup_path(cur));
	if (ar_cgroup_make(cur, &p.limits, &err) == -1)
		fail_msg("ar_cgroup_make: %s", err->msg);
	assert_true(exists(path));
	int n = ar_cgroup_open_self(cur, fds, AR_ARRAY_SIZE(fds), &err);
	assert_in_range(n, 1, 3); /* memory, pids, cpu: fewer when co-mounted */
	assert_int_equal(run_child(fds, (size_t)n - 1), 1); /* one missing: refused */
	assert_int_equal(run_child(fds, 0), 1);
	assert_int_equal(run_child(fds, (size_t)n), 0);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	assert_int_equal(ar_cgroup_destroy(cur, &err), 0);
	cur = NULL;
	assert_false(exists(path));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_plan_creates_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_make_enter_destroy, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Live tests of the cgroup managers (root only; skipped otherwise): create a cgroup
 * for a forked child, check the limit files, the pids limit, an OOM kill and its
 * report, the cpu quota, teardown of leftover processes, and the stale sweep.
 * Run on the hybrid host (v1) by ctest and under User-Mode Linux (pure v2) by
 * tests/vm/cgroup_v2.sh, which sets AR_CGROUP_EXPECT_KIND and, for the fail-closed
 * cases, AR_CGROUP_EXPECT_FAIL (a substring of the expected message). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agentrun/cgroup.h"
#include "agentrun/util.h"
#include "../need.h"

static char cg_name[64];
/* The cgroup of the running test, destroyed by teardown even when an assertion
 * fails, so no process or directory outlives a failing test. */
static struct ar_cgroup *cur;
/* A second cgroup of the same process (run's proxy's), destroyed by teardown too. */
static struct ar_cgroup *cur2;
/* The child of the running test, killed and reaped by teardown. */
static pid_t cur_child;

static struct ar_policy policy(int64_t memory, int64_t pids, int64_t cpus_milli)
{
	struct ar_policy p = {0};
	p.name = "unittest";
	p.limits.memory = memory;
	p.limits.pids = pids;
	p.limits.cpus_milli = cpus_milli;
	return p;
}

static int setup(void **state)
{
	snprintf(cg_name, sizeof(cg_name), "agentrun-unittest-%d", (int)getpid());
	return 0;
}

static int teardown(void **state)
{
	if (cur_child > 0) {
		kill(cur_child, SIGKILL);
		waitpid(cur_child, NULL, 0);
		cur_child = 0;
	}
	ar_cgroup_destroy(cur, NULL);
	cur = NULL;
	ar_cgroup_destroy(cur2, NULL);
	cur2 = NULL;
	return 0;
}

static struct ar_cgroup *create(const struct ar_policy *p)
{
	ar_auto_error ar_error_t err = NULL;

	assert_null(cur);
	if (ar_cgroup_create(&p->limits, cg_name, &cur, &err) == -1)
		fail_msg("ar_cgroup_create: %s", err->msg);
	return cur;
}

static void destroy(void)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_cgroup *cg = cur;

	cur = NULL;
	if (ar_cgroup_destroy(cg, &err) == -1)
		fail_msg("ar_cgroup_destroy: %s", err->msg);
}

static void need_root(void)
{
	AR_NEED(geteuid() == 0, "root");
}

/* The directory this process would use for `controller` (NULL: v2), computed with
 * the (separately tested) pure helpers. */
static char *own_dir(const char *controller)
{
	ar_autofree char *self = NULL;
	ar_autofree char *mi = NULL;
	ar_autofree char *path = NULL;
	char *dir = NULL;

	assert_int_equal(ar_read_file("/proc/self/cgroup", 0, &self, NULL, NULL), 0);
	assert_int_equal(ar_read_file("/proc/self/mountinfo", 0, &mi, NULL, NULL), 0);
	if (ar_cgroup_parse_proc(self, controller, &path) == -1 ||
	    ar_cgroup_find_dir(mi, controller, path, &dir) == -1)
		return NULL;
	return dir;
}

/* Where the sandbox cgroup for `controller` must be, for either kind. Computed
 * before create: on v2 we may be moved into a leaf while the cgroup exists. */
struct where {
	char *v2, *v1;
};

static struct where expected_dir(const char *controller)
{
	ar_autofree char *v2 = own_dir(NULL);
	ar_autofree char *v1 = own_dir(controller);
	struct where w = {NULL, NULL};

	if (v2)
		w.v2 = ar_xasprintf("%s/%s", v2, cg_name);
	if (v1)
		w.v1 = ar_xasprintf("%s/%s", v1, cg_name);
	return w;
}

static char *pick(const struct ar_cgroup *cg, struct where w)
{
	bool v2 = strcmp(ar_cgroup_kind(cg), "v2") == 0;
	char *d = v2 ? w.v2 : w.v1;

	free(v2 ? w.v1 : w.v2);
	assert_non_null(d);
	return d;
}

static void expect_file(const char *dir, const char *file, const char *want)
{
	ar_autofree char *path = ar_xasprintf("%s/%s", dir, file);
	ar_autofree char *got = NULL;

	assert_int_equal(ar_read_file(path, 0, &got, NULL, NULL), 0);
	got[strcspn(got, "\n")] = '\0';
	if (strcmp(got, want) != 0)
		fail_msg("%s: expected [%s], got [%s]", path, want, got);
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static bool file_exists(const char *dir, const char *file)
{
	ar_autofree char *path = ar_xasprintf("%s/%s", dir, file);
	return exists(path);
}

static void expect_kind(const struct ar_cgroup *cg)
{
	const char *want = getenv("AR_CGROUP_EXPECT_KIND");
	if (want)
		assert_string_equal(ar_cgroup_kind(cg), want);
}

/* A child that waits for the go byte on a pipe, then runs fn and exits with its
 * result. The parent moves it into the cgroup before releasing it. */
struct child {
	pid_t pid;
	int go;
	int report; /* read end of the child's report pipe */
};

static struct child spawn(int (*fn)(int report_fd))
{
	int go[2], rep[2];
	struct child c;

	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
	c.pid = fork();
	assert_true(c.pid >= 0);
	if (c.pid == 0) {
		char b;
		close(go[1]);
		close(rep[0]);
		if (read(go[0], &b, 1) != 1)
			_exit(100);
		_exit(fn(rep[1]));
	}
	close(go[0]);
	close(rep[1]);
	cur_child = c.pid;
	c.go = go[1];
	c.report = rep[0];
	return c;
}

static void release(struct child *c)
{
	assert_int_equal(write(c->go, "x", 1), 1);
	close(c->go);
}

static int wait_status(pid_t pid)
{
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (pid == cur_child)
		cur_child = 0;
	return st;
}

static void enter(struct ar_cgroup *cg, pid_t pid)
{
	ar_auto_error ar_error_t err = NULL;

	if (ar_cgroup_enter(cg, pid, &err) == -1)
		fail_msg("ar_cgroup_enter: %s", err->msg);
}

static int block_forever(int fd)
{
	pause();
	return 0;
}

static void test_limits_and_teardown(void **state)
{
	struct ar_policy p = policy(64 << 20, 16, 200);
	ar_auto_error ar_error_t err = NULL;

	need_root();
	struct where wm = expected_dir("memory"), wp = expected_dir("pids"),
		     wc = expected_dir("cpu");
	struct ar_cgroup *cg = create(&p);
	expect_kind(cg);
	ar_autofree char *mem = pick(cg, wm);
	ar_autofree char *pids = pick(cg, wp);
	ar_autofree char *cpu = pick(cg, wc);
	assert_string_equal(ar_cgroup_path(cg), mem);
	if (strcmp(ar_cgroup_kind(cg), "v2") == 0) {
		expect_file(mem, "memory.max", "67108864");
		if (file_exists(mem, "memory.swap.max"))
			expect_file(mem, "memory.swap.max", "0");
		expect_file(mem, "pids.max", "16");
		expect_file(mem, "cpu.max", "20000 100000");
	} else {
		assert_string_equal(ar_cgroup_kind(cg), "v1");
		expect_file(mem, "memory.limit_in_bytes", "67108864");
		if (file_exists(mem, "memory.memsw.limit_in_bytes"))
			expect_file(mem, "memory.memsw.limit_in_bytes", "67108864");
		expect_file(pids, "pids.max", "16");
		expect_file(cpu, "cpu.cfs_quota_us", "20000");
		expect_file(cpu, "cpu.cfs_period_us", "100000");
	}

	struct child c = spawn(block_forever);
	enter(cg, c.pid);
	release(&c);
	/* the child is listed in the sandbox cgroup */
	ar_autofree char *procs = NULL;
	ar_autofree char *ppath = ar_xasprintf("%s/cgroup.procs", pids);
	assert_int_equal(ar_read_file(ppath, 0, &procs, NULL, NULL), 0);
	assert_int_equal(atoi(procs), c.pid);
	assert_false(ar_cgroup_oom_killed(cg));

	/* destroy kills what is left and removes every directory */
	destroy();
	int st = wait_status(c.pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
	assert_false(exists(mem));
	assert_false(exists(pids));
	assert_false(exists(cpu));
	close(c.report);
}

/* Fork until the pids limit says no; report how many forks worked, and why not. */
static int fork_until_refused(int report)
{
	int n = 0, e = 0;

	for (int i = 0; i < 64; i++) {
		pid_t k = fork();
		if (k == 0) {
			pause();
			_exit(0);
		}
		if (k == -1) {
			e = errno;
			break;
		}
		n++;
	}
	dprintf(report, "%d %d\n", n, e);
	return 0;
}

static void test_pids_limit(void **state)
{
	struct ar_policy p = policy(0, 8, 0);
	ar_auto_error ar_error_t err = NULL;
	char buf[64] = {0};
	int forks = -1, e = -1;

	need_root();
	struct where w = expected_dir("pids");
	struct ar_cgroup *cg = create(&p);
	ar_autofree char *dir = pick(cg, w);
	struct child c = spawn(fork_until_refused);
	enter(cg, c.pid);
	release(&c);
	assert_true(read(c.report, buf, sizeof(buf) - 1) > 0);
	assert_int_equal(sscanf(buf, "%d %d", &forks, &e), 2);
	assert_int_equal(wait_status(c.pid), 0);
	/* the child itself is one of the 8 */
	assert_int_equal(forks, 7);
	assert_int_equal(e, EAGAIN);
	/* its 7 children are still inside, orphaned: destroy must kill them */
	destroy();
	assert_false(exists(dir));
	close(c.report);
}

static int allocate_256m(int report)
{
	for (int i = 0; i < 256; i++) {
		char *m = malloc(1 << 20);
		if (!m)
			return 3;
		memset(m, i + 1, 1 << 20);
	}
	return 0;
}

static int allocate_8m(int report)
{
	char *m = malloc(8 << 20);
	if (!m)
		return 3;
	memset(m, 1, 8 << 20);
	free(m);
	return 0;
}

static void run_alloc(int (*fn)(int), int *status, bool *oom)
{
	struct ar_policy p = policy(64 << 20, 0, 0);
	ar_auto_error ar_error_t err = NULL;
	struct ar_cgroup *cg = create(&p);

	struct child c = spawn(fn);
	enter(cg, c.pid);
	release(&c);
	*status = wait_status(c.pid);
	*oom = ar_cgroup_oom_killed(cg);
	destroy();
	close(c.report);
}

static void test_memory_oom(void **state)
{
	int st;
	bool oom;

	need_root();
	run_alloc(allocate_256m, &st, &oom);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
	assert_true(oom);
	/* a fresh cgroup that stays under its limit reports no OOM */
	run_alloc(allocate_8m, &st, &oom);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_false(oom);
}

static double now(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Spin for 1.5 s of wall time; report the CPU time used per mille of the wall. */
static int spin(int report)
{
	double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	volatile unsigned long x = 0;

	while (now(CLOCK_MONOTONIC) - w0 < 1.5)
		for (int i = 0; i < 10000; i++)
			x++;
	dprintf(report, "%d\n",
		(int)(1000 * (now(CLOCK_PROCESS_CPUTIME_ID) - c0) / (now(CLOCK_MONOTONIC) - w0)));
	return 0;
}

static void test_cpu_quota(void **state)
{
	struct ar_policy p = policy(0, 0, 200);
	ar_auto_error ar_error_t err = NULL;
	char buf[32] = {0};

	need_root();
	struct ar_cgroup *cg = create(&p);
	struct child c = spawn(spin);
	enter(cg, c.pid);
	release(&c);
	assert_true(read(c.report, buf, sizeof(buf) - 1) > 0);
	assert_int_equal(wait_status(c.pid), 0);
	destroy();
	close(c.report);
	int permille = atoi(buf);
	print_message("cpu 0.2: %d per mille of one CPU\n", permille);
	/* 20% quota; allow the first period's slack */
	assert_in_range(permille, 1, 300);
}

static pid_t dead_pid(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	wait_status(pid);
	return pid;
}

static void test_sweep(void **state)
{
	struct ar_policy p = policy(0, 8, 0);

	need_root();
	struct ar_cgroup *cg = create(&p);
	ar_autofree char *parent = ar_xstrdup(ar_cgroup_path(cg));
	*strrchr(parent, '/') = '\0';
	destroy();

	ar_autofree char *dead = ar_xasprintf("%s/agentrun-sweep-%d", parent, (int)dead_pid());
	ar_autofree char *live = ar_xasprintf("%s/agentrun-sweep-%d", parent, (int)getppid());
	ar_autofree char *other = ar_xasprintf("%s/notours-%d", parent, (int)dead_pid());
	assert_int_equal(mkdir(dead, 0755), 0);
	assert_int_equal(mkdir(live, 0755), 0);
	assert_int_equal(mkdir(other, 0755), 0);
	int removed = ar_cgroup_sweep();
	bool dead_gone = !exists(dead), live_kept = exists(live), other_kept = exists(other);
	rmdir(dead);
	rmdir(live);
	rmdir(other);
	assert_true(removed >= 1);
	assert_true(dead_gone);
	assert_true(live_kept);
	assert_true(other_kept);
}

/* The sandbox's cgroup, then the proxy's, as run makes them: on v2 in a cgroup of its
 * own the first moves this process into its leaf, and the second still goes beside
 * the first (not into the leaf); the step is undone when the last one goes. */
static void test_two_cgroups(void **state)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_policy p = policy(64 << 20, 16, 0), q = policy(32 << 20, 8, 0);
	ar_autofree char *self = NULL;
	ar_autofree char *after = NULL;
	char name2[80];

	need_root();
	assert_int_equal(ar_read_file("/proc/self/cgroup", 0, &self, NULL, NULL), 0);
	ar_autofree char *parent = ar_xstrdup(ar_cgroup_path(create(&p)));
	*strrchr(parent, '/') = '\0';
	snprintf(name2, sizeof(name2), "%s-proxy", cg_name);
	if (ar_cgroup_create(&q.limits, name2, &cur2, &err) == -1)
		fail_msg("the second cgroup: %s", err->msg);
	ar_autofree char *want = ar_xasprintf("%s/%s", parent, name2);
	assert_string_equal(ar_cgroup_path(cur2), want);
	destroy();
	assert_int_equal(ar_cgroup_destroy(cur2, &err), 0);
	cur2 = NULL;
	assert_false(exists(want));
	assert_int_equal(ar_read_file("/proc/self/cgroup", 0, &after, NULL, NULL), 0);
	assert_string_equal(after, self); /* out of the leaf again, if it stepped in */
}

/* A leftover with our own name (a dead process had our PID) is reused. */
static void test_reuse_stale_name(void **state)
{
	struct ar_policy p = policy(0, 8, 0);

	need_root();
	ar_autofree char *dir = ar_xstrdup(ar_cgroup_path(create(&p)));
	destroy();
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_string_equal(ar_cgroup_path(create(&p)), dir);
	destroy();
	assert_false(exists(dir));
}

static void test_bad_names(void **state)
{
	static const char *const bad[] = {"", ".", "..", "a/b", "../agentrun-x-1"};
	struct ar_policy p = policy(0, 8, 0);

	for (size_t i = 0; i < AR_ARRAY_SIZE(bad); i++) {
		struct ar_cgroup *cg = NULL;
		ar_auto_error ar_error_t err = NULL;
		assert_int_equal(ar_cgroup_create(&p.limits, bad[i], &cg, &err), -1);
		assert_null(cg);
		assert_non_null(strstr(err->msg, "invalid cgroup name"));
	}
	assert_int_equal(ar_cgroup_destroy(NULL, NULL), 0);
}

/* No agentrun-* directory of ours is left next to where we create. */
static int count_ours(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	char want[32];

	if (!d)
		return 0;
	snprintf(want, sizeof(want), "-%d", (int)getpid());
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name), wl = strlen(want);
		if (strncmp(e->d_name, "agentrun", 8) == 0 && l > wl &&
		    strcmp(e->d_name + l - wl, want) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* AR_CGROUP_EXPECT_FAIL: the host cannot enforce; creation must fail closed with a
 * message containing the given text, and leave nothing behind. */
static void test_fail_closed(void **state)
{
	struct ar_policy p = policy(64 << 20, 16, 200);
	struct ar_cgroup *cg = NULL;
	ar_auto_error ar_error_t err = NULL;
	const char *want = getenv("AR_CGROUP_EXPECT_FAIL");
	ar_autofree char *own = own_dir(NULL);

	need_root();
	assert_int_equal(ar_cgroup_create(&p.limits, cg_name, &cg, &err), -1);
	assert_null(cg);
	print_message("fail-closed message: %s\n", err->msg);
	if (!strstr(err->msg, want))
		fail_msg("message [%s] lacks [%s]", err->msg, want);
	assert_non_null(strstr(err->msg, "use --no-cgroups to run without limits"));
	if (own)
		assert_int_equal(count_ours(own), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_limits_and_teardown, teardown),
	    cmocka_unit_test_teardown(test_pids_limit, teardown),
	    cmocka_unit_test_teardown(test_memory_oom, teardown),
	    cmocka_unit_test_teardown(test_cpu_quota, teardown),
	    cmocka_unit_test_teardown(test_sweep, teardown),
	    cmocka_unit_test_teardown(test_reuse_stale_name, teardown),
	    cmocka_unit_test_teardown(test_two_cgroups, teardown),
	    cmocka_unit_test_teardown(test_bad_names, teardown),
	};
	const struct CMUnitTest fail_tests[] = {
	    cmocka_unit_test_teardown(test_fail_closed, teardown),
	};

	if (getenv("AR_CGROUP_EXPECT_FAIL"))
		return cmocka_run_group_tests(fail_tests, setup, NULL);
	return cmocka_run_group_tests(tests, setup, NULL);
}

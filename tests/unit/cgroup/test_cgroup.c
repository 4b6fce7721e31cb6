/* Unit tests for the pure cgroup helpers on captured text: /proc/self/cgroup,
 * mountinfo of hybrid, pure-v2 and containerised hosts, memory.events,
 * memory.oom_control, controller lists, cgroup.procs, cpu.max and our names. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/cgroup.h"

/* This build machine: hybrid, memory/pids/cpu on v1, cgroup2 at .../unified. */
static const char hybrid_self[] = "9:name=systemd:/\n"
				  "8:pids:/\n"
				  "7:blkio:/\n"
				  "4:memory:/process_api/d59e8a6f\n"
				  "3:cpuset:/\n"
				  "2:cpuacct:/\n"
				  "1:cpu:/\n"
				  "0::/\n";
static const char hybrid_mountinfo[] =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

/* A systemd host with pure v2 (and optional fields before the separator). */
static const char v2_self[] = "0::/user.slice/user-1000.slice/session-3.scope\n";
static const char v2_mountinfo[] =
    "24 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
    "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

/* Older Debian/Ubuntu style: cpu and cpuacct co-mounted. */
static const char comount_self[] = "5:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n";
static const char comount_mountinfo[] =
    "41 31 0:38 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
    "42 31 0:39 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";

static void test_proc_v2_line(void **state)
{
	char *p = NULL;

	assert_int_equal(ar_cgroup_parse_proc(v2_self, NULL, &p), 0);
	assert_string_equal(p, "/user.slice/user-1000.slice/session-3.scope");
	free(p);
	assert_int_equal(ar_cgroup_parse_proc(hybrid_self, NULL, &p), 0);
	assert_string_equal(p, "/");
	free(p);
}

static void test_proc_v1_lines(void **state)
{
	char *p = NULL;

	assert_int_equal(ar_cgroup_parse_proc(hybrid_self, "memory", &p), 0);
	assert_string_equal(p, "/process_api/d59e8a6f");
	free(p);
	assert_int_equal(ar_cgroup_parse_proc(hybrid_self, "cpu", &p), 0);
	assert_string_equal(p, "/"); /* not the cpuacct or cpuset line */
	free(p);
	assert_int_equal(ar_cgroup_parse_proc(comount_self, "cpuacct", &p), 0);
	assert_string_equal(p, "/docker/abc");
	free(p);
	/* "name=systemd" is not the controller "systemd"; no v1 lines on pure v2 */
	assert_int_equal(ar_cgroup_parse_proc(hybrid_self, "systemd", &p), -1);
	assert_int_equal(ar_cgroup_parse_proc(v2_self, "memory", &p), -1);
	assert_int_equal(ar_cgroup_parse_proc("0::\n", NULL, &p), -1);
	assert_int_equal(ar_cgroup_parse_proc("", NULL, &p), -1);
	assert_int_equal(ar_cgroup_parse_proc("garbage\n1:\n", "memory", &p), -1);
}

static void expect_dir(const char *mi, const char *ctrl, const char *cgpath, const char *want)
{
	char *d = NULL;

	if (!want) {
		assert_int_equal(ar_cgroup_find_dir(mi, ctrl, cgpath, &d), -1);
		return;
	}
	assert_int_equal(ar_cgroup_find_dir(mi, ctrl, cgpath, &d), 0);
	assert_string_equal(d, want);
	free(d);
}

static void test_mountinfo_hybrid(void **state)
{
	expect_dir(hybrid_mountinfo, "memory", "/process_api/d59e8a6f",
		   "/sys/fs/cgroup/memory/process_api/d59e8a6f");
	expect_dir(hybrid_mountinfo, "pids", "/", "/sys/fs/cgroup/pids");
	expect_dir(hybrid_mountinfo, "cpu", "/", "/sys/fs/cgroup/cpu");
	expect_dir(hybrid_mountinfo, NULL, "/", "/sys/fs/cgroup/unified");
	expect_dir(hybrid_mountinfo, "hugetlb", "/", NULL);
}

static void test_mountinfo_v2(void **state)
{
	expect_dir(v2_mountinfo, NULL, "/user.slice/user-1000.slice/session-3.scope",
		   "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope");
	expect_dir(v2_mountinfo, "memory", "/", NULL);
}

static void test_mountinfo_comount(void **state)
{
	expect_dir(comount_mountinfo, "cpu", "/docker/abc",
		   "/sys/fs/cgroup/cpu,cpuacct/docker/abc");
	expect_dir(comount_mountinfo, "cpuacct", "/docker/abc",
		   "/sys/fs/cgroup/cpu,cpuacct/docker/abc");
	expect_dir(comount_mountinfo, "cpuset", "/docker/abc", NULL);
}

/* A container that sees only its subtree: the mount root is the container's cgroup. */
static void test_mountinfo_nonroot_mount(void **state)
{
	static const char mi[] =
	    "700 600 0:40 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n"
	    "701 600 0:41 /kubepods/x /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";

	expect_dir(mi, "memory", "/docker/abc", "/sys/fs/cgroup/memory");
	expect_dir(mi, "memory", "/docker/abc/sub", "/sys/fs/cgroup/memory/sub");
	expect_dir(mi, "memory", "/docker/abcdef", NULL); /* a prefix, not a parent */
	expect_dir(mi, "memory", "/other", NULL);
	expect_dir(mi, NULL, "/kubepods/x/y", "/sys/fs/cgroup/y");
}

static void test_mountinfo_escapes(void **state)
{
	static const char mi[] = "50 1 0:45 / /tmp/my\\040cg rw - cgroup2 none rw\n"
				 "51 1 0:46 / /mnt/broken rw - cgroup2\n"; /* short line */

	expect_dir(mi, NULL, "/a", "/tmp/my cg/a");
	expect_dir("", NULL, "/", NULL);
	expect_dir("51 1 0:46 / /mnt/broken rw - cgroup2\n", NULL, "/", NULL);
}

static void test_keyed(void **state)
{
	static const char events[] = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
	static const char oom_control[] = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
	int64_t v = -1;

	assert_int_equal(ar_cgroup_parse_keyed(events, "oom_kill", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(ar_cgroup_parse_keyed(events, "max", &v), 0);
	assert_int_equal(v, 12);
	assert_int_equal(ar_cgroup_parse_keyed(oom_control, "oom_kill", &v), 0);
	assert_int_equal(v, 3); /* not oom_kill_disable */
	assert_int_equal(ar_cgroup_parse_keyed(oom_control, "under_oom", &v), 0);
	assert_int_equal(v, 0);
	/* v1 before 4.13: no oom_kill line */
	assert_int_equal(ar_cgroup_parse_keyed("oom_kill_disable 0\nunder_oom 0\n", "oom_kill", &v),
			 -1);
	assert_int_equal(ar_cgroup_parse_keyed("oom_kill x\n", "oom_kill", &v), -1);
	assert_int_equal(ar_cgroup_parse_keyed("oom_kill \n", "oom_kill", &v), -1);
	assert_int_equal(ar_cgroup_parse_keyed("oom_kill -1\n", "oom_kill", &v), -1);
	assert_int_equal(ar_cgroup_parse_keyed("oom_kill 5", "oom_kill", &v), 0); /* no newline */
	assert_int_equal(v, 5);
}

static void test_list_has(void **state)
{
	assert_true(ar_cgroup_list_has("cpuset cpu io memory pids\n", "cpu"));
	assert_true(ar_cgroup_list_has("cpuset cpu io memory pids\n", "pids"));
	assert_true(ar_cgroup_list_has("memory", "memory"));
	assert_false(ar_cgroup_list_has("cpuset io memory\n", "cpu"));
	assert_false(ar_cgroup_list_has("hugetlb\n", "memory"));
	assert_false(ar_cgroup_list_has("\n", "memory"));
	assert_false(ar_cgroup_list_has("", "memory"));
}

static void test_pids(void **state)
{
	pid_t *p = NULL;
	size_t n = 99;

	assert_int_equal(ar_cgroup_parse_pids("12\n345\n6789\n", &p, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(p[0], 12);
	assert_int_equal(p[2], 6789);
	free(p);
	assert_int_equal(ar_cgroup_parse_pids("", &p, &n), 0);
	assert_int_equal(n, 0);
	free(p);
	assert_int_equal(ar_cgroup_parse_pids("12\nabc\n", &p, &n), -1);
	assert_int_equal(ar_cgroup_parse_pids("0\n", &p, &n), -1);
	assert_int_equal(ar_cgroup_parse_pids("99999999999999999999\n", &p, &n), -1);
}

static void test_cpu_max(void **state)
{
	char b[64];

	assert_int_equal(ar_cgroup_cpu_quota(1000), 100000);
	assert_int_equal(ar_cgroup_cpu_quota(200), 20000);
	assert_int_equal(ar_cgroup_cpu_quota(2500), 250000);
	assert_int_equal(ar_cgroup_cpu_quota(1), 1000); /* the kernel minimum */
	assert_int_equal(ar_cgroup_cpu_quota(0), -1);
	ar_cgroup_format_cpu_max(200, b, sizeof(b));
	assert_string_equal(b, "20000 100000");
	ar_cgroup_format_cpu_max(1250, b, sizeof(b));
	assert_string_equal(b, "125000 100000");
	ar_cgroup_format_cpu_max(0, b, sizeof(b));
	assert_string_equal(b, "max 100000");
	ar_cgroup_format_cpu_max(INT64_MAX, b, sizeof(b));
	assert_string_equal(b, "9223372036854775 100000");
}

static void test_name_owner(void **state)
{
	assert_int_equal(ar_cgroup_name_owner("agentrun-triage-1234"), 1234);
	assert_int_equal(ar_cgroup_name_owner("agentrun-my-policy-77"), 77);
	assert_int_equal(ar_cgroup_name_owner("agentrun_supervisor-42"), 42);
	assert_int_equal(ar_cgroup_name_owner("agentrun-triage-"), -1);
	assert_int_equal(ar_cgroup_name_owner("agentrun-triage-0"), -1);
	assert_int_equal(ar_cgroup_name_owner("agentrun-triage-12x"), -1);
	assert_int_equal(ar_cgroup_name_owner("other-triage-1234"), -1);
	assert_int_equal(ar_cgroup_name_owner("agentrunner-1234"), -1);
	assert_int_equal(ar_cgroup_name_owner("system.slice"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_proc_v2_line),
	    cmocka_unit_test(test_proc_v1_lines),
	    cmocka_unit_test(test_mountinfo_hybrid),
	    cmocka_unit_test(test_mountinfo_v2),
	    cmocka_unit_test(test_mountinfo_comount),
	    cmocka_unit_test(test_mountinfo_nonroot_mount),
	    cmocka_unit_test(test_mountinfo_escapes),
	    cmocka_unit_test(test_keyed),
	    cmocka_unit_test(test_list_has),
	    cmocka_unit_test(test_pids),
	    cmocka_unit_test(test_cpu_max),
	    cmocka_unit_test(test_name_owner),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

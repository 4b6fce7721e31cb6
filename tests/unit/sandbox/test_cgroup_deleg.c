/* Unit tests for the delegation finder (cgroup_deleg.c): which limits a caller
 * without root can have, on captured /proc/self/cgroup and mountinfo of a hybrid
 * host, a v1-only host, systemd pure-v2 hosts (a login session, a
 * `systemd-run --user --scope -p Delegate=yes` scope, a container's root cgroup),
 * with the permission and process facts of each case, and the exact line. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/cgroup.h"

#define ALL (AR_CGROUP_MEMORY | AR_CGROUP_PIDS | AR_CGROUP_CPU)
#define RUN "`systemd-run --user --scope -p Delegate=yes agentrun ...`"

/* This build machine: hybrid, memory/pids/cpu on v1, cgroup2 at .../unified with no
 * controllers. */
static const char hybrid_self[] = "12:pids:/user.slice/user-1000.slice/session-4.scope\n"
				  "6:memory:/user.slice/user-1000.slice/session-4.scope\n"
				  "3:cpu,cpuacct:/user.slice\n"
				  "1:name=systemd:/user.slice/user-1000.slice/session-4.scope\n"
				  "0::/user.slice/user-1000.slice/session-4.scope\n";
static const char hybrid_mountinfo[] =
    "31 23 0:28 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
    "35 31 0:32 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
    "36 31 0:33 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"
    "40 31 0:37 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids\n";
#define HYBRID_DIR "/sys/fs/cgroup/unified/user.slice/user-1000.slice/session-4.scope"

/* An older v1-only host: no cgroup2 mount, no 0:: line. */
static const char v1_self[] = "4:memory:/user.slice\n3:pids:/user.slice\n";
static const char v1_mountinfo[] =
    "36 31 0:33 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
    "40 31 0:37 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n";

/* Pure v2 with systemd: an ssh login session (root's, not delegated) and a scope made
 * by `systemd-run --user --scope -p Delegate=yes` (the user's). */
static const char v2_mountinfo[] =
    "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";
static const char session_self[] = "0::/user.slice/user-1000.slice/session-3.scope\n";
#define SESSION_DIR "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope"
static const char scope_self[] =
    "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-r5e2.scope\n";
#define SCOPE_DIR                                                                                  \
	"/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-r5e2.scope"

static const struct ar_limits limits = {
    .pids = 64, .memory = 256 << 20, .cpus_milli = 1000, .memory_str = "256m", .cpus_str = "1"};

/* What ar_cgroup_plan_delegated would read, for a case: the directory comes from the
 * texts as the plan finds it. */
static struct ar_cgroup_facts facts(const char *self, const char *mountinfo, char **dir)
{
	char *path = NULL;

	*dir = NULL;
	if (ar_cgroup_parse_proc(self, NULL, &path) == 0)
		ar_cgroup_find_dir(mountinfo, NULL, path, dir);
	free(path);
	return (struct ar_cgroup_facts){.self = self,
					.mountinfo = mountinfo,
					.dir = *dir,
					.pid = 4242,
					.uid = 1000,
					.needed = ALL};
}

/* The `systemd-run --user --scope -p Delegate=yes` scope, ours to write. */
static struct ar_cgroup_facts scope(const char *controllers, const char *procs, char **dir)
{
	struct ar_cgroup_facts f = facts(scope_self, v2_mountinfo, dir);
	f.controllers = controllers;
	f.procs = procs;
	f.writable = true;
	return f;
}

static enum ar_cgroup_deleg decide(const struct ar_cgroup_facts *f, unsigned *usable,
				   struct ar_cgroup_gap *gap)
{
	enum ar_cgroup_deleg d = ar_cgroup_delegation(f, usable);
	memset(gap, 0, sizeof(*gap));
	ar_cgroup_gap_explain(f, d, *usable, &limits, gap);
	return d;
}

/* This host: the unified hierarchy is there but empty; the controllers are v1's. */
static void test_hybrid(void **state)
{
	char *dir;
	struct ar_cgroup_facts f = facts(hybrid_self, hybrid_mountinfo, &dir);
	struct ar_cgroup_gap gap;
	unsigned usable = 99;

	assert_string_equal(dir, HYBRID_DIR);
	f.controllers = "";
	f.procs = "4242\n";
	f.writable = true; /* even a writable unified cgroup has nothing to give */
	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_V1);
	assert_int_equal(usable, 0);
	assert_int_equal(gap.missing, ALL);
	assert_string_equal(gap.limits, "memory 256m, pids 64, cpus 1");
	assert_string_equal(gap.why,
			    "this host has the memory, pids and cpu controllers on cgroup v1, "
			    "which is never delegated to a user; on cgroup v2 (boot with "
			    "systemd.unified_cgroup_hierarchy=1) run " RUN);
	/* one limit only: the others are not asked for */
	f.needed = AR_CGROUP_PIDS;
	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_V1);
	assert_string_equal(gap.limits, "pids 64");
	assert_string_equal(gap.why, "this host has the pids controller on cgroup v1, which is "
				     "never delegated to a user; on cgroup v2 (boot with "
				     "systemd.unified_cgroup_hierarchy=1) run " RUN);
	free(dir);
}

static void test_v1_only_and_none(void **state)
{
	char *dir;
	struct ar_cgroup_facts f = facts(v1_self, v1_mountinfo, &dir);
	struct ar_cgroup_gap gap;
	unsigned usable;

	assert_null(dir);
	f.needed = AR_CGROUP_MEMORY | AR_CGROUP_PIDS;
	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_V1);
	assert_string_equal(gap.limits, "memory 256m, pids 64");
	assert_non_null(strstr(gap.why, "the memory and pids controllers on cgroup v1"));
	/* no cgroup hierarchy at all (a bare chroot, /sys not mounted) */
	f = facts("", "", &dir);
	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_NO_V2);
	assert_int_equal(gap.missing, ALL);
	assert_string_equal(gap.why, "no cgroup v2 hierarchy is mounted for this process; on "
				     "cgroup v2 run " RUN);
}

/* An ssh session scope belongs to root: not ours to write. */
static void test_not_delegated(void **state)
{
	char *dir;
	struct ar_cgroup_facts f = facts(session_self, v2_mountinfo, &dir);
	struct ar_cgroup_gap gap;
	unsigned usable;

	assert_string_equal(dir, SESSION_DIR);
	f.controllers = "cpu io memory pids";
	f.procs = "812\n4242\n";
	f.writable = false;
	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_NOT_WRITABLE);
	assert_int_equal(usable, 0);
	assert_string_equal(gap.limits, "memory 256m, pids 64, cpus 1");
	assert_string_equal(gap.why, "cgroup `" SESSION_DIR "` is not delegated to uid 1000 (not "
				     "writable); run " RUN);
	free(dir);
}

static void test_delegated_scope(void **state)
{
	char *dir;
	struct ar_cgroup_facts f = facts(scope_self, v2_mountinfo, &dir);
	struct ar_cgroup_gap gap;
	unsigned usable;

	assert_string_equal(dir, SCOPE_DIR);
	f.controllers = "cpu memory pids\n";
	f.procs = "4242\n";
	f.writable = true;
	f.is_root = false;
	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_DELEGATED);
	assert_int_equal(usable, ALL);
	assert_int_equal(gap.missing, 0);
	assert_string_equal(gap.limits, "");
	assert_string_equal(gap.why, "");
	/* agentrun already in its leaf (the proxy's cgroup, after the sandbox's): empty */
	f.procs = "";
	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_DELEGATED);
	/* no limit asked for: still a cgroup of its own (teardown finds every process) */
	f.needed = 0;
	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_DELEGATED);
	assert_int_equal(usable, 0);
	free(dir);
}

/* Older systemd releases delegate `pids memory` to user@.service, not cpu. */
static void test_partial(void **state)
{
	char *dir;
	struct ar_cgroup_facts f = scope("memory pids", "4242\n", &dir);
	struct ar_cgroup_gap gap;
	unsigned usable;

	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_PARTIAL);
	assert_int_equal(usable, AR_CGROUP_MEMORY | AR_CGROUP_PIDS);
	assert_int_equal(gap.missing, AR_CGROUP_CPU);
	assert_string_equal(gap.limits, "cpus 1");
	assert_string_equal(gap.why, "the cpu controller is not delegated to `" SCOPE_DIR
				     "`; have systemd delegate it (`systemctl edit user@.service`: "
				     "`Delegate=cpu memory pids` under [Service]) and run " RUN);
	f.controllers = "io";
	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_PARTIAL);
	assert_int_equal(usable, 0);
	assert_string_equal(gap.limits, "memory 256m, pids 64, cpus 1");
	assert_non_null(strstr(gap.why, "the memory, pids and cpu controllers are not delegated "
					"to `" SCOPE_DIR "`; have systemd delegate them"));
	free(dir);
}

/* A delegated cgroup that also holds the user's shell: the no-internal-processes rule. */
static void test_crowded(void **state)
{
	char *dir;
	struct ar_cgroup_facts f = scope("cpu memory pids", "812\n4242\n", &dir);
	struct ar_cgroup_gap gap;
	unsigned usable;

	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_CROWDED);
	assert_int_equal(usable, 0);
	assert_string_equal(gap.why, "cgroup `" SCOPE_DIR "` holds other processes, so it cannot "
				     "hand controllers to a child (the no-internal-processes "
				     "rule); run " RUN " (a cgroup of its own)");
	/* cannot tell: as crowded */
	f.procs = NULL;
	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_CROWDED);
	f.procs = "garbage\n";
	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_CROWDED);
	/* the root cgroup (a container's, with a cgroup namespace) is exempt */
	free(dir);
	f = facts("0::/\n", v2_mountinfo, &dir);
	assert_string_equal(dir, "/sys/fs/cgroup");
	f.controllers = "cpu memory pids";
	f.procs = "1\n812\n4242\n";
	f.writable = true;
	f.is_root = true;
	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_DELEGATED);
	assert_int_equal(usable, ALL);
	free(dir);
}

/* A controller list that only looks like it: "memory_x" is not "memory". */
static void test_controller_words(void **state)
{
	char *dir;
	struct ar_cgroup_facts f = scope("memoryx pids cpu", "4242", &dir);
	struct ar_cgroup_gap gap;
	unsigned usable;

	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_PARTIAL);
	assert_int_equal(gap.missing, AR_CGROUP_MEMORY);
	assert_string_equal(gap.limits, "memory 256m");
	/* unreadable cgroup.controllers offers nothing */
	f.controllers = NULL;
	assert_int_equal(decide(&f, &usable, &gap), AR_CGROUP_PARTIAL);
	assert_int_equal(usable, 0);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hybrid),	     cmocka_unit_test(test_v1_only_and_none),
	    cmocka_unit_test(test_not_delegated),    cmocka_unit_test(test_delegated_scope),
	    cmocka_unit_test(test_partial),	     cmocka_unit_test(test_crowded),
	    cmocka_unit_test(test_controller_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for seccomp profiles: the runtime-spec and docker parsers, their
 * errors, and the compiled filters' behaviour. Behaviour is checked for real:
 * each case forks a child that sets no_new_privs, installs the filter, makes
 * the calls and reports the results over a pipe. No root needed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <seccomp.h>

#include "agentrun/error.h"
#include "agentrun/log.h"
#include "agentrun/seccomp.h"
#include "agentrun/util.h"

#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

#define MAX_RESULTS 32

/* What the confined child itself needs in allow-list profiles, sanitizer runtime
 * included (it maps shadow memory and handles signals). */
#define ASAN_CALLS                                                                                 \
	"\"read\",\"write\",\"exit\",\"exit_group\",\"mmap\",\"munmap\",\"mprotect\",\"mremap\","  \
	"\"madvise\",\"brk\",\"futex\",\"rt_sigprocmask\",\"rt_sigaction\",\"sigaltstack\","       \
	"\"getpid\",\"gettid\",\"tgkill\",\"prctl\",\"sched_yield\",\"openat\",\"close\","         \
	"\"fstat\",\"newfstatat\",\"readlink\",\"getrlimit\",\"prlimit64\",\"sched_getaffinity\""

/* A probe runs in the confined child and records one value per call. */
struct results {
	long v[MAX_RESULTS];
	int n;
};
typedef void (*probe_fn)(struct results *r, void *arg);

struct outcome {
	struct results r;
	int exited; /* exit status, or -1 */
	int signo;  /* terminating signal, or 0 */
};

/* 0 on success, -errno on failure: what the filter let through or denied. */
static long sc(long rc)
{
	return rc == -1 ? -errno : 0;
}

static void record(struct results *r, long v)
{
	if (r->n < MAX_RESULTS)
		r->v[r->n++] = v;
}

static struct outcome run_confined(const struct ar_seccomp *s, probe_fn fn, void *arg)
{
	struct outcome o = {.exited = -1};
	int p[2], status = 0;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		struct results r = {.n = 0};
		ar_error_t err = NULL;
		close(p[0]);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
			_exit(98);
		if (ar_seccomp_install(s, &err) < 0)
			_exit(99);
		fn(&r, arg);
		if (write(p[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(97);
		_exit(0);
	}
	close(p[1]);
	ssize_t got = TEMP_FAILURE_RETRY(read(p[0], &o.r, sizeof(o.r)));
	close(p[0]);
	assert_int_equal(TEMP_FAILURE_RETRY(waitpid(pid, &status, 0)), pid);
	if (WIFEXITED(status))
		o.exited = WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		o.signo = WTERMSIG(status);
	if (o.exited == 0)
		assert_int_equal(got, (ssize_t)sizeof(o.r));
	return o;
}

static struct ar_seccomp *parse_ok(const char *json)
{
	struct ar_seccomp *s = NULL;
	ar_error_t err = NULL;

	if (ar_seccomp_parse(json, strlen(json), "t.json", &s, &err) < 0)
		fail_msg("unexpected error: %s", err->msg);
	assert_non_null(s);
	return s;
}

static struct ar_seccomp *default_profile(void)
{
	struct ar_seccomp *s = NULL;
	ar_error_t err = NULL;

	if (ar_seccomp_prepare("default", &s, &err) < 0)
		fail_msg("default profile: %s", err->msg);
	assert_non_null(s);
	return s;
}

/* ---- the default profile denies ---- */

static long raw_clone(unsigned long flags)
{
	long rc = syscall(SYS_clone, flags | SIGCHLD, 0, NULL, NULL, 0);
	if (rc == 0)
		_exit(0);
	if (rc > 0)
		waitpid((pid_t)rc, NULL, 0);
	return sc(rc);
}

/* i386 getpid through int $0x80; returns the raw kernel result (pid or -errno). */
static long int80_getpid(void)
{
	long ret = 20; /* __NR_getpid on i386 */
	__asm__ volatile("int $0x80" : "+a"(ret) : : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

static void probe_denied(struct results *r, void *arg)
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	char c = 'x';

	record(r, sc(unshare(CLONE_NEWUSER)));
	record(r, sc(unshare(CLONE_NEWNS)));
	record(r, sc(setns(0, CLONE_NEWNET)));
	record(r, sc(mount("none", "/nonexistent-ar", "tmpfs", 0, NULL)));
	record(r, sc(syscall(SYS_fsopen, "tmpfs", 0)));
	record(r, sc(syscall(SYS_open_tree, AT_FDCWD, "/", 0)));
	record(r, sc(ptrace(PTRACE_TRACEME, 0, NULL, NULL)));
	record(r, sc(syscall(SYS_process_vm_readv, getppid(), NULL, 0, NULL, 0, 0)));
	record(r, sc(syscall(SYS_bpf, 0, NULL, 0)));
	record(r, sc(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0)));
	record(r, sc(syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3 /* session */, 0)));
	record(r, sc(syscall(SYS_io_uring_setup, 0, NULL)));
	record(r, sc(syscall(SYS_userfaultfd, 0)));
	record(r, sc(socket(AF_PACKET, SOCK_RAW, 0)));
	record(r, sc(socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT)));
	record(r, sc(ioctl(devnull, TIOCSTI, &c)));
	/* the kernel uses only the low 32 bits of the request */
	record(r, sc(syscall(SYS_ioctl, devnull, 0x100000000UL | TIOCSTI, &c)));
	record(r, sc(syscall(SYS_ioctl, devnull, 0xffffffff00000000UL | TIOCLINUX, &c)));
	record(r, sc(ioctl(devnull, TIOCLINUX, &c)));
	record(r, raw_clone(CLONE_NEWNS));
	record(r, raw_clone(CLONE_NEWUSER | CLONE_NEWPID));
	record(r, sc(syscall(__X32_SYSCALL_BIT | SYS_getpid)));
	record(r, sc(chroot("/")));
	record(r, sc(syscall(SYS_kexec_load, 0, 0, NULL, 0x00ff0000UL /* bogus arch */)));
	record(r, sc(syscall(SYS_init_module, NULL, 0, "")));
	record(r, sc(personality(0x0400000 /* READ_IMPLIES_EXEC */)));
	record(r, sc(syscall(SYS_name_to_handle_at, AT_FDCWD, "/", NULL, NULL, 0)));
	record(r, sc(syscall(SYS_unshare, 0x80UL /* CLONE_NEWTIME */)));
}

static void test_default_denies(void **state)
{
	struct ar_seccomp *s = default_profile();
	struct outcome o = run_confined(s, probe_denied, NULL);

	assert_int_equal(o.signo, 0);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.n, 28);
	for (int i = 0; i < o.r.n; i++) {
		if (o.r.v[i] != -EPERM)
			fail_msg("call #%d: expected -EPERM, got %ld", i, o.r.v[i]);
	}
	ar_seccomp_free(s);
}

static void probe_foreign(struct results *r, void *arg)
{
	record(r, int80_getpid());
	record(r, sc(syscall(__X32_SYSCALL_BIT | SYS_getpid)));
	record(r, sc(syscall(SYS_clone3, NULL, 0)));
}

/* Foreign ABIs get the default action (EPERM) instead of their syscalls;
 * clone3 gets ENOSYS so glibc falls back to clone. */
static void test_default_foreign_abis(void **state)
{
	struct ar_seccomp *s = default_profile();
	struct outcome o = run_confined(s, probe_foreign, NULL);

	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.v[0], -EPERM);
	assert_int_equal(o.r.v[1], -EPERM);
	assert_int_equal(o.r.v[2], -ENOSYS);
	ar_seccomp_free(s);
}

static void *thread_fn(void *arg)
{
	return arg;
}

static void probe_allowed(struct results *r, void *arg)
{
	int *fds = arg;
	int sv[2];
	struct termios t;
	pthread_t th;
	void *back = NULL;
	pid_t pid;
	int status = -1;

	pid = fork();
	if (pid == 0)
		_exit(7);
	record(r, pid > 0 && waitpid(pid, &status, 0) == pid && WEXITSTATUS(status) == 7 ? 0 : -1);
	record(r, raw_clone(0));
	record(r, pthread_create(&th, NULL, thread_fn, (void *)r) == 0 &&
			  pthread_join(th, &back) == 0 && back == r
		      ? 0
		      : -1);
	record(r, sc(socket(AF_INET, SOCK_STREAM, 0)));
	record(r, sc(socket(AF_INET6, SOCK_DGRAM, 0)));
	record(r, sc(socket(AF_UNIX, SOCK_STREAM, 0)));
	record(r, sc(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)));
	record(r, sc(socketpair(AF_UNIX, SOCK_STREAM, 0, sv)));
	record(r, sc(tcgetattr(fds[0], &t)));
	record(r, sc(ioctl(fds[1], TIOCGWINSZ, &(struct winsize){0})));
	record(r, sc(personality(0xffffffff) == -1 ? -1 : 0));
	record(r, sc(unshare(CLONE_FILES)));
	record(r, getpid() > 0 ? 0 : -1);
}

static void test_default_allows(void **state)
{
	struct ar_seccomp *s = default_profile();
	int fds[2];

	fds[0] = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(fds[0] >= 0);
	assert_int_equal(grantpt(fds[0]), 0);
	assert_int_equal(unlockpt(fds[0]), 0);
	fds[1] = open(ptsname(fds[0]), O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(fds[1] >= 0);
	struct outcome o = run_confined(s, probe_allowed, fds);
	assert_int_equal(o.signo, 0);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.n, 13);
	for (int i = 0; i < o.r.n; i++) {
		if (o.r.v[i] != 0)
			fail_msg("call #%d: expected success, got %ld", i, o.r.v[i]);
	}
	close(fds[0]);
	close(fds[1]);
	ar_seccomp_free(s);
}

/* The ioctl allow rules must be exactly "low 32 bits not TIOCSTI/TIOCLINUX":
 * evaluate the compiled model's rules over many requests. */
static bool ioctl_allowed(const struct ar_seccomp_profile *p, uint64_t x)
{
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct ar_seccomp_rule *r = &p->rules[i];
		if (strcmp(r->name, "ioctl") != 0 || r->action != SCMP_ACT_ALLOW)
			continue;
		assert_int_equal(r->n_args, 1);
		assert_int_equal(r->args[0].op, SCMP_CMP_MASKED_EQ);
		if ((x & r->args[0].value) == r->args[0].value_two)
			return true;
	}
	return false;
}

static void test_default_ioctl_rules_exact(void **state)
{
	struct ar_seccomp *s = default_profile();
	const struct ar_seccomp_profile *p = ar_seccomp_profile(s);
	static const uint64_t highs[] = {0, 1, 0x80000000, 0xffffffff};
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	for (uint64_t lo = 0; lo < 0x10000; lo++) {
		for (size_t h = 0; h < AR_ARRAY_SIZE(highs); h++) {
			uint64_t x = highs[h] << 32 | lo;
			if (ioctl_allowed(p, x) != (lo != TIOCSTI && lo != TIOCLINUX))
				fail_msg("ioctl request %#llx", (unsigned long long)x);
		}
	}
	for (int i = 0; i < 200000; i++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		uint64_t x = seed, lo = x & 0xffffffffULL;
		if (ioctl_allowed(p, x) != (lo != TIOCSTI && lo != TIOCLINUX))
			fail_msg("ioctl request %#llx", (unsigned long long)x);
	}
	ar_seccomp_free(s);
}

static void test_default_names_resolve(void **state)
{
	ar_autofree char *path = ar_xasprintf("%s/seccomp/default.json", AR_SOURCE_DIR);
	ar_autofree char *data = NULL;
	ar_error_t err = NULL;
	size_t len = 0, checked = 0;
	const cJSON *entry, *name;

	assert_int_equal(ar_read_file(path, 0, &data, &len, &err), 0);
	/* the embedded copy is the file */
	assert_int_equal(len, ar_seccomp_default_json_len);
	assert_memory_equal(data, ar_seccomp_default_json, len);
	cJSON *root = cJSON_Parse(data);
	assert_non_null(root);
	cJSON_ArrayForEach(entry, cJSON_GetObjectItem(root, "syscalls"))
	{
		cJSON_ArrayForEach(name, cJSON_GetObjectItem(entry, "names"))
		{
			if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name->valuestring) <
			    0)
				fail_msg("default.json: syscall `%s` unknown on x86_64",
					 name->valuestring);
			checked++;
		}
	}
	cJSON_Delete(root);
	assert_true(checked > 250);
	struct ar_seccomp *s = default_profile();
	assert_int_equal(ar_seccomp_profile(s)->n_unknown, 0);
	assert_int_equal(ar_seccomp_profile(s)->default_action, SCMP_ACT_ERRNO(EPERM));
	assert_int_equal(ar_seccomp_profile(s)->n_arches, 1);
	ar_seccomp_free(s);
}

/* The forbidden calls must not be on the allow-list at all. */
static void test_default_forbidden_absent(void **state)
{
	static const char *const forbidden[] = {
	    "setns",
	    "mount",
	    "umount2",
	    "pivot_root",
	    "chroot",
	    "fsopen",
	    "fsconfig",
	    "fsmount",
	    "fspick",
	    "move_mount",
	    "open_tree",
	    "mount_setattr",
	    "ptrace",
	    "process_vm_readv",
	    "process_vm_writev",
	    "bpf",
	    "perf_event_open",
	    "keyctl",
	    "add_key",
	    "request_key",
	    "kexec_load",
	    "kexec_file_load",
	    "init_module",
	    "finit_module",
	    "delete_module",
	    "io_uring_setup",
	    "io_uring_enter",
	    "io_uring_register",
	    "userfaultfd",
	    "reboot",
	    "swapon",
	    "swapoff",
	    "acct",
	    "lookup_dcookie",
	    "open_by_handle_at",
	    "name_to_handle_at",
	    "iopl",
	    "ioperm",
	    "syslog",
	    "quotactl",
	    "nfsservctl",
	    "pidfd_getfd",
	    "kcmp",
	    "mbind",
	    "get_mempolicy",
	    "set_mempolicy",
	    "move_pages",
	    "migrate_pages",
	    "modify_ldt",
	};
	struct ar_seccomp *s = default_profile();
	const struct ar_seccomp_profile *p = ar_seccomp_profile(s);

	for (size_t i = 0; i < p->n_rules; i++) {
		for (size_t k = 0; k < AR_ARRAY_SIZE(forbidden); k++) {
			if (strcmp(p->rules[i].name, forbidden[k]) == 0)
				fail_msg("default profile has a rule for `%s`", forbidden[k]);
		}
	}
	ar_seccomp_free(s);
}

/* Ordinary programs still work under the default profile. */
static void test_default_programs(void **state)
{
	char dir[] = "/tmp/ar-seccomp-progs.XXXXXX";
	struct ar_seccomp *s = default_profile();
	int status = -1;
	pid_t pid;

	/* the script skips a program that is not installed; CI installs them all */
	static const char *const progs[] = {"python3", "curl", "git", "unshare"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(progs); i++) {
		ar_autofree char *cmd = ar_xasprintf("command -v %s >/dev/null", progs[i]);
		if (system(cmd) != 0) {
			const char *must = getenv("AGENTRUN_MUST_WORK");
			if (must != NULL && strcmp(must, "1") == 0)
				fail_msg("`%s` is not installed (scripts/install-deps.sh)",
					 progs[i]);
			fprintf(stderr, "note: `%s` not installed, not run\n", progs[i]);
		}
	}
	assert_non_null(mkdtemp(dir));
	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		ar_error_t err = NULL;
		static const char script[] =
		    "set -e; cd \"$1\"; export HOME=\"$1\" LC_ALL=C\n"
		    "ls / | sort >/dev/null\n"
		    "printf 'b\\na\\n' > in.txt; cp in.txt out.txt; "
		    "test \"$(sort out.txt | cat | head -n1)\" = a\n"
		    "mkdir -p d/e && mv out.txt d/e/ && rm -r d && date >/dev/null && id "
		    ">/dev/null\n"
		    "if command -v python3 >/dev/null; then test \"$(python3 -c 'import "
		    "os,subprocess,threading; print(sum(range(4)))')\" = 6; fi\n"
		    "if command -v curl >/dev/null; then curl --version >/dev/null; "
		    "test \"$(curl -s file://\"$1\"/in.txt | head -n1)\" = b; fi\n"
		    "if command -v git >/dev/null; then git init -q r && cd r && echo x > f && "
		    "git add f && git -c user.name=t -c user.email=t@example.invalid commit -qm m "
		    "&& test \"$(git log --format=%s)\" = m && cd ..; fi\n"
		    "if command -v unshare >/dev/null && unshare -U true 2>/dev/null; then exit 3; "
		    "fi\n";
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 || ar_seccomp_install(s, &err) < 0)
			_exit(99);
		execl("/bin/sh", "sh", "-c", script, "sh", dir, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(TEMP_FAILURE_RETRY(waitpid(pid, &status, 0)), pid);
	pid_t rm = fork();
	if (rm == 0) {
		execlp("rm", "rm", "-rf", dir, (char *)NULL);
		_exit(127);
	}
	waitpid(rm, NULL, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	ar_seccomp_free(s);
}

/* ---- the parser: fields ---- */

static void probe_getpgid(struct results *r, void *arg)
{
	const uint64_t *vals = arg;
	for (int i = 0; vals[i] != UINT64_MAX; i++)
		record(r, sc(syscall(SYS_getpgid, vals[i])));
}

/* Each comparison operator: getpgid(v) fails with errno 42 iff the rule matches. */
static void test_parse_ops(void **state)
{
	static const struct {
		const char *op;
		uint64_t value, value_two;
		uint64_t probe[4];
		bool match[3];
	} cases[] = {
	    {"SCMP_CMP_EQ", 5, 0, {5, 6, 0x100000005ULL, UINT64_MAX}, {true, false, false}},
	    {"SCMP_CMP_NE", 5, 0, {5, 6, 0, UINT64_MAX}, {false, true, true}},
	    {"SCMP_CMP_LT", 5, 0, {4, 5, 6, UINT64_MAX}, {true, false, false}},
	    {"SCMP_CMP_LE", 5, 0, {4, 5, 6, UINT64_MAX}, {true, true, false}},
	    {"SCMP_CMP_GE", 5, 0, {4, 5, 6, UINT64_MAX}, {false, true, true}},
	    {"SCMP_CMP_GT", 5, 0, {4, 5, 6, UINT64_MAX}, {false, false, true}},
	    {"SCMP_CMP_MASKED_EQ",
	     0xff,
	     0x12,
	     {0x12, 0x1312, 0x13, UINT64_MAX},
	     {true, true, false}},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		ar_autofree char *json = ar_xasprintf(
		    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"getpgid\"],"
		    "\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":42,\"args\":[{\"index\":0,"
		    "\"value\":%llu,\"valueTwo\":%llu,\"op\":\"%s\"}]}]}",
		    (unsigned long long)cases[i].value, (unsigned long long)cases[i].value_two,
		    cases[i].op);
		struct ar_seccomp *s = parse_ok(json);
		const struct ar_seccomp_profile *p = ar_seccomp_profile(s);
		assert_int_equal(p->n_rules, 1);
		assert_int_equal(p->rules[0].n_args, 1);
		assert_int_equal(p->rules[0].args[0].value, cases[i].value);
		assert_int_equal(p->rules[0].args[0].value_two, cases[i].value_two);
		struct outcome o = run_confined(s, probe_getpgid, (void *)cases[i].probe);
		assert_int_equal(o.exited, 0);
		assert_int_equal(o.r.n, 3);
		for (int k = 0; k < 3; k++) {
			if ((o.r.v[k] == -42) != cases[i].match[k])
				fail_msg("%s: getpgid(%#llx) gave %ld", cases[i].op,
					 (unsigned long long)cases[i].probe[k], o.r.v[k]);
		}
		ar_seccomp_free(s);
	}
}

static void probe_two_args(struct results *r, void *arg)
{
	record(r, sc(syscall(SYS_getpgid, 5)));
	record(r, sc(syscall(SYS_getpgid, 6)));
	record(r, sc(syscall(SYS_getpgid, 7)));
	record(r, sc(syscall(SYS_getpriority, 100, 200)));
	record(r, sc(syscall(SYS_getpriority, 100, 201)));
	record(r, sc(syscall(SYS_getpriority, 101, 200)));
}

/* runc's convention: conditions all on one argument are alternatives, on
 * different arguments they must all hold. */
static void test_parse_args_or_and(void **state)
{
	static const char json[] =
	    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
	    "{\"names\":[\"getpgid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":42,\"args\":["
	    "{\"index\":0,\"value\":5,\"op\":\"SCMP_CMP_EQ\"},"
	    "{\"index\":0,\"value\":6,\"op\":\"SCMP_CMP_EQ\"}]},"
	    "{\"names\":[\"getpriority\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":43,\"args\":["
	    "{\"index\":0,\"value\":100,\"op\":\"SCMP_CMP_EQ\"},"
	    "{\"index\":1,\"value\":200,\"op\":\"SCMP_CMP_EQ\"}]}]}";
	struct ar_seccomp *s = parse_ok(json);
	struct outcome o = run_confined(s, probe_two_args, NULL);
	static const long want[] = {-42, -42, 0, -43, 0, 0}; /* 0: not our errno */

	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.n, 6);
	for (int k = 0; k < 6; k++) {
		bool ours = o.r.v[k] == -42 || o.r.v[k] == -43;
		if (want[k] != 0 ? o.r.v[k] != want[k] : ours)
			fail_msg("call #%d: got %ld, want %ld", k, o.r.v[k], want[k]);
	}
	ar_seccomp_free(s);
}

static void test_parse_fields(void **state)
{
	static const char json[] =
	    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":13,"
	    "\"architectures\":[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\",\"SCMP_ARCH_X32\"],"
	    "\"flags\":[\"SECCOMP_FILTER_FLAG_LOG\"],"
	    "\"syscalls\":["
	    "{\"names\":[\"read\",\"write\",\"no_such_call_ar\"],\"action\":\"SCMP_ACT_ALLOW\"},"
	    "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\"},"
	    "{\"names\":[\"getpgid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":2},"
	    "{\"names\":[\"getsid\"],\"action\":\"SCMP_ACT_KILL\"},"
	    "{\"names\":[\"getuid\"],\"action\":\"SCMP_ACT_KILL_PROCESS\"},"
	    "{\"names\":[\"getgid\"],\"action\":\"SCMP_ACT_TRAP\"},"
	    "{\"names\":[\"geteuid\"],\"action\":\"SCMP_ACT_TRACE\",\"errnoRet\":7},"
	    "{\"names\":[\"getegid\"],\"action\":\"SCMP_ACT_LOG\"},"
	    "{\"names\":[\"gettid\"],\"action\":\"SCMP_ACT_KILL_THREAD\"},"
	    "{\"names\":[\"socketcall\"],\"action\":\"SCMP_ACT_ALLOW\"},"
	    "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":5,"
	    "\"value\":\"0xffffffffffffffff\",\"valueTwo\":9007199254740992,"
	    "\"op\":\"SCMP_CMP_MASKED_EQ\"}]}]}";
	static const struct {
		const char *name;
		uint32_t action;
	} want[] = {
	    {"read", SCMP_ACT_ALLOW},	      {"write", SCMP_ACT_ALLOW},
	    {"getppid", SCMP_ACT_ERRNO(13)},  {"getpgid", SCMP_ACT_ERRNO(2)},
	    {"getsid", SCMP_ACT_KILL_THREAD}, {"getuid", SCMP_ACT_KILL_PROCESS},
	    {"getgid", SCMP_ACT_TRAP},	      {"geteuid", SCMP_ACT_TRACE(7)},
	    {"getegid", SCMP_ACT_LOG},	      {"gettid", SCMP_ACT_KILL_THREAD},
	    {"socketcall", SCMP_ACT_ALLOW}, /* exists on i386, listed */
	    {"getpid", SCMP_ACT_ALLOW},
	};
	struct ar_seccomp *s = parse_ok(json);
	const struct ar_seccomp_profile *p = ar_seccomp_profile(s);

	assert_int_equal(p->default_action, SCMP_ACT_ERRNO(13));
	assert_int_equal(p->bad_arch_action, SCMP_ACT_ERRNO(13));
	assert_int_equal(p->flags, SECCOMP_FILTER_FLAG_LOG);
	assert_int_equal(p->n_arches, 3);
	assert_int_equal(p->arches[0], SCMP_ARCH_X86_64);
	assert_int_equal(p->arches[1], SCMP_ARCH_X86);
	assert_int_equal(p->arches[2], SCMP_ARCH_X32);
	assert_int_equal(p->n_unknown, 1);
	assert_int_equal(p->n_rules, AR_ARRAY_SIZE(want));
	for (size_t i = 0; i < AR_ARRAY_SIZE(want); i++) {
		assert_string_equal(p->rules[i].name, want[i].name);
		assert_int_equal(p->rules[i].action, want[i].action);
	}
	assert_int_equal(p->rules[0].nr, SYS_read);
	assert_int_equal(p->rules[2].entry, 1);
	assert_int_equal(p->rules[11].n_args, 1);
	assert_int_equal(p->rules[11].args[0].index, 5);
	assert_int_equal(p->rules[11].args[0].value, UINT64_MAX);
	assert_int_equal(p->rules[11].args[0].value_two, 9007199254740992ULL);
	assert_int_equal(p->rules[11].args[0].op, SCMP_CMP_MASKED_EQ);
	ar_seccomp_free(s);
}

static void probe_getppid(struct results *r, void *arg)
{
	record(r, sc(syscall(SYS_getppid)));
	record(r, sc(syscall(SYS_getpgid, 0)));
}

/* defaultErrnoRet reaches rules without errnoRet; absent, EPERM. */
static void test_parse_errno_defaults(void **state)
{
	struct ar_seccomp *s =
	    parse_ok("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"defaultErrnoRet\":77,\"syscalls\":["
		     "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\"}]}");
	struct outcome o = run_confined(s, probe_getppid, NULL);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.v[0], -77);
	assert_int_equal(o.r.v[1], 0);
	ar_seccomp_free(s);

	s = parse_ok("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
		     "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\"}]}");
	o = run_confined(s, probe_getppid, NULL);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.v[0], -EPERM);
	ar_seccomp_free(s);

	/* an allow-list with no getpgid: the default errno */
	s = parse_ok("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":38,\"syscalls\":["
		     "{\"names\":[\"getppid\"," ASAN_CALLS "],"
		     "\"action\":\"SCMP_ACT_ALLOW\"}]}");
	o = run_confined(s, probe_getppid, NULL);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.v[0], 0);
	assert_int_equal(o.r.v[1], -38);
	ar_seccomp_free(s);
}

static void probe_kill_action(struct results *r, void *arg)
{
	syscall(SYS_getppid);
	record(r, 0);
}

static void test_parse_kill_and_badarch(void **state)
{
	struct ar_seccomp *s =
	    parse_ok("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
		     "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_KILL_PROCESS\"}]}");
	struct outcome o = run_confined(s, probe_kill_action, NULL);
	assert_int_equal(o.signo, SIGSYS);
	/* an allow-default profile kills foreign ABIs rather than letting them through */
	assert_int_equal(ar_seccomp_profile(s)->bad_arch_action, SCMP_ACT_KILL_PROCESS);
	ar_seccomp_free(s);
}

static void probe_int80(struct results *r, void *arg)
{
	record(r, int80_getpid() == getpid() ? 0 : -1);
}

/* Listing SCMP_ARCH_X86 admits the i386 ABI; leaving it out kills it. */
static void test_parse_arches_behaviour(void **state)
{
	if (int80_getpid() != getpid())
		skip(); /* kernel without IA32 emulation */
	struct ar_seccomp *s =
	    parse_ok("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":"
		     "[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\"],\"syscalls\":[]}");
	struct outcome o = run_confined(s, probe_int80, NULL);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.v[0], 0);
	ar_seccomp_free(s);
	s = parse_ok("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[]}");
	o = run_confined(s, probe_int80, NULL);
	assert_int_equal(o.signo, SIGSYS);
	ar_seccomp_free(s);
}

/* Run `fn` with stderr captured; returns what it printed. */
static char *capture_stderr(void (*fn)(void *), void *arg)
{
	int mfd = memfd_create("stderr", MFD_CLOEXEC), saved = dup(2);
	char *buf = ar_xcalloc(1, 4096);

	assert_true(mfd >= 0 && saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(mfd, 2), 2);
	fn(arg);
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	assert_true(pread(mfd, buf, 4095, 0) >= 0);
	close(mfd);
	return buf;
}

static void parse_shadowed(void *arg)
{
	ar_seccomp_free(parse_ok(arg));
}

static void probe_tiocsti(struct results *r, void *arg)
{
	record(r, sc(ioctl(*(int *)arg, TIOCSTI, "x")));
}

/* libseccomp drops conditional rules under an unconditional one for the same
 * syscall: the parser warns, and the test pins why (TIOCSTI is not denied). */
static void test_parse_shadowed_warning(void **state)
{
	static const char json[] =
	    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
	    "{\"names\":[\"ioctl\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":1,"
	    "\"value\":4294967295,\"valueTwo\":21522,\"op\":\"SCMP_CMP_MASKED_EQ\"}]},"
	    "{\"names\":[\"ioctl\"],\"action\":\"SCMP_ACT_LOG\"}]}";
	ar_autofree char *out = capture_stderr(parse_shadowed, (void *)json);
	assert_string_equal(out,
			    "agentrun: warning: t.json: syscalls[0]: the conditions on `ioctl` "
			    "have no effect: syscalls[1] matches it unconditionally\n");

	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	enum ar_log_level level = ar_log_get_level();
	ar_log_set_level(AR_LOG_ERROR);
	struct ar_seccomp *s = parse_ok(json);
	ar_log_set_level(level);
	struct outcome o = run_confined(s, probe_tiocsti, &devnull);
	assert_int_equal(o.r.v[0], -ENOTTY); /* reached the driver: not denied */
	ar_seccomp_free(s);
	close(devnull);
}

/* ---- the parser: errors name the file and field ---- */

static void test_parse_errors(void **state)
{
	static const struct {
		const char *json, *msg;
	} cases[] = {
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\n\"syscalls\": [,]}",
	     "t.json:2:14: invalid JSON"},
	    {"", "t.json:1:1: invalid JSON"},
	    {"[]", "t.json: expected a JSON object"},
	    {"{}", "t.json: defaultAction: missing"},
	    {"{\"defaultAction\":1}", "t.json: defaultAction: expected a string"},
	    {"{\"defaultAction\":\"SCMP_ACT_FOO\"}",
	     "t.json: defaultAction: unknown action `SCMP_ACT_FOO`"},
	    {"{\"defaultAction\":\"SCMP_ACT_NOTIFY\"}",
	     "t.json: defaultAction: `SCMP_ACT_NOTIFY` is not supported (agentrun runs no "
	     "seccomp notification agent)"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":-1}",
	     "t.json: defaultErrnoRet: -1 is not an integer in [0, 4095]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_Z80\"]}",
	     "t.json: architectures[0]: unknown architecture `SCMP_ARCH_Z80`"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":{}}",
	     "t.json: architectures: expected an array"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"flags\":[\"SECCOMP_FILTER_FLAG_X\"]}",
	     "t.json: flags[0]: unknown seccomp filter flag"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":{}}",
	     "t.json: syscalls: expected an array"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_ERRNO\"},{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ERRNO\"},"
	     "{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ERRNO\"},{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_FOO\"}]}",
	     "t.json: syscalls[3].action: unknown action `SCMP_ACT_FOO`"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"]}]}",
	     "t.json: syscalls[0].action: missing"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"action\":\"SCMP_ACT_LOG\"}]}",
	     "t.json: syscalls[0].names: expected an array of syscall names"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[3],"
	     "\"action\":\"SCMP_ACT_LOG\"}]}",
	     "t.json: syscalls[0].names[0]: expected a syscall name"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[1]}",
	     "t.json: syscalls[0]: expected an object"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":5000}]}",
	     "t.json: syscalls[0].errnoRet: 5000 is not an integer in [0, 4095]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_NOTIFY\"}]}",
	     "t.json: syscalls[0].action: `SCMP_ACT_NOTIFY` is not supported (agentrun runs no "
	     "seccomp notification agent)"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\"},{\"names\":[\"read\"],\"action\":\"SCMP_ACT_LOG\","
	     "\"args\":[{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]},{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":0,\"value\":1,\"op\":\"EQ\"}]}]}",
	     "t.json: syscalls[2].args[0].op: unknown operator `EQ`"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":6,\"value\":1,\"op\":\"SCMP_CMP_"
	     "EQ\"}]}]}",
	     "t.json: syscalls[0].args[0].index: 6 is not an integer in [0, 5]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":1,\"op\":\"SCMP_CMP_EQ\"}]}]}",
	     "t.json: syscalls[0].args[0].value: missing"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":1,\"value\":1.5,\"op\":\"SCMP_CMP_"
	     "EQ\"}]}]}",
	     "t.json: syscalls[0].args[0].value: 1.5 is not an integer in [0, "
	     "18446744073709551615]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":1,\"value\":\"x1\",\"op\":\"SCMP_"
	     "CMP_EQ\"}]}]}",
	     "t.json: syscalls[0].args[0].value: expected an integer in [0, 18446744073709551615]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":1,\"value\":1}]}]}",
	     "t.json: syscalls[0].args[0].op: missing"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":{}}]}",
	     "t.json: syscalls[0].args: expected an array"},
	    /* two conditions on arg 0 plus one on arg 1 cannot be expressed */
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_"
	     "EQ\"},"
	     "{\"index\":0,\"value\":2,\"op\":\"SCMP_CMP_EQ\"},{\"index\":1,\"value\":2,\"op\":"
	     "\"SCMP_CMP_EQ\"}]}]}",
	     "t.json: syscalls[0]: syscall `read`: libseccomp rejected the rule: Invalid argument"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		struct ar_seccomp *s = (struct ar_seccomp *)0x1;
		ar_error_t err = NULL;
		int rc = ar_seccomp_parse(cases[i].json, strlen(cases[i].json), "t.json", &s, &err);
		if (rc != -1 || err == NULL)
			fail_msg("case %zu: parsed, expected `%s`", i, cases[i].msg);
		assert_null(s);
		if (strcmp(err->msg, cases[i].msg) != 0)
			fail_msg("case %zu:\n got `%s`\nwant `%s`", i, err->msg, cases[i].msg);
		ar_error_release(&err);
	}
}

static void test_prepare_specs(void **state)
{
	struct ar_seccomp *s = (struct ar_seccomp *)0x1;
	ar_error_t err = NULL;

	assert_int_equal(ar_seccomp_prepare("unconfined", &s, &err), 0);
	assert_null(s);
	assert_int_equal(ar_seccomp_install(NULL, &err), 0);
	assert_int_equal(ar_seccomp_prepare("/nonexistent/p.json", &s, &err), -1);
	assert_null(s);
	assert_non_null(strstr(err->msg, "/nonexistent/p.json"));
	assert_int_equal(err->status, ENOENT);
	ar_error_release(&err);

	ar_autofree char *bad = ar_xasprintf("%s/seccomp-bad-action.json", AR_TEST_DATA);
	assert_int_equal(ar_seccomp_prepare(bad, &s, &err), -1);
	ar_autofree char *want =
	    ar_xasprintf("%s: syscalls[1].action: unknown action `SCMP_ACT_FOO`", bad);
	assert_string_equal(err->msg, want);
	ar_error_release(&err);
}

/* ---- docker's format ---- */

static bool has_rule(const struct ar_seccomp_profile *p, const char *name)
{
	for (size_t i = 0; i < p->n_rules; i++) {
		if (strcmp(p->rules[i].name, name) == 0)
			return true;
	}
	return false;
}

static struct ar_seccomp *load_fixture(const char *name, unsigned int kernel)
{
	ar_autofree char *path = ar_xasprintf("%s/%s", AR_TEST_DATA, name);
	ar_autofree char *data = NULL;
	struct ar_seccomp *s = NULL;
	ar_error_t err = NULL;
	size_t len;

	assert_int_equal(ar_read_file(path, 0, &data, &len, &err), 0);
	if (ar_seccomp_parse_kernel(data, len, name, kernel, &s, &err) < 0)
		fail_msg("%s", err->msg);
	return s;
}

static void test_docker_flatten(void **state)
{
	struct ar_seccomp *s = load_fixture("seccomp-docker.json", 5015);
	const struct ar_seccomp_profile *p = ar_seccomp_profile(s);
	static const char *const kept[] = {"read",	 "write",  "exit_group", "getppid",
					   "getpgid",	 "getsid", "getuid",	 "clone",
					   "arch_prctl", "futex"};
	static const char *const dropped[] = {"mount",	 "ptrace",  "setns",  "getgid",
					      "geteuid", "getegid", "gettid", "chroot"};

	assert_int_equal(p->default_action, SCMP_ACT_ERRNO(EPERM));
	assert_int_equal(p->n_arches, 3);
	assert_int_equal(p->arches[0], SCMP_ARCH_X86_64);
	assert_int_equal(p->arches[1], SCMP_ARCH_X86);
	assert_int_equal(p->arches[2], SCMP_ARCH_X32);
	for (size_t i = 0; i < AR_ARRAY_SIZE(kept); i++) {
		if (!has_rule(p, kept[i]))
			fail_msg("`%s` should be kept", kept[i]);
	}
	for (size_t i = 0; i < AR_ARRAY_SIZE(dropped); i++) {
		if (has_rule(p, dropped[i]))
			fail_msg("`%s` should be dropped", dropped[i]);
	}
	ar_seccomp_free(s);

	/* minKernel against an older kernel flips both kinds of condition */
	s = load_fixture("seccomp-docker.json", 4004);
	p = ar_seccomp_profile(s);
	assert_false(has_rule(p, "getsid")); /* includes.minKernel 4.8 */
	assert_true(has_rule(p, "getegid")); /* excludes.minKernel 5.0 */
	ar_seccomp_free(s);
}

static void probe_docker(struct results *r, void *arg)
{
	record(r, sc(syscall(SYS_getppid)));
	record(r, sc(syscall(SYS_getgid)));
	record(r, sc(syscall(SYS_clone3, NULL, 0)));
}

static void test_docker_behaviour(void **state)
{
	struct ar_seccomp *s = load_fixture("seccomp-docker.json", 5015);
	struct outcome o = run_confined(s, probe_docker, NULL);

	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.v[0], 0);
	assert_int_equal(o.r.v[1], -EPERM);
	assert_int_equal(o.r.v[2], -ENOSYS);
	ar_seccomp_free(s);
}

static void test_docker_errors(void **state)
{
	static const struct {
		const char *json, *msg;
	} cases[] = {
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"includes\":{\"caps\":\"CAP_SYS_ADMIN\"}}]}",
	     "t.json: syscalls[0].includes.caps: expected an array of strings"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"excludes\":{\"arches\":[1]}}]}",
	     "t.json: syscalls[0].excludes.arches[0]: expected a string"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"includes\":{\"minKernel\":\"five\"}}]}",
	     "t.json: syscalls[0].includes.minKernel: expected a version like \"5.6\""},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"includes\":[]}]}",
	     "t.json: syscalls[0].includes: expected an object"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"archMap\":{}}",
	     "t.json: archMap: expected an array"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"archMap\":[{\"architecture\":"
	     "\"SCMP_ARCH_X86_64\",\"subArchitectures\":[\"SCMP_ARCH_Q\"]}]}",
	     "t.json: archMap[0].subArchitectures[0]: unknown architecture"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"archMap\":[{}]}",
	     "t.json: archMap[0].architecture: expected a string"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_X86\"],"
	     "\"archMap\":[{\"architecture\":\"SCMP_ARCH_X86_64\"}]}",
	     "t.json: architectures: give either architectures or archMap, not both"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		struct ar_seccomp *s = NULL;
		ar_error_t err = NULL;
		if (ar_seccomp_parse(cases[i].json, strlen(cases[i].json), "t.json", &s, &err) !=
		    -1)
			fail_msg("case %zu: parsed, expected `%s`", i, cases[i].msg);
		if (strcmp(err->msg, cases[i].msg) != 0)
			fail_msg("case %zu:\n got `%s`\nwant `%s`", i, err->msg, cases[i].msg);
		ar_error_release(&err);
	}
}

/* Every profile shipped in seccomp/ loads from its path. */
static void test_shipped_profiles_load(void **state)
{
	static const char *const files[] = {"default.json"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(files); i++) {
		ar_autofree char *path = ar_xasprintf("%s/seccomp/%s", AR_SOURCE_DIR, files[i]);
		struct ar_seccomp *s = NULL;
		ar_error_t err = NULL;
		if (access(path, R_OK) != 0)
			continue;
		if (ar_seccomp_prepare(path, &s, &err) < 0)
			fail_msg("%s", err->msg);
		assert_true(ar_seccomp_profile(s)->n_rules > 100);
		ar_seccomp_free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_denies),
	    cmocka_unit_test(test_default_foreign_abis),
	    cmocka_unit_test(test_default_allows),
	    cmocka_unit_test(test_default_ioctl_rules_exact),
	    cmocka_unit_test(test_default_names_resolve),
	    cmocka_unit_test(test_default_forbidden_absent),
	    cmocka_unit_test(test_default_programs),
	    cmocka_unit_test(test_parse_ops),
	    cmocka_unit_test(test_parse_args_or_and),
	    cmocka_unit_test(test_parse_fields),
	    cmocka_unit_test(test_parse_errno_defaults),
	    cmocka_unit_test(test_parse_kill_and_badarch),
	    cmocka_unit_test(test_parse_arches_behaviour),
	    cmocka_unit_test(test_parse_shadowed_warning),
	    cmocka_unit_test(test_parse_errors),
	    cmocka_unit_test(test_prepare_specs),
	    cmocka_unit_test(test_docker_flatten),
	    cmocka_unit_test(test_docker_behaviour),
	    cmocka_unit_test(test_docker_errors),
	    cmocka_unit_test(test_shipped_profiles_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Shared by the seccomp unit tests: behaviour is checked for real, each case
 * forks a child that sets no_new_privs, installs the filter, makes the calls and
 * reports the results over a pipe. No root needed. */
#ifndef AGENTRUN_TEST_SECCOMP_CHILD_H
#define AGENTRUN_TEST_SECCOMP_CHILD_H

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
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

#define MAX_RESULTS 48

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
__attribute__((unused)) static long sc(long rc)
{
	return rc == -1 ? -errno : 0;
}

__attribute__((unused)) static void record(struct results *r, long v)
{
	if (r->n < MAX_RESULTS)
		r->v[r->n++] = v;
}

__attribute__((unused)) static struct outcome run_confined(const struct ar_seccomp *s, probe_fn fn,
							   void *arg)
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

__attribute__((unused)) static struct ar_seccomp *parse_ok(const char *json)
{
	struct ar_seccomp *s = NULL;
	ar_error_t err = NULL;

	if (ar_seccomp_parse(json, strlen(json), "t.json", &s, &err) < 0)
		fail_msg("unexpected error: %s", err->msg);
	assert_non_null(s);
	return s;
}

__attribute__((unused)) static struct ar_seccomp *default_profile(void)
{
	struct ar_seccomp *s = NULL;
	ar_error_t err = NULL;

	if (ar_seccomp_prepare("default", &s, &err) < 0)
		fail_msg("default profile: %s", err->msg);
	assert_non_null(s);
	return s;
}

/* i386 getpid through int $0x80; returns the raw kernel result (pid or -errno). */
__attribute__((unused)) static long int80_getpid(void)
{
	long ret = 20; /* __NR_getpid on i386 */
	__asm__ volatile("int $0x80" : "+a"(ret) : : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

/* Whether the kernel runs i386 syscalls (IA32 emulation): without it int $0x80
 * faults, so ask a throwaway child. */
__attribute__((unused)) static bool int80_supported(void)
{
	int status = -1;
	pid_t pid = fork();

	assert_true(pid != -1);
	if (pid == 0)
		_exit(int80_getpid() == getpid() ? 0 : 1);
	assert_int_equal(TEMP_FAILURE_RETRY(waitpid(pid, &status, 0)), pid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

#endif

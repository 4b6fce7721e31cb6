/* PID 1 of the sandbox: agentrun itself, forked inside the new PID namespace. It
 * waits for the command, reaps every orphan that is re-parented to it, forwards the
 * signals a user or a supervisor sends (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
 * SIGUSR2, and SIGWINCH for terminal programs) and exits with the
 * command's status; the kernel then kills whatever is left in the namespace.
 * Signals stay blocked and are taken with sigwaitinfo, so nothing runs in a
 * handler and none is lost between fork and the loop. Once the command is forked it
 * runs as the command's uid with no capabilities under a filter of its own
 * (sandbox_init_filter below; caps.c drops the rest). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentrun/util.h"

#include "internal.h"

const int sandbox_forwarded[SANDBOX_N_FORWARDED] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
						    SIGUSR1, SIGUSR2, SIGWINCH};

int sandbox_exit_code(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 125;
}

/* Reap everything that has exited; returns the command's exit code once it is among them. */
static int reap(pid_t command, int *code)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid == -1 && errno == EINTR)
			continue;
		if (pid <= 0)
			return -1;
		if (pid == command) {
			*code = sandbox_exit_code(st);
			return 0;
		}
	}
}

/* Signals the command could not take yet. The init drops to the command's uid right
 * after the fork, while the command is still root until its own set_ids step: a kill in
 * between fails with EPERM, and the signal must not be lost (a supervisor's SIGTERM would
 * then read as the command's success). They are sent again, in order, until taken. */
struct owed {
	int sig[SANDBOX_N_FORWARDED];
	size_t n;
};

static void forward(pid_t command, int sig, struct owed *o)
{
	if (o->n == 0 && kill(command, sig) == 0)
		return;
	for (size_t i = 0; i < o->n; i++)
		if (o->sig[i] == sig)
			return; /* a standard signal is pending once, as the kernel would keep it */
	if (o->n < SANDBOX_N_FORWARDED)
		o->sig[o->n++] = sig;
}

static void forward_owed(pid_t command, struct owed *o)
{
	size_t done = 0;
	while (done < o->n && kill(command, o->sig[done]) == 0)
		done++;
	memmove(o->sig, o->sig + done, (o->n - done) * sizeof(o->sig[0]));
	o->n -= done;
}

int sandbox_init_loop(pid_t command, const sigset_t *waitset)
{
	struct owed owed = {.n = 0};
	int code = 125;

	for (;;) {
		/* while a signal is owed, poll every millisecond: the command's set_ids is
		 * microseconds away (no syscall here tells us when it happens) */
		const struct timespec tick = {.tv_sec = 0, .tv_nsec = 1000000};
		siginfo_t si;
		int sig = sigtimedwait(waitset, &si, owed.n > 0 ? &tick : NULL);
		if (owed.n > 0)
			forward_owed(command, &owed);
		if (sig == -1)
			continue; /* EINTR, or the tick */
		if (sig == SIGCHLD) {
			if (reap(command, &code) == 0)
				return code;
			continue;
		}
		forward(command, sig, &owed);
	}
}

#if defined(__x86_64__)
#define INIT_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define INIT_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#define INIT_ALLOW(nr)                                                                             \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                                           \
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* What the loop above calls, and nothing else: sigwaitinfo (rt_sigtimedwait), waitpid
 * (wait4), kill, _exit, and the close of the report pipe before it. A hand-written program (a dozen
 * instructions, nothing to compile at start), tighter than any profile the command gets, and
 * installed even when that one is `unconfined`. Another ABI (x32's numbers carry bit 30, i386 has
 * another arch) is killed; any other call fails with EPERM. */
int sandbox_init_filter(ar_error_t *err)
{
#ifdef INIT_AUDIT_ARCH
	struct sock_filter insns[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, INIT_AUDIT_ARCH, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    INIT_ALLOW(SYS_rt_sigtimedwait),
	    INIT_ALLOW(SYS_wait4),
	    INIT_ALLOW(SYS_kill),
	    INIT_ALLOW(SYS_exit_group),
	    INIT_ALLOW(SYS_exit),
	    INIT_ALLOW(SYS_restart_syscall),
	    INIT_ALLOW(SYS_close), /* the report pipe, once the drop is done */
#ifdef __SANITIZE_ADDRESS__
	    /* the sanitizers' runtime at exit and on a report (AR_SANITIZE builds only) */
	    INIT_ALLOW(SYS_sigaltstack),
	    INIT_ALLOW(SYS_gettid),
	    INIT_ALLOW(SYS_getpid),
	    INIT_ALLOW(SYS_write),
	    INIT_ALLOW(SYS_mmap),
	    INIT_ALLOW(SYS_munmap),
	    INIT_ALLOW(SYS_madvise),
	    INIT_ALLOW(SYS_rt_sigprocmask),
	    INIT_ALLOW(SYS_rt_sigaction),
	    INIT_ALLOW(SYS_futex),
	    INIT_ALLOW(SYS_sched_yield),
#endif
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = {.len = AR_ARRAY_SIZE(insns), .filter = insns};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == -1)
		return ar_error_make(err, errno, "init: install its seccomp filter");
#endif
	return 0;
}

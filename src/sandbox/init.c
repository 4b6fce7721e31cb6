/* PID 1 of the sandbox: agentrun itself, forked inside the new PID namespace. It
 * waits for the command, reaps every orphan that is re-parented to it, forwards the
 * signals a user or a supervisor sends (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
 * SIGUSR2, and SIGWINCH for terminal programs) and exits with the
 * command's status; the kernel then kills whatever is left in the namespace.
 * Signals stay blocked and are taken with sigwaitinfo, so nothing runs in a
 * handler and none is lost between fork and the loop. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

#include "sandbox-internal.h"

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

int sandbox_init_loop(pid_t command, const sigset_t *waitset)
{
	int code = 125;

	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(waitset, &si);
		if (sig == -1)
			continue; /* EINTR */
		if (sig == SIGCHLD) {
			if (reap(command, &code) == 0)
				return code;
			continue;
		}
		kill(command, sig);
	}
}

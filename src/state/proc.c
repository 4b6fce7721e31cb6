/* Process identity that survives PID reuse: a pid with the start time the kernel gave
 * it. Every record of a process agentrun keeps (states, leases, allocation links) names
 * both, so a recycled pid is never taken for the owner, nor killed by gc. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agentrun/state.h"
#include "agentrun/util.h"

/* The start time, and the state letter (a zombie has died: Z, X). */
static uint64_t proc_stat(pid_t pid, char *state)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	ar_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return 0;
	ssize_t n = TEMP_FAILURE_RETRY(read(fd, buf, sizeof(buf) - 1));
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* the command name may hold spaces and parentheses: count from the last ')' */
	char *p = strrchr(buf, ')');
	unsigned long long start = 0;
	if (p == NULL ||
	    sscanf(p + 2,
		   "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
		   "%*d %*d %llu",
		   state, &start) != 2)
		return 0;
	return start;
}

uint64_t ar_state_proc_start(pid_t pid)
{
	char state;
	return proc_stat(pid, &state);
}

bool ar_state_proc_alive(pid_t pid, uint64_t start)
{
	char state = 'Z';
	return pid > 0 && start != 0 && proc_stat(pid, &state) == start && state != 'Z' &&
	       state != 'X';
}

/* `docker inspect NAME` through the docker CLI: fork/exec with stdout and stderr in
 * memfds (no pipe deadlock, no temp files), an exec-error pipe so a missing binary is
 * told apart from docker failing, and the first line of docker's stderr in the error. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentrun/check.h"

#define MAX_OUTPUT (64u << 20)

static int read_fd_all(int fd, char **out, size_t *len)
{
	struct ar_buf b = {0};
	char chunk[65536];
	if (lseek(fd, 0, SEEK_SET) == -1)
		return -1;
	for (;;) {
		ssize_t n = TEMP_FAILURE_RETRY(read(fd, chunk, sizeof(chunk)));
		if (n == -1 || b.len + (size_t)(n > 0 ? n : 0) > MAX_OUTPUT) {
			ar_buf_free(&b);
			return -1;
		}
		if (n == 0)
			break;
		ar_buf_append(&b, chunk, (size_t)n);
	}
	ar_buf_reserve(&b, 0);
	*len = b.len;
	*out = ar_buf_steal(&b);
	return 0;
}

/* The child: wire stdout/stderr to the memfds and exec; report errno on the pipe. */
static void __attribute__((noreturn))
child(const char *docker, const char *type, const char *name, int out_fd, int err_fd, int report)
{
	char *argv[] = {(char *)docker, "inspect", "--type", (char *)type, (char *)name, NULL};
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull == -1 || dup2(devnull, 0) == -1 || dup2(out_fd, 1) == -1 ||
	    dup2(err_fd, 2) == -1)
		goto fail;
	execvp(docker, argv);
fail:;
	int e = errno;
	(void)!write(report, &e, sizeof(e));
	_exit(127);
}

/* docker's first stderr line, control characters escaped. */
static char *first_line(char *s)
{
	s[strcspn(s, "\n")] = '\0';
	return ar_check_printable(s);
}

static int wait_child(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) == -1)
		if (errno != EINTR)
			return -1;
	return 0;
}

int ar_check_docker_inspect(const char *docker, const char *type, const char *name, char **out,
			    size_t *len, ar_error_t *err)
{
	ar_autoclose int out_fd = memfd_create("docker-stdout", MFD_CLOEXEC);
	ar_autoclose int err_fd = memfd_create("docker-stderr", MFD_CLOEXEC);
	int report[2], status, exec_errno = 0;
	if (out_fd == -1 || err_fd == -1)
		return ar_error_make(err, errno, "memfd_create");
	if (pipe2(report, O_CLOEXEC) == -1)
		return ar_error_make(err, errno, "pipe2");
	pid_t pid = fork();
	if (pid == -1) {
		int e = errno;
		close(report[0]);
		close(report[1]);
		return ar_error_make(err, e, "fork");
	}
	if (pid == 0)
		child(docker, type, name, out_fd, err_fd, report[1]);
	close(report[1]);
	ssize_t n = TEMP_FAILURE_RETRY(read(report[0], &exec_errno, sizeof(exec_errno)));
	close(report[0]);
	if (wait_child(pid, &status) == -1)
		return ar_error_make(err, errno, "waitpid `%s`", docker);
	if (n == (ssize_t)sizeof(exec_errno))
		return ar_error_make(err, exec_errno, "cannot run `%s`", docker);

	ar_autofree char *stderr_text = NULL;
	size_t stderr_len = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (read_fd_all(err_fd, &stderr_text, &stderr_len) < 0)
			stderr_text = ar_xstrdup("");
		ar_autofree char *line = first_line(stderr_text);
		ar_autofree char *who = ar_check_printable(name);
		return ar_error_make(err, 0, "`%s inspect %s` failed (%s %d)%s%s", docker, who,
				     WIFEXITED(status) ? "exit" : "signal",
				     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
				     stderr_len ? ": " : "", line);
	}
	if (read_fd_all(out_fd, out, len) < 0)
		return ar_error_make(err, errno, "reading the output of `%s inspect %s`", docker,
				     name);
	return 0;
}

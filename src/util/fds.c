/* Descriptors over a unix socket: one byte (what the message means) and up to
 * AR_FDS_MAX descriptors as SCM_RIGHTS, in one sendmsg/recvmsg. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agentrun/util.h"

int ar_send_fds(int sock, char byte, const int *fds, size_t n)
{
	char ctl[CMSG_SPACE(sizeof(int) * AR_FDS_MAX)] = {0};
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	if (n > AR_FDS_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (n > 0) {
		msg.msg_control = ctl;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	}
	return TEMP_FAILURE_RETRY(sendmsg(sock, &msg, MSG_NOSIGNAL)) == 1 ? 0 : -1;
}

int ar_recv_fds(int sock, char *byte, int *fds, size_t max, size_t *n)
{
	char ctl[CMSG_SPACE(sizeof(int) * AR_FDS_MAX)];
	struct iovec iov = {.iov_base = byte, .iov_len = 1};
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	int got[AR_FDS_MAX];
	size_t k = 0;

	*n = 0;
	ssize_t r = TEMP_FAILURE_RETRY(recvmsg(sock, &msg, MSG_CMSG_CLOEXEC));
	if (r <= 0)
		return (int)r;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t m = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < m && k < AR_FDS_MAX; i++)
			memcpy(&got[k++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	if (k > max || (msg.msg_flags & MSG_CTRUNC)) {
		for (size_t i = 0; i < k; i++)
			close(got[i]);
		errno = EMSGSIZE;
		return -1;
	}
	memcpy(fds, got, k * sizeof(int));
	*n = k;
	return 1;
}

int ar_sealed_memfd(const char *name, const char *text, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	/* never 0-2, which a caller started with a closed stdin would get: the mount plan
	 * reads a source fd > 0 as given, and stdio belongs to the command */
	if (fd >= 0 && fd < 3) {
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		close(fd);
		fd = high;
	}
	if (fd == -1 || ar_write_all(fd, text, len) == -1 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) ==
		-1) {
		int e = errno;
		if (fd != -1)
			close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

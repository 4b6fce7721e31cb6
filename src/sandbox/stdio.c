/* The descriptors the command inherits: 0, 1 and 2, checked before anything is
 * created. Every other inherited fd is closed at exec (child.c), but these three pass
 * through, and a directory among them is a way out of the new root (CVE-2024-21626's
 * shape: `/proc/self/fd/0/../../..` walks the host's tree from a directory fd opened
 * outside it). So each must be a terminal, a pipe or FIFO, a socket, a regular file or
 * a character device, opened for I/O (not O_PATH); anything else is refused (125)
 * rather than silently replaced, so a caller never runs a command on other input than
 * it gave. A closed one is fine: run.c holds it with /dev/null. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "agentrun/util.h"
#include "internal.h"

/* Filesystems whose "regular files" are handles on kernel objects, not data: an
 * eventfd or a pidfd (anon inodes, pidfs), or a namespace (nsfs) to setns into. */
static const struct {
	long magic;
	const char *what;
} handle_fs[] = {
    {0x09041934, "an anonymous inode (eventfd, signalfd, epoll, ...)"},
    {0x50494446, "a pidfd"},
    {0x6e736673, "a namespace file"},
};

static const char *const fd_names[] = {"stdin", "stdout", "stderr"};

static const char *type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return "a directory";
	case S_IFBLK:
		return "a block device";
	case S_IFLNK:
		return "a symlink";
	case 0:
		return "an anonymous inode (eventfd, signalfd, epoll, ...)";
	default:
		return "not a file, pipe, socket or character device";
	}
}

/* NULL when fd may reach the command, else what it is. */
static const char *refused_kind(int fd)
{
	struct stat st;
	struct statfs sf;
	int fl = fcntl(fd, F_GETFL);

	if (fl == -1)
		return NULL; /* closed: held with /dev/null */
	if (fl & O_PATH)
		return "an O_PATH descriptor";
	if (fstat(fd, &st) == -1)
		return "a descriptor fstat(2) cannot describe";
	switch (st.st_mode & S_IFMT) {
	case S_IFCHR:
	case S_IFIFO:
	case S_IFSOCK:
		return NULL;
	case S_IFREG:
		break;
	default:
		return type_name(st.st_mode);
	}
	if (fstatfs(fd, &sf) == 0)
		for (size_t i = 0; i < AR_ARRAY_SIZE(handle_fs); i++)
			if (sf.f_type == handle_fs[i].magic)
				return handle_fs[i].what;
	return NULL;
}

int sandbox_check_stdio(ar_error_t *err)
{
	for (int fd = 0; fd < 3; fd++) {
		const char *kind = refused_kind(fd);
		if (kind != NULL)
			return ar_error_make(err, 0,
					     "%s (fd %d) is %s; the command may only inherit a "
					     "terminal, pipe, socket, regular file or character "
					     "device (redirect it, e.g. to /dev/null)",
					     fd_names[fd], fd, kind);
	}
	return 0;
}

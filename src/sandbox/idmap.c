/* Read-write mounts and the sandbox's uid (docs/sandbox.md#read-write-mounts). As root,
 * the sandbox runs as a uid of its own (a dynamic one, or the policy's `user`) that
 * owns nothing on the host: a read-write mount of a directory the caller owns would
 * refuse every write, and what it writes into a world-writable one would belong to a
 * uid a later, unrelated sandbox may lease. So each read-write bind becomes an
 * idmapped mount (mount_setattr(2) MOUNT_ATTR_IDMAP with a user namespace whose one
 * mapping is the source's owner, as systemd-nspawn, podman and crun do): the owner's
 * files are the sandbox's inside, and what it writes belongs to the owner on the host.
 *
 * Never onto root (uid or gid 0): root-owned files the sandbox could create in a shared
 * directory defeat protected_symlinks and whatever trusts root's files, so such a mount
 * stays as it was and the start says so. (Set-id bits cannot be planted through either:
 * the default seccomp profile refuses them, docs/seccomp.md.) The parent makes the
 * detached, idmapped clone of each source before the clone; the child moves it into
 * place (mount.c). Everything said here is said before the command starts. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentrun/log.h"
#include "agentrun/util.h"
#include "sandbox-internal.h"

/* "/proc/PID/FILE" := "A B 1" (a one-id map). */
static bool write_map(pid_t pid, const char *file, unsigned a, unsigned b)
{
	char path[64], map[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	int n = snprintf(map, sizeof(map), "%u %u 1\n", a, b);
	ar_autoclose int fd = TEMP_FAILURE_RETRY(open(path, O_WRONLY | O_CLOEXEC));
	return fd != -1 && ar_write_all(fd, map, (size_t)n) == 0;
}

/* A user namespace whose only mapping is uid `in` (inside) to `out` (outside), the same
 * for the gids: through an idmapped mount, a file owned by `in` on disk shows as `out`,
 * and what `out` writes is stored as `in`. Its fd (O_CLOEXEC), or -1 with errno. */
static int mapping_userns(uid_t in, uid_t out, gid_t gin, gid_t gout)
{
	char path[64];
	/* fork-like raw clone: the child only has to exist until its namespace is opened */
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == -1)
		return -1;
	if (pid == 0) {
		for (;;)
			pause();
	}
	int fd = -1;
	if (write_map(pid, "uid_map", in, out) && write_map(pid, "gid_map", gin, gout)) {
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	int e = errno;
	kill(pid, SIGKILL);
	TEMP_FAILURE_RETRY(waitpid(pid, NULL, 0));
	errno = e;
	return fd;
}

/* A detached clone of the source's tree, idmapped: its fd, or -1 with errno. */
static int idmapped_tree(const char *source, int userns)
{
	ar_autoclose int tree = (int)syscall(SYS_open_tree, AT_FDCWD, source,
					     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (tree == -1)
		return -1;
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns};
	if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
		    sizeof(attr)) == -1)
		return -1;
	return steal_fd(&tree);
}

/* Whether uid/gid (no supplementary groups: the sandbox has none) may write st. */
static bool may_write(const struct stat *st, uid_t uid, gid_t gid)
{
	mode_t w = st->st_uid == uid ? S_IWUSR : st->st_gid == gid ? S_IWGRP : S_IWOTH;
	mode_t x = st->st_uid == uid ? S_IXUSR : st->st_gid == gid ? S_IXGRP : S_IXOTH;
	return (st->st_mode & w) && (!S_ISDIR(st->st_mode) || (st->st_mode & x));
}

static void say_unwritable(const struct ar_mount_op *op, const struct stat *st, uid_t uid,
			   bool mapped)
{
	if (mapped)
		ar_warn("%s: %s (mode %04o) cannot be written by its owner %u, as whom the "
			"sandbox writes there (idmapped): the mount is read-write, writes will "
			"fail",
			op->what, op->source, (unsigned)(st->st_mode & 07777),
			(unsigned)st->st_uid);
	else
		ar_warn("%s: %s (owner %u:%u, mode %04o) cannot be written by the sandbox's uid "
			"%u: the mount is read-write, writes will fail",
			op->what, op->source, (unsigned)st->st_uid, (unsigned)st->st_gid,
			(unsigned)(st->st_mode & 07777), (unsigned)uid);
}

/* One read-write bind: map it onto its owner when it may be, say what it cannot. */
static int prepare_op(struct sandbox *sb, struct ar_mount_op *op, int *userns, uid_t *ns_uid,
		      gid_t *ns_gid)
{
	struct stat st;
	if (stat(op->source, &st) == -1)
		return 0; /* the child names a missing source, as for any bind */
	if (st.st_uid == sb->uid && st.st_gid == sb->gid) {
		if (!may_write(&st, sb->uid, sb->gid))
			say_unwritable(op, &st, sb->uid, false);
		return 0;
	}
	if (st.st_uid == 0 || st.st_gid == 0) {
		if (may_write(&st, sb->uid, sb->gid))
			ar_warn("%s: %s belongs to root, whom the sandbox is never mapped to: what "
				"it writes there belongs to its uid %u on the host",
				op->what, op->source, (unsigned)sb->uid);
		else
			say_unwritable(op, &st, sb->uid, false);
		return 0;
	}
	if (*userns < 0 || *ns_uid != st.st_uid || *ns_gid != st.st_gid) {
		ar_cleanup_closep(userns);
		*userns = mapping_userns(st.st_uid, sb->uid, st.st_gid, sb->gid);
		if (*userns == -1)
			return -1;
		*ns_uid = st.st_uid;
		*ns_gid = st.st_gid;
	}
	op->idmap_tree = idmapped_tree(op->source, *userns);
	if (op->idmap_tree == -1) {
		ar_warn("%s: %s cannot be idmapped (%s: its filesystem does not support it): what "
			"the sandbox writes there belongs to its uid %u on the host, not to the "
			"owner %u",
			op->what, op->source, strerror(errno), (unsigned)sb->uid,
			(unsigned)st.st_uid);
		if (!may_write(&st, sb->uid, sb->gid))
			say_unwritable(op, &st, sb->uid, false);
		return 0;
	}
	if (!may_write(&st, st.st_uid, st.st_gid))
		say_unwritable(op, &st, sb->uid, true);
	return 0;
}

int sandbox_idmap_prepare(struct sandbox *sb, ar_error_t *err)
{
	/* in a user namespace (not root) the caller's own uid is the sandbox's already */
	if (sb->userns)
		return 0;
	ar_autoclose int userns = -1;
	uid_t ns_uid = 0;
	gid_t ns_gid = 0;
	for (size_t i = 0; i < sb->plan.n_ops; i++) {
		struct ar_mount_op *op = &sb->plan.ops[i];
		if (op->kind != AR_MNT_BIND || op->readonly || op->copy || op->source_fd > 0)
			continue;
		if (prepare_op(sb, op, &userns, &ns_uid, &ns_gid) == -1)
			return ar_error_make(err, errno, "%s: a user namespace to idmap %s",
					     op->what, op->source);
	}
	return 0;
}

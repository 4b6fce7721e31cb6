/* A uid that belongs to no one: without an explicit `user`, each sandbox run by root
 * gets its own uid and gid (the same number) from systemd's DynamicUser range,
 * 61184-65519, so the kernel's per-user quotas (processes, inotify instances and
 * watches, pipe buffers, message-queue bytes, pending signals) are per sandbox, never
 * shared with a host account or another sandbox.
 *
 * A lease is a file /run/agentrun/.uids/UID holding an flock(2) for the sandbox's
 * lifetime: agentrun and the sandbox's init hold the locked descriptor (init inherits
 * it and never execs), so the lock goes away only when both are gone. A candidate is
 * free when it is no host account (passwd and group databases), not one of systemd's
 * dynamic users, and its lease can be locked; a lease file left by a killed owner is
 * simply locked again (reclaimed). Teardown unlinks the file, then closes it; an
 * allocator that locked a file which was unlinked meanwhile sees the inode differ
 * from the path and tries again. No global lock, no pid bookkeeping. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentrun/log.h"
#include "agentrun/util.h"
#include "sandbox-internal.h"

#define UIDS_PARENT "/run/agentrun"
#define UIDS_DIR    UIDS_PARENT "/.uids"

static bool host_account(uid_t id)
{
	char path[64];
	/* systemd keeps its dynamic users' leases here, as names or numbers */
	snprintf(path, sizeof(path), "/run/systemd/dynamic-uid/%u", (unsigned)id);
	return getpwuid(id) != NULL || getgrgid((gid_t)id) != NULL || access(path, F_OK) == 0;
}

static bool same_file(int fd, int dirfd, const char *name)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The locked lease of `id`, -1 when another sandbox holds it, -2 on an error. */
static int try_lease(int dirfd, uid_t id, ar_error_t *err)
{
	char name[16];
	snprintf(name, sizeof(name), "%u", (unsigned)id);
	for (int tries = 0; tries < 4; tries++) {
		int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd == -1)
			return ar_error_make(err, errno, "%s/%s", UIDS_DIR, name), -2;
		if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
			close(fd);
			return -1;
		}
		if (same_file(fd, dirfd, name)) {
			char pid[16];
			int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
			/* for people reading the directory; the lock is the lease */
			if (ftruncate(fd, 0) == -1 || write(fd, pid, (size_t)n) != n) {
				/* harmless */
			}
			return fd;
		}
		close(fd); /* unlinked by its last owner after we opened it */
	}
	return -1;
}

static int open_dir(ar_error_t *err)
{
	if (mkdir(UIDS_PARENT, 0755) == -1 && errno != EEXIST)
		return ar_error_make(err, errno, "dynamic uid: mkdir %s", UIDS_PARENT);
	if (mkdir(UIDS_DIR, 0700) == -1 && errno != EEXIST)
		return ar_error_make(err, errno, "dynamic uid: mkdir %s", UIDS_DIR);
	int fd = open(UIDS_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return ar_error_make(err, errno, "dynamic uid: %s", UIDS_DIR);
	return fd;
}

int sandbox_uid_alloc(struct sandbox *sb, ar_error_t *err)
{
	const unsigned n = AR_DYNAMIC_UID_MAX - AR_DYNAMIC_UID_MIN + 1;

	sb->uid = sb->p->uid;
	sb->gid = sb->p->gid;
	sb->uid_lease = -1;
	/* in a user namespace the one mapped id is the caller's: no quota to split */
	if (sb->p->user_set || sb->userns) {
		ar_autofree char *warning = sb->userns ? NULL : ar_policy_user_warning(sb->p);
		if (warning != NULL)
			ar_warn("%s", warning);
		return 0;
	}
	ar_autoclose int dirfd = open_dir(err);
	if (dirfd == -1)
		return -1;
	/* start where concurrent runs are unlikely to meet, then walk the range */
	unsigned start = ((unsigned)getpid() * 2654435761u) % n;
	for (unsigned i = 0; i < n; i++) {
		uid_t id = AR_DYNAMIC_UID_MIN + (start + i) % n;
		if (host_account(id))
			continue;
		int fd = try_lease(dirfd, id, err);
		if (fd == -2)
			return -1;
		if (fd >= 0) {
			sb->uid = id;
			sb->gid = (gid_t)id;
			sb->uid_lease = fd;
			return 0;
		}
	}
	return ar_error_make(err, 0,
			     "dynamic uid: all of %u-%u are host accounts or leased to running "
			     "sandboxes (%s); give the policy a `user`",
			     AR_DYNAMIC_UID_MIN, AR_DYNAMIC_UID_MAX, UIDS_DIR);
}

void sandbox_uid_release(struct sandbox *sb)
{
	char path[64];

	if (sb->uid_lease < 0)
		return;
	snprintf(path, sizeof(path), "%s/%u", UIDS_DIR, (unsigned)sb->uid);
	/* unlink while still holding the lock, so no one locks a file about to vanish */
	unlink(path);
	close(sb->uid_lease);
	sb->uid_lease = -1;
}

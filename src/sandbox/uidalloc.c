/* A uid that belongs to no one: without an explicit `user`, each sandbox run by root
 * gets its own uid and gid (the same number) from systemd's DynamicUser range,
 * 61184-65519, so the kernel's per-user quotas (processes, inotify instances and
 * watches, pipe buffers, message-queue bytes, pending signals) are per sandbox, never
 * shared with a host account or another sandbox.
 *
 * "No host account": not in the passwd or group database (read straight from
 * /etc/passwd and /etc/group when nsswitch.conf names only local sources, else through
 * getpwuid/getgrgid), and not one of systemd's dynamic users.
 *
 * A lease is a file /run/agentrun/.uids/UID holding an flock(2) for the sandbox's
 * lifetime: the sandbox's init inherits the locked descriptor at the clone and never
 * execs, so the lock lasts exactly as long as the sandbox; agentrun closes its own copy
 * right after the clone (sandbox_uid_release). A candidate is free when it is no host
 * account, not one of systemd's dynamic users, and its lease can be locked; a lease
 * left by a killed sandbox is simply locked again (reclaimed). The files are never
 * unlinked (at most one per uid of the range, a few bytes each): unlinking a leased
 * file races with its next taker, and the unlink and last close of it on the exit
 * path cost ~2 ms of the user's wait. (An allocator that locked a file someone else
 * removed meanwhile sees the inode differ from the path and tries again.) No global
 * lock, no pid bookkeeping. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentrun/log.h"
#include "agentrun/util.h"
#include "sandbox-internal.h"

#define UIDS_PARENT "/run/agentrun"
#define UIDS_DIR    UIDS_PARENT "/.uids"

#define RANGE_N (AR_DYNAMIC_UID_MAX - AR_DYNAMIC_UID_MIN + 1)

/* The ids of the range that the account databases name, as a bitmap. */
struct taken {
	bool nss; /* other sources than files: ask getpwuid/getgrgid per candidate */
	unsigned char bits[(RANGE_N + 7) / 8];
};

/* Mark the third field (uid of passwd, gid of group) of every line of an
 * /etc/passwd-format file. */
static void scan_db(const char *path, struct taken *t)
{
	ar_autofree char *text = NULL;
	if (ar_read_file(path, 16 << 20, &text, NULL, NULL) == -1)
		return;
	for (char *line = text; line && *line;) {
		char *eol = strchr(line, '\n'), *f = line;
		for (int i = 0; i < 2 && f && (eol == NULL || f < eol); i++)
			f = strchr(f, ':') ? strchr(f, ':') + 1 : NULL;
		if (f != NULL && (eol == NULL || f < eol)) {
			unsigned long id = strtoul(f, NULL, 10);
			if (id >= AR_DYNAMIC_UID_MIN && id <= AR_DYNAMIC_UID_MAX)
				t->bits[(id - AR_DYNAMIC_UID_MIN) / 8] |=
				    (unsigned char)(1u << ((id - AR_DYNAMIC_UID_MIN) % 8));
		}
		line = eol ? eol + 1 : NULL;
	}
}

/* Do passwd and group come from local files only (files, compat; systemd's own
 * dynamic users are checked apart)? Then reading the files is the whole answer, at
 * a fraction of what loading the NSS modules costs on the start path (~0.6 ms). */
static bool local_only(void)
{
	static const char *const local[] = {"files", "compat", "systemd"};
	ar_autofree char *conf = NULL;
	if (ar_read_file("/etc/nsswitch.conf", 1 << 20, &conf, NULL, NULL) == -1)
		return false;
	for (char *save = NULL, *line = strtok_r(conf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "passwd:", 7) != 0 && strncmp(line, "group:", 6) != 0)
			continue;
		char *s2 = NULL;
		strtok_r(line, " \t", &s2);
		for (char *w = strtok_r(NULL, " \t", &s2); w && w[0] != '#';
		     w = strtok_r(NULL, " \t", &s2)) {
			bool ok = w[0] == '[';
			for (size_t i = 0; i < AR_ARRAY_SIZE(local) && !ok; i++)
				ok = strcmp(w, local[i]) == 0;
			if (!ok)
				return false;
		}
	}
	return true;
}

static void taken_init(struct taken *t)
{
	memset(t, 0, sizeof(*t));
	t->nss = !local_only();
	if (t->nss)
		return;
	scan_db("/etc/passwd", t);
	scan_db("/etc/group", t);
}

static bool host_account(const struct taken *t, uid_t id)
{
	char path[64];
	unsigned i = id - AR_DYNAMIC_UID_MIN;
	if (t->bits[i / 8] & (1u << (i % 8)))
		return true;
	if (t->nss && (getpwuid(id) != NULL || getgrgid((gid_t)id) != NULL))
		return true;
	/* systemd keeps its dynamic users' leases here, by number */
	snprintf(path, sizeof(path), "/run/systemd/dynamic-uid/%u", (unsigned)id);
	return access(path, F_OK) == 0;
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
	const unsigned n = RANGE_N;
	struct taken taken;

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
	taken_init(&taken);
	/* start where concurrent runs are unlikely to meet, then walk the range */
	unsigned start = ((unsigned)getpid() * 2654435761u) % n;
	for (unsigned i = 0; i < n; i++) {
		uid_t id = AR_DYNAMIC_UID_MIN + (start + i) % n;
		if (host_account(&taken, id))
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

/* Once init holds the lease (after the clone), or on a failure before it. */
void sandbox_uid_release(struct sandbox *sb)
{
	if (sb->uid_lease < 0)
		return;
	close(sb->uid_lease);
	sb->uid_lease = -1;
}

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
 * right after the clone (ar_state_uid_release). A candidate is free when it is no host
 * account, not one of systemd's dynamic users, and its lease can be locked; a lease
 * left by a killed sandbox is simply locked again (reclaimed). The walk starts at the
 * bottom of the range, so the same few files serve every run (creating a file on /run,
 * which is a disk filesystem on some hosts, costs far more than opening one); a uid is
 * reused once its sandbox is gone, as systemd reuses its dynamic users.
 *
 * The lease is also the sandbox's record for `agentrun ps` (network: none keeps no
 * state directory): one fixed-size line, written in place after the clone (no
 * truncate: on ext4 a truncate-then-write is flushed at the last close, on the exit
 * path), naming agentrun's pid and start time, the init's pid, the start, the network,
 * the name and the policy file (absolute; empty for the embedded default) that
 * `check --name` reads. A run with an explicit `user` takes a record slot `sN` the same way.
 * The files are never unlinked (at most one per uid or slot in use at once, a few
 * hundred bytes each): unlinking a leased file races with its next taker, and the
 * unlink and last close cost ~2 ms of the user's wait on the exit path. No global
 * lock, no pid bookkeeping. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentrun/log.h"
#include "agentrun/state.h"
#include "agentrun/util.h"

#define UIDS_SUB ".uids" /* under AR_STATE_ROOT: root's, or the user's own */

#define RANGE_N	     (AR_DYNAMIC_UID_MAX - AR_DYNAMIC_UID_MIN + 1)
#define SLOTS_N	     4096 /* record slots of runs with an explicit `user` */
#define RECORD_SIZE  512  /* the policy's path is at most 255 bytes (ar_net_state) */
#define RECORD_MAGIC "agentrun-sandbox 1"

/* The ids of the range that the account databases name, as a bitmap. */
struct taken {
	bool nss;	  /* other sources than files: ask getpwuid/getgrgid per candidate */
	bool systemd_dyn; /* /run/systemd/dynamic-uid exists: ask it per candidate */
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
	t->systemd_dyn = access("/run/systemd/dynamic-uid", F_OK) == 0;
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
	if (!t->systemd_dyn)
		return false;
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

/* The locked lease `name`, -1 when another sandbox holds it, -2 on an error. */
static int try_lease(int dirfd, const char *name, ar_error_t *err)
{
	for (int tries = 0; tries < 4; tries++) {
		int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd == -1)
			return ar_error_make(err, errno, "%s/" UIDS_SUB "/%s", AR_STATE_ROOT, name),
			       -2;
		if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
			close(fd);
			return -1;
		}
		if (same_file(fd, dirfd, name))
			return fd;
		close(fd); /* unlinked by someone after we opened it */
	}
	return -1;
}

static int open_dir(ar_error_t *err)
{
	ar_autofree char *dir = ar_xasprintf("%s/" UIDS_SUB, AR_STATE_ROOT);
	if (ar_state_root_make(err) == -1)
		return -1;
	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		return ar_error_make(err, errno, "dynamic uid: mkdir %s", dir);
	int fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return ar_error_make(err, errno, "dynamic uid: %s", dir);
	return fd;
}

/* A record slot for a run with an explicit `user` (it needs no uid of its own). */
static int alloc_slot(struct ar_uid_lease *l, int dirfd, ar_error_t *err)
{
	for (unsigned i = 0; i < SLOTS_N; i++) {
		char name[16];
		snprintf(name, sizeof(name), "s%u", i);
		int fd = try_lease(dirfd, name, err);
		if (fd == -2)
			return -1;
		if (fd >= 0) {
			l->fd = fd;
			return 0;
		}
	}
	return 0; /* no record: ps will not list this run, nothing else depends on it */
}

static int alloc_uid(const struct ar_uid_request *rq, struct ar_uid_lease *l, int dirfd,
		     ar_error_t *err)
{
	struct taken taken;

	taken_init(&taken);
	for (unsigned i = 0; i < RANGE_N; i++) {
		uid_t id = AR_DYNAMIC_UID_MIN + i;
		char name[16];
		if (host_account(&taken, id))
			continue;
		snprintf(name, sizeof(name), "%u", (unsigned)id);
		int fd = try_lease(dirfd, name, err);
		if (fd == -2)
			return -1;
		if (fd >= 0) {
			l->uid = id;
			l->gid = (gid_t)id;
			l->fd = fd;
			return 0;
		}
	}
	/* a proxy's lease comes without a policy: no `user` to give */
	return ar_error_make(err, 0,
			     "dynamic uid: all of %u-%u are host accounts or leased to running "
			     "sandboxes and their proxies (%s/" UIDS_SUB "); %s",
			     AR_DYNAMIC_UID_MIN, AR_DYNAMIC_UID_MAX, AR_STATE_ROOT,
			     rq->p != NULL ? "give the policy a `user`"
					   : "a proxy needs one of its own: stop some sandboxes");
}

/* In a user namespace the one id mapped is the caller's own: the command runs as the
 * caller's uid and gid (podman's --userns=keep-id: what it writes to a read-write
 * mount is the caller's), or as the policy's `user` mapped to the caller. No quota to
 * split (it is the caller's anyway), so no dynamic uid: a record slot only, under the
 * caller's own state directory. */
static int alloc_userns(const struct ar_uid_request *rq, struct ar_uid_lease *l, ar_error_t *err)
{
	bool user_set = rq->p != NULL && rq->p->user_set;
	l->uid = user_set ? rq->p->uid : rq->outer_uid;
	l->gid = user_set ? rq->p->gid : rq->outer_gid;
	ar_autoclose int dirfd = open_dir(err);
	if (dirfd == -1)
		return -1;
	return alloc_slot(l, dirfd, err);
}

int ar_state_uid_lease(const struct ar_uid_request *rq, struct ar_uid_lease *out, ar_error_t *err)
{
	bool user_set = rq->p != NULL && rq->p->user_set;
	out->uid = user_set ? rq->p->uid : 0;
	out->gid = user_set ? rq->p->gid : 0;
	out->fd = -1;
	if (rq->userns)
		return alloc_userns(rq, out, err);
	if (user_set) {
		ar_autofree char *warning = ar_policy_user_warning(rq->p);
		if (warning != NULL)
			ar_warn("%s", warning);
	}
	ar_autoclose int dirfd = open_dir(err);
	if (dirfd == -1)
		return -1;
	return user_set ? alloc_slot(out, dirfd, err) : alloc_uid(rq, out, dirfd, err);
}

/* After the clone, while agentrun still holds its copy of the lease: one line, the
 * same size every time, written in place. */
void ar_state_record_write(const struct ar_uid_lease *l, const struct ar_sandbox_record *r)
{
	char rec[RECORD_SIZE];
	const char *policy = r->policy;

	if (l->fd < 0)
		return;
	if (strchr(policy, '\n') != NULL)
		policy = "?"; /* not a path: check --name then asks for --policy */
	int n = snprintf(rec, sizeof(rec), "%s %d %" PRIu64 " %d %" PRId64 " %s %s %s\n",
			 RECORD_MAGIC, (int)r->owner, r->owner_start, (int)r->pid, r->started,
			 r->network, r->name, policy);
	if (n < 0 || (size_t)n >= sizeof(rec))
		return;
	memset(rec + n, ' ', sizeof(rec) - (size_t)n); /* the rest of an older, longer line */
	size_t extra = r->overrides ? strlen(r->overrides) : 0;
	struct stat st;
	/* the overrides after the record, an older run's longer ones cut off; truncated
	 * only when the size differs (ext4 flushes a truncate-then-write at the last
	 * close: a start without overrides, in a record of the same size, pays nothing) */
	if (pwrite(l->fd, rec, sizeof(rec), 0) != (ssize_t)sizeof(rec) ||
	    (extra && pwrite(l->fd, r->overrides, extra, RECORD_SIZE) != (ssize_t)extra) ||
	    fstat(l->fd, &st) == -1 ||
	    (st.st_size != (off_t)(RECORD_SIZE + extra) &&
	     ftruncate(l->fd, (off_t)(RECORD_SIZE + extra)) == -1)) {
		/* ps will not list this run, or check --name not know its overrides */
	}
}

/* Once the process that holds the lease has it (after the clone), or on a failure
 * before it. */
void ar_state_uid_release(struct ar_uid_lease *l)
{
	if (l->fd < 0)
		return;
	close(l->fd);
	l->fd = -1;
}

static bool parse_record(const char *buf, struct ar_sandbox_record *r)
{
	int owner = 0, pid = 0, end = 0;
	if (strncmp(buf, RECORD_MAGIC " ", sizeof(RECORD_MAGIC)) != 0)
		return false;
	if (sscanf(buf + sizeof(RECORD_MAGIC), "%d %" SCNu64 " %d %" SCNd64 " %7s %46s%n", &owner,
		   &r->owner_start, &pid, &r->started, r->network, r->name, &end) != 6)
		return false;
	r->owner = owner;
	r->pid = pid;
	/* the policy: the rest of the line after one space (a path may hold spaces) */
	const char *policy = buf + sizeof(RECORD_MAGIC) + end;
	if (*policy == ' ') {
		size_t len = strcspn(policy + 1, "\n");
		if (len < sizeof(r->policy))
			snprintf(r->policy, sizeof(r->policy), "%.*s", (int)len, policy + 1);
	}
	return owner > 0 && pid > 0;
}

/* Each live record with its file open (read-only), until fn returns non-zero. */
static int records(int (*fn)(int fd, const struct ar_sandbox_record *r, void *data), void *data)
{
	ar_autofree char *dir = ar_xasprintf("%s/" UIDS_SUB, AR_STATE_ROOT);
	DIR *d = ar_state_root_trusted() ? opendir(dir) : NULL;
	if (d == NULL)
		return 0;
	int ret = 0;
	for (struct dirent *e; ret == 0 && (e = readdir(d)) != NULL;) {
		char buf[RECORD_SIZE + 1];
		struct ar_sandbox_record r = {0};
		if (e->d_name[0] == '.')
			continue;
		ar_autoclose int fd =
		    openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd == -1)
			continue;
		ssize_t n = pread(fd, buf, RECORD_SIZE, 0);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		if (parse_record(buf, &r) && ar_state_proc_alive(r.owner, r.owner_start))
			ret = fn(fd, &r, data);
	}
	closedir(d);
	return ret;
}

struct visit {
	int (*fn)(const struct ar_sandbox_record *r, void *data);
	void *data;
};

static int visit_one(int fd, const struct ar_sandbox_record *r, void *data)
{
	const struct visit *v = data;
	return v->fn(r, v->data);
}

int ar_state_record_foreach(int (*fn)(const struct ar_sandbox_record *r, void *data), void *data)
{
	struct visit v = {fn, data};
	return records(visit_one, &v);
}

#define OVERRIDES_MAX (1 << 20)

struct overrides {
	const char *name;
	char *json;
};

static int overrides_of(int fd, const struct ar_sandbox_record *r, void *data)
{
	struct overrides *o = data;
	struct stat st;
	if (strcmp(r->name, o->name) != 0)
		return 0;
	if (fstat(fd, &st) == 0 && st.st_size > RECORD_SIZE &&
	    st.st_size - RECORD_SIZE <= OVERRIDES_MAX) {
		size_t len = (size_t)(st.st_size - RECORD_SIZE);
		char *json = ar_xmalloc(len + 1);
		if (pread(fd, json, len, RECORD_SIZE) == (ssize_t)len) {
			json[len] = '\0';
			o->json = json;
		} else {
			free(json);
		}
	}
	return 1;
}

char *ar_state_record_overrides(const char *name)
{
	struct overrides o = {.name = name};
	records(overrides_of, &o);
	return o.json;
}

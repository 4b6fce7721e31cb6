/* Carries out the mount plan in the child's private mount namespace: assemble the
 * new root (a tmpfs holding read-only binds of the host's top-level entries, or the
 * policy's rootfs bound read-only onto itself), mount the plan on top, seal the
 * root read-only and pivot_root into it.
 *
 * Every target is resolved with openat2(RESOLVE_IN_ROOT) against the new root and
 * mounted through its /proc/self/fd path, so a symlink in the new root (the host's
 * /var/run -> /run, or anything an image ships) resolves inside it and can never
 * point a mount at the host. Nothing is ever created on the host's filesystems:
 * missing mount points are only made inside the tmpfs mounts this file made itself
 * (own_fs), never below a bind of a host directory, even a writable one, nor in a
 * rootfs. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agentrun/util.h"
#include "internal.h"

#define FDPATH_MAX 32
#define fdpath(fd) fdpath_buf((char[FDPATH_MAX]){0}, (fd))

static char *fdpath_buf(char *buf, int fd)
{
	snprintf(buf, FDPATH_MAX, "/proc/self/fd/%d", fd);
	return buf;
}

/* tmpfs mount options with a size: without one a tmpfs may take half the host's RAM,
 * and with --no-cgroups nothing would charge its pages to the sandbox. */
struct tmpfs_opts {
	char tmp[64]; /* the policy's tmpfs: the memory limit */
	char shm[64]; /* /dev/shm: the memory limit, at most 64m without cgroups */
	uid_t uid;    /* the sandbox's ids: owner of a credential copy */
	gid_t gid;
};

static void tmpfs_opts_init(struct tmpfs_opts *t, const struct sandbox *sb)
{
	long long mem = (long long)sb->spec->limits.memory, shm = mem;
	if (sb->cg == NULL && shm > 64LL << 20)
		shm = 64LL << 20;
	snprintf(t->tmp, sizeof(t->tmp), "mode=1777,size=%lld", mem);
	snprintf(t->shm, sizeof(t->shm), "mode=1777,size=%lld", shm);
	t->uid = sb->uid;
	t->gid = sb->gid;
}

/* The host nodes a minimal /dev gets (bind-mounted: a user namespace cannot mknod). */
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
static const struct {
	const char *name, *target;
} dev_links[] = {
    {"ptmx", "pts/ptmx"},	   {"fd", "/proc/self/fd"},	  {"stdin", "/proc/self/fd/0"},
    {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"},
};

/* Where the host root view is assembled, and the copies' tmpfs (in our private mount
 * namespace only). */
static const char *const staging_dirs[] = {"/tmp", "/mnt", "/var/tmp"};
/* The one of them the root is assembled on, NULL: a rootfs (static: one root per child). */
static const char *root_staging;
/* The host root view is an allow-list: programs, libraries and configuration.
 * Everything else of the host (/home, /root, /srv, /mnt, /var/lib, daemons' pathname
 * sockets anywhere) is simply absent. Symlinks among them (/bin -> usr/bin) are
 * copied as symlinks. */
static const char *const host_top[] = {"usr",	"bin",	  "sbin", "lib", "lib32",
				       "lib64", "libx32", "etc",  "opt"};
/* Empty directories of the root tmpfs: fresh mounts land on /proc, /sys, /dev and
 * the policy's tmpfs on /tmp; /var and /run stay empty (and read-only) unless the
 * policy mounts something there. */
static const char *const empty_top[] = {"proc", "sys", "dev", "tmp", "var", "run"};
/* Files hidden by pattern in the bound host directories (/dev/null over a file, an
 * empty tmpfs over a directory): sudo's configuration and sshd's private host keys. */
static const struct {
	const char *dir, *prefix, *suffix;
} hidden_globs[] = {
    {"/etc", "sudoers", ""},
    {"/etc/ssh", "", "_key"},
};

static int resolve(int rootfd, const char *path)
{
	struct open_how how = {
	    .flags = O_PATH | O_CLOEXEC,
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;
	do
		fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	while (fd == -1 && (errno == EINTR || errno == EAGAIN));
	return (int)fd;
}

/* Open a bind source (or the rootfs) without following a symlink anywhere on the
 * way: an agent that can write where a source lies could otherwise swap it for a
 * link and point a later run's mount at any host path. The bind is made from this
 * fd, so nothing renamed or swapped after this point matters either. (openat2 is
 * required by the preflight, so there is no fallback walk.) */
static int open_source(const char *path, unsigned long long flags)
{
	struct open_how how = {
	    .flags = O_PATH | O_CLOEXEC | flags,
	    .resolve = RESOLVE_NO_SYMLINKS,
	};
	long fd;
	do
		fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	while (fd == -1 && (errno == EINTR || errno == EAGAIN));
	return (int)fd;
}

static int source_error(ar_error_t *err, const char *field, const char *path)
{
	if (errno == ELOOP)
		return ar_error_make(
		    err, 0, "%s: %s: is a symlink or passes through one; give the real path", field,
		    path);
	return ar_error_make(err, errno, "%s: %s", field, path);
}

/* statvfs ST_* flags that a bind remount must repeat, as MS_* flags. */
static unsigned long kept_flags(unsigned long st)
{
	static const struct {
		unsigned long st, ms;
	} map[] = {{ST_NOEXEC, MS_NOEXEC},
		   {ST_NOATIME, MS_NOATIME},
		   {ST_NODIRATIME, MS_NODIRATIME},
		   {ST_RELATIME, MS_RELATIME}};
	unsigned long ms = 0;
	for (size_t i = 0; i < AR_ARRAY_SIZE(map); i++)
		if (st & map[i].st)
			ms |= map[i].ms;
	return ms;
}

struct remount_walk {
	unsigned long flags;
	ar_error_t *err;
};

static int remount_one(const char *mountpoint, void *data)
{
	struct remount_walk *w = data;
	struct statvfs sv;
	unsigned long flags = w->flags;

	if (statvfs(mountpoint, &sv) == 0) /* keep what is set: it may be locked */
		flags |= kept_flags(sv.f_flag);
	if (mount(NULL, mountpoint, NULL, flags, NULL) == -1 && errno != ENOENT)
		return ar_error_make(w->err, errno, "remount %s read-only", mountpoint);
	return 0;
}

/* Recursive flags on a mounted tree: mount_setattr(2) where available (5.12+), else
 * each mount of the tree from mountinfo in turn, as runc and bwrap do. */
static int set_tree_attrs(int fd, bool readonly, ar_error_t *err, const char *what)
{
	struct mount_attr attr = {
	    .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (readonly ? MOUNT_ATTR_RDONLY : 0),
	};
	if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) ==
	    0)
		return 0;
	if (errno != ENOSYS)
		return ar_error_make(err, errno, "%s: mount_setattr (read-only, nosuid, nodev)",
				     what);
	char top[4096];
	ar_autofree char *info = NULL;
	struct remount_walk w = {
	    .flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (readonly ? MS_RDONLY : 0),
	    .err = err,
	};
	ssize_t n = readlink(fdpath(fd), top, sizeof(top) - 1);
	if (n == -1)
		return ar_error_make(err, errno, "%s: readlink %s", what, fdpath(fd));
	top[n] = '\0';
	if (ar_read_file("/proc/self/mountinfo", 0, &info, NULL, err) == -1)
		return ar_error_wrap(err, "%s", what);
	if (ar_mountinfo_foreach(info, top, remount_one, &w) != 0)
		return *err ? ar_error_wrap(err, "%s", what)
			    : ar_error_make(err, 0, "%s: cannot parse /proc/self/mountinfo", what);
	return 0;
}

/* The filesystems this child mounted itself (the root tmpfs, covers, /dev, the
 * policy's tmpfs), by device: the only places a mount point may be created in. A
 * bind of a host directory shares the host's device, so a missing target below a
 * writable bind is refused instead of being made on the host, as root. (Static: the
 * child between clone and exec builds one root, single-threaded.) */
static struct {
	dev_t dev[64];
	size_t n;
} own_fs;

static void own_fs_add(int fd)
{
	struct stat st;
	if (fstat(fd, &st) == 0 && own_fs.n < AR_ARRAY_SIZE(own_fs.dev))
		own_fs.dev[own_fs.n++] = st.st_dev;
}

static bool own_fs_has(int fd)
{
	struct stat st;
	if (fstat(fd, &st) == -1)
		return false;
	for (size_t i = 0; i < own_fs.n; i++)
		if (own_fs.dev[i] == st.st_dev)
			return true;
	return false;
}

/* Create a missing mount point (a directory, or an empty file for a file bind)
 * below rootfd, parents first. Only ever inside our own tmpfs mounts. */
static int ensure_mountpoint(int rootfd, const char *path, bool dir, ar_error_t *err,
			     const char *what)
{
	int fd = resolve(rootfd, path);
	if (fd >= 0)
		return fd;
	if (errno != ENOENT)
		return ar_error_make(err, errno, "%s: %s", what, path);
	const char *slash = strrchr(path, '/');
	ar_autofree char *parent = ar_xstrndup(path, slash == path ? 1 : (size_t)(slash - path));
	ar_autoclose int pfd = ensure_mountpoint(rootfd, parent, true, err, what);
	if (pfd < 0)
		return -1;
	if (!own_fs_has(pfd))
		return ar_error_make(err, 0,
				     "%s: cannot create the mount point %s: %s is a host directory "
				     "(nothing is created on the host: create it there first, or "
				     "mount elsewhere)",
				     what, path, parent);
	int r = dir ? mkdirat(pfd, slash + 1, 0755)
		    : TEMP_FAILURE_RETRY(
			  openat(pfd, slash + 1, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644));
	if (r == -1 && errno != EEXIST)
		return ar_error_make(err, errno, "%s: cannot create the mount point %s", what,
				     path);
	if (!dir && r >= 0)
		close(r);
	fd = resolve(rootfd, path);
	if (fd == -1)
		return ar_error_make(err, errno, "%s: %s", what, path);
	return fd;
}

/* mount onto fd (resolved by the caller), for a caller that needs no fd on the result. */
static int mount_at(int fd, const char *path, const char *src, const char *type,
		    unsigned long flags, const char *data, ar_error_t *err, const char *what)
{
	if (mount(src, fdpath(fd), type, flags, data) == -1)
		return ar_error_make(err, errno, "%s: mount %s on %s", what, type ? type : src,
				     path);
	return 0;
}

/* mount onto fd, then return a fresh fd on what is now mounted there. */
static int mount_on(int rootfd, int *fd, const char *path, const char *src, const char *type,
		    unsigned long flags, const char *data, ar_error_t *err, const char *what)
{
	if (mount_at(*fd, path, src, type, flags, data, err, what) == -1)
		return -1;
	close(*fd);
	*fd = resolve(rootfd, path);
	if (*fd == -1)
		return ar_error_make(err, errno, "%s: %s", what, path);
	return 0;
}

static int remount_ro(int fd, unsigned long extra, ar_error_t *err, const char *what)
{
	if (mount(NULL, fdpath(fd), NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | extra, NULL) == -1)
		return ar_error_make(err, errno, "%s: remount read-only", what);
	return 0;
}

/* An empty tmpfs over a directory, /dev/null over anything else. A directory of the
 * root tmpfs itself (a hidden top-level directory that was never bound, or a second
 * name for one, /var/run -> /run) is empty and ours already. */
static int cover_path(int rootfd, const char *target, const char *what, bool readonly, dev_t own,
		      ar_error_t *err)
{
	struct stat st;
	ar_autoclose int fd = resolve(rootfd, target);
	if (fd == -1)
		return errno == ENOENT || errno == ENOTDIR
			   ? 0
			   : ar_error_make(err, errno, "%s: %s", what, target);
	if (fstat(fd, &st) == -1)
		return ar_error_make(err, errno, "%s: stat %s", what, target);
	if (!S_ISDIR(st.st_mode)) {
		/* read-only like the rest: writes to /dev/null are harmless, but the
		 * mask should say what it is (not nodev: it must still read as empty) */
		if (mount_on(rootfd, &fd, target, "/dev/null", NULL, MS_BIND, NULL, err, what) ==
		    -1)
			return -1;
		return remount_ro(fd, MS_NOSUID | MS_NOEXEC, err, what);
	}
	if (own != 0 && st.st_dev == own)
		return 0;
	if (mount_on(rootfd, &fd, target, "tmpfs", "tmpfs",
		     MS_NOSUID | MS_NODEV | MS_NOEXEC | (readonly ? MS_RDONLY : 0),
		     "mode=0755,size=64k,nr_inodes=1024", err, what) == -1)
		return -1;
	own_fs_add(fd);
	return 0;
}

static int cover(int rootfd, const struct ar_mount_op *op, bool readonly, dev_t own,
		 ar_error_t *err)
{
	return cover_path(rootfd, op->target, op->what, readonly, own, err);
}

static bool fd_is_dir(int fd)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Hidden directories are writable tmpfs until the mount points the later mounts need
 * below them exist (a kubeconfig at /home/agent/.kube/config), then read-only. */
static int hide_all(int rootfd, const struct ar_mount_plan *plan, const int *srcfds, size_t *next,
		    ar_error_t *err)
{
	size_t i, first = *next;
	struct stat root;
	if (fstat(rootfd, &root) == -1)
		return ar_error_make(err, errno, "stat the new root");
	for (i = first; i < plan->n_ops && plan->ops[i].kind == AR_MNT_HIDE; i++)
		if (cover(rootfd, &plan->ops[i], false, plan->host_root ? root.st_dev : 0, err) ==
		    -1)
			return -1;
	*next = i;
	for (size_t j = i; j < plan->n_ops; j++) {
		const struct ar_mount_op *op = &plan->ops[j];
		if (op->kind != AR_MNT_TMPFS && op->kind != AR_MNT_BIND)
			continue;
		for (size_t h = first; h < i; h++)
			if (ar_path_under(op->target, plan->ops[h].target)) {
				bool dir = op->kind == AR_MNT_TMPFS || fd_is_dir(srcfds[j]);
				int fd = ensure_mountpoint(rootfd, op->target, dir, err, op->what);
				if (fd < 0)
					return -1;
				close(fd);
				break;
			}
	}
	for (size_t h = first; h < i; h++) {
		ar_autoclose int fd = resolve(rootfd, plan->ops[h].target);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_dev != root.st_dev &&
		    remount_ro(fd, MS_NOSUID | MS_NODEV | MS_NOEXEC, err, plan->ops[h].what) == -1)
			return -1;
	}
	return 0;
}

static int mount_dev_nodes(int devfd, ar_error_t *err)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(dev_nodes); i++) {
		char host[32];
		snprintf(host, sizeof(host), "/dev/%s", dev_nodes[i]);
		if (access(host, F_OK) == -1)
			continue; /* no /dev/tty on a host without one */
		ar_autoclose int fd = TEMP_FAILURE_RETRY(
		    openat(devfd, dev_nodes[i], O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666));
		if (fd == -1)
			return ar_error_make(err, errno, "/dev: create %s", dev_nodes[i]);
		if (mount(host, fdpath(fd), NULL, MS_BIND, NULL) == -1)
			return ar_error_make(err, errno, "/dev: bind %s", host);
	}
	for (size_t i = 0; i < AR_ARRAY_SIZE(dev_links); i++)
		if (symlinkat(dev_links[i].target, devfd, dev_links[i].name) == -1)
			return ar_error_make(err, errno, "/dev: symlink %s", dev_links[i].name);
	return 0;
}

static int mount_subdir(int devfd, const char *name, const char *type, unsigned long flags,
			const char *data, ar_error_t *err)
{
	if (mkdirat(devfd, name, 0755) == -1)
		return ar_error_make(err, errno, "/dev: mkdir %s", name);
	ar_autoclose int fd = openat(devfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1 || mount(type, fdpath(fd), type, flags, data) == -1)
		return ar_error_make(err, errno, "/dev/%s: mount %s", name, type);
	return 0;
}

/* A tmpfs /dev with the harmless host nodes, a private devpts and /dev/shm; then
 * read-only so nothing can be created in it. */
static int mount_dev(int rootfd, const struct ar_mount_op *op, const struct tmpfs_opts *t,
		     ar_error_t *err)
{
	ar_autoclose int fd = ensure_mountpoint(rootfd, op->target, true, err, op->what);
	if (fd < 0)
		return -1;
	if (mount_on(rootfd, &fd, op->target, "tmpfs", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		     "mode=0755,size=64k,nr_inodes=1024", err, op->what) == -1)
		return -1;
	own_fs_add(fd);
	if (mount_dev_nodes(fd, err) == -1 ||
	    mount_subdir(fd, "pts", "devpts", MS_NOSUID | MS_NOEXEC,
			 "newinstance,ptmxmode=0666,mode=0620", err) == -1 ||
	    mount_subdir(fd, "shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, t->shm, err) == -1)
		return -1;
	return remount_ro(fd, MS_NOSUID | MS_NODEV | MS_NOEXEC, err, op->what);
}

#define COPY_MAX (1 << 20)

/* Read a credential file (at most COPY_MAX) through its O_PATH fd. */
static char *read_source(int srcfd, size_t *len, const struct ar_mount_op *op, ar_error_t *err)
{
	ar_autoclose int fd = TEMP_FAILURE_RETRY(open(fdpath(srcfd), O_RDONLY | O_CLOEXEC));
	ar_autofree char *buf = ar_xmalloc(COPY_MAX + 1);
	ssize_t n = 0, r = 1;
	if (fd == -1)
		return ar_error_make(err, errno, "%s: read %s", op->what, op->source), NULL;
	while (r > 0 && n <= COPY_MAX) {
		r = TEMP_FAILURE_RETRY(read(fd, buf + n, (size_t)(COPY_MAX + 1 - n)));
		n += r > 0 ? r : 0;
	}
	if (r == -1)
		return ar_error_make(err, errno, "%s: read %s", op->what, op->source), NULL;
	if (n > COPY_MAX)
		return ar_error_make(err, 0, "%s: %s is larger than 1 MiB", op->what, op->source),
		       NULL;
	*len = (size_t)n;
	return steal_pointer(&buf);
}

/* Write the copy into a fresh tmpfs mounted over `dir` (in our namespace only),
 * owned by the sandbox's ids, mode 0600 (the bind is read-only: EROFS on a write);
 * returns an O_PATH fd on the file. */
static int write_copy(const char *dir, const char *data, size_t len, const struct tmpfs_opts *t,
		      const struct ar_mount_op *op, ar_error_t *err)
{
	char opts[96];
	snprintf(opts, sizeof(opts), "mode=0755,size=%zu,nr_inodes=4", len + 4096);
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) == -1)
		return ar_error_make(err, errno, "%s: mount a tmpfs for the copy", op->what);
	ar_autofree char *path = ar_xasprintf("%s/copy", dir);
	ar_autoclose int fd =
	    TEMP_FAILURE_RETRY(open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600));
	int pfd = -1;
	if (fd == -1 || ar_write_all(fd, data, len) == -1 || fchown(fd, t->uid, t->gid) == -1 ||
	    (pfd = TEMP_FAILURE_RETRY(open(path, O_PATH | O_CLOEXEC))) == -1) {
		ar_error_make(err, errno, "%s: write the copy", op->what);
		umount2(dir, MNT_DETACH);
		return -1;
	}
	return pfd;
}

static int bind_copy(int rootfd, const struct ar_mount_op *op, int copy, ar_error_t *err)
{
	ar_autoclose int fd = ensure_mountpoint(rootfd, op->target, false, err, op->what);
	if (fd < 0)
		return -1;
	if (mount(fdpath(copy), fdpath(fd), NULL, MS_BIND, NULL) == -1)
		return ar_error_make(err, errno, "%s: bind the copy of %s on %s", op->what,
				     op->source, op->target);
	close(fd);
	fd = resolve(rootfd, op->target);
	if (fd == -1)
		return ar_error_make(err, errno, "%s: %s", op->what, op->target);
	return set_tree_attrs(fd, true, err, op->what);
}

/* A staging directory of the old root other than the root's own, NULL: none. */
static const char *copy_staging(void)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(staging_dirs); i++)
		if (staging_dirs[i] != root_staging && is_dir(staging_dirs[i]))
			return staging_dirs[i];
	return NULL;
}

/* A private copy of a credential file (or of the sandbox's /etc/hosts), bound read-only
 * at the target: the host file (mode 600, its owner's) is neither re-owned nor re-moded,
 * and the sandbox's uid can read the copy. The tmpfs holding it is mounted on a staging
 * directory of the old root, which pivot's detach of the old root takes away with it:
 * the bind keeps it alive, nothing else shows it (and one RCU grace period, pivot's,
 * serves every copy: a detach of its own waited for one each, 0.3-1.3 ms). Stacked on
 * the root's own staging directory, the only one on a host without /mnt and /var/tmp,
 * it is detached at once. A snapshot: later changes to the host file do not reach the
 * sandbox. */
static int mount_copy(int rootfd, const struct ar_mount_op *op, int srcfd,
		      const struct tmpfs_opts *t, ar_error_t *err)
{
	size_t len = 0;
	const char *dir = copy_staging();
	bool on_root = dir == NULL;
	ar_autofree char *data = read_source(srcfd, &len, op, err);
	if (data == NULL)
		return -1;
	if (on_root)
		dir = root_staging;
	if (dir == NULL)
		return ar_error_make(err, 0, "%s: no directory to stage the copy in", op->what);
	ar_autoclose int copy = write_copy(dir, data, len, t, op, err);
	if (copy < 0)
		return -1;
	/* bound while its tmpfs is still mounted (a detached one cannot be bound from) */
	int r = bind_copy(rootfd, op, copy, err);
	if (on_root && umount2(dir, MNT_DETACH) == -1 && r == 0)
		return ar_error_make(err, errno, "%s: detach the copy's tmpfs", op->what);
	return r;
}

/* The source was opened before the root was assembled: the staging tmpfs may cover
 * the host path by now (a source in /tmp). */
static int mount_bind(int rootfd, const struct ar_mount_op *op, int srcfd, ar_error_t *err)
{
	ar_autoclose int fd =
	    ensure_mountpoint(rootfd, op->target, fd_is_dir(srcfd), err, op->what);
	if (fd < 0)
		return -1;
	/* a read-write bind as root: the idmapped clone the parent made (idmap.c) */
	if (op->idmap_tree > 0 && syscall(SYS_move_mount, op->idmap_tree, "", fd, "",
					  MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == -1)
		return ar_error_make(err, errno, "%s: move the idmapped %s on %s", op->what,
				     op->source, op->target);
	if (op->idmap_tree <= 0 &&
	    mount(fdpath(srcfd), fdpath(fd), NULL, MS_BIND | MS_REC, NULL) == -1)
		return ar_error_make(err, errno, "%s: bind %s on %s", op->what, op->source,
				     op->target);
	close(fd);
	fd = resolve(rootfd, op->target);
	if (fd == -1)
		return ar_error_make(err, errno, "%s: %s", op->what, op->target);
	return set_tree_attrs(fd, op->readonly, err, op->what);
}

static int mount_special(int rootfd, const struct ar_mount_op *op, const char *type,
			 unsigned long flags, ar_error_t *err)
{
	ar_autoclose int fd = resolve(rootfd, op->target);
	if (fd == -1)
		return ar_error_make(err, errno, "%s: %s", op->what, op->target);
	return mount_at(fd, op->target, type, type, flags, NULL, err, op->what);
}

static int ro_self(int rootfd, const struct ar_mount_op *op, ar_error_t *err)
{
	ar_autoclose int fd = resolve(rootfd, op->target);
	if (fd == -1)
		return errno == ENOENT ? 0
				       : ar_error_make(err, errno, "%s: %s", op->what, op->target);
	if (mount_on(rootfd, &fd, op->target, fdpath(fd), NULL, MS_BIND | MS_REC, NULL, err,
		     op->what) == -1)
		return -1;
	return set_tree_attrs(fd, true, err, op->target);
}

static int do_op(int rootfd, const struct ar_mount_op *op, int srcfd, const struct tmpfs_opts *t,
		 ar_error_t *err)
{
	ar_autoclose int fd = -1;
	switch (op->kind) {
	case AR_MNT_HIDE:
	case AR_MNT_MASK:
		return cover(rootfd, op, true, 0, err);
	case AR_MNT_PROC:
		return mount_special(rootfd, op, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, err);
	case AR_MNT_SYSFS:
		fd = resolve(rootfd, op->target);
		if (fd == -1)
			return 0; /* a rootfs without /sys: nothing to cover */
		return mount_at(fd, op->target, "sysfs", "sysfs",
				MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, err, op->what);
	case AR_MNT_DEV:
		return mount_dev(rootfd, op, t, err);
	case AR_MNT_RO_SELF:
		return ro_self(rootfd, op, err);
	case AR_MNT_TMPFS:
		fd = ensure_mountpoint(rootfd, op->target, true, err, op->what);
		if (fd < 0)
			return -1;
		if (mount_on(rootfd, &fd, op->target, "tmpfs", "tmpfs", MS_NOSUID | MS_NODEV,
			     t->tmp, err, op->what) == -1)
			return -1;
		own_fs_add(fd);
		return 0;
	case AR_MNT_BIND:
		if (op->copy && !fd_is_dir(srcfd))
			return mount_copy(rootfd, op, srcfd, t, err);
		return mount_bind(rootfd, op, srcfd, err);
	}
	return ar_error_make(err, EINVAL, "%s: unknown mount kind", op->what);
}

/* The host root view: a tmpfs root holding a read-only recursive bind of each
 * allowed top-level host directory (host_top), copies of those that are symlinks,
 * and the empty directories of empty_top. Being a tmpfs, the root can take new
 * mount points (`/logs`, `/var/cache/x`) without anything being created on the
 * host; it turns read-only once they exist (seal_root). */
static int bind_top_entry(int rootfd, const char *name, ar_error_t *err)
{
	char src[PATH_MAX], link[PATH_MAX];
	struct stat st;

	snprintf(src, sizeof(src), "/%s", name);
	if (lstat(src, &st) == -1)
		return errno == ENOENT ? 0 : ar_error_make(err, errno, "root: %s", src);
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlink(src, link, sizeof(link) - 1);
		if (n == -1)
			return ar_error_make(err, errno, "root: readlink %s", src);
		link[n] = '\0';
		if (symlinkat(link, rootfd, name) == -1)
			return ar_error_make(err, errno, "root: symlink %s", src);
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	ar_autoclose int fd = ensure_mountpoint(rootfd, src, true, err, "root");
	if (fd < 0)
		return -1;
	if (mount_on(rootfd, &fd, src, src, NULL, MS_BIND | MS_REC, NULL, err, "root") == -1)
		return -1;
	return set_tree_attrs(fd, true, err, src);
}

static bool glob_match(const char *name, const char *prefix, const char *suffix)
{
	size_t n = strlen(name), p = strlen(prefix), x = strlen(suffix);
	return n >= p + x && n > 0 && strncmp(name, prefix, p) == 0 &&
	       strcmp(name + n - x, suffix) == 0;
}

/* A directory stream on a directory of the new root (resolved inside it). */
static DIR *open_dir_in(int rootfd, const char *path)
{
	ar_autoclose int pfd = resolve(rootfd, path);
	if (pfd == -1)
		return NULL;
	int fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd == -1 ? NULL : fdopendir(fd);
	if (d == NULL && fd != -1)
		close(fd);
	return d;
}

/* Cover what hidden_globs names, as the bound view shows it now. */
static int hide_globs(int rootfd, ar_error_t *err)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(hidden_globs); i++) {
		DIR *d = open_dir_in(rootfd, hidden_globs[i].dir);
		struct dirent *de;
		int r = 0;
		if (d == NULL)
			continue; /* no /etc/ssh on this host */
		while (r == 0 && (de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.' ||
			    !glob_match(de->d_name, hidden_globs[i].prefix, hidden_globs[i].suffix))
				continue;
			ar_autofree char *path =
			    ar_xasprintf("%s/%s", hidden_globs[i].dir, de->d_name);
			r = cover_path(rootfd, path, "hidden path", true, 0, err);
		}
		closedir(d);
		if (r == -1)
			return -1;
	}
	return 0;
}

static int host_root_view(int rootfd, ar_error_t *err)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(host_top); i++)
		if (bind_top_entry(rootfd, host_top[i], err) == -1)
			return -1;
	for (size_t i = 0; i < AR_ARRAY_SIZE(empty_top); i++)
		if (mkdirat(rootfd, empty_top[i], 0755) == -1 && errno != EEXIST)
			return ar_error_make(err, errno, "root: mkdir /%s", empty_top[i]);
	return hide_globs(rootfd, err);
}

/* The rootfs bound read-only onto itself, from an fd opened without following
 * symlinks: a detached clone of it (open_tree) moved onto that very directory. The
 * clone's fd is the new root, so no path is resolved again after the check. */
static int bind_rootfs(const char *origin, const char *rootfs, ar_error_t *err)
{
	ar_autofree char *field = ar_xasprintf("%s: rootfs", origin);
	ar_autoclose int src = open_source(rootfs, O_DIRECTORY);
	if (src == -1)
		return source_error(err, field, rootfs);
	ar_autoclose int tree =
	    (int)syscall(SYS_open_tree, src, "",
			 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
	if (tree == -1)
		return ar_error_make(err, errno, "%s: bind %s", field, rootfs);
	if (syscall(SYS_move_mount, tree, "", src, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == -1)
		return ar_error_make(err, errno, "%s: bind %s onto itself", field, rootfs);
	if (set_tree_attrs(tree, true, err, "rootfs") == -1)
		return -1;
	return steal_fd(&tree);
}

/* Mount the new root on a directory of ours and return an fd on it. */
static int new_root(const char *origin, const struct ar_mount_plan *plan, ar_error_t *err)
{
	const char *dst = NULL;

	if (!plan->host_root)
		return bind_rootfs(origin, plan->rootfs, err);
	for (size_t i = 0; i < AR_ARRAY_SIZE(staging_dirs) && dst == NULL; i++)
		if (is_dir(staging_dirs[i]))
			dst = staging_dirs[i];
	if (dst == NULL)
		return ar_error_make(err, 0,
				     "root: no directory to assemble the root in "
				     "(tried /tmp, /mnt, /var/tmp)");
	if (mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") == -1)
		return ar_error_make(err, errno, "root: mount tmpfs on %s", dst);
	root_staging = dst;
	int fd = TEMP_FAILURE_RETRY(open(dst, O_PATH | O_DIRECTORY | O_CLOEXEC));
	if (fd == -1)
		return ar_error_make(err, errno, "root: open %s", dst);
	own_fs_add(fd);
	if (host_root_view(fd, err) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static int seal_root(int rootfd, const struct ar_mount_plan *plan, ar_error_t *err)
{
	if (!plan->host_root)
		return 0; /* bound read-only already */
	return remount_ro(rootfd, MS_NOSUID | MS_NODEV, err, "root");
}

static int pivot(int rootfd, ar_error_t *err)
{
	/* pivot_root(".", "."): the old root ends up stacked on the new one, and is
	 * detached at once (runc's way; no directory for the old root needed) */
	if (fchdir(rootfd) == -1)
		return ar_error_make(err, errno, "chdir to the new root");
	if (syscall(SYS_pivot_root, ".", ".") == -1)
		return ar_error_make(err, errno, "pivot_root");
	if (umount2(".", MNT_DETACH) == -1)
		return ar_error_make(err, errno, "detach the old root");
	if (chdir("/") == -1)
		return ar_error_make(err, errno, "chdir /");
	return 0;
}

static void close_sources(int **fds)
{
	for (size_t i = 0; *fds && (*fds)[i] != -2; i++)
		if ((*fds)[i] >= 0)
			close((*fds)[i]);
	free(*fds);
}

/* O_PATH fds on the bind sources, -1 for the other ops, -2 at the end. */
static int *open_sources(const struct ar_mount_plan *plan, ar_error_t *err)
{
	int *fds = ar_xcalloc(plan->n_ops + 1, sizeof(int));
	for (size_t i = 0; i <= plan->n_ops; i++)
		fds[i] = i == plan->n_ops ? -2 : -1;
	for (size_t i = 0; i < plan->n_ops; i++) {
		const struct ar_mount_op *op = &plan->ops[i];
		if (op->kind != AR_MNT_BIND)
			continue;
		fds[i] = op->source_fd > 0 ? fcntl(op->source_fd, F_DUPFD_CLOEXEC, 3)
					   : open_source(op->source, 0);
		if (fds[i] == -1) {
			/* "p.json: mounts[1]" names a mount, whose path is its .source;
			 * "p.json: kubeconfig" is the path itself */
			size_t n = strlen(op->what);
			ar_autofree char *field = ar_xasprintf(
			    "%s%s", op->what, n > 0 && op->what[n - 1] == ']' ? ".source" : "");
			source_error(err, field, op->source);
			close_sources(&fds);
			return NULL;
		}
	}
	return fds;
}

int sandbox_mount_root(const struct sandbox *sb, ar_error_t *err)
{
	const struct ar_mount_plan *plan = &sb->plan;
	struct tmpfs_opts topts;

	/* nothing we mount may propagate back to the host, nor host mounts in later */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		return ar_error_make(err, errno, "make / private");
	__attribute__((cleanup(close_sources))) int *srcfds = open_sources(plan, err);
	if (srcfds == NULL)
		return -1;
	tmpfs_opts_init(&topts, sb);
	ar_autoclose int rootfd = new_root(sb->p->origin, plan, err);
	if (rootfd < 0)
		return -1;
	for (size_t i = 0; i < plan->n_ops;) {
		if (plan->ops[i].kind == AR_MNT_HIDE) {
			if (hide_all(rootfd, plan, srcfds, &i, err) == -1)
				return -1;
			continue;
		}
		if (do_op(rootfd, &plan->ops[i], srcfds[i], &topts, err) == -1)
			return -1;
		i++;
	}
	if (seal_root(rootfd, plan, err) == -1)
		return -1;
	return pivot(rootfd, err);
}

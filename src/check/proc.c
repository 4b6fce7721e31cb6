/* The /proc reader: gathers the facts about one process (status, mountinfo, namespace
 * inodes against /proc/1, cgroup limits, environ, network devices and routes, which
 * credential paths are reachable through its root). All parsing is in procparse.c;
 * this file only opens files. Facts that cannot be read stay "unknown" rather than
 * failing the whole check, except status, which tells whether the process exists. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agentrun/check.h"
#include "agentrun/log.h"

/* A /proc file as text, or NULL (quietly) when it cannot be read. */
static char *slurp(const char *path, size_t *len)
{
	ar_auto_error ar_error_t err = NULL;
	char *data = NULL;
	if (ar_read_file(path, 16u << 20, &data, len, &err) < 0)
		return NULL;
	return data;
}

static int read_status(pid_t pid, struct ar_proc_facts *f, ar_error_t *err)
{
	char path[64];
	ar_autofree char *text = NULL;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (ar_read_file(path, 0, &text, NULL, err) < 0) {
		if ((*err)->status != ENOENT)
			return -1;
		ar_error_release(err);
		return ar_error_make(err, 0, "no such process");
	}
	if (ar_check_parse_status(text, &f->status, err) < 0)
		return ar_error_wrap(err, "%s", path);
	return 0;
}

/* "ID ID 1", one line: the id mapped to itself, and nothing else. */
static bool identity_map(pid_t pid, const char *file, unsigned id)
{
	char path[64];
	unsigned a, b, n;
	int end = 0;
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	ar_autofree char *text = slurp(path, NULL);
	return text != NULL && sscanf(text, " %u %u %u %n", &a, &b, &n, &end) == 3 &&
	       text[end] == '\0' && a == id && b == id && n == 1;
}

static void read_keep_id(pid_t pid, struct ar_proc_facts *f)
{
	/* one id of length 1: never the host's user namespace, which maps them all */
	f->keep_id = identity_map(pid, "uid_map", f->status.uid[0]) &&
		     identity_map(pid, "gid_map", f->status.gid[0]);
}

static int read_mounts(pid_t pid, struct ar_proc_facts *f, ar_error_t *err)
{
	char path[64];
	ar_autofree char *text = NULL;
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
	if (ar_read_file(path, 0, &text, NULL, err) < 0)
		return -1;
	if (ar_check_parse_mountinfo(text, &f->mounts, &f->n_mounts, err) < 0)
		return ar_error_wrap(err, "%s", path);
	return 0;
}

static bool ns_link(const char *who, const char *name, char *buf, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%s/ns/%s", who, name);
	ssize_t n = readlink(path, buf, size - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* The host's namespaces are those of /proc/1; where PID 1 is not ours to inspect (a
 * hardened init), the checker's own namespaces stand in for the host's. */
static void read_namespaces(pid_t pid, struct ar_proc_facts *f)
{
	char who[16];
	snprintf(who, sizeof(who), "%d", (int)pid);
	for (int k = 0; k < AR_SPEC_N_NAMESPACES; k++) {
		const char *ns = ar_spec_namespaces[k].proc;
		char mine[64], host[64];
		if (!ns_link(who, ns, mine, sizeof(mine)) ||
		    (!ns_link("1", ns, host, sizeof(host)) &&
		     !ns_link("self", ns, host, sizeof(host))))
			f->ns_shared[k] = -1;
		else
			f->ns_shared[k] = strcmp(mine, host) == 0;
	}
}

/* ---- cgroup limits ---- */

static char *file_in(const char *dir, const char *name)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return slurp(path, NULL);
}

static int v1_memory(const char *dir, int64_t *out)
{
	ar_autofree char *t = file_in(dir, "memory.limit_in_bytes");
	return t ? ar_check_parse_cg_v1_memory(t, out) : -1;
}

static int any_pids(const char *dir, int64_t *out)
{
	ar_autofree char *t = file_in(dir, "pids.max");
	return t ? ar_check_parse_cg_max(t, out) : -1;
}

static int v1_cpu(const char *dir, int64_t *out)
{
	ar_autofree char *q = file_in(dir, "cpu.cfs_quota_us");
	ar_autofree char *p = file_in(dir, "cpu.cfs_period_us");
	return q && p ? ar_check_parse_cg_v1_cpu(q, p, out) : -1;
}

static int v2_memory(const char *dir, int64_t *out)
{
	ar_autofree char *t = file_in(dir, "memory.max");
	return t ? ar_check_parse_cg_max(t, out) : -1;
}

static int v2_cpu(const char *dir, int64_t *out)
{
	ar_autofree char *t = file_in(dir, "cpu.max");
	return t ? ar_check_parse_cg_cpu_max(t, out) : -1;
}

static const struct cg_limit {
	const char *controller;
	size_t off;
	int (*v1)(const char *dir, int64_t *out);
	int (*v2)(const char *dir, int64_t *out);
} cg_limits[] = {
    {"pids", offsetof(struct ar_proc_facts, pids_max), any_pids, any_pids},
    {"memory", offsetof(struct ar_proc_facts, memory_max), v1_memory, v2_memory},
    {"cpu", offsetof(struct ar_proc_facts, cpus_milli), v1_cpu, v2_cpu},
};

/* The effective limit is the smallest one on the way from the process's cgroup up to
 * the hierarchy's root (a parent's limit binds its children). No limit file on the way
 * (the root cgroup has none) means unlimited. */
static int64_t walk_up(const struct ar_mountinfo *mnt, const char *cgpath,
		       int (*read)(const char *dir, int64_t *out))
{
	size_t rl = strcmp(mnt->root, "/") == 0 ? 0 : strlen(mnt->root);
	int64_t best = AR_LIMIT_UNLIMITED;
	if (strncmp(cgpath, mnt->root, rl) != 0 || (cgpath[rl] != '/' && cgpath[rl] != '\0'))
		return AR_LIMIT_UNKNOWN; /* the process's cgroup is outside what we see */
	ar_autofree char *rel = ar_xstrdup(cgpath + rl);
	for (;;) {
		ar_autofree char *dir = ar_xasprintf("%s%s", mnt->target, rel);
		int64_t v;
		if (read(dir, &v) == 0 && v >= 0 && (best < 0 || v < best))
			best = v;
		char *slash = strrchr(rel, '/');
		if (slash == NULL || rel[0] == '\0')
			break;
		*slash = '\0';
	}
	return best;
}

static void read_cgroups(pid_t pid, struct ar_proc_facts *f)
{
	char path[64];
	struct ar_mountinfo *self = NULL;
	size_t n_self = 0;
	ar_auto_error ar_error_t err = NULL;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	ar_autofree char *cg = slurp(path, NULL);
	ar_autofree char *mi = slurp("/proc/self/mountinfo", NULL);
	for (size_t i = 0; i < AR_ARRAY_SIZE(cg_limits); i++)
		*(int64_t *)((char *)f + cg_limits[i].off) = AR_LIMIT_UNKNOWN;
	if (cg == NULL || mi == NULL || ar_check_parse_mountinfo(mi, &self, &n_self, &err) < 0)
		return;
	for (size_t i = 0; i < AR_ARRAY_SIZE(cg_limits); i++) {
		const struct cg_limit *l = &cg_limits[i];
		int64_t *dst = (int64_t *)((char *)f + l->off);
		ar_autofree char *p1 = ar_check_cgroup_path(cg, l->controller);
		const struct ar_mountinfo *m1 = ar_check_cgroup_mount(self, n_self, l->controller);
		if (p1 && m1) {
			*dst = walk_up(m1, p1, l->v1);
			continue;
		}
		ar_autofree char *p2 = ar_check_cgroup_path(cg, "");
		const struct ar_mountinfo *m2 = ar_check_cgroup_mount(self, n_self, "");
		if (p2 && m2)
			*dst = walk_up(m2, p2, l->v2);
	}
	ar_mountinfo_free(self, n_self);
}

/* ---- environment, network, credentials in view ---- */

static void read_env_net(pid_t pid, struct ar_proc_facts *f)
{
	char path[64];
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	ar_autofree char *env = slurp(path, &len);
	f->env = env ? ar_check_parse_environ(env, len) : NULL; /* NULL: unknown */
	/* environ is a window on the process's own memory: what it was started with,
	 * unless it wrote over it since. Say so, so a clean result is not overread. */
	if (f->env != NULL)
		ar_warn("note: the environment of pid %d is read from %s, the process's own "
			"memory: what it was started with, unless it rewrote it",
			(int)pid, path);
	snprintf(path, sizeof(path), "/proc/%d/net/dev", (int)pid);
	ar_autofree char *dev = slurp(path, NULL);
	f->netdevs = ar_check_parse_netdev(dev ? dev : "");
	snprintf(path, sizeof(path), "/proc/%d/net/route", (int)pid);
	ar_autofree char *r4 = slurp(path, NULL);
	snprintf(path, sizeof(path), "/proc/%d/net/ipv6_route", (int)pid);
	ar_autofree char *r6 = slurp(path, NULL);
	f->default_route = ar_check_parse_default_route(r4, r6);
}

static const char *const credential_dirs[] = {".ssh",	 ".aws",   ".kube",
					      ".docker", ".azure", ".config/gcloud"};

/* Open `path` as the process sees it: resolved inside its root (openat2
 * RESOLVE_IN_ROOT on /proc/PID/root), so an absolute symlink in its view
 * (/home/a/.ssh -> /root/.ssh) is followed in its view, never in the host's. */
static int open_in_root(int rootfd, const char *path, int flags)
{
	struct open_how how = {
	    .flags = (unsigned long long)(flags | O_PATH | O_CLOEXEC),
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;
	do
		fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	while (fd == -1 && (errno == EINTR || errno == EAGAIN));
	return (int)fd;
}

static void probe(int rootfd, const char *path, char ***sv, size_t *n)
{
	int fd = open_in_root(rootfd, path, 0);
	if (fd == -1)
		return;
	close(fd);
	*sv = ar_xrealloc(*sv, (*n + 2) * sizeof(char *));
	(*sv)[(*n)++] = ar_xstrdup(path);
	(*sv)[*n] = NULL;
}

static void probe_home(int rootfd, const char *home, char ***sv, size_t *n)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(credential_dirs); i++) {
		ar_autofree char *p = ar_xasprintf("%s/%s", home, credential_dirs[i]);
		probe(rootfd, p, sv, n);
	}
}

/* The host's well-known credential places, looked up inside the process's own view
 * of the filesystem. Bounded: at most 64 home directories. */
static void read_visible(pid_t pid, struct ar_proc_facts *f)
{
	static const char *const sockets[] = {"/var/run/docker.sock", "/run/docker.sock"};
	char root[64];
	size_t n = 0;
	f->visible_sensitive = ar_xcalloc(1, sizeof(char *));
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	ar_autoclose int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd == -1)
		return;
	for (size_t i = 0; i < AR_ARRAY_SIZE(sockets); i++)
		probe(rootfd, sockets[i], &f->visible_sensitive, &n);
	probe_home(rootfd, "/root", &f->visible_sensitive, &n);
	int home = open_in_root(rootfd, "/home", O_DIRECTORY);
	int dfd = home == -1 ? -1 : openat(home, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (home != -1)
		close(home);
	DIR *d = dfd == -1 ? NULL : fdopendir(dfd);
	if (d == NULL) {
		if (dfd != -1)
			close(dfd);
		return;
	}
	struct dirent *e;
	for (int count = 0; count < 64 && (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		count++;
		ar_autofree char *h = ar_xasprintf("/home/%s", e->d_name);
		probe_home(rootfd, h, &f->visible_sensitive, &n);
	}
	closedir(d);
}

int ar_check_proc_read(pid_t pid, struct ar_proc_facts **out, ar_error_t *err)
{
	ar_autoproc_facts struct ar_proc_facts *f = ar_xcalloc(1, sizeof(*f));
	f->pid = pid;
	read_namespaces(pid, f); /* while ours are still the caller's, to compare with */
	if (ar_check_enter_userns(pid, 0, err) < 0 || read_status(pid, f, err) < 0 ||
	    read_mounts(pid, f, err) < 0)
		return -1;
	read_keep_id(pid, f);
	read_cgroups(pid, f);
	read_env_net(pid, f);
	read_visible(pid, f);
	*out = steal_pointer(&f);
	return 0;
}

void ar_proc_facts_free(struct ar_proc_facts *f)
{
	if (f == NULL)
		return;
	ar_mountinfo_free(f->mounts, f->n_mounts);
	ar_strv_free(f->visible_sensitive);
	ar_strv_free(f->env);
	ar_strv_free(f->netdevs);
	free(f->default_route);
	free(f);
}

void ar_cleanup_proc_factsp(struct ar_proc_facts **f)
{
	ar_proc_facts_free(*f);
}

/* cgroup dispatch: pick the v2 or v1 manager for this host, the file helpers both
 * share, teardown (kill, wait, rmdir) and the sweep of stale agentrun cgroups. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agentrun/cgroup.h"
#include "agentrun/log.h"
#include "agentrun/util.h"
#include "internal.h"

const char *const cg_ctrl_names[CG_NCTRL] = {
    [CG_MEMORY] = "memory",
    [CG_PIDS] = "pids",
    [CG_CPU] = "cpu",
};

/* How long teardown waits for killed processes to leave a cgroup. */
#define KILL_WAIT_MS 5000
#define KILL_POLL_MS 10

int cg_write(const char *dir, const char *file, const char *value, ar_error_t *err)
{
	ar_autofree char *path = ar_xasprintf("%s/%s", dir, file);
	ar_autoclose int fd = TEMP_FAILURE_RETRY(open(path, O_WRONLY | O_CLOEXEC));

	int e;

	if (fd == -1) {
		e = errno;
		ar_error_make(err, e, "open `%s`", path);
	} else if (ar_write_all(fd, value, strlen(value)) == -1) {
		e = errno;
		ar_error_make(err, e, "write `%s` to `%s`", value, path);
	} else {
		return 0;
	}
	errno = e; /* callers branch on it (EBUSY: no-internal-processes rule) */
	return -1;
}

int cg_read(const char *dir, const char *file, char **out, ar_error_t *err)
{
	ar_autofree char *path = ar_xasprintf("%s/%s", dir, file);
	return ar_read_file(path, 1 << 20, out, NULL, err);
}

bool cg_exists(const char *dir, const char *file)
{
	ar_autofree char *path = ar_xasprintf("%s/%s", dir, file);
	return access(path, F_OK) == 0;
}

int cg_mkdir(const char *dir, ar_error_t *err)
{
	if (mkdir(dir, 0755) == 0)
		return 0;
	/* Our name carries our PID, so an existing directory is a leftover of a dead
	 * process that had the same PID: reuse the name when it is empty. */
	if (errno == EEXIST && rmdir(dir) == 0 && mkdir(dir, 0755) == 0)
		return 0;
	return ar_error_make(err, errno, "create cgroup `%s`", dir);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* SIGKILL every PID listed in DIR/cgroup.procs. Returns how many were listed, -1
 * when the file cannot be read (the directory is gone). */
static int kill_listed(const char *dir)
{
	ar_autofree char *text = NULL;
	ar_autofree pid_t *pids = NULL;
	size_t n = 0;

	if (cg_read(dir, "cgroup.procs", &text, NULL) == -1)
		return -1;
	if (ar_cgroup_parse_pids(text, &pids, &n) == -1)
		return -1;
	for (size_t i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	return (int)n;
}

/* How many processes DIR/cgroup.procs lists; -1 when it cannot be read. */
static int count_listed(const char *dir)
{
	ar_autofree char *text = NULL;
	ar_autofree pid_t *pids = NULL;
	size_t n = 0;

	if (cg_read(dir, "cgroup.procs", &text, NULL) == -1 ||
	    ar_cgroup_parse_pids(text, &pids, &n) == -1)
		return -1;
	return (int)n;
}

int cg_kill_and_remove(const char *dir, bool use_kill_file, ar_error_t *err)
{
	bool kill_file;
	int left = 0, rmdir_errno = 0;

	/* rmdir only succeeds on a cgroup without processes (else EBUSY): after a normal
	 * exit, where the PID namespace's end took every process along, that is all. */
	if (rmdir(dir) == 0 || errno == ENOENT)
		return 0;
	kill_file = use_kill_file && cg_exists(dir, "cgroup.kill");
	/* cgroup.kill (Linux 5.14) kills everything at once, forks in flight included */
	if (kill_file && cg_write(dir, "cgroup.kill", "1", NULL) == -1)
		kill_file = false;
	for (int waited = 0;; waited += KILL_POLL_MS) {
		/* Without cgroup.kill a fork can race the scan, so kill again each round. */
		left = kill_file ? count_listed(dir) : kill_listed(dir);
		if (left <= 0) {
			if (rmdir(dir) == 0 || errno == ENOENT)
				return 0;
			rmdir_errno = errno; /* EBUSY while exiting tasks still hold it */
		}
		if (waited >= KILL_WAIT_MS)
			break;
		sleep_ms(KILL_POLL_MS);
	}
	if (left > 0)
		return ar_error_make(err, 0,
				     "remove cgroup `%s`: %d processes still inside after %d ms",
				     dir, left, KILL_WAIT_MS);
	return ar_error_make(err, rmdir_errno, "remove cgroup `%s`", dir);
}

int cg_sweep_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int removed = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL) {
		pid_t owner = ar_cgroup_name_owner(e->d_name);
		if (owner <= 0 || owner == getpid() || e->d_type != DT_DIR)
			continue;
		if (kill(owner, 0) == 0 || errno != ESRCH)
			continue;
		ar_autofree char *path = ar_xasprintf("%s/%s", dir, e->d_name);
		/* rmdir only succeeds on an empty cgroup: a live sandbox is never touched. */
		if (rmdir(path) == 0) {
			ar_debug("cgroup: removed stale `%s`", path);
			removed++;
		}
	}
	closedir(d);
	return removed;
}

char *cg_own_dir(const struct cg_host *h, const char *controller)
{
	ar_autofree char *cgpath = NULL;
	char *dir = NULL;

	if (ar_cgroup_parse_proc(h->self, controller, &cgpath) == -1)
		return NULL;
	if (ar_cgroup_find_dir(h->mountinfo, controller, cgpath, &dir) == -1)
		return NULL;
	return dir;
}

void cg_host_release(struct cg_host *h)
{
	free(h->mountinfo);
	free(h->self);
}

/* The mount table, read once per process: `run` plans two cgroups (the sandbox's, the
 * proxy's), and the kernel formats every mount for each read. */
static pthread_once_t mountinfo_once = PTHREAD_ONCE_INIT;
static char *mountinfo;

static void read_mountinfo(void)
{
	if (ar_read_file("/proc/self/mountinfo", 0, &mountinfo, NULL, NULL) == -1)
		mountinfo = NULL;
}

int cg_host_read(struct cg_host *h, ar_error_t *err)
{
	pthread_once(&mountinfo_once, read_mountinfo);
	if (mountinfo != NULL)
		h->mountinfo = ar_xstrdup(mountinfo);
	else if (ar_read_file("/proc/self/mountinfo", 0, &h->mountinfo, NULL, err) == -1)
		return -1;
	return ar_read_file("/proc/self/cgroup", 0, &h->self, NULL, err);
}

static unsigned needed_controllers(const struct ar_limits *l)
{
	unsigned m = 0;

	if (l->memory > 0)
		m |= 1u << CG_MEMORY;
	if (l->pids > 0)
		m |= 1u << CG_PIDS;
	if (l->cpus_milli > 0)
		m |= 1u << CG_CPU;
	return m;
}

/* v2 when our v2 cgroup offers every needed controller (pure v2, or a unified
 * hierarchy that has them); else v1 when any needed controller is a v1 hierarchy
 * (hybrid hosts); else v2, which then fails closed naming what is missing. */
static const struct cgroup_ops *pick_manager(const struct cg_host *h)
{
	ar_autofree char *v2 = cg_v2_own(h);
	bool any_v1 = false;

	if (v2) {
		ar_autofree char *ctrls = NULL;
		bool all = cg_read(v2, "cgroup.controllers", &ctrls, NULL) == 0;
		for (int c = 0; all && c < CG_NCTRL; c++)
			if ((h->needed & (1u << c)) && !ar_cgroup_list_has(ctrls, cg_ctrl_names[c]))
				all = false;
		if (all)
			return &cg_v2_ops;
	}
	for (int c = 0; c < CG_NCTRL; c++) {
		ar_autofree char *d = cg_own_dir(h, cg_ctrl_names[c]);
		if (d && (h->needed & (1u << c)))
			any_v1 = true;
	}
	if (any_v1 || !v2)
		return &cg_v1_ops;
	return &cg_v2_ops;
}

static int check_name(const char *name, ar_error_t *err)
{
	if (!name || !*name || strlen(name) > 200 || strchr(name, '/') || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0)
		return ar_error_make(err, 0, "cgroup: invalid cgroup name `%s`", name ? name : "");
	return 0;
}

static void cgroup_free(struct ar_cgroup *cg)
{
	for (int c = 0; c < CG_NCTRL; c++)
		free(cg->dir[c]);
	free(cg->own);
	free(cg->name);
	cg_host_release(&cg->host);
	free(cg);
}

struct ar_cgroup *cg_handle_new(const char *name, const struct cgroup_ops *ops, struct cg_host *h)
{
	struct ar_cgroup *cg = ar_xcalloc(1, sizeof(*cg));

	cg->name = ar_xstrdup(name);
	cg->ops = ops;
	cg->host = *h;
	*h = (struct cg_host){0};
	return cg;
}

int cg_host_plan(const struct ar_limits *l, const char *name, struct cg_host *h, ar_error_t *err)
{
	if (check_name(name, err) == -1)
		return -1;
	if (cg_host_read(h, err) == -1) {
		cg_host_release(h);
		return ar_error_wrap(err, "cgroup");
	}
	h->needed = needed_controllers(l);
	return 0;
}

int ar_cgroup_plan(const struct ar_limits *l, const char *name, struct ar_cgroup **out,
		   ar_error_t *err)
{
	struct cg_host h = {0};
	struct ar_cgroup *cg;

	if (cg_host_plan(l, name, &h, err) == -1)
		return -1;
	cg = cg_handle_new(name, pick_manager(&h), &h);
	if (cg->ops->locate != NULL && cg->ops->locate(cg, &cg->host, err) == -1) {
		cgroup_free(cg);
		return -1;
	}
	*out = cg;
	return 0;
}

int ar_cgroup_make(struct ar_cgroup *cg, const struct ar_limits *l, ar_error_t *err)
{
	int r = cg->ops->create(cg, &cg->host, l, err);

	/* on failure create removed what it made itself: only the handle is left */
	cg_host_release(&cg->host);
	cg->host = (struct cg_host){0};
	if (r == -1)
		return -1;
	cg->made = true;
	ar_debug("cgroup %s: created `%s`", cg->ops->kind, ar_cgroup_path(cg));
	return 0;
}

int ar_cgroup_create(const struct ar_limits *l, const char *name, struct ar_cgroup **out,
		     ar_error_t *err)
{
	struct ar_cgroup *cg = NULL;

	if (ar_cgroup_plan(l, name, &cg, err) == -1)
		return -1;
	if (ar_cgroup_make(cg, l, err) == -1) {
		cgroup_free(cg);
		return -1;
	}
	*out = cg;
	return 0;
}

bool ar_cgroup_self_entry(const struct ar_cgroup *cg)
{
	return cg->ops->open_self != NULL && cg->ops->enter_self != NULL;
}

int ar_cgroup_enter(const struct ar_cgroup *cg, pid_t pid, ar_error_t *err)
{
	return cg->ops->enter(cg, pid, err);
}

int ar_cgroup_open_self(const struct ar_cgroup *cg, int *fds, size_t max, ar_error_t *err)
{
	if (cg->ops->open_self == NULL)
		return 0;
	return cg->ops->open_self(cg, fds, max, err);
}

int ar_cgroup_enter_self(const struct ar_cgroup *cg, const int *fds, size_t n, ar_error_t *err)
{
	if (cg->ops->enter_self == NULL)
		return 0;
	return cg->ops->enter_self(cg, fds, n, err);
}

bool ar_cgroup_oom_killed(const struct ar_cgroup *cg)
{
	return cg && cg->ops->oom_killed(cg);
}

int ar_cgroup_destroy(struct ar_cgroup *cg, ar_error_t *err)
{
	int r;

	if (!cg)
		return 0;
	/* planned only: nothing exists to kill or remove */
	r = cg->made ? cg->ops->destroy(cg, err) : 0;
	cgroup_free(cg);
	return r;
}

void ar_cgroup_forget(struct ar_cgroup *cg)
{
	if (cg)
		cgroup_free(cg);
}

const char *ar_cgroup_kind(const struct ar_cgroup *cg)
{
	return cg->ops->kind;
}

bool cg_dir_shared(const struct ar_cgroup *cg, int c)
{
	for (int i = 0; i < c; i++)
		if (cg->dir[i] && strcmp(cg->dir[i], cg->dir[c]) == 0)
			return true;
	return false;
}

static size_t dirs_add(char *out, size_t len, size_t size, const char *dir)
{
	if (len + strlen(dir) + 2 > size)
		return len;
	return len + (size_t)snprintf(out + len, size - len, "%s%s", len ? ":" : "", dir);
}

void ar_cgroup_dirs(const struct ar_cgroup *cg, char *out, size_t size)
{
	size_t len = 0;
	out[0] = '\0';
	for (int c = 0; cg != NULL && c < CG_NCTRL; c++)
		if (cg->dir[c] && !cg_dir_shared(cg, c))
			len = dirs_add(out, len, size, cg->dir[c]);
	/* v2: the leaf this process stepped into, empty once it is dead */
	ar_autofree char *leaf = ar_cgroup_unswept(cg) ? cg_v2_leaf() : NULL;
	if (leaf != NULL)
		dirs_add(out, len, size, leaf);
}

bool ar_cgroup_unswept(const struct ar_cgroup *cg)
{
	ar_autofree char *leaf = cg != NULL && cg->ops == &cg_v2_ops ? cg_v2_leaf() : NULL;
	return leaf != NULL;
}

const char *ar_cgroup_path(const struct ar_cgroup *cg)
{
	for (int c = 0; c < CG_NCTRL; c++)
		if (cg->dir[c])
			return cg->dir[c];
	return "";
}

int ar_cgroup_sweep(void)
{
	struct cg_host h = {0};
	int removed = 0;

	if (cg_host_read(&h, NULL) == 0) {
		ar_autofree char *v2 = cg_v2_own(&h);
		if (v2)
			removed += cg_sweep_dir(v2);
		for (int c = 0; c < CG_NCTRL; c++) {
			ar_autofree char *d = cg_own_dir(&h, cg_ctrl_names[c]);
			if (d)
				removed += cg_sweep_dir(d);
		}
	}
	cg_host_release(&h);
	return removed;
}

/* The cgroup v1 manager for hybrid hosts: one directory per controller hierarchy
 * (memory, pids, cpu), each created under this process's own path in that hierarchy
 * (/proc/self/cgroup `N:memory:/path`). Limits: memory.limit_in_bytes and
 * memory.memsw.limit_in_bytes (no swap), pids.max, cpu.cfs_period_us/cfs_quota_us. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentrun/cgroup.h"
#include "agentrun/log.h"
#include "agentrun/util.h"
#include "internal.h"

static int write_memory(const char *dir, int64_t bytes, ar_error_t *err)
{
	char v[32];

	snprintf(v, sizeof(v), "%" PRId64, bytes);
	if (cg_write(dir, "memory.limit_in_bytes", v, err) == -1)
		return -1;
	/* memory+swap equal to memory: no swap. Without swap accounting the best we can
	 * do is to tell reclaim not to swap this cgroup. */
	if (cg_exists(dir, "memory.memsw.limit_in_bytes"))
		return cg_write(dir, "memory.memsw.limit_in_bytes", v, err);
	cg_write(dir, "memory.swappiness", "0", NULL);
	return 0;
}

static int write_pids(const char *dir, int64_t pids, ar_error_t *err)
{
	char v[32];

	snprintf(v, sizeof(v), "%" PRId64, pids);
	return cg_write(dir, "pids.max", v, err);
}

static int write_cpu(const char *dir, int64_t millicpus, ar_error_t *err)
{
	char v[32];

	snprintf(v, sizeof(v), "%d", AR_CGROUP_CPU_PERIOD);
	if (cg_write(dir, "cpu.cfs_period_us", v, err) == -1)
		return -1;
	snprintf(v, sizeof(v), "%" PRId64, ar_cgroup_cpu_quota(millicpus));
	return cg_write(dir, "cpu.cfs_quota_us", v, err);
}

static void remove_dirs(struct ar_cgroup *cg)
{
	for (int c = CG_NCTRL - 1; c >= 0; c--)
		if (cg->dir[c] && !cg_dir_shared(cg, c))
			rmdir(cg->dir[c]);
}

/* Find every needed hierarchy before creating anything: bad input leaves nothing. */
static int locate(struct ar_cgroup *cg, const struct cg_host *h, unsigned needed, ar_error_t *err)
{
	for (int c = 0; c < CG_NCTRL; c++) {
		if (!(needed & (1u << c)))
			continue;
		ar_autofree char *own = cg_own_dir(h, cg_ctrl_names[c]);
		if (!own)
			return ar_error_make(err, 0,
					     "cgroup v1: controller %s is not available (no v1 "
					     "hierarchy for it in /proc/self/mountinfo and "
					     "/proc/self/cgroup, and cgroup v2 does not offer it); "
					     "use --no-cgroups to run without limits",
					     cg_ctrl_names[c]);
		cg->dir[c] = ar_xasprintf("%s/%s", own, cg->name);
	}
	return 0;
}

/* ar_cgroup_plan: the directories, nothing created yet. */
static int v1_locate(struct ar_cgroup *cg, const struct cg_host *h, ar_error_t *err)
{
	unsigned needed = h->needed;

	/* No limits: still make a pids cgroup, so teardown finds every process. */
	if (!needed) {
		ar_autofree char *own = cg_own_dir(h, "pids");
		needed = own ? 1u << CG_PIDS : 0;
	}
	if (locate(cg, h, needed, err) == -1) {
		for (int c = 0; c < CG_NCTRL; c++)
			cg->dir[c] = (free(cg->dir[c]), NULL);
		return -1;
	}
	return 0;
}

/* The directories come from v1_locate. */
static int v1_create(struct ar_cgroup *cg, const struct cg_host *h, const struct ar_limits *l,
		     ar_error_t *err)
{
	(void)h;
	for (int c = 0; c < CG_NCTRL; c++) {
		if (!cg->dir[c] || cg_dir_shared(cg, c))
			continue;
		ar_autofree char *parent =
		    ar_xstrndup(cg->dir[c], strrchr(cg->dir[c], '/') - cg->dir[c]);
		cg_sweep_dir(parent);
		if (cg_mkdir(cg->dir[c], err) == -1) {
			cg->dir[c] = (free(cg->dir[c]), NULL);
			goto fail;
		}
	}
	if ((cg->dir[CG_MEMORY] && l->memory > 0 &&
	     write_memory(cg->dir[CG_MEMORY], l->memory, err) == -1) ||
	    (cg->dir[CG_PIDS] && l->pids > 0 && write_pids(cg->dir[CG_PIDS], l->pids, err) == -1) ||
	    (cg->dir[CG_CPU] && l->cpus_milli > 0 &&
	     write_cpu(cg->dir[CG_CPU], l->cpus_milli, err) == -1))
		goto fail;
	return 0;
fail:
	remove_dirs(cg);
	return ar_error_wrap(err, "cgroup v1");
}

static int v1_enter(const struct ar_cgroup *cg, pid_t pid, ar_error_t *err)
{
	char v[32];

	snprintf(v, sizeof(v), "%d", (int)pid);
	for (int c = 0; c < CG_NCTRL; c++)
		if (cg->dir[c] && !cg_dir_shared(cg, c) &&
		    cg_write(cg->dir[c], "cgroup.procs", v, err) == -1)
			return ar_error_wrap(err, "cgroup v1: move pid %d into the sandbox cgroup",
					     (int)pid);
	return 0;
}

/* "0" written to `tasks` moves the writing thread, and the kernel skips the global
 * threadgroup lock for exactly that case (cgroup_procs_write_start): no RCU grace
 * period, unlike v1_enter's cgroup.procs write for another process. */
static int v1_open_self(const struct ar_cgroup *cg, int *fds, size_t max, ar_error_t *err)
{
	size_t n = 0;

	for (int c = 0; c < CG_NCTRL; c++) {
		if (!cg->dir[c] || cg_dir_shared(cg, c))
			continue;
		ar_autofree char *path = ar_xasprintf("%s/tasks", cg->dir[c]);
		int fd = n < max ? open(path, O_WRONLY | O_CLOEXEC) : -1;
		if (fd == -1) {
			int e = n < max ? errno : EMFILE;
			while (n > 0)
				close(fds[--n]);
			return ar_error_make(err, e, "cgroup v1: open %s", path);
		}
		fds[n++] = fd;
	}
	return (int)n;
}

/* fds[] in v1_open_self's order. A real-time caller cannot join a cpu cgroup whose
 * cpu.rt_runtime_us is 0 (a new one's is): EINVAL, said so. */
static int v1_enter_self(const struct ar_cgroup *cg, const int *fds, size_t n, ar_error_t *err)
{
	size_t i = 0, want = 0;

	for (int c = 0; c < CG_NCTRL; c++)
		want += cg->dir[c] && !cg_dir_shared(cg, c);
	/* one file per cgroup, or the sandbox would run outside some of them */
	if (n != want)
		return ar_error_make(
		    err, EINVAL, "cgroup v1: %zu files to move the sandbox into its %zu cgroups", n,
		    want);

	for (int c = 0; c < CG_NCTRL && i < n; c++) {
		if (!cg->dir[c] || cg_dir_shared(cg, c))
			continue;
		if (TEMP_FAILURE_RETRY(write(fds[i++], "0", 1)) != 1)
			return ar_error_make(
			    err, errno, "cgroup v1: move the sandbox into %s/tasks%s", cg->dir[c],
			    errno == EINVAL && c == CG_CPU
				? " (a real-time process cannot join a cpu cgroup "
				  "without cpu.rt_runtime_us)"
				: "");
	}
	return 0;
}

/* memory.oom_control has `oom_kill N` since Linux 4.13; before that memory.failcnt
 * (times the limit was hit) is the closest signal. */
static bool v1_oom_killed(const struct ar_cgroup *cg)
{
	ar_autofree char *text = NULL;
	ar_autofree char *fail = NULL;
	int64_t n = 0;

	if (!cg->dir[CG_MEMORY] ||
	    cg_read(cg->dir[CG_MEMORY], "memory.oom_control", &text, NULL) == -1)
		return false;
	if (ar_cgroup_parse_keyed(text, "oom_kill", &n) == 0)
		return n > 0;
	if (cg_read(cg->dir[CG_MEMORY], "memory.failcnt", &fail, NULL) == -1)
		return false;
	return ar_parse_int(strtok(fail, "\n"), 1, INT64_MAX, &n) == 0;
}

static int v1_destroy(struct ar_cgroup *cg, ar_error_t *err)
{
	int r = 0;

	for (int c = 0; c < CG_NCTRL; c++)
		if (cg->dir[c] && !cg_dir_shared(cg, c) &&
		    cg_kill_and_remove(cg->dir[c], false, err) == -1)
			r = -1;
	return r == -1 ? ar_error_wrap(err, "cgroup v1") : 0;
}

const struct cgroup_ops cg_v1_ops = {
    .kind = "v1",
    .locate = v1_locate,
    .create = v1_create,
    .enter = v1_enter,
    .open_self = v1_open_self,
    .enter_self = v1_enter_self,
    .oom_killed = v1_oom_killed,
    .destroy = v1_destroy,
};

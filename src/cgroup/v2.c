/* The cgroup v2 manager: a child of our own cgroup with memory.max,
 * memory.swap.max = 0, pids.max and cpu.max, after enabling those controllers in
 * our cgroup's subtree_control. The no-internal-processes rule forbids that while
 * our cgroup holds processes; when the only one is us, we first move into a leaf
 * of our own (as a container's init does), otherwise we fail closed and explain. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentrun/cgroup.h"
#include "agentrun/log.h"
#include "agentrun/util.h"
#include "internal.h"

#define NO_CGROUPS_HINT "use --no-cgroups to run without limits"

static void control_string(unsigned mask, char sign, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int c = 0; c < CG_NCTRL; c++)
		if (mask & (1u << c))
			off += (size_t)snprintf(buf + off, len - off, "%s%c%s", off ? " " : "",
						sign, cg_ctrl_names[c]);
}

static int check_available(const char *own, unsigned needed, ar_error_t *err)
{
	ar_autofree char *ctrls = NULL;

	if (cg_read(own, "cgroup.controllers", &ctrls, err) == -1)
		return ar_error_wrap(err, "cgroup v2");
	for (int c = 0; c < CG_NCTRL; c++)
		if ((needed & (1u << c)) && !ar_cgroup_list_has(ctrls, cg_ctrl_names[c]))
			return ar_error_make(err, 0,
					     "cgroup v2: controller %s is not available in %s; %s",
					     cg_ctrl_names[c], own, NO_CGROUPS_HINT);
	return 0;
}

/* Every v2 cgroup this process makes (the sandbox's, then the proxy's) goes into the
 * cgroup it was started in. Once it has stepped into its leaf, /proc/self/cgroup names
 * the leaf; the next cgroup still belongs beside the first, and only the last one
 * destroyed may undo the step (restore_room). Locked: run calls the cgroup API from
 * the thread it starts beside the network too (v1's cgroups today). */
static struct {
	pthread_mutex_t lock;
	char *own;	  /* where this process's cgroups go, while users > 0 */
	char *leaf;	  /* own/agentrun_supervisor-PID, which we moved into */
	unsigned enabled; /* controllers we enabled in own/cgroup.subtree_control */
	int users;	  /* v2 cgroups of this process that exist */
} room = {.lock = PTHREAD_MUTEX_INITIALIZER};

char *cg_v2_own(const struct cg_host *h)
{
	char *own = cg_own_dir(h, NULL);

	pthread_mutex_lock(&room.lock);
	if (own != NULL && room.leaf != NULL && strcmp(own, room.leaf) == 0) {
		free(own);
		own = ar_xstrdup(room.own);
	}
	pthread_mutex_unlock(&room.lock);
	return own;
}

char *cg_v2_leaf(void)
{
	pthread_mutex_lock(&room.lock);
	char *leaf = room.leaf ? ar_xstrdup(room.leaf) : NULL;
	pthread_mutex_unlock(&room.lock);
	return leaf;
}

/* Which processes are in `own`: *us when we are, *others lists (the first few of) the
 * rest ("" when none). */
static void who_is_in(const char *own, bool *us, char **others)
{
	ar_autofree char *text = NULL;
	ar_autofree pid_t *pids = NULL;
	struct ar_buf b = {0};
	size_t n = 0;

	*us = false;
	if (cg_read(own, "cgroup.procs", &text, NULL) == -1 ||
	    ar_cgroup_parse_pids(text, &pids, &n) == -1) {
		*others = ar_xstrdup("unreadable cgroup.procs");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (pids[i] == getpid()) {
			*us = true;
			continue;
		}
		if (b.len >= 60) {
			ar_buf_puts(&b, " ...");
			break;
		}
		ar_buf_printf(&b, "%s%d", b.len ? " " : "", (int)pids[i]);
	}
	ar_buf_reserve(&b, 0);
	*others = ar_buf_steal(&b);
}

/* Move ourselves into own/agentrun_supervisor-PID so that `own` has no processes. */
static int step_into_leaf(const char *own, ar_error_t *err)
{
	ar_autofree char *leaf = ar_xasprintf("%s/agentrun_supervisor-%d", own, (int)getpid());
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (cg_mkdir(leaf, err) == -1)
		return ar_error_wrap(err, "cgroup v2");
	if (cg_write(leaf, "cgroup.procs", pid, err) == -1) {
		rmdir(leaf);
		return ar_error_wrap(err, "cgroup v2");
	}
	room.leaf = steal_pointer(&leaf);
	return 0;
}

static void leave_leaf(void)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (cg_write(room.own, "cgroup.procs", pid, NULL) == 0 && rmdir(room.leaf) == 0) {
		free(room.leaf);
		room.leaf = NULL;
	}
}

/* The no-internal-processes rule: a non-root cgroup that holds processes cannot give
 * domain controllers (memory) to children, and with only threaded ones (pids, cpu)
 * enabled it turns into a thread root whose children refuse processes (EOPNOTSUPP).
 * So decide before touching subtree_control: the root cgroup (no cgroup.type) is
 * exempt, and so is a cgroup without processes (we are in our leaf already, or were
 * never in it); if we are alone we step into a leaf (as a container's init does);
 * otherwise fail closed and explain. */
static int make_room(const char *own, unsigned needed, ar_error_t *err)
{
	ar_autofree char *others = NULL;
	char ctl[64];
	bool us;

	if (!cg_exists(own, "cgroup.type"))
		return 0;
	who_is_in(own, &us, &others);
	if (*others == '\0')
		return us ? step_into_leaf(own, err) : 0;
	control_string(needed, '+', ctl, sizeof(ctl));
	return ar_error_make(
	    err, 0,
	    "cgroup v2: cannot enable `%s` in `%s/cgroup.subtree_control`: the cgroup holds "
	    "other processes (%s) and a cgroup with processes cannot hand controllers to "
	    "children (no-internal-processes rule); start agentrun in a cgroup of its own "
	    "(e.g. `systemd-run --scope -p Delegate=yes agentrun ...`) or %s",
	    ctl, own, others, NO_CGROUPS_HINT);
}

/* Undo enable_controllers and the step into the leaf when no cgroup of ours is left
 * and nothing else came to depend on them. Under room.lock. */
static void restore_room(void)
{
	DIR *d;
	struct dirent *e;
	bool alone = true;
	char ctl[64];

	if (room.users > 0 || (!room.enabled && !room.leaf) || !(d = opendir(room.own)))
		return;
	while ((e = readdir(d)) != NULL)
		if (e->d_type == DT_DIR && strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    !(room.leaf && strcmp(e->d_name, strrchr(room.leaf, '/') + 1) == 0))
			alone = false;
	closedir(d);
	if (!alone)
		return; /* another sandbox still uses the controllers */
	control_string(room.enabled, '-', ctl, sizeof(ctl));
	if (room.enabled && cg_write(room.own, "cgroup.subtree_control", ctl, NULL) == -1)
		return;
	room.enabled = 0;
	if (room.leaf)
		leave_leaf();
}

/* Enable what `needed` lacks in own/cgroup.subtree_control, making room first. One
 * more user of the room on success. Under room.lock. */
static int enter_room(const char *own, unsigned needed, ar_error_t *err)
{
	ar_autofree char *sub = NULL;
	unsigned want = 0;
	char ctl[64];

	if (room.users == 0) {
		free(room.own);
		room.own = ar_xstrdup(own);
	}
	if (cg_read(own, "cgroup.subtree_control", &sub, err) == -1)
		return ar_error_wrap(err, "cgroup v2");
	for (int c = 0; c < CG_NCTRL; c++)
		if ((needed & (1u << c)) && !ar_cgroup_list_has(sub, cg_ctrl_names[c]))
			want |= 1u << c;
	if (needed && make_room(own, needed, err) == -1)
		return -1;
	if (want) {
		control_string(want, '+', ctl, sizeof(ctl));
		if (cg_write(own, "cgroup.subtree_control", ctl, err) == -1) {
			restore_room();
			return ar_error_wrap(err, "cgroup v2");
		}
		room.enabled |= want;
		ar_debug("cgroup v2: enabled `%s` in `%s/cgroup.subtree_control`%s", ctl, own,
			 room.leaf ? " (agentrun is in a leaf cgroup)" : "");
	}
	room.users++;
	return 0;
}

static void leave_room(void)
{
	pthread_mutex_lock(&room.lock);
	room.users--;
	restore_room();
	pthread_mutex_unlock(&room.lock);
}

static int write_limits(const char *dir, const struct ar_limits *l, unsigned needed,
			ar_error_t *err)
{
	char v[64];

	if (needed & (1u << CG_MEMORY)) {
		snprintf(v, sizeof(v), "%" PRId64, l->memory);
		if (cg_write(dir, "memory.max", v, err) == -1)
			return -1;
		/* Without swap accounting there is no memory.swap.max to set. */
		if (cg_exists(dir, "memory.swap.max") &&
		    cg_write(dir, "memory.swap.max", "0", err) == -1)
			return -1;
	}
	if (needed & (1u << CG_PIDS)) {
		snprintf(v, sizeof(v), "%" PRId64, l->pids);
		if (cg_write(dir, "pids.max", v, err) == -1)
			return -1;
	}
	if (needed & (1u << CG_CPU)) {
		ar_cgroup_format_cpu_max(l->cpus_milli, v, sizeof(v));
		if (cg_write(dir, "cpu.max", v, err) == -1)
			return -1;
	}
	return 0;
}

static int v2_create(struct ar_cgroup *cg, const struct cg_host *h, const struct ar_limits *l,
		     ar_error_t *err)
{
	int r;

	cg->own = cg_v2_own(h);
	if (!cg->own)
		return ar_error_make(err, 0,
				     "cgroup v2: no cgroup2 hierarchy for this process (no `0::` "
				     "line in /proc/self/cgroup or no cgroup2 mount in "
				     "/proc/self/mountinfo); %s",
				     NO_CGROUPS_HINT);
	if (check_available(cg->own, h->needed, err) == -1)
		return -1;
	cg_sweep_dir(cg->own);
	pthread_mutex_lock(&room.lock);
	r = enter_room(cg->own, h->needed, err);
	pthread_mutex_unlock(&room.lock);
	if (r == -1)
		return -1;
	cg->dir[0] = ar_xasprintf("%s/%s", cg->own, cg->name);
	if (cg_mkdir(cg->dir[0], err) == -1)
		goto fail;
	if (write_limits(cg->dir[0], l, h->needed, err) == -1) {
		rmdir(cg->dir[0]);
		goto fail;
	}
	return 0;
fail:
	leave_room();
	return ar_error_wrap(err, "cgroup v2");
}

static int v2_enter(const struct ar_cgroup *cg, pid_t pid, ar_error_t *err)
{
	char v[32];

	snprintf(v, sizeof(v), "%d", (int)pid);
	if (cg_write(cg->dir[0], "cgroup.procs", v, err) == -1)
		return ar_error_wrap(err, "cgroup v2: move pid %d into the sandbox cgroup",
				     (int)pid);
	return 0;
}

static bool v2_oom_killed(const struct ar_cgroup *cg)
{
	ar_autofree char *events = NULL;
	int64_t n = 0;

	if (cg_read(cg->dir[0], "memory.events", &events, NULL) == -1)
		return false;
	return ar_cgroup_parse_keyed(events, "oom_kill", &n) == 0 && n > 0;
}

static int v2_destroy(struct ar_cgroup *cg, ar_error_t *err)
{
	int r = cg_kill_and_remove(cg->dir[0], true, err);

	leave_room();
	return r == -1 ? ar_error_wrap(err, "cgroup v2") : 0;
}

const struct cgroup_ops cg_v2_ops = {
    .kind = "v2",
    .create = v2_create,
    .enter = v2_enter,
    .oom_killed = v2_oom_killed,
    .destroy = v2_destroy,
};

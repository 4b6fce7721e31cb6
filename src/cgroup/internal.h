/* Private to src/sandbox/cgroup*.c: the manager vtable, the handle, and the file
 * helpers the v2 and v1 managers share. */
#ifndef AGENTRUN_CGROUP_INTERNAL_H
#define AGENTRUN_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "agentrun/cgroup.h"

/* The controllers a limit needs, in the order limits are written. */
enum cg_ctrl { CG_MEMORY, CG_PIDS, CG_CPU, CG_NCTRL };
extern const char *const cg_ctrl_names[CG_NCTRL];

/* What the host looks like to this process: captured once per create. */
struct cg_host {
	char *mountinfo; /* /proc/self/mountinfo */
	char *self;	 /* /proc/self/cgroup */
	unsigned needed; /* bit (1 << enum cg_ctrl) per limit the policy sets */
};

struct cgroup_ops {
	const char *kind;
	/* optional, side-effect free: fill in the handle's directories (ar_cgroup_plan) */
	int (*locate)(struct ar_cgroup *cg, const struct cg_host *h, ar_error_t *err);
	int (*create)(struct ar_cgroup *cg, const struct cg_host *h, const struct ar_limits *l,
		      ar_error_t *err);
	int (*enter)(const struct ar_cgroup *cg, pid_t pid, ar_error_t *err);
	/* optional: files through which a process moves itself (ar_cgroup_open_self) */
	int (*open_self)(const struct ar_cgroup *cg, int *fds, size_t max, ar_error_t *err);
	int (*enter_self)(const struct ar_cgroup *cg, const int *fds, size_t n, ar_error_t *err);
	bool (*oom_killed)(const struct ar_cgroup *cg);
	int (*destroy)(struct ar_cgroup *cg, ar_error_t *err);
};

struct ar_cgroup {
	const struct cgroup_ops *ops;
	char *name;
	/* v2: dir[0] is the sandbox cgroup. v1: one directory per controller, NULL when
	 * that controller is not used. */
	char *dir[CG_NCTRL];
	/* v2 only: the cgroup it is made in (the leaf this process may have moved into
	 * is the process's, shared by its v2 cgroups: cgroup_v2.c) */
	char *own;
	struct cg_host host; /* from ar_cgroup_plan until ar_cgroup_make */
	bool made;	     /* ar_cgroup_make succeeded: destroy has work to do */
};

/* Is dir[c] the same directory as an earlier controller's (co-mounted v1 hierarchies
 * such as cpu,cpuacct with memory would share it)? */
bool cg_dir_shared(const struct ar_cgroup *cg, int c);

extern const struct cgroup_ops cg_v2_ops;
extern const struct cgroup_ops cg_v1_ops;

/* DIR/FILE helpers: the messages name the full path and the value. */
int cg_write(const char *dir, const char *file, const char *value, ar_error_t *err);
int cg_read(const char *dir, const char *file, char **out, ar_error_t *err);
bool cg_exists(const char *dir, const char *file);
/* mkdir DIR; a stale empty DIR left by a dead process with our PID is replaced. */
int cg_mkdir(const char *dir, ar_error_t *err);
/* SIGKILL everything in DIR (cgroup.kill when `use_kill_file` and present, else
 * cgroup.procs) until it is empty, then rmdir it. Bounded wait. */
int cg_kill_and_remove(const char *dir, bool use_kill_file, ar_error_t *err);
/* Remove empty `agentrun-*-PID` directories in DIR whose PID is dead. */
int cg_sweep_dir(const char *dir);
/* The v1/v2 directory of this process for `controller` (NULL: v2), or NULL. */
char *cg_own_dir(const struct cg_host *h, const char *controller);
/* The v2 directory this process makes its cgroups in: its own, or the one it started
 * in once the v2 manager moved it into its leaf (cgroup_v2.c); NULL when none. */
char *cg_v2_own(const struct cg_host *h);
/* That leaf (a copy), or NULL. */
char *cg_v2_leaf(void);

/* /proc/self/{mountinfo,cgroup} into h (release it even on failure). */
int cg_host_read(struct cg_host *h, ar_error_t *err);
void cg_host_release(struct cg_host *h);
/* The start of a plan: the name checked, h read, h->needed set from p's limits. */
int cg_host_plan(const struct ar_limits *l, const char *name, struct cg_host *h, ar_error_t *err);
/* A planned handle; takes over *h (left empty). */
struct ar_cgroup *cg_handle_new(const char *name, const struct cgroup_ops *ops, struct cg_host *h);

#endif

/* cgroup limits for a sandbox: a tiny vtable with a v2 manager (primary) and a v1
 * manager for hybrid hosts (memory, pids, cpu controllers on v1). Cgroups are created
 * under the invoking process's own cgroup and removed afterwards. */
#ifndef AGENTRUN_CGROUP_H
#define AGENTRUN_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentrun/error.h"
#include "agentrun/policy.h"

struct ar_cgroup;

/* Create the sandbox cgroup(s) named `name` (unique, e.g. "agentrun-triage-1234")
 * and write the limits l (memory.max, memory.swap.max = 0, pids.max,
 * cpu.max, or the v1 equivalents). Fails closed, naming what is missing. */
int ar_cgroup_create(const struct ar_limits *l, const char *name, struct ar_cgroup **out,
		     ar_error_t *err);
/* ar_cgroup_create in two halves, so a caller can create the cgroups later (on v1,
 * while the sandbox builds its root on the other CPU). ar_cgroup_plan reads
 * /proc/self/{mountinfo,cgroup}, picks the manager and, for v1, the directories: it
 * creates, writes and moves nothing. ar_cgroup_make then creates them and writes the
 * limits (on failure nothing of it is left; the handle still needs
 * ar_cgroup_destroy). ar_cgroup_destroy on a handle never made only frees it. */
int ar_cgroup_plan(const struct ar_limits *l, const char *name, struct ar_cgroup **out,
		   ar_error_t *err);

/* The limits, as bits of a mask (each is the controller it needs). */
enum { AR_CGROUP_MEMORY = 1u << 0, AR_CGROUP_PIDS = 1u << 1, AR_CGROUP_CPU = 1u << 2 };

/* What a caller without root does not get (docs/cgroups.md#without-root). */
struct ar_cgroup_gap {
	unsigned missing; /* AR_CGROUP_* not enforced; 0: every limit is */
	char limits[128]; /* those limits as set: "memory 256m, pids 64, cpus 1" */
	char why[1024];	  /* why not, and how to get them (the systemd command) */
};
/* ar_cgroup_plan for a caller without root: only a cgroup v2 subtree delegated to it
 * (writable, with the controllers, room for a child) is used. What it lacks is left
 * out and said in *gap; *out is NULL when nothing is left (no cgroup at all). Fails
 * only as ar_cgroup_plan does for what it does use. */
int ar_cgroup_plan_delegated(const struct ar_limits *l, const char *name, struct ar_cgroup **out,
			     struct ar_cgroup_gap *gap, ar_error_t *err);
int ar_cgroup_make(struct ar_cgroup *cg, const struct ar_limits *l, ar_error_t *err);
/* Does the manager let the sandbox move itself in (ar_cgroup_open_self, v1)? Known
 * after ar_cgroup_plan. When false (v2) ar_cgroup_make may move this process itself
 * into a leaf cgroup, so it must run while no child shares this process's cgroup:
 * before the clone. */
bool ar_cgroup_self_entry(const struct ar_cgroup *cg);
/* Move pid into the cgroup(s). */
int ar_cgroup_enter(const struct ar_cgroup *cg, pid_t pid, ar_error_t *err);
/* For the sandbox's first process to move itself in instead (ar_cgroup_enter_self):
 * on cgroup v1 a thread that writes "0" to `tasks` moves itself without the global
 * threadgroup lock that a cgroup.procs write for another process takes, so without
 * waiting for an RCU grace period (~10 ms on a busy host). Opens the files now, in
 * the parent, close-on-exec, into fds[] (at most max); the clone inherits them.
 * Returns how many, 0 when the manager has no such path (v2: use ar_cgroup_enter),
 * -1 on error (nothing left open). */
int ar_cgroup_open_self(const struct ar_cgroup *cg, int *fds, size_t max, ar_error_t *err);
/* In that process, single-threaded: move the calling thread, i.e. the process,
 * through each fd (between clone and exec: allocates only for the error, which names
 * the directory). n must be what ar_cgroup_open_self returned for this handle (else
 * -1: the sandbox would run outside some cgroup). 0, or -1. */
int ar_cgroup_enter_self(const struct ar_cgroup *cg, const int *fds, size_t n, ar_error_t *err);
/* After the sandbox ended: did the memory limit kill something? */
bool ar_cgroup_oom_killed(const struct ar_cgroup *cg);
/* Kill whatever is left, remove the cgroup directories, free. Safe on NULL. */
int ar_cgroup_destroy(struct ar_cgroup *cg, ar_error_t *err);
/* Free the handle only: the cgroup stays for whoever removes it later (the hook's
 * poststop, gc), as a process that exits soon hands it on. */
void ar_cgroup_forget(struct ar_cgroup *cg);
/* "v2" or "v1" (for messages and tests). */
const char *ar_cgroup_kind(const struct ar_cgroup *cg);
/* The sandbox cgroup directory (v2), or the v1 memory (else pids, else cpu) directory;
 * for debug output and tests. */
const char *ar_cgroup_path(const struct ar_cgroup *cg);
/* Every directory of the cgroup (v1: one per hierarchy it uses, which differ), `:`-joined
 * into out (what does not fit is left out: ar_cgroup_sweep removes it later); known from
 * the plan on. For the state gc reads. */
void ar_cgroup_dirs(const struct ar_cgroup *cg, char *out, size_t size);

/* Would a kill -9 of this process leave the cgroup where no later run sweeps it? On
 * v2 once this process stepped into its leaf: its cgroup has controllers enabled, so
 * no process can join it to sweep (only a record, the state, leads gc there). */
bool ar_cgroup_unswept(const struct ar_cgroup *cg);

/* Remove empty stale `agentrun-*-PID` cgroups whose owner PID is dead, under the
 * directories this process would create its cgroups in (ar_cgroup_create does this
 * first). Best effort; returns how many were removed. */
int ar_cgroup_sweep(void);

/* ---- Pure helpers over captured text (no I/O), unit-tested. ---- */

/* What this process's cgroup v2 directory looks like to it (ar_cgroup_plan_delegated
 * reads it; ar_cgroup_delegation decides on it). */
struct ar_cgroup_facts {
	const char *self;	 /* /proc/self/cgroup */
	const char *mountinfo;	 /* /proc/self/mountinfo */
	const char *dir;	 /* the v2 cgroup it would create in, NULL: none */
	const char *controllers; /* DIR/cgroup.controllers, NULL: unreadable */
	const char *procs;	 /* DIR/cgroup.procs, NULL: unreadable */
	bool writable;		 /* DIR, its cgroup.procs and cgroup.subtree_control */
	bool is_root;		 /* DIR has no cgroup.type: the no-internal-processes rule
				    does not apply */
	pid_t pid;		 /* this process (the one process DIR may hold) */
	uid_t uid;
	unsigned needed; /* AR_CGROUP_* of the limits that are set */
};
enum ar_cgroup_deleg {
	AR_CGROUP_DELEGATED,	/* every needed controller, ours to use */
	AR_CGROUP_PARTIAL,	/* writable, but some controllers are not handed down */
	AR_CGROUP_V1,		/* the controllers are cgroup v1's (a hybrid or v1 host) */
	AR_CGROUP_NO_V2,	/* no cgroup2 hierarchy for this process */
	AR_CGROUP_NOT_WRITABLE, /* DIR is not delegated to this user */
	AR_CGROUP_CROWDED,	/* DIR holds other processes */
};
/* Which of f->needed the caller can have (*usable), and if not all, why. */
enum ar_cgroup_deleg ar_cgroup_delegation(const struct ar_cgroup_facts *f, unsigned *usable);
/* gap->missing, ->limits and ->why for verdict `d` (usable as it returned) and the
 * limits of `l`. */
void ar_cgroup_gap_explain(const struct ar_cgroup_facts *f, enum ar_cgroup_deleg d, unsigned usable,
			   const struct ar_limits *l, struct ar_cgroup_gap *gap);

#define AR_CGROUP_CPU_PERIOD 100000 /* microseconds, cpu.max / cpu.cfs_period_us */

/* Quota in microseconds per AR_CGROUP_CPU_PERIOD for `millicpus` (1000 = one CPU);
 * at least 1000 (the kernel's minimum quota). */
int64_t ar_cgroup_cpu_quota(int64_t millicpus);
/* cpu.max value: "QUOTA 100000", or "max 100000" when millicpus <= 0. */
void ar_cgroup_format_cpu_max(int64_t millicpus, char *buf, size_t len);
/* The cgroup path of a /proc/PID/cgroup text: controller NULL selects the v2 line
 * "0::/path", else the v1 line whose controller list holds `controller`
 * ("4:memory:/x", "2:cpu,cpuacct:/y"). Returns 0 and a malloc'd path, -1 if absent. */
int ar_cgroup_parse_proc(const char *text, const char *controller, char **path);
/* The directory of cgroup `cgpath` from /proc/self/mountinfo text: controller NULL
 * selects the cgroup2 mount, else the v1 mount whose super options name `controller`.
 * Handles a mount whose root is not "/" and octal escapes. Returns 0 and a malloc'd
 * directory, -1 when no such hierarchy is mounted (or cgpath is outside it). */
int ar_cgroup_find_dir(const char *mountinfo, const char *controller, const char *cgpath,
		       char **dir);
/* Value of `key` in a flat keyed file ("oom 1\noom_kill 2\n": memory.events, v1
 * memory.oom_control). Returns 0, or -1 when the key is absent or malformed. */
int ar_cgroup_parse_keyed(const char *text, const char *key, int64_t *value);
/* Is `name` a word of a space-separated list (cgroup.controllers, subtree_control)? */
bool ar_cgroup_list_has(const char *list, const char *name);
/* The PIDs of a cgroup.procs text; *n = count. Returns 0 or -1 on a malformed line. */
int ar_cgroup_parse_pids(const char *text, pid_t **pids, size_t *n);
/* The owner PID of a cgroup directory name "agentrun-POLICY-PID" (also
 * "agentrun_supervisor-PID"); -1 when the name is not one of ours. */
pid_t ar_cgroup_name_owner(const char *name);

#endif

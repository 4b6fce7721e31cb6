/* cgroup limits for a sandbox: a tiny vtable with a v2 manager (primary) and a v1
 * manager for hybrid hosts (memory, pids, cpu controllers on v1). Cgroups are created
 * under the invoking process's own cgroup and removed afterwards. */
#ifndef AGENTRUN_CGROUP_H
#define AGENTRUN_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentrun/error.h"
#include "agentrun/policy.h"

struct ar_cgroup;

/* Create the sandbox cgroup(s) named `name` (unique, e.g. "agentrun-triage-1234")
 * and write the limits of p->limits (memory.max, memory.swap.max = 0, pids.max,
 * cpu.max, or the v1 equivalents). Fails closed, naming what is missing. */
int ar_cgroup_create(const struct ar_policy *p, const char *name, struct ar_cgroup **out,
		     ar_error_t *err);
/* Move pid into the cgroup(s). */
int ar_cgroup_enter(const struct ar_cgroup *cg, pid_t pid, ar_error_t *err);
/* After the sandbox ended: did the memory limit kill something? */
bool ar_cgroup_oom_killed(const struct ar_cgroup *cg);
/* Kill whatever is left, remove the cgroup directories, free. Safe on NULL. */
int ar_cgroup_destroy(struct ar_cgroup *cg, ar_error_t *err);
/* "v2" or "v1" (for messages and tests). */
const char *ar_cgroup_kind(const struct ar_cgroup *cg);

#endif

/* What agentrun keeps on the host for the caller (src/state/), below the sandbox and the
 * proxy network, which both use it:
 *   - the state root: root's /run/agentrun, an ordinary user's under $XDG_RUNTIME_DIR;
 *   - process identity that survives PID reuse (a pid with its start time);
 *   - the dynamic uid leases under STATE_ROOT/.uids (one per sandbox run by root, one per
 *     proxy), which double as the records `agentrun ps` lists. */
#ifndef AGENTRUN_STATE_H
#define AGENTRUN_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentrun/error.h"
#include "agentrun/policy.h"

#define AR_STATE_ROOT_SYSTEM "/run/agentrun" /* root's */
#define AR_STATE_ROOT	     ar_state_root()

/* ---- Whose state (root.c): root's under /run/agentrun; an ordinary user's under
 * $XDG_RUNTIME_DIR/agentrun (else /run/user/UID/agentrun, else /tmp/agentrun-UID), a
 * directory of the caller's own, mode 0700. ---- */

/* The path (computed once per process). */
const char *ar_state_root(void);
/* Made when missing; for a user, refused unless it is a directory (not a link) of the
 * caller's own that no one else may enter. Errors name the path and the fix. */
int ar_state_root_make(ar_error_t *err);
/* May it be read as the caller's own (exists and passes the checks above)? Readers
 * (ps, gc, audit NAME, check --name) see nothing otherwise. */
bool ar_state_root_trusted(void);

/* ---- Process identity that survives PID reuse (proc.c). ---- */

/* The start time of pid (field 22 of /proc/PID/stat), 0 when it does not exist. */
uint64_t ar_state_proc_start(pid_t pid);
/* Is pid alive and started at `start`? */
bool ar_state_proc_alive(pid_t pid, uint64_t start);

/* ---- Dynamic uids and the records of live sandboxes (uids.c). ---- */

/* Who asks for ids. */
struct ar_uid_request {
	/* a sandbox's policy: its `user` when set (a record slot only), else a dynamic
	 * uid; NULL: a proxy, which always gets a dynamic uid of its own */
	const struct ar_policy *p;
	bool userns; /* not root: the caller's own ids are the ones mapped (a slot only) */
	uid_t outer_uid;
	gid_t outer_gid;
};

/* The ids to run as, and the locked lease that holds them (-1: none) for as long as
 * the process that inherits it lives. */
struct ar_uid_lease {
	uid_t uid;
	gid_t gid;
	int fd;
};

/* Lease ids for rq (see uids.c for the range and what "free" means). */
int ar_state_uid_lease(const struct ar_uid_request *rq, struct ar_uid_lease *out, ar_error_t *err);
/* Close this process's copy of the lease (idempotent). */
void ar_state_uid_release(struct ar_uid_lease *l);

/* The record each run keeps in its lease (or a record slot), read by `agentrun ps`. */
struct ar_sandbox_record {
	pid_t owner; /* agentrun */
	uint64_t owner_start;
	pid_t pid;			    /* the sandbox's PID 1 */
	int64_t started;		    /* unix seconds */
	char network[8];		    /* "none" or "proxy" */
	char name[AR_POLICY_NAME_MAX + 16]; /* NAME-PID */
	char policy[256];		    /* its policy file, absolute; "" the default */
	const char *overrides;		    /* written, not read back by foreach: run's overrides of
					       the policy, ar_state_record_overrides */
};
/* Write r into the lease l (after the clone: r names the init's pid); nothing without
 * a lease. */
void ar_state_record_write(const struct ar_uid_lease *l, const struct ar_sandbox_record *r);
/* Visit the record of every live sandbox (its agentrun alive, checked by start time);
 * stops at the first non-zero return of fn and returns it. */
int ar_state_record_foreach(int (*fn)(const struct ar_sandbox_record *r, void *data), void *data);
/* The overrides the live sandbox `name` was started with (a JSON array of [flag, value]
 * pairs, kept after its record so that check --name expects what the run applied), or
 * NULL when it had none. */
char *ar_state_record_overrides(const char *name);

#endif

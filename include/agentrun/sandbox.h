/* The sandbox behind `agentrun run` (DESIGN §6): the flat launch sequence in
 * src/sandbox/run.c and the pieces it is made of. The pure parts (CLI overrides,
 * the mount plan, the environment, mountinfo) are declared here so unit tests can
 * reach them; the rest is internal to src/sandbox/. */
#ifndef AGENTRUN_SANDBOX_H
#define AGENTRUN_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentrun/error.h"
#include "agentrun/opts.h"
#include "agentrun/policy.h"
#include "agentrun/spec.h"

/* Settings of one run that are not part of the policy. */
struct ar_run_opts {
	bool no_cgroups; /* --no-cgroups: run without limits instead of failing closed */
	bool no_tty;	 /* --no-tty: no pty of its own even when stdin is a terminal */
	/* the caller's own places, hidden in the host root view wherever they are: $HOME,
	 * the home passwd names, $XDG_RUNTIME_DIR (entries may be NULL) */
	const char *caller_private[AR_SPEC_CALLER_PRIVATE_MAX];
	const char *term; /* the caller's $TERM, passed through when set */
	const char *cwd;  /* the caller's working directory: kept when the sandbox
			     shows it, else / */
	/* network (docs/network.md) */
	const char *policy_path; /* --policy FILE, recorded in the sandbox's state */
	const char *audit_path;	 /* --audit FILE: the proxy's audit (default: state dir) */
	const char *proxy_log;	 /* --proxy-log FILE: the proxy's log lines (default stderr) */
	int proxy_busy_poll_us;	 /* --proxy-busy-poll USEC: 0 = the default, -1 = never */
	const char *overrides;	 /* the policy's overrides as JSON, recorded in the state */
};

/* Launch argv[0] in a sandbox for policy p and wait for it. *status is the value
 * `run` exits with: the command's status, 128+N when it was killed by signal N,
 * 126/127 when it is not executable / not found. Returns 0, or -1 with *err set
 * (agentrun's own failure: exit 125). */
int ar_sandbox_run(const struct ar_policy *p, const struct ar_run_opts *o, char *const argv[],
		   int *status, ar_error_t *err);

/* ---- CLI overrides (src/sandbox/options.c): table-driven, pure. ---- */

/* run's option table, --policy first, NULL-terminated (the CLI parses and documents
 * run from it). */
extern const struct ar_opt ar_run_options[];
/* Apply one override to p and o, then validate the policy. Errors name the flag:
 * `--memory x: expected a size ...`, `--memory 5m: limits.memory: ... minimum`. */
int ar_override_apply(struct ar_policy *p, struct ar_run_opts *o, const char *flag,
		      const char *value, ar_error_t *err);
/* Does this run option change the policy (--memory, --env, --mount...), rather than
 * only how the run goes (--no-cgroups, --audit, --proxy-log, --proxy-busy-poll, --no-tty,
 * --policy)? */
bool ar_override_changes_policy(const char *flag);
/* Parse "UID" or "UID:GID" (numeric). Returns 0 or -1. */
int ar_parse_user(const char *s, uid_t *uid, gid_t *gid);

/* ---- The mount plan (src/sandbox/mountplan.c), pure. ---- */

enum ar_mount_kind {
	AR_MNT_HIDE,	/* host credentials: empty tmpfs over a directory (read-only once
			   the mount points below it exist), /dev/null over a file;
			   skipped when the path is absent */
	AR_MNT_MASK,	/* /proc and /sys masks: as HIDE, read-only at once */
	AR_MNT_PROC,	/* a fresh proc */
	AR_MNT_SYSFS,	/* a fresh sysfs, read-only */
	AR_MNT_DEV,	/* minimal /dev: tmpfs, host nodes, devpts, shm, links */
	AR_MNT_RO_SELF, /* bind a path onto itself read-only (/proc/sys); skipped if absent */
	AR_MNT_TMPFS,	/* policy tmpfs: writable, nosuid, nodev */
	AR_MNT_BIND,	/* policy mount or kubeconfig: recursive bind, nosuid, nodev */
};

struct ar_mount_op {
	enum ar_mount_kind kind;
	char *source; /* host path for AR_MNT_BIND, else NULL */
	char *target; /* absolute path inside the sandbox */
	bool readonly;
	char *what;    /* the policy field or origin for messages ("p.json: mounts[0]") */
	bool copy;     /* AR_MNT_BIND of a file (the kubeconfig): a private read-only copy
			  owned by the sandbox's uid, on a tmpfs of its own, is bound instead */
	int source_fd; /* > 0: the source is this open file (a generated one), not a path */
	/* > 0: a detached clone of the source, idmapped onto its owner (a read-write bind
	 * as root, src/sandbox/idmap.c), moved into place instead of a bind; owned */
	int idmap_tree;
};

struct ar_mount_plan {
	bool host_root; /* true: a read-only view of the host root; false: p->rootfs */
	const char *rootfs;
	struct ar_mount_op *ops;
	size_t n_ops;
};

/* The ordered list of mounts for the spec s: its hidden places, a fresh /proc with the
 * spec's masked and read-only paths, /sys likewise, /dev, then the spec's mounts. */
void ar_mount_plan_build(const struct ar_spec *s, struct ar_mount_plan *plan);
void ar_mount_plan_free(struct ar_mount_plan *plan);
/* Append a private read-only copy of the open file fd (not owned; open until the
 * sandbox's root is built) at target: the spec's /etc/hosts, the generated
 * /etc/resolv.conf of transparent capture. `what` names it in messages. */
void ar_mount_plan_add_file(struct ar_mount_plan *plan, int fd, const char *target,
			    const char *what);

/* Visit every mount point of a /proc/self/mountinfo text that is `prefix` or below
 * it, in file order (parents before children), with octal escapes undone. Returns 0,
 * the first non-zero value of fn, or -1 on a malformed line. */
int ar_mountinfo_foreach(const char *text, const char *prefix,
			 int (*fn)(const char *mountpoint, void *data), void *data);

#endif

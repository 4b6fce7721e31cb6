/* Shared by the files of the sandbox launcher (never included elsewhere): the run
 * context handed from step to step and the steps themselves. run.c orders them. */
#ifndef AGENTRUN_SANDBOX_INTERNAL_H
#define AGENTRUN_SANDBOX_INTERNAL_H

#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentrun/cgroup.h"
#include "agentrun/error.h"
#include "agentrun/net.h"
#include "agentrun/policy.h"
#include "agentrun/sandbox.h"
#include "agentrun/seccomp.h"
#include "agentrun/state.h"

struct sandbox {
	const struct ar_policy *p;
	const struct ar_run_opts *o;
	char *const *argv;

	struct ar_spec *spec; /* what the command gets (src/spec), built once */
	struct ar_mount_plan plan;
	struct ar_seccomp *seccomp; /* NULL: unconfined */
	struct ar_cgroup *cg;	    /* NULL: --no-cgroups */
	/* v1: the cgroups are made after the clone (ar_cgroup_make), and the files
	 * through which the child moves itself in (ar_cgroup_open_self) reach it with
	 * the command go-ahead; else (v2) made before the clone and the parent moves it
	 * (ar_cgroup_enter) */
	bool child_enters_cgroup;
	int cg_self[4];
	size_t n_cg_self;
	char **env; /* the spec's */
	char cgroup_name[96];

	/* the ids the command and its init run as: the policy's `user`, or a dynamic
	 * pair leased for as long as the init lives (agentrun/state.h) */
	uid_t uid;
	gid_t gid;
	struct ar_uid_lease lease; /* lease.fd: the locked lease, else -1 */
	struct sandbox_pty *pty;   /* the command's own terminal (pty.c), NULL: none */

	bool userns; /* not root: the sandbox gets its own user namespace */
	uid_t outer_uid;
	gid_t outer_gid;

	/* the CPUs agentrun may run on, as the clone found them: the child is started on
	 * one of them other than agentrun's own (sandbox_clone) and takes them all back
	 * before the command (sandbox_restore_cpus) */
	cpu_set_t cpus;
	bool cpus_saved;

	int release[2];	   /* parent -> child: the command's go-ahead (socketpair) */
	int report[2];	   /* child -> parent: a struct child_report on failure, EOF on exec */
	pid_t pid;	   /* PID 1 of the sandbox, as the parent sees it */
	struct ar_net net; /* state, and for network: proxy the netns, veth and proxy */
	int hosts_fd;	   /* the sandbox's own /etc/hosts (a sealed memfd), else -1 */
	sigset_t oldmask;
};

/* The byte the parent sends the child: go on with the command (the cgroup is ready: on
 * v2 the child is in it, on v1 the byte carries the `tasks` files, SCM_RIGHTS, for the
 * child to move itself). */
#define SANDBOX_RELEASE_COMMAND 'c'
/* ... and the one the child sends back, for network: proxy: its netns (SCM_RIGHTS). */
#define SANDBOX_NETNS 'n'

/* What a failing child tells the parent, in one write (< PIPE_BUF). */
struct child_report {
	int32_t errnum; /* errno of the failure, 0 if none */
	int32_t code;	/* exit code run should return: 125, 126, 127 */
	char msg[1024];
};

/* preflight.c: kernel features and policy paths, before anything is created. */
int sandbox_preflight(struct sandbox *sb, ar_error_t *err);

/* pty.c: when stdin is the caller's terminal (and not --no-tty), the command gets a
 * pty of its own: prepare (before clone), attach (the command, after setsid), start
 * (agentrun, after clone: raw mode and the relay), resize on SIGWINCH, stop (drain,
 * restore the caller's terminal; idempotent, on every path out). */
int sandbox_pty_prepare(struct sandbox *sb, ar_error_t *err);
int sandbox_pty_attach(const struct sandbox *sb, ar_error_t *err);
int sandbox_pty_start(struct sandbox *sb, ar_error_t *err);
void sandbox_pty_resize(const struct sandbox *sb);
void sandbox_pty_stop(struct sandbox *sb);

/* stdio.c: fds 0-2 are a terminal, pipe, socket, regular file or character device
 * (never a directory or an O_PATH fd, a way out of the root), else an error. */
int sandbox_check_stdio(ar_error_t *err);

/* ns.c. The clone makes the namespaces the spec's table says it makes
 * (ar_spec_clone_flags); the init unshares the network one first thing
 * (sandbox_unshare_net) and the cgroup one once it is in its cgroup. */
pid_t sandbox_clone(struct sandbox *sb, ar_error_t *err);
int sandbox_restore_cpus(const struct sandbox *sb, ar_error_t *err);
int sandbox_unshare_net(const struct sandbox *sb, ar_error_t *err);
/* Read-write binds as root: an idmapped clone of each source onto its owner, and a
 * word at start for what cannot be written or mapped (idmap.c). */
int sandbox_idmap_prepare(struct sandbox *sb, ar_error_t *err);
int sandbox_write_id_maps(const struct sandbox *sb, ar_error_t *err);
int sandbox_set_hostname(const struct sandbox *sb, ar_error_t *err);
int sandbox_loopback_up(const struct sandbox *sb, ar_error_t *err);
int sandbox_unshare_cgroupns(const struct sandbox *sb, ar_error_t *err);

/* mount.c: build the root from the plan, pivot into it. */
int sandbox_mount_root(const struct sandbox *sb, ar_error_t *err);

/* caps.c */
int sandbox_drop_bounding(const struct sandbox *sb,
			  ar_error_t *err); /* + ambient, securebits; before set_ids */
int sandbox_set_ids(const struct sandbox *sb, ar_error_t *err);
int sandbox_clear_caps(const struct sandbox *sb,
		       ar_error_t *err); /* permitted, effective, inheritable */
/* init after the fork: the command's uid, no capabilities, not dumpable,
 * no_new_privs, its own seccomp filter */
int sandbox_init_drop(const struct sandbox *sb, ar_error_t *err);
int sandbox_no_new_privs(const struct sandbox *sb, ar_error_t *err);

/* init.c: PID 1 of the sandbox. */
#define SANDBOX_N_FORWARDED 7
/* INT, TERM, HUP, QUIT, USR1, USR2, WINCH */
extern const int sandbox_forwarded[SANDBOX_N_FORWARDED];
int sandbox_init_loop(pid_t command, const sigset_t *waitset);
/* Confine init to the few calls its loop makes (whatever the command's profile). */
int sandbox_init_filter(ar_error_t *err);
/* Exit code for a wait status: the status, or 128+N on signal N. */
int sandbox_exit_code(int wstatus);

/* child.c: everything between clone and exec. Never returns. */
__attribute__((noreturn)) void sandbox_child(struct sandbox *sb);
/* Send a failure to the parent and _exit(code). */
__attribute__((noreturn)) void sandbox_child_fail(const struct sandbox *sb, int code,
						  ar_error_t *err);

#endif

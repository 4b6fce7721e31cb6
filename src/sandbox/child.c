/* Everything between clone and exec, as two flat lists: the sandbox's PID 1 builds
 * the namespaces' contents (hostname, loopback, mounts, pivot_root), forks the
 * command and becomes its init; the command drops every privilege and execs, with
 * seccomp installed last. This is the one fail-fast zone: a failing step sends its
 * errno and message to the parent over the report pipe and _exits. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agentrun/util.h"
#include "internal.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

void sandbox_child_fail(const struct sandbox *sb, int code, ar_error_t *err)
{
	struct child_report r = {.code = code};

	if (err != NULL && *err != NULL) {
		r.errnum = (*err)->status;
		snprintf(r.msg, sizeof(r.msg), "%s", (*err)->msg);
	} else {
		snprintf(r.msg, sizeof(r.msg), "sandbox setup failed");
	}
	if (ar_write_all(sb->report[1], &r, sizeof(r)) == -1) {
		/* nobody to tell: the parent is gone */
	}
	_exit(code);
}

/* The cgroup is ready. On v1 the go-ahead carries the `tasks` files of the sandbox
 * cgroups (SCM_RIGHTS), and the init moves itself in through them (the parent's move
 * would wait for an RCU grace period), before it forks the command, which inherits
 * the cgroups; on v2 the parent moved us already. */
static int wait_command(const struct sandbox *sb, ar_error_t *err)
{
	char c = 0;
	int fds[AR_ARRAY_SIZE(sb->cg_self)];
	size_t n = 0;

	if (ar_recv_fds(sb->release[0], &c, fds, AR_ARRAY_SIZE(fds), &n) != 1 ||
	    c != SANDBOX_RELEASE_COMMAND)
		_exit(AR_EXIT_RUN_FAIL); /* the parent failed (and says so) or died */
	close(sb->release[0]);
	/* n must match the cgroups (ar_cgroup_enter_self checks): none may be skipped */
	int ret = sb->child_enters_cgroup ? ar_cgroup_enter_self(sb->cg, fds, n, err) : 0;
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	return ret;
}

static int die_with_parent(const struct sandbox *sb, ar_error_t *err)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
		return ar_error_make(err, errno, "prctl PR_SET_PDEATHSIG");
	return 0;
}

/* A new session: no controlling terminal, so no TIOCSTI into the caller's tty. */
static int new_session(const struct sandbox *sb, ar_error_t *err)
{
	if (setsid() == -1)
		return ar_error_make(err, errno, "setsid");
	return 0;
}

/* The init only needs to be out of the terminal's foreground process group, so a ^C
 * reaches agentrun alone (which forwards it once). Not setsid: with the scheduler's
 * autogroups each new session costs up to milliseconds, and the command makes one. */
static int own_process_group(const struct sandbox *sb, ar_error_t *err)
{
	if (setpgid(0, 0) == -1)
		return ar_error_make(err, errno, "setpgid");
	return 0;
}

/* A fresh anonymous session keyring (as runc): the caller's would otherwise be
 * inherited, and a key in a keyring the process possesses is readable through the
 * possessor permissions whatever the uid (Kerberos, fscrypt, ecryptfs keys). The
 * command inherits it from init. ENOSYS: a kernel without keys; EPERM: a seccomp
 * filter above agentrun denies keyctl, and the command inherits that filter too. */
static int new_session_keyring(const struct sandbox *sb, ar_error_t *err)
{
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) == -1 && errno != ENOSYS &&
	    errno != EPERM)
		return ar_error_make(err, errno, "join a new session keyring");
	return 0;
}

/* Only stdin, stdout, stderr reach the command; the rest close at exec. */
static int close_inherited_fds(const struct sandbox *sb, ar_error_t *err)
{
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return 0;
	for (int fd = 3; fd < 1024; fd++)
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) == -1 && errno != EBADF)
			return ar_error_make(err, errno, "mark fd %d close-on-exec", fd);
	return 0;
}

/* Stay where the caller was when the sandbox shows that place (as bwrap), else /. */
static int change_dir(const struct sandbox *sb, ar_error_t *err)
{
	if (sb->o->cwd != NULL && chdir(sb->o->cwd) == 0)
		return 0;
	if (chdir("/") == -1)
		return ar_error_make(err, errno, "chdir /");
	return 0;
}

static int install_seccomp(const struct sandbox *sb, ar_error_t *err)
{
	if (ar_seccomp_install(sb->seccomp, err) == -1)
		return ar_error_wrap(err, "seccomp profile `%s`", sb->spec->seccomp);
	return 0;
}

/* The command starts with every signal at its default, whatever the caller ignored
 * (a shell's background job ignores SIGINT, and an ignored signal stays ignored
 * across exec: the command could not even trap it), and the caller's mask. */
static int restore_signals(const struct sandbox *sb, ar_error_t *err)
{
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	if (sigprocmask(SIG_SETMASK, &sb->oldmask, NULL) == -1)
		return ar_error_make(err, errno, "sigprocmask");
	return 0;
}

__attribute__((noreturn)) static void exec_command(const struct sandbox *sb)
{
	ar_auto_error ar_error_t err = NULL;

	/* execvp searches the PATH of our own environment: make it the sandbox's */
	environ = sb->env;
	execvp(sb->argv[0], sb->argv);
	int e = errno;
	ar_error_make(&err, e, "exec `%s`", sb->argv[0]);
	sandbox_child_fail(sb, e == ENOENT || e == ENOTDIR ? AR_EXIT_NOENT : AR_EXIT_NOEXEC, &err);
}

typedef int (*child_step)(const struct sandbox *sb, ar_error_t *err);

static void run_steps(const struct sandbox *sb, const child_step *steps, size_t n)
{
	ar_auto_error ar_error_t err = NULL;
	for (size_t i = 0; i < n; i++)
		if (steps[i](sb, &err) == -1)
			sandbox_child_fail(sb, AR_EXIT_RUN_FAIL, &err);
}

/* The command, in order: drop everything, seccomp last, exec. Its bounding and ambient
 * sets and securebits are the init's already (sandbox_drop_bounding, inherited). */
static const child_step command_steps[] = {
    new_session,	  /* no controlling terminal (the caller's) */
    sandbox_pty_attach,	  /* a pty of its own when stdin is a terminal */
    change_dir,		  /* the caller's cwd when visible, else / */
    close_inherited_fds,  /* only 0, 1, 2 survive exec */
    sandbox_set_ids,	  /* setgroups [], gid, uid */
    sandbox_clear_caps,	  /* permitted, effective, inheritable */
    sandbox_no_new_privs, /* PR_SET_NO_NEW_PRIVS */
    restore_signals,	  /* default dispositions, the caller's mask */
    install_seccomp,	  /* last: only exec follows, the steps above need what it denies */
};

__attribute__((noreturn)) static void command_main(const struct sandbox *sb)
{
	run_steps(sb, command_steps, AR_ARRAY_SIZE(command_steps));
	exec_command(sb);
}

static pid_t fork_command(const struct sandbox *sb, ar_error_t *err)
{
	pid_t pid = fork();
	if (pid == -1)
		return ar_error_make(err, errno, "fork the command");
	if (pid == 0)
		command_main(sb);
	return pid;
}

/* PID 1 of the sandbox, in order, before it forks the command. */
static const child_step init_steps[] = {
    die_with_parent,	      /* PR_SET_PDEATHSIG: the sandbox dies with agentrun */
    sandbox_unshare_net,      /* its netns (network: proxy: sent to agentrun) */
    sandbox_write_id_maps,    /* not root: its own uid/gid maps */
    new_session_keyring,      /* not the caller's keys */
    own_process_group,	      /* out of the terminal's foreground group */
    sandbox_set_hostname,     /* the policy name */
    sandbox_loopback_up,      /* network none: loopback only */
    sandbox_mount_root,	      /* mounts, pivot_root */
    wait_command,	      /* in the cgroup (v1: we move ourselves, v2: the parent did) */
    sandbox_restore_cpus,     /* started away from agentrun's CPU: all of them again */
    sandbox_unshare_cgroupns, /* rooted at the sandbox cgroup */
    sandbox_drop_bounding,    /* bounding, ambient, securebits, for the command too */
};

void sandbox_child(struct sandbox *sb)
{
	ar_auto_error ar_error_t err = NULL;
	sigset_t waitset;
	pid_t command;

	close(sb->release[1]);
	close(sb->report[0]);
	run_steps(sb, init_steps, AR_ARRAY_SIZE(init_steps));
	command = fork_command(sb, &err);
	if (command == -1 || sandbox_init_drop(sb, &err) == -1)
		sandbox_child_fail(sb, AR_EXIT_RUN_FAIL, &err);
	close(sb->report[1]);
	/* the parent blocked these before clone: they wait for sigwaitinfo */
	sigemptyset(&waitset);
	sigaddset(&waitset, SIGCHLD);
	for (size_t i = 0; i < SANDBOX_N_FORWARDED; i++)
		sigaddset(&waitset, sandbox_forwarded[i]);
	_exit(sandbox_init_loop(command, &waitset));
}

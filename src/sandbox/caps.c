/* Credentials and capabilities of the command (and of the sandbox's init): the
 * user of the policy, no supplementary groups, every capability set emptied,
 * including bounding and ambient, and no_new_privs. */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <linux/securebits.h>
#include <poll.h>
#include <signal.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agentrun/util.h"
#include "internal.h"

static void cleanup_capp(cap_t *c)
{
	if (*c)
		cap_free(*c);
}
#define ar_autocap __attribute__((cleanup(cleanup_capp)))

/* One prctl instead of libcap's cap_reset_ambient, which probes every capability
 * with PR_CAP_AMBIENT_IS_SET first (~40 syscalls on the start path). EINVAL: a
 * kernel without ambient capabilities (before 4.3) has none to clear. */
static int clear_ambient(void)
{
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == -1 && errno != EINVAL)
		return -1;
	return 0;
}

/* The spec's ids. */
int sandbox_set_ids(const struct sandbox *sb, ar_error_t *err)
{
	const struct ar_spec *s = sb->spec;
	/* setgroups is denied in a user namespace we mapped ourselves (and useless there) */
	if (!s->idmap.userns && setgroups(0, NULL) == -1)
		return ar_error_make(err, errno, "setgroups []");
	if (setresgid(s->gid, s->gid, s->gid) == -1)
		return ar_error_make(err, errno, "setresgid %u", (unsigned)s->gid);
	if (setresuid(s->uid, s->uid, s->uid) == -1)
		return ar_error_make(err, errno, "setresuid %u", (unsigned)s->uid);
	return 0;
}

static int drop_bounding(cap_value_t keep, ar_error_t *err)
{
	for (cap_value_t c = 0; c < (cap_value_t)cap_max_bits(); c++)
		if (c != keep && cap_drop_bound(c) == -1)
			return ar_error_make(err, errno, "drop capability %d from the bounding set",
					     (int)c);
	return 0;
}

/* Before the uid change: dropping from the bounding set needs CAP_SETPCAP. With
 * SECBIT_NOROOT a uid-0 user gets nothing back from exec either. The init's last step
 * before it forks the command, which inherits all three: done once, not by each (every
 * drop is a new cred, ~41 of them; the effective set, which the steps after need, stays
 * until sandbox_set_ids and sandbox_clear_caps). */
int sandbox_drop_bounding(const struct sandbox *sb, ar_error_t *err)
{
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
					 SECBIT_NO_CAP_AMBIENT_RAISE |
					 SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) == -1)
		return ar_error_make(err, errno, "prctl PR_SET_SECUREBITS");
	if (drop_bounding(-1, err) == -1)
		return -1;
	if (clear_ambient() == -1)
		return ar_error_make(err, errno, "clear the ambient capabilities");
	return 0;
}

/* After the uid change (which already emptied them for a non-zero uid). */
int sandbox_clear_caps(const struct sandbox *sb, ar_error_t *err)
{
	ar_autocap cap_t empty = cap_init();

	if (empty == NULL || cap_set_proc(empty) == -1)
		return ar_error_make(err, errno,
				     "clear the permitted, effective and inheritable "
				     "capabilities");
	return 0;
}

/* PID 1 after it forked the command: the same user as the command, no capability
 * in any set (bounding, ambient and securebits went before the fork), not dumpable (so
 * /proc/1 stays root's and nothing can ptrace it), then no_new_privs and a filter of its
 * own (init.c). It only waits and forwards signals, to a process of its own uid, which
 * needs no capability. */
int sandbox_init_drop(const struct sandbox *sb, ar_error_t *err)
{
	if (sandbox_set_ids(sb, err) == -1 || sandbox_clear_caps(sb, err) == -1)
		return ar_error_wrap(err, "init");
	/* a change of uid clears PR_SET_PDEATHSIG: arm it again, then check the parent
	 * did not die in between (its end of the report pipe would be closed) */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
		return ar_error_make(err, errno, "init: prctl PR_SET_PDEATHSIG");
	struct pollfd pfd = {.fd = sb->report[1], .events = POLLOUT};
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLERR))
		_exit(AR_EXIT_RUN_FAIL);
	if (prctl(PR_SET_DUMPABLE, 0) == -1)
		return ar_error_make(err, errno, "init: prctl PR_SET_DUMPABLE");
	if (sandbox_no_new_privs(sb, err) == -1)
		return ar_error_wrap(err, "init");
	return sandbox_init_filter(err);
}

int sandbox_no_new_privs(const struct sandbox *sb, ar_error_t *err)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		return ar_error_make(err, errno, "prctl PR_SET_NO_NEW_PRIVS");
	return 0;
}

/* Credentials and capabilities of the command (and of the sandbox's init): the
 * user of the policy, no supplementary groups, every capability set emptied,
 * including bounding and ambient, and no_new_privs. */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <linux/securebits.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agentrun/util.h"
#include "sandbox-internal.h"

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

int sandbox_set_ids(const struct sandbox *sb, ar_error_t *err)
{
	const struct ar_policy *p = sb->p;

	/* setgroups is denied in a user namespace we mapped ourselves (and useless there) */
	if (!sb->userns && setgroups(0, NULL) == -1)
		return ar_error_make(err, errno, "setgroups []");
	if (setresgid(p->gid, p->gid, p->gid) == -1)
		return ar_error_make(err, errno, "setresgid %u", (unsigned)p->gid);
	if (setresuid(p->uid, p->uid, p->uid) == -1)
		return ar_error_make(err, errno, "setresuid %u", (unsigned)p->uid);
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
 * SECBIT_NOROOT a uid-0 user gets nothing back from exec either. */
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

/* The sandbox's init only waits and forwards signals to a command that runs as
 * another user: CAP_KILL is all it keeps. */
int sandbox_init_drop_caps(const struct sandbox *sb, ar_error_t *err)
{
	ar_autocap cap_t c = cap_init();
	cap_value_t kill_cap = CAP_KILL;

	if (drop_bounding(CAP_KILL, err) == -1)
		return -1;
	if (clear_ambient() == -1)
		return ar_error_make(err, errno, "init: clear the ambient capabilities");
	if (c == NULL || cap_set_flag(c, CAP_PERMITTED, 1, &kill_cap, CAP_SET) == -1 ||
	    cap_set_flag(c, CAP_EFFECTIVE, 1, &kill_cap, CAP_SET) == -1 || cap_set_proc(c) == -1)
		return ar_error_make(err, errno, "init: keep only CAP_KILL");
	if (prctl(PR_SET_DUMPABLE, 0) == -1)
		return ar_error_make(err, errno, "init: prctl PR_SET_DUMPABLE");
	return 0;
}

int sandbox_no_new_privs(const struct sandbox *sb, ar_error_t *err)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		return ar_error_make(err, errno, "prctl PR_SET_NO_NEW_PRIVS");
	return 0;
}

/* Whose state: root keeps /run/agentrun (shared by root's sandboxes, hooks and named
 * netns); an ordinary user keeps a directory of its own, so that `ps`, `gc`, `audit
 * NAME` and `check --name` see the caller's sandboxes only and no user can read, list
 * or remove another's (the kernel's permission checks do it: the directory is 0700).
 *
 * The user's directory is $XDG_RUNTIME_DIR/agentrun, where logind gives each user a
 * private tmpfs (gone at logout, as the sandboxes are); else /run/user/UID/agentrun;
 * else /tmp/agentrun-UID. A parent is used only when it is a directory of the
 * caller's own that no one else may write, and the directory itself only when it is
 * the caller's, no link, and mode 0700: anyone can make /tmp/agentrun-UID first, and a
 * state planted there would have gc kill whichever of the caller's processes it names. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentrun/net.h"
#include "agentrun/util.h"

static bool private_parent(const char *dir)
{
	struct stat st;
	return dir != NULL && dir[0] == '/' && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == geteuid() && (st.st_mode & 022) == 0;
}

const char *ar_net_state_root(void)
{
	static char root[PATH_MAX];
	char run_user[64];

	if (root[0] != '\0')
		return root;
	if (geteuid() == 0) {
		snprintf(root, sizeof(root), "%s", AR_NET_STATE_ROOT_SYSTEM);
		return root;
	}
	snprintf(run_user, sizeof(run_user), "/run/user/%u", (unsigned)geteuid());
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n = -1;
	if (private_parent(xdg))
		n = snprintf(root, sizeof(root), "%s/agentrun", xdg);
	if ((n < 0 || (size_t)n >= sizeof(root)) && private_parent(run_user))
		n = snprintf(root, sizeof(root), "%s/agentrun", run_user);
	if (n < 0 || (size_t)n >= sizeof(root))
		snprintf(root, sizeof(root), "/tmp/agentrun-%u", (unsigned)geteuid());
	return root;
}

/* The user's directory as it must be; 0, or -1 with errno (ENOENT: absent). */
static int check_own(const char *root, struct stat *st)
{
	if (lstat(root, st) == -1)
		return -1;
	if (!S_ISDIR(st->st_mode) || st->st_uid != geteuid() || (st->st_mode & 077) != 0) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

bool ar_net_state_root_trusted(void)
{
	struct stat st;
	return geteuid() == 0 || check_own(ar_net_state_root(), &st) == 0;
}

int ar_net_state_root_make(ar_error_t *err)
{
	const char *root = ar_net_state_root();
	struct stat st;

	if (geteuid() == 0) {
		if (mkdir(root, 0711) == -1 && errno != EEXIST)
			return ar_error_make(err, errno, "mkdir `%s`", root);
		return 0;
	}
	if (mkdir(root, 0700) == -1 && errno != EEXIST)
		return ar_error_make(err, errno, "mkdir `%s` (the state of your sandboxes)", root);
	if (check_own(root, &st) == 0)
		return 0;
	if (errno != EPERM)
		return ar_error_make(err, errno, "`%s`", root);
	return ar_error_make(err, 0,
			     "`%s` (the state of your sandboxes) is not a directory of your own "
			     "with mode 0700 (%s, owner %u, mode %03o): remove it, or set "
			     "XDG_RUNTIME_DIR to a private directory",
			     root,
			     S_ISLNK(st.st_mode)   ? "a symlink"
			     : S_ISDIR(st.st_mode) ? "a directory"
						   : "not a directory",
			     (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
}

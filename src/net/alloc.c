/* Allocation of /30s between concurrent sandboxes: a lock plus one entry per /30.
 * Under an exclusive flock of AR_NET_STATE_ROOT/net, the /30 number INDEX is taken by
 * creating the symlink net/INDEX -> "PID.STARTTIME" (the owning agentrun); an entry
 * whose owner is gone (killed with SIGKILL before it could release) is taken over.
 * The search starts at a point derived from the PID so concurrent starts rarely probe
 * the same entries. Release unlinks the entry; gc removes the dead owners' entries. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentrun/net.h"
#include "agentrun/util.h"
#include "net-internal.h"

/* access() first: on a disk-backed /run a mkdir that finds the name still takes the
 * directory's lock and, under load, milliseconds. */
int net_mkdir_root(const char *sub, ar_error_t *err)
{
	ar_autofree char *path = ar_xasprintf("%s/%s", AR_NET_STATE_ROOT, sub ? sub : "");
	/* a user's root is checked on every use: another user may have made it first */
	if (geteuid() == 0 && access(path, F_OK) == 0)
		return 0;
	if (ar_net_state_root_make(err) == -1)
		return -1;
	if (sub == NULL)
		return 0;
	if (mkdir(path, 0700) == -1 && errno != EEXIST)
		return ar_error_make(err, errno, "mkdir `%s`", path);
	return 0;
}

/* The locked directory of entries, or -1. */
int net_lock_entries(ar_error_t *err)
{
	if (net_mkdir_root("net", err) == -1)
		return -1;
	ar_autofree char *dir = ar_xasprintf("%s/net", AR_NET_STATE_ROOT);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1)
		return ar_error_make(err, errno, "open `%s/net`", AR_NET_STATE_ROOT);
	if (TEMP_FAILURE_RETRY(flock(fd, LOCK_EX)) == -1) {
		close(fd);
		return ar_error_make(err, errno, "lock `%s/net`", AR_NET_STATE_ROOT);
	}
	return fd;
}

/* Is the entry's owner alive? An unreadable entry counts as alive (never stolen). */
bool net_entry_live(int dirfd, const char *name)
{
	char target[64];
	ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);
	long long pid;
	unsigned long long start;

	if (n <= 0)
		return errno != ENOENT && errno != EINVAL;
	target[n] = '\0';
	if (sscanf(target, "%lld.%llu", &pid, &start) != 2)
		return true;
	return ar_net_proc_alive((pid_t)pid, start);
}

static int take(int dirfd, uint32_t index, const char *owner)
{
	char name[16];
	snprintf(name, sizeof(name), "%" PRIu32, index);
	if (symlinkat(owner, dirfd, name) == 0)
		return 0;
	if (errno != EEXIST || net_entry_live(dirfd, name))
		return -1;
	if (unlinkat(dirfd, name, 0) == -1 || symlinkat(owner, dirfd, name) == -1)
		return -1;
	return 0;
}

int ar_net_alloc(const struct ar_net_range *r, int port, struct ar_net_plan *out, ar_error_t *err)
{
	char owner[64];
	uint32_t count = ar_net_range_count(r);
	ar_autoclose int dirfd = net_lock_entries(err);

	if (dirfd == -1)
		return -1;
	snprintf(owner, sizeof(owner), "%d.%" PRIu64, (int)getpid(), ar_net_proc_start(getpid()));
	uint32_t first = (uint32_t)getpid() % count;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t index = (first + i) % count;
		if (take(dirfd, index, owner) == 0) {
			ar_net_plan_at(r, index, port, out);
			return 0;
		}
	}
	return ar_error_make(err, 0,
			     "network: all %" PRIu32 " /30 networks of the range are in use "
			     "(set %s to a larger range)",
			     count, AR_NET_RANGE_ENV);
}

void ar_net_release(const struct ar_net_plan *plan)
{
	ar_autofree char *path = ar_xasprintf("%s/net/%" PRIu32, AR_NET_STATE_ROOT, plan->index);
	unlink(path);
}

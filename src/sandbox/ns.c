/* Namespaces: the clone that creates them, the uid/gid maps the parent writes for a
 * user namespace, and the small per-namespace settings the child makes (hostname,
 * loopback, a cgroup namespace rooted at the sandbox cgroup). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agentrun/util.h"
#include "agentrun/spec.h"
#include "internal.h"

/* Tasks runnable on the whole host now, agentrun and its new child among them
 * (/proc/loadavg's fourth field, "running/total"); INT_MAX when unknown. */
static int runnable_now(void)
{
	char buf[128] = "";
	int running = 0;
	ar_autoclose int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	if (fd == -1 || read(fd, buf, sizeof(buf) - 1) <= 0 ||
	    sscanf(buf, "%*s %*s %*s %d/", &running) != 1)
		return INT_MAX;
	return running;
}

/* A new child waits on its parent's CPU for as long as the parent keeps it busy (on
 * these 2-CPU hosts about a millisecond of agentrun's setup after the clone, with the
 * other CPU idle): moved at once to one of the others, it builds its root beside
 * that setup. Only while one of the others is idle: on a busy host the pinned child
 * queued there behind other work, while agentrun's own CPU, which agentrun leaves for
 * a wait soon after the clone, could have run it (start-to-exit 11.5-14.2 -> 7.3-10.1
 * ms in loops at load 2.7 on 2 CPUs); the scheduler then places it. Best effort: with
 * one CPU, or when the set does not fit, nothing moves. */
static void start_elsewhere(struct sandbox *sb, pid_t pid)
{
	cpu_set_t other = sb->cpus;
	int cpu = sched_getcpu();
	if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &other))
		return;
	CPU_CLR(cpu, &other);
	/* agentrun and the child are two of the runnable: fewer others than other CPUs */
	if (CPU_COUNT(&other) > 0 && runnable_now() - 2 < CPU_COUNT(&other))
		sched_setaffinity(pid, sizeof(other), &other);
}

pid_t sandbox_clone(struct sandbox *sb, ar_error_t *err)
{
	unsigned long flags = (unsigned long)ar_spec_clone_flags() | SIGCHLD;
	if (sb->userns)
		flags |= CLONE_NEWUSER;
	sb->cpus_saved = sched_getaffinity(0, sizeof(sb->cpus), &sb->cpus) == 0;
	/* fork-like raw clone: the child runs on a copy of our stack, no stack to manage */
	long pid = syscall(SYS_clone, flags, NULL, NULL, NULL, NULL);
	if (pid == -1)
		return ar_error_make(
		    err, errno, "clone (new pid, mount, uts, ipc%s namespaces%s)",
		    sb->userns ? ", user" : "",
		    sb->userns && errno == ENOSPC ? ": user.max_user_namespaces is reached" : "");
	if (pid > 0 && sb->cpus_saved)
		start_elsewhere(sb, (pid_t)pid);
	return (pid_t)pid;
}

/* In the child, after the command's go-ahead (the parent narrowed its CPUs, if it did,
 * right after the clone, before sending it): every CPU agentrun had, for the command and
 * all it starts. */
int sandbox_restore_cpus(const struct sandbox *sb, ar_error_t *err)
{
	if (!sb->cpus_saved)
		return 0;
	if (sched_setaffinity(0, sizeof(sb->cpus), &sb->cpus) == -1)
		return ar_error_make(err, errno, "restore the CPUs the sandbox may run on");
	return 0;
}

/* The sandbox's own netns; for network: proxy sent to agentrun with a route socket of
 * it (IPv6 off for the links made from now on: ar_net_sandbox_side), through which
 * agentrun creates eth0 in place (an fd, not /proc/PID/ns/net: no window in which that
 * names the host's). Nothing of it stays here. */
int sandbox_unshare_net(const struct sandbox *sb, ar_error_t *err)
{
	if (ar_net_unshare("the sandbox's network namespace", err) == -1)
		return -1;
	if (sb->spec->net.mode != AR_NETWORK_PROXY)
		return 0;
	ar_autoclose int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return ar_error_make(err, errno, "open the sandbox's netns");
	ar_autoclose int route = ar_net_sandbox_side(err);
	if (route == -1)
		return -1;
	int fds[2] = {fd, route};
	if (ar_send_fds(sb->release[0], SANDBOX_NETNS, fds, 2) == -1)
		return ar_error_make(err, errno, "send the sandbox's netns to agentrun");
	return 0;
}

static int write_proc(const char *file, const char *text, ar_error_t *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/%s", file);
	ar_autoclose int fd = TEMP_FAILURE_RETRY(open(path, O_WRONLY | O_CLOEXEC));
	if (fd == -1 || ar_write_all(fd, text, strlen(text)) == -1)
		return ar_error_make(err, errno, "write `%s`", path);
	return 0;
}

/* The spec's id map: an unprivileged caller can map exactly one id, its own, as the id
 * the agent runs as. Written by the init itself, first thing in its new user namespace
 * (as bwrap does): the kernel lets the namespace's owner map its own euid and egid (with
 * setgroups denied) from inside, the same map the parent could write, and the init needs
 * no go-ahead from agentrun to build its root. */
int sandbox_write_id_maps(const struct sandbox *sb, ar_error_t *err)
{
	const struct ar_spec *s = sb->spec;
	char map[64];

	if (!s->idmap.userns)
		return 0;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)s->uid, (unsigned)s->idmap.outer_uid);
	if (write_proc("uid_map", map, err) == -1)
		return -1;
	if (write_proc("setgroups", "deny", err) == -1)
		return -1;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)s->gid, (unsigned)s->idmap.outer_gid);
	return write_proc("gid_map", map, err);
}

int sandbox_set_hostname(const struct sandbox *sb, ar_error_t *err)
{
	const char *name = sb->spec->hostname;
	if (sethostname(name, strlen(name)) == -1)
		return ar_error_make(err, errno, "sethostname `%s`", name);
	return 0;
}

/* A new network namespace has lo down; `network: none` means "only loopback". */
int sandbox_loopback_up(const struct sandbox *sb, ar_error_t *err)
{
	struct ifreq ifr = {0};
	ar_autoclose int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd == -1)
		return ar_error_make(err, errno, "loopback: socket");
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == -1)
		return ar_error_make(err, errno, "loopback: SIOCGIFFLAGS lo");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) == -1)
		return ar_error_make(err, errno, "loopback: SIOCSIFFLAGS lo up");
	return 0;
}

/* Unshared only after the parent moved us into the sandbox cgroup, so that cgroup
 * is the namespace's root and /proc/self/cgroup shows "/". */
int sandbox_unshare_cgroupns(const struct sandbox *sb, ar_error_t *err)
{
	if (unshare(CLONE_NEWCGROUP) == -1)
		return ar_error_make(err, errno, "unshare (cgroup namespace)");
	return 0;
}

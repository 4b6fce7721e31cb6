/* ar-escape: one escape attempt per invocation, for the tests/escape scripts. The same
 * attempt runs inside a sandbox (it must fail) and, where that is safe, outside as
 * the positive control (it must work there, so a failure inside is the sandbox's
 * doing, not a broken attempt). Prints one line: `ok`, or the errno name.
 *
 *   ar-escape ATTEMPT [ARG]
 *
 * Every attempt is harmless on the host: what it creates it removes, and anything
 * that changes state does so in a namespace of its own (mount_private). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static long fd_result(long fd)
{
	if (fd >= 0)
		close((int)fd);
	return fd < 0 ? -1 : 0;
}

/* CVE-2024-21626's shape: a directory fd on stdin walks out of the root. */
static long fd0_walk(const char *arg)
{
	DIR *d = opendir("/proc/self/fd/0/../../../..");
	if (d == NULL)
		return -1;
	closedir(d);
	return 0;
}

/* The same through an inherited descriptor above 2 (ARG: its number): runc's leaked
 * cgroup directory fd in CVE-2024-21626. */
static long fd_walk(const char *arg)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%s/../../../..", arg ? arg : "3");
	DIR *d = opendir(path);
	if (d == NULL)
		return -1;
	closedir(d);
	return 0;
}

/* CVE-2019-5736's first step: a handle on PID 1's executable (in a sandbox, agentrun's
 * own binary), to overwrite it once PID 1 is gone (ARG: another pid). Only opened for
 * reading here. */
static long proc1_exe(const char *arg)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%s/exe", arg ? arg : "1");
	return fd_result(open(path, O_RDONLY | O_CLOEXEC));
}

/* CVE-2022-0492: a cgroup v1 release_agent is a host path run as root on release.
 * Opened for writing, never written. */
static long release_agent(const char *arg)
{
	static const char *const paths[] = {"/sys/fs/cgroup/memory/release_agent",
					    "/sys/fs/cgroup/pids/release_agent",
					    "/sys/fs/cgroup/release_agent"};
	long r = -1;
	int e = ENOENT;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && r == -1; i++) {
		r = fd_result(open(paths[i], O_WRONLY | O_CLOEXEC));
		if (r == -1 && errno != ENOENT)
			e = errno;
	}
	errno = e;
	return r;
}

/* A host credential file: `ok` when it has content, EMPTY when it reads as empty
 * (the sandbox covers it with /dev/null). */
static long read_secret(const char *arg)
{
	char c;
	int fd = open(arg ? arg : "/etc/shadow", O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -1;
	ssize_t n = read(fd, &c, 1);
	close(fd);
	if (n == 0)
		errno = ENODATA;
	return n > 0 ? 0 : -1;
}

/* Host-global AIO contexts (fs.aio-max-nr). */
static long aio(const char *arg)
{
	aio_context_t ctx = 0;
	if (syscall(SYS_io_setup, 1, &ctx) == -1)
		return -1;
	syscall(SYS_io_destroy, ctx);
	return 0;
}

static long io_uring(const char *arg)
{
	char params[120] = {0};
	return fd_result(syscall(SYS_io_uring_setup, 1, params));
}

static long userns(const char *arg)
{
	return unshare(CLONE_NEWUSER);
}

/* A private mount namespace, then a tmpfs on its /tmp: only that namespace sees it. */
static long mount_private(const char *arg)
{
	if (unshare(CLONE_NEWNS) == -1 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		return -1;
	return mount("tmpfs", "/tmp", "tmpfs", 0, "size=4k");
}

/* The new mount API on a fresh tmpfs (no mount point anywhere). */
static long fsopen_tmpfs(const char *arg)
{
	return fd_result(syscall(SYS_fsopen, "tmpfs", 0));
}

/* A child of our own, stopped, then attached to. */
static long ptrace_child(const char *arg)
{
	pid_t pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	long r = ptrace(PTRACE_ATTACH, pid, NULL, NULL);
	int e = errno;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	errno = e;
	return r;
}

static long keyctl_session(const char *arg)
{
	return syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0) < 0 ? -1 : 0;
}

static long perf(const char *arg)
{
	struct perf_event_attr pe = {
	    .type = PERF_TYPE_SOFTWARE, .size = sizeof(pe), .config = PERF_COUNT_SW_TASK_CLOCK};
	return fd_result(syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
}

static long userfaultfd(const char *arg)
{
	return fd_result(syscall(SYS_userfaultfd, 0));
}

static long af_packet(const char *arg)
{
	return fd_result(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
}

/* "shocker": a file handle opened through the mount of / (outside any view). */
static long open_by_handle(const char *arg)
{
	struct {
		struct file_handle h;
		unsigned char buf[128];
	} fh = {.h.handle_bytes = 128};
	int mnt;
	if (syscall(SYS_name_to_handle_at, AT_FDCWD, "/", &fh.h, &mnt, 0) == -1)
		return -1;
	int dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd_result(syscall(SYS_open_by_handle_at, dfd, &fh.h, O_RDONLY));
}

/* The x32 ABI's getpid: another syscall table beside the filtered one. */
static long x32(const char *arg)
{
	return syscall(0x40000000 | SYS_getpid) < 0 ? -1 : 0;
}

/* Read another process's memory: our own child's. */
static long process_vm(const char *arg)
{
	char src[8] = "secret", dst[8];
	pid_t pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	struct iovec l = {dst, sizeof(dst)}, r = {src, sizeof(src)};
	long n = syscall(SYS_process_vm_readv, pid, &l, 1, &r, 1, 0);
	int e = errno;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	errno = e;
	return n < 0 ? -1 : 0;
}

/* Write a file to ARG (a path): that it exists afterwards is the test's to check. */
static long write_file(const char *arg)
{
	return fd_result(open(arg, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
}

/* inotify works (per-user instances, now per sandbox uid). */
static long inotify(const char *arg)
{
	return fd_result(inotify_init1(IN_CLOEXEC));
}

/* The caller's other processes (ARG: a host pid of the caller's uid), which a sandbox
 * running as the caller's uid must not reach: attach (and detach at once), a signal 0,
 * its environment. */
static long ptrace_pid(const char *arg)
{
	pid_t pid = (pid_t)atoi(arg ? arg : "0");
	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) == -1)
		return -1;
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	return 0;
}

static long kill_pid(const char *arg)
{
	return kill((pid_t)atoi(arg ? arg : "0"), 0) == -1 ? -1 : 0;
}

static long proc_environ(const char *arg)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%s/environ", arg ? arg : "0");
	return fd_result(open(path, O_RDONLY | O_CLOEXEC));
}

/* The caller's sockets: a pathname one (ARG: its path) or an abstract one (ARG: its
 * name, without the leading NUL): the SSH agent, D-Bus, X11, a keyring daemon. */
static long connect_unix(const char *arg, int abstract)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *name = arg ? arg : "";
	if (strlen(name) + 1 >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path + (abstract ? 1 : 0), name, strlen(name));
	socklen_t len =
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name) + (abstract ? 1 : 0));
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	int r = connect(fd, (struct sockaddr *)&sa, len);
	int e = errno;
	close(fd);
	errno = e;
	return r == -1 ? -1 : 0;
}

static long unix_path(const char *arg)
{
	return connect_unix(arg, 0);
}

static long unix_abstract(const char *arg)
{
	return connect_unix(arg, 1);
}

static long read_file(const char *arg)
{
	return fd_result(open(arg ? arg : "", O_RDONLY | O_CLOEXEC));
}

/* Write to an existing file (ARG) without creating one: the caller's files outside the
 * mounts. */
static long append_file(const char *arg)
{
	return fd_result(open(arg ? arg : "", O_WRONLY | O_APPEND | O_CLOEXEC));
}

static const struct {
	const char *name;
	long (*fn)(const char *arg);
} attempts[] = {
    {"ptrace_pid", ptrace_pid},
    {"kill_pid", kill_pid},
    {"proc_environ", proc_environ},
    {"unix_path", unix_path},
    {"unix_abstract", unix_abstract},
    {"read_file", read_file},
    {"append_file", append_file},
    {"fd0_walk", fd0_walk},
    {"fd_walk", fd_walk},
    {"proc1_exe", proc1_exe},
    {"release_agent", release_agent},
    {"read_secret", read_secret},
    {"aio", aio},
    {"io_uring", io_uring},
    {"userns", userns},
    {"mount_private", mount_private},
    {"fsopen", fsopen_tmpfs},
    {"ptrace_child", ptrace_child},
    {"keyctl", keyctl_session},
    {"perf_event_open", perf},
    {"userfaultfd", userfaultfd},
    {"af_packet", af_packet},
    {"open_by_handle", open_by_handle},
    {"x32", x32},
    {"process_vm_readv", process_vm},
    {"write_file", write_file},
    {"inotify", inotify},
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: ar-escape ATTEMPT [ARG]\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(attempts) / sizeof(attempts[0]); i++)
		if (strcmp(attempts[i].name, argv[1]) == 0) {
			errno = 0;
			long r = attempts[i].fn(argc > 2 ? argv[2] : NULL);
			const char *e = strerrorname_np(errno);
			printf("%s\n", r == -1 ? (e ? e : "E?") : "ok");
			return 0;
		}
	fprintf(stderr, "ar-escape: unknown attempt `%s`\n", argv[1]);
	return 2;
}

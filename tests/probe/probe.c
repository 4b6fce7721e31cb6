/* ar-probe: a small static program the integration tests run inside a sandbox. It
 * reports what the sandbox gave it (ids, capability sets, no_new_privs, seccomp mode,
 * mounts, hostname) and tries each escape, printing one `name=result` line each:
 * the result is `ok` when the attempt succeeded and the errno name when it failed.
 * The tests assert every line exactly.
 *
 *   ar-probe            everything
 *   ar-probe euid       just the effective uid (for the setuid checks)
 *
 * Environment: PROBE_HOST_PID (a host process to try to kill), PROBE_SUID (a
 * setuid-root program visible in the sandbox to execute with `euid`). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static void result(const char *name, long r)
{
	if (r == -1)
		printf("%s=%s\n", name, strerrorname_np(errno) ? strerrorname_np(errno) : "E?");
	else
		printf("%s=ok\n", name);
}

static void status_field(const char *key, const char *name)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	size_t n = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			char *v = line + n + 1;
			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			printf("%s=%s\n", name, v);
		}
	if (f)
		fclose(f);
}

static void identity(void)
{
	gid_t groups[64];
	int n = getgroups(64, groups);
	char host[256] = "";

	printf("uid=%u\neuid=%u\ngid=%u\negid=%u\n", getuid(), geteuid(), getgid(), getegid());
	printf("groups=");
	for (int i = 0; i < n; i++)
		printf("%s%u", i ? "," : "", groups[i]);
	printf("\npid=%d\nppid=%d\n", getpid(), getppid());
	gethostname(host, sizeof(host) - 1);
	printf("hostname=%s\n", host);
	status_field("CapInh", "cap_inh");
	status_field("CapPrm", "cap_prm");
	status_field("CapEff", "cap_eff");
	status_field("CapBnd", "cap_bnd");
	status_field("CapAmb", "cap_amb");
	status_field("NoNewPrivs", "no_new_privs");
	status_field("Seccomp", "seccomp");
	char cwd[256] = "";
	printf("cwd=%s\n", getcwd(cwd, sizeof(cwd)) ? cwd : "?");
	printf("sid_is_self=%d\n", getsid(0) == getpid());
}

static void mounts(void)
{
	struct statvfs sv;
	printf("root_ro=%d\n", statvfs("/", &sv) == 0 && (sv.f_flag & ST_RDONLY) ? 1 : 0);
	printf("root_nosuid=%d\n", statvfs("/usr", &sv) == 0 && (sv.f_flag & ST_NOSUID) ? 1 : 0);
	printf("tmp_nosuid=%d\n", statvfs("/tmp", &sv) == 0 && (sv.f_flag & ST_NOSUID) ? 1 : 0);
	printf("tmp_nodev=%d\n", statvfs("/tmp", &sv) == 0 && (sv.f_flag & ST_NODEV) ? 1 : 0);
	int fd = open("/tmp/probe-write", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	result("write_tmp", fd);
	if (fd >= 0) {
		close(fd);
		unlink("/tmp/probe-write");
	}
	/* network interfaces: a network namespace of our own has only lo */
	char line[256], ifs[256] = "";
	FILE *f = fopen("/proc/net/dev", "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (colon == NULL)
			continue;
		*colon = '\0';
		char *name = line + strspn(line, " ");
		if (strlen(ifs) + strlen(name) + 2 < sizeof(ifs))
			snprintf(ifs + strlen(ifs), sizeof(ifs) - strlen(ifs), "%s%s",
				 ifs[0] ? "," : "", name);
	}
	if (f)
		fclose(f);
	printf("net_ifaces=%s\n", ifs);
}

/* A directory that must look empty: "empty", "absent", or "files". */
static void listing(const char *name, const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;
	if (d == NULL) {
		result(name, -1);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	printf("%s=%s\n", name, n == 0 ? "empty" : "files");
}

static long open_create(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	return fd;
}

static long open_write(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd;
}

/* Run `prog euid` and report what it prints. */
static void exec_euid(const char *name, const char *prog)
{
	int p[2];
	char buf[64] = "";
	if (pipe2(p, O_CLOEXEC) == -1) {
		result(name, -1);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		execl(prog, prog, "euid", (char *)NULL);
		printf("exec-%s", strerrorname_np(errno));
		fflush(stdout);
		_exit(127);
	}
	close(p[1]);
	ssize_t n = read(p[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	close(p[0]);
	waitpid(pid, NULL, 0);
	printf("%s=%s\n", name, buf);
}

/* Copy ourselves to the tmpfs with the setuid bit and execute that. */
static void tmpfs_setuid(void)
{
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	int out = open("/tmp/probe-suid", O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 04755);
	char buf[65536];
	ssize_t n;
	if (in == -1 || out == -1) {
		result("tmpfs_setuid", -1);
		return;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	close(in);
	fchmod(out, 04755);
	close(out);
	exec_euid("tmpfs_setuid", "/tmp/probe-suid");
	unlink("/tmp/probe-suid");
}

/* A masked /proc file is /dev/null: "masked"; else what opening it for `flags` gives. */
static void masked_file(const char *name, const char *path, int flags)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) {
		printf("%s=masked\n", name);
		return;
	}
	int fd = open(path, flags | O_CLOEXEC);
	result(name, fd);
	if (fd >= 0)
		close(fd);
}

static void filesystem_escapes(void)
{
	result("write_root", open_create("/probe-escape"));
	result("write_etc", open_create("/etc/probe-escape"));
	result("write_dev", open_create("/dev/probe-escape"));
	result("write_proc_sys", open_write("/proc/sys/kernel/hostname"));
	result("write_sys", mkdir("/sys/probe-escape", 0755));
	masked_file("write_sysrq", "/proc/sysrq-trigger", O_WRONLY);
	result("mknod", mknod("/tmp/probe-null", S_IFCHR | 0666, makedev(1, 3)));
	listing("list_root", "/root");
	listing("list_home", "/home");
	result("docker_sock", access("/var/run/docker.sock", F_OK));
	result("docker_sock_run", access("/run/docker.sock", F_OK));
	/* the init is a fork of agentrun: its environment is the caller's */
	result("read_init_environ", open("/proc/1/environ", O_RDONLY | O_CLOEXEC));
	masked_file("read_kcore", "/proc/kcore", O_RDONLY);
	masked_file("read_keys", "/proc/keys", O_RDONLY);
	masked_file("read_timer_list", "/proc/timer_list", O_RDONLY);
	tmpfs_setuid();
	const char *suid = getenv("PROBE_SUID");
	if (suid)
		exec_euid("setuid_exec", suid);
}

static void kernel_escapes(void)
{
	struct perf_event_attr pe = {
	    .type = PERF_TYPE_SOFTWARE, .size = sizeof(pe), .config = PERF_COUNT_SW_CPU_CLOCK};
	union bpf_attr battr;
	char io_params[120];
	memset(&battr, 0, sizeof(battr));
	memset(io_params, 0, sizeof(io_params));

	result("mount", mount("tmpfs", "/tmp", "tmpfs", 0, NULL));
	result("umount", umount2("/proc", MNT_DETACH));
	result("unshare_user", unshare(CLONE_NEWUSER));
	result("unshare_net", unshare(CLONE_NEWNET));
	result("unshare_mount", unshare(CLONE_NEWNS));
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	result("setns", fd == -1 ? -1 : setns(fd, CLONE_NEWNET));
	result("chroot", chroot("/tmp"));
	result("ptrace_init", ptrace(PTRACE_ATTACH, 1, NULL, NULL));
	result("ptrace_traceme", ptrace(PTRACE_TRACEME, 0, NULL, NULL));
	result("tiocsti", ioctl(0, TIOCSTI, "x"));
	result("keyctl", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
	result("bpf", syscall(SYS_bpf, BPF_PROG_LOAD, &battr, sizeof(battr)));
	result("perf_event_open", syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
	result("io_uring_setup", syscall(SYS_io_uring_setup, 1, io_params));
	result("userfaultfd", syscall(SYS_userfaultfd, 0));
	result("af_packet", socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
	result("sethostname", sethostname("escape", 6));
	result("setuid0", setuid(0));
	result("reboot", syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2,
				 LINUX_REBOOT_CMD_CAD_OFF, NULL));
	const char *host_pid = getenv("PROBE_HOST_PID");
	if (host_pid)
		result("kill_host", kill((pid_t)atoi(host_pid), SIGKILL));
	result("kill_init", kill(1, SIGKILL));
}

/* `ar-probe connect NAME IP PORT`: NAME=ok or NAME=ERRNO of a TCP connect, for the
 * proxy network's "no route around the proxy" (busybox wget crashes on a failed
 * connect). */
static int probe_connect(const char *name, const char *ip, const char *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		return 2;
	result(name, fd == -1 ? -1 : connect(fd, (struct sockaddr *)&sa, sizeof(sa)));
	return 0;
}

/* `ar-probe http NAME PROXY_IP PORT URL`: a GET of URL through the HTTP proxy, as
 * NAME=STATUS, NAME_reason=X-Agentrun-Reason, NAME_body=the body's first line (busybox
 * wget shows no header of an error, and under gVisor's hostinet fails its reads). */
static int probe_http(const char *name, const char *ip, const char *port, const char *url)
{
	static char buf[65536];
	size_t n = 0;
	ssize_t r;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || inet_pton(AF_INET, ip, &sa.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		result(name, -1);
		return 0;
	}
	const char *host = strstr(url, "://") ? strstr(url, "://") + 3 : url;
	int hlen = (int)strcspn(host, "/");
	dprintf(fd, "GET %s HTTP/1.1\r\nHost: %.*s\r\nConnection: close\r\n\r\n", url, hlen, host);
	while (n < sizeof(buf) - 1 && ((r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0 ||
				       (r == -1 && (errno == EAGAIN || errno == EINTR)))) {
		if (r > 0)
			n += (size_t)r;
		else
			usleep(10000);
	}
	buf[n] = '\0';
	const char *sp = strchr(buf, ' ');
	printf("%s=%d\n", name, sp ? atoi(sp + 1) : 0);
	for (char *l = buf; l && *l && strncmp(l, "\r\n", 2) != 0;
	     l = strstr(l, "\r\n") ? strstr(l, "\r\n") + 2 : NULL)
		if (strncasecmp(l, "X-Agentrun-Reason: ", 19) == 0)
			printf("%s_reason=%.*s\n", name, (int)strcspn(l + 19, "\r\n"), l + 19);
	const char *body = strstr(buf, "\r\n\r\n");
	printf("%s_body=%.*s\n", name, body ? (int)strcspn(body + 4, "\n") : 0,
	       body ? body + 4 : "");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && strcmp(argv[1], "connect") == 0)
		return probe_connect(argv[2], argv[3], argv[4]);
	if (argc == 6 && strcmp(argv[1], "http") == 0)
		return probe_http(argv[2], argv[3], argv[4], argv[5]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && strcmp(argv[1], "euid") == 0) {
		printf("euid=%u\n", geteuid());
		return 0;
	}
	identity();
	mounts();
	filesystem_escapes();
	kernel_escapes();
	printf("probe=done\n");
	return 0;
}

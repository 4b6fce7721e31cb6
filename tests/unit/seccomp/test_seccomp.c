/* Unit tests for the default seccomp profile: what it denies (EPERM, for real,
 * in a confined child), what it allows, the exactness of its ioctl rules, that
 * every name resolves, and that ordinary programs still run under it. */
#define _GNU_SOURCE
#include <linux/openat2.h>
#include <sys/stat.h>

#include "test_seccomp_child.h"

static long raw_clone(unsigned long flags)
{
	long rc = syscall(SYS_clone, flags | SIGCHLD, 0, NULL, NULL, 0);
	if (rc == 0)
		_exit(0);
	if (rc > 0)
		waitpid((pid_t)rc, NULL, 0);
	return sc(rc);
}

static void probe_denied(struct results *r, void *arg)
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	char c = 'x';

	record(r, sc(unshare(CLONE_NEWUSER)));
	record(r, sc(unshare(CLONE_NEWNS)));
	record(r, sc(setns(0, CLONE_NEWNET)));
	record(r, sc(mount("none", "/nonexistent-ar", "tmpfs", 0, NULL)));
	record(r, sc(syscall(SYS_fsopen, "tmpfs", 0)));
	record(r, sc(syscall(SYS_open_tree, AT_FDCWD, "/", 0)));
	record(r, sc(ptrace(PTRACE_TRACEME, 0, NULL, NULL)));
	record(r, sc(syscall(SYS_process_vm_readv, getppid(), NULL, 0, NULL, 0, 0)));
	record(r, sc(syscall(SYS_bpf, 0, NULL, 0)));
	record(r, sc(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0)));
	record(r, sc(syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3 /* session */, 0)));
	record(r, sc(syscall(SYS_io_uring_setup, 0, NULL)));
	/* AIO contexts come from the host-global fs.aio-max-nr */
	unsigned long aio_ctx = 0;
	record(r, sc(syscall(SYS_io_setup, 1, &aio_ctx)));
	record(r, sc(syscall(SYS_io_submit, 0, 0, NULL)));
	record(r, sc(syscall(SYS_io_getevents, 0, 0, 0, NULL, NULL)));
	record(r, sc(syscall(SYS_io_destroy, 0)));
	record(r, sc(syscall(SYS_userfaultfd, 0)));
	record(r, sc(socket(AF_PACKET, SOCK_RAW, 0)));
	record(r, sc(socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT)));
	record(r, sc(ioctl(devnull, TIOCSTI, &c)));
	/* the kernel uses only the low 32 bits of the request */
	record(r, sc(syscall(SYS_ioctl, devnull, 0x100000000UL | TIOCSTI, &c)));
	record(r, sc(syscall(SYS_ioctl, devnull, 0xffffffff00000000UL | TIOCLINUX, &c)));
	record(r, sc(ioctl(devnull, TIOCLINUX, &c)));
	record(r, raw_clone(CLONE_NEWNS));
	record(r, raw_clone(CLONE_NEWUSER | CLONE_NEWPID));
	record(r, sc(syscall(__X32_SYSCALL_BIT | SYS_getpid)));
	record(r, sc(chroot("/")));
	record(r, sc(syscall(SYS_kexec_load, 0, 0, NULL, 0x00ff0000UL /* bogus arch */)));
	record(r, sc(syscall(SYS_init_module, NULL, 0, "")));
	record(r, sc(personality(0x0400000 /* READ_IMPLIES_EXEC */)));
	record(r, sc(syscall(SYS_name_to_handle_at, AT_FDCWD, "/", NULL, NULL, 0)));
	record(r, sc(syscall(SYS_unshare, 0x80UL /* CLONE_NEWTIME */)));
}

static void test_default_denies(void **state)
{
	struct ar_seccomp *s = default_profile();
	struct outcome o = run_confined(s, probe_denied, NULL);

	assert_int_equal(o.signo, 0);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.n, 32);
	for (int i = 0; i < o.r.n; i++) {
		if (o.r.v[i] != -EPERM)
			fail_msg("call #%d: expected -EPERM, got %ld", i, o.r.v[i]);
	}
	ar_seccomp_free(s);
}

static void probe_foreign(struct results *r, void *arg)
{
	record(r, *(bool *)arg ? int80_getpid() : -EPERM);
	record(r, sc(syscall(__X32_SYSCALL_BIT | SYS_getpid)));
	record(r, sc(syscall(SYS_clone3, NULL, 0)));
}

/* Foreign ABIs get the default action (EPERM) instead of their syscalls;
 * clone3 gets ENOSYS so glibc falls back to clone. */
static void test_default_foreign_abis(void **state)
{
	struct ar_seccomp *s = default_profile();
	bool i386 = int80_supported(); /* without IA32 emulation there is nothing to deny */
	struct outcome o = run_confined(s, probe_foreign, &i386);

	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.v[0], -EPERM);
	assert_int_equal(o.r.v[1], -EPERM);
	assert_int_equal(o.r.v[2], -ENOSYS);
	ar_seccomp_free(s);
}

static void *thread_fn(void *arg)
{
	return arg;
}

static void probe_allowed(struct results *r, void *arg)
{
	int *fds = arg;
	int sv[2];
	struct termios t;
	pthread_t th;
	void *back = NULL;
	pid_t pid;
	int status = -1;

	pid = fork();
	if (pid == 0)
		_exit(7);
	record(r, pid > 0 && waitpid(pid, &status, 0) == pid && WEXITSTATUS(status) == 7 ? 0 : -1);
	record(r, raw_clone(0));
	record(r, pthread_create(&th, NULL, thread_fn, (void *)r) == 0 &&
			  pthread_join(th, &back) == 0 && back == r
		      ? 0
		      : -1);
	record(r, sc(socket(AF_INET, SOCK_STREAM, 0)));
	record(r, sc(socket(AF_INET6, SOCK_DGRAM, 0)));
	record(r, sc(socket(AF_UNIX, SOCK_STREAM, 0)));
	record(r, sc(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)));
	record(r, sc(socketpair(AF_UNIX, SOCK_STREAM, 0, sv)));
	record(r, sc(tcgetattr(fds[0], &t)));
	record(r, sc(ioctl(fds[1], TIOCGWINSZ, &(struct winsize){0})));
	record(r, sc(personality(0xffffffff) == -1 ? -1 : 0));
	record(r, sc(unshare(CLONE_FILES)));
	record(r, getpid() > 0 ? 0 : -1);
}

static void test_default_allows(void **state)
{
	struct ar_seccomp *s = default_profile();
	int fds[2];

	fds[0] = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(fds[0] >= 0);
	assert_int_equal(grantpt(fds[0]), 0);
	assert_int_equal(unlockpt(fds[0]), 0);
	fds[1] = open(ptsname(fds[0]), O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(fds[1] >= 0);
	struct outcome o = run_confined(s, probe_allowed, fds);
	assert_int_equal(o.signo, 0);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.n, 13);
	for (int i = 0; i < o.r.n; i++) {
		if (o.r.v[i] != 0)
			fail_msg("call #%d: expected success, got %ld", i, o.r.v[i]);
	}
	close(fds[0]);
	close(fds[1]);
	ar_seccomp_free(s);
}

/* RestrictSUIDSGID: creating or chmod-ing a file with S_ISUID/S_ISGID is
 * EPERM (a set-id file planted on a rw bind works on the host); the same calls
 * without a set-id bit still work. Run for real, as root, in a scratch dir. */
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
/* the kernel's __O_TMPFILE bit (glibc's __O_TMPFILE includes O_DIRECTORY) */
#define K_O_TMPFILE 020000000

static long sc_fd(long fd)
{
	if (fd >= 0)
		close((int)fd);
	return fd >= 0 ? 0 : -errno;
}

static void probe_setid_denied(struct results *r, void *arg)
{
	int d = open(arg, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int f = openat(d, "f", O_RDWR | O_CLOEXEC);

	record(r, sc(syscall(SYS_chmod, "f", 04755)));
	record(r, sc(syscall(SYS_chmod, "f", 02755)));
	record(r, sc(fchmod(f, 04755)));
	record(r, sc(fchmodat(d, "f", 06755, 0)));
	record(r, sc(syscall(SYS_fchmodat2, d, "f", 04755, 0)));
	/* the kernel uses only the low 16 bits of a mode: bits above do not help */
	record(r, sc(syscall(SYS_chmod, "f", 0x10000 | 04755)));
	record(r, sc_fd(syscall(SYS_open, "n1", O_CREAT | O_WRONLY, 04755)));
	record(r, sc_fd(openat(d, "n2", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 02644)));
	record(r, sc_fd(openat(d, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 04600)));
	/* __O_TMPFILE without O_DIRECTORY is EINVAL in the kernel, but must not pass */
	record(r, sc_fd(syscall(SYS_openat, d, ".", K_O_TMPFILE | O_RDWR, 02600)));
	record(r, sc_fd(syscall(SYS_openat, d, "n3", 0xffffffff00000000UL | O_CREAT | O_WRONLY,
				0xffff0000UL | 04644)));
	record(r, sc_fd(creat("n4", 04755)));
	record(r, sc(mkdir("n5", 02755)));
	record(r, sc(mkdirat(d, "n6", 04755)));
	record(r, sc(mknod("n7", S_IFREG | 04755, 0)));
	record(r, sc(mknodat(d, "n8", S_IFREG | 02755, 0)));
	close(f);
	close(d);
}

static void probe_setid_allowed(struct results *r, void *arg)
{
	int d = open(arg, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int f = openat(d, "f", O_RDWR | O_CLOEXEC);

	record(r, sc(syscall(SYS_chmod, "f", 0755)));
	record(r, sc(syscall(SYS_chmod, "f", 01777))); /* sticky is not set-id */
	record(r, sc(fchmod(f, 0644)));
	record(r, sc(fchmodat(d, "f", 0700, 0)));
	record(r, sc(syscall(SYS_fchmodat2, d, "f", 0640, 0)));
	record(r, sc_fd(syscall(SYS_open, "a1", O_CREAT | O_WRONLY, 0644)));
	record(r, sc_fd(openat(d, "a2", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600)));
	record(r, sc_fd(openat(d, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)));
	/* no O_CREAT: the mode argument is ignored by the kernel, garbage is fine */
	record(r, sc_fd(syscall(SYS_open, "f", O_RDONLY, 04755)));
	record(r, sc_fd(openat(d, "f", O_RDWR | O_CLOEXEC, 06777)));
	record(r, sc_fd(creat("a3", 0644)));
	record(r, sc(mkdir("a4", 0755)));
	record(r, sc(mkdirat(d, "a5", 01777)));
	record(r, sc(mknod("a6", S_IFIFO | 0644, 0)));
	record(r, sc(mknodat(d, "a7", S_IFREG | 0600, 0)));
	/* openat2 carries flags and mode in memory: ENOSYS, callers fall back */
	struct open_how how = {.flags = O_RDONLY};
	record(r, sc(syscall(SYS_openat2, d, "f", &how, sizeof(how))) == -ENOSYS ? 0 : -1);
	close(f);
	close(d);
}

static struct outcome run_in_dir(const char *dir, probe_fn fn)
{
	struct ar_seccomp *s = default_profile();
	ar_autofree char *cwd = get_current_dir_name();
	struct outcome o;

	assert_int_equal(chdir(dir), 0);
	o = run_confined(s, fn, (void *)dir);
	assert_int_equal(chdir(cwd), 0);
	ar_seccomp_free(s);
	return o;
}

static void test_default_setid_denied(void **state)
{
	char dir[] = "/tmp/ar-seccomp-setid.XXXXXX";
	static const char *const never[] = {"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"};
	struct stat st;

	assert_non_null(mkdtemp(dir));
	ar_autofree char *f = ar_xasprintf("%s/f", dir);
	int fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	struct outcome o = run_in_dir(dir, probe_setid_denied);
	assert_int_equal(o.signo, 0);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.n, 16);
	for (int i = 0; i < o.r.n; i++) {
		if (o.r.v[i] != -EPERM)
			fail_msg("call #%d: expected -EPERM, got %ld", i, o.r.v[i]);
	}
	assert_int_equal(stat(f, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	for (size_t i = 0; i < AR_ARRAY_SIZE(never); i++) {
		ar_autofree char *n = ar_xasprintf("%s/%s", dir, never[i]);
		if (lstat(n, &st) == 0)
			fail_msg("`%s` was created", never[i]);
	}
	assert_int_equal(unlink(f), 0);
	assert_int_equal(rmdir(dir), 0);
}

static void test_default_setid_allowed(void **state)
{
	char dir[] = "/tmp/ar-seccomp-setid.XXXXXX";
	static const char *const made[] = {"a1", "a2", "a3", "a6", "a7", "f"};
	struct stat st;

	assert_non_null(mkdtemp(dir));
	ar_autofree char *f = ar_xasprintf("%s/f", dir);
	int fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	struct outcome o = run_in_dir(dir, probe_setid_allowed);
	assert_int_equal(o.signo, 0);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.n, 16);
	for (int i = 0; i < o.r.n; i++) {
		if (o.r.v[i] != 0)
			fail_msg("call #%d: expected success, got %ld", i, o.r.v[i]);
	}
	assert_int_equal(stat(f, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640); /* the last chmod (fchmodat2) ran */
	for (size_t i = 0; i < AR_ARRAY_SIZE(made); i++) {
		ar_autofree char *n = ar_xasprintf("%s/%s", dir, made[i]);
		assert_int_equal(unlink(n), 0);
	}
	ar_autofree char *a4 = ar_xasprintf("%s/a4", dir);
	ar_autofree char *a5 = ar_xasprintf("%s/a5", dir);
	assert_int_equal(rmdir(a4), 0);
	assert_int_equal(rmdir(a5), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* The compiled model's allow rules for a syscall, evaluated over its arguments:
 * rules are alternatives, conditions of one rule (all on distinct args) must
 * all hold. */
static bool call_allowed(const struct ar_seccomp_profile *p, const char *name,
			 const uint64_t args[6])
{
	int seen = 0;

	for (size_t i = 0; i < p->n_rules; i++) {
		const struct ar_seccomp_rule *r = &p->rules[i];
		bool all = true;
		if (strcmp(r->name, name) != 0)
			continue;
		seen++;
		assert_int_equal(r->action, SCMP_ACT_ALLOW);
		assert_true(r->n_args >= 1); /* an unconditional allow would override */
		for (unsigned k = 0; k < r->n_args; k++) {
			const struct ar_seccomp_arg *a = &r->args[k];
			assert_int_equal(a->op, SCMP_CMP_MASKED_EQ);
			for (unsigned j = 0; j < k; j++)
				assert_int_not_equal(r->args[j].index, a->index);
			all = all && (args[a->index] & a->value) == a->value_two;
		}
		if (all)
			return true;
	}
	if (seen == 0)
		fail_msg("no rule for `%s`", name);
	return false;
}

static const struct {
	const char *name;
	int flags_arg; /* -1: always creates (or chmod) */
	int mode_arg;
} setid_calls[] = {
    {"chmod", -1, 1},	{"fchmod", -1, 1}, {"fchmodat", -1, 2}, {"fchmodat2", -1, 2},
    {"creat", -1, 1},	{"mkdir", -1, 1},  {"mkdirat", -1, 2},	{"mknod", -1, 1},
    {"mknodat", -1, 2}, {"open", 1, 2},	   {"openat", 2, 3},
};

/* What the kernel sees: int flags, umode_t mode. */
static bool setid_expected(int flags_arg, uint64_t flags, uint64_t mode)
{
	bool creates = flags_arg < 0 || (flags & 0xffffffffULL & (O_CREAT | K_O_TMPFILE)) != 0;
	return !(creates && (mode & 0xffffULL & (S_ISUID | S_ISGID)) != 0);
}

static void check_setid_case(const struct ar_seccomp_profile *p, size_t c, uint64_t flags,
			     uint64_t mode)
{
	uint64_t args[6] = {3, 0x7fff0000, 0x7fff1000, 0, 0, 0};

	if (setid_calls[c].flags_arg >= 0)
		args[setid_calls[c].flags_arg] = flags;
	args[setid_calls[c].mode_arg] = mode;
	if (call_allowed(p, setid_calls[c].name, args) !=
	    setid_expected(setid_calls[c].flags_arg, flags, mode))
		fail_msg("%s flags %#llx mode %#llo", setid_calls[c].name,
			 (unsigned long long)flags, (unsigned long long)mode);
}

static void test_default_setid_rules_exact(void **state)
{
	struct ar_seccomp *s = default_profile();
	const struct ar_seccomp_profile *p = ar_seccomp_profile(s);
	static const uint64_t flag_set[] = {O_RDONLY,
					    O_WRONLY,
					    O_RDWR | O_TRUNC,
					    O_CREAT,
					    O_CREAT | O_EXCL | O_WRONLY,
					    O_TMPFILE | O_RDWR,
					    K_O_TMPFILE,
					    O_DIRECTORY,
					    O_PATH,
					    0xffffffffULL,
					    0xffffffffULL & ~(uint64_t)(O_CREAT | K_O_TMPFILE),
					    0xffffffff00000000ULL,
					    0xffffffff00000000ULL | O_CREAT};
	uint64_t seed = 0x2545f4914f6cdd1dULL;

	for (size_t c = 0; c < AR_ARRAY_SIZE(setid_calls); c++) {
		for (uint64_t mode = 0; mode < 0x20000; mode++) {
			for (size_t f = 0; f < AR_ARRAY_SIZE(flag_set); f++)
				check_setid_case(p, c, flag_set[f], mode);
		}
		for (int i = 0; i < 100000; i++) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			uint64_t flags = seed;
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			check_setid_case(p, c, flags, seed);
		}
	}
	ar_seccomp_free(s);
}

/* The ioctl allow rules must be exactly "low 32 bits not TIOCSTI/TIOCLINUX":
 * evaluate the compiled model's rules over many requests. */
static bool ioctl_allowed(const struct ar_seccomp_profile *p, uint64_t x)
{
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct ar_seccomp_rule *r = &p->rules[i];
		if (strcmp(r->name, "ioctl") != 0 || r->action != SCMP_ACT_ALLOW)
			continue;
		assert_int_equal(r->n_args, 1);
		assert_int_equal(r->args[0].op, SCMP_CMP_MASKED_EQ);
		if ((x & r->args[0].value) == r->args[0].value_two)
			return true;
	}
	return false;
}

static void test_default_ioctl_rules_exact(void **state)
{
	struct ar_seccomp *s = default_profile();
	const struct ar_seccomp_profile *p = ar_seccomp_profile(s);
	static const uint64_t highs[] = {0, 1, 0x80000000, 0xffffffff};
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	for (uint64_t lo = 0; lo < 0x10000; lo++) {
		for (size_t h = 0; h < AR_ARRAY_SIZE(highs); h++) {
			uint64_t x = highs[h] << 32 | lo;
			if (ioctl_allowed(p, x) != (lo != TIOCSTI && lo != TIOCLINUX))
				fail_msg("ioctl request %#llx", (unsigned long long)x);
		}
	}
	for (int i = 0; i < 200000; i++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		uint64_t x = seed, lo = x & 0xffffffffULL;
		if (ioctl_allowed(p, x) != (lo != TIOCSTI && lo != TIOCLINUX))
			fail_msg("ioctl request %#llx", (unsigned long long)x);
	}
	ar_seccomp_free(s);
}

static void test_default_names_resolve(void **state)
{
	ar_autofree char *path = ar_xasprintf("%s/seccomp/default.json", AR_SOURCE_DIR);
	ar_autofree char *data = NULL;
	ar_error_t err = NULL;
	size_t len = 0, checked = 0;
	const cJSON *entry, *name;

	assert_int_equal(ar_read_file(path, 0, &data, &len, &err), 0);
	/* the embedded copy is the file */
	assert_int_equal(len, ar_seccomp_default_json_len);
	assert_memory_equal(data, ar_seccomp_default_json, len);
	cJSON *root = cJSON_Parse(data);
	assert_non_null(root);
	cJSON_ArrayForEach(entry, cJSON_GetObjectItem(root, "syscalls"))
	{
		cJSON_ArrayForEach(name, cJSON_GetObjectItem(entry, "names"))
		{
			if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name->valuestring) <
			    0)
				fail_msg("default.json: syscall `%s` unknown on x86_64",
					 name->valuestring);
			checked++;
		}
	}
	cJSON_Delete(root);
	assert_true(checked > 250);
	struct ar_seccomp *s = default_profile();
	assert_int_equal(ar_seccomp_profile(s)->n_unknown, 0);
	assert_int_equal(ar_seccomp_profile(s)->default_action, SCMP_ACT_ERRNO(EPERM));
	assert_int_equal(ar_seccomp_profile(s)->n_arches, 1);
	ar_seccomp_free(s);
}

/* The forbidden calls must not be on the allow-list at all. */
static void test_default_forbidden_absent(void **state)
{
	static const char *const forbidden[] = {
	    "setns",
	    "mount",
	    "umount2",
	    "pivot_root",
	    "chroot",
	    "fsopen",
	    "fsconfig",
	    "fsmount",
	    "fspick",
	    "move_mount",
	    "open_tree",
	    "mount_setattr",
	    "ptrace",
	    "process_vm_readv",
	    "process_vm_writev",
	    "bpf",
	    "perf_event_open",
	    "keyctl",
	    "add_key",
	    "request_key",
	    "kexec_load",
	    "kexec_file_load",
	    "init_module",
	    "finit_module",
	    "delete_module",
	    "io_uring_setup",
	    "io_uring_enter",
	    "io_uring_register",
	    "io_setup",
	    "io_submit",
	    "io_getevents",
	    "io_pgetevents",
	    "io_cancel",
	    "io_destroy",
	    "userfaultfd",
	    "reboot",
	    "swapon",
	    "swapoff",
	    "acct",
	    "lookup_dcookie",
	    "open_by_handle_at",
	    "name_to_handle_at",
	    "iopl",
	    "ioperm",
	    "syslog",
	    "quotactl",
	    "nfsservctl",
	    "pidfd_getfd",
	    "kcmp",
	    "mbind",
	    "get_mempolicy",
	    "set_mempolicy",
	    "move_pages",
	    "migrate_pages",
	    "modify_ldt",
	};
	struct ar_seccomp *s = default_profile();
	const struct ar_seccomp_profile *p = ar_seccomp_profile(s);

	for (size_t i = 0; i < p->n_rules; i++) {
		for (size_t k = 0; k < AR_ARRAY_SIZE(forbidden); k++) {
			if (strcmp(p->rules[i].name, forbidden[k]) == 0)
				fail_msg("default profile has a rule for `%s`", forbidden[k]);
		}
	}
	ar_seccomp_free(s);
}

/* Ordinary programs still work under the default profile. */
static void test_default_programs(void **state)
{
	char dir[] = "/tmp/ar-seccomp-progs.XXXXXX";
	struct ar_seccomp *s = default_profile();
	int status = -1;
	pid_t pid;

	/* the script skips a program that is not installed; CI installs them all */
	static const char *const progs[] = {"python3", "curl", "git", "unshare"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(progs); i++) {
		ar_autofree char *cmd = ar_xasprintf("command -v %s >/dev/null", progs[i]);
		if (system(cmd) != 0) {
			const char *must = getenv("AGENTRUN_MUST_WORK");
			if (must != NULL && strcmp(must, "1") == 0)
				fail_msg("`%s` is not installed (scripts/install-deps.sh)",
					 progs[i]);
			fprintf(stderr, "note: `%s` not installed, not run\n", progs[i]);
		}
	}
	assert_non_null(mkdtemp(dir));
	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		ar_error_t err = NULL;
		static const char script[] =
		    "set -e; cd \"$1\"; export HOME=\"$1\" LC_ALL=C\n"
		    "ls / | sort >/dev/null\n"
		    "printf 'b\\na\\n' > in.txt; cp in.txt out.txt; "
		    "test \"$(sort out.txt | cat | head -n1)\" = a\n"
		    "mkdir -p d/e && mv out.txt d/e/ && rm -r d && date >/dev/null && id "
		    ">/dev/null\n"
		    "if command -v python3 >/dev/null; then test \"$(python3 -c 'import "
		    "os,subprocess,threading; print(sum(range(4)))')\" = 6; fi\n"
		    "if command -v curl >/dev/null; then curl --version >/dev/null; "
		    "test \"$(curl -s file://\"$1\"/in.txt | head -n1)\" = b; fi\n"
		    "if command -v git >/dev/null; then git init -q r && cd r && echo x > f && "
		    "git add f && git -c user.name=t -c user.email=t@example.invalid commit -qm m "
		    "&& test \"$(git log --format=%s)\" = m && cd ..; fi\n"
		    "if command -v unshare >/dev/null && unshare -U true 2>/dev/null; then exit 3; "
		    "fi\n";
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 || ar_seccomp_install(s, &err) < 0)
			_exit(99);
		execl("/bin/sh", "sh", "-c", script, "sh", dir, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(TEMP_FAILURE_RETRY(waitpid(pid, &status, 0)), pid);
	pid_t rm = fork();
	if (rm == 0) {
		execlp("rm", "rm", "-rf", dir, (char *)NULL);
		_exit(127);
	}
	waitpid(rm, NULL, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	ar_seccomp_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_denies),
	    cmocka_unit_test(test_default_foreign_abis),
	    cmocka_unit_test(test_default_allows),
	    cmocka_unit_test(test_default_ioctl_rules_exact),
	    cmocka_unit_test(test_default_setid_denied),
	    cmocka_unit_test(test_default_setid_allowed),
	    cmocka_unit_test(test_default_setid_rules_exact),
	    cmocka_unit_test(test_default_names_resolve),
	    cmocka_unit_test(test_default_forbidden_absent),
	    cmocka_unit_test(test_default_programs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

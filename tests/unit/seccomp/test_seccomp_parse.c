/* Unit tests for the seccomp profile parser: runtime-spec fields and their
 * behaviour in a confined child, the errors (file and field named), and docker's
 * format flattened for an empty capability set on x86_64. */
#define _GNU_SOURCE
#include <linux/capability.h>

#include "../need.h"
#include "test_seccomp_child.h"

/* ---- the parser: fields ---- */

static void probe_getpgid(struct results *r, void *arg)
{
	const uint64_t *vals = arg;
	for (int i = 0; vals[i] != UINT64_MAX; i++)
		record(r, sc(syscall(SYS_getpgid, vals[i])));
}

/* Each comparison operator: getpgid(v) fails with errno 42 iff the rule matches. */
static void test_parse_ops(void **state)
{
	static const struct {
		const char *op;
		uint64_t value, value_two;
		uint64_t probe[4];
		bool match[3];
	} cases[] = {
	    {"SCMP_CMP_EQ", 5, 0, {5, 6, 0x100000005ULL, UINT64_MAX}, {true, false, false}},
	    {"SCMP_CMP_NE", 5, 0, {5, 6, 0, UINT64_MAX}, {false, true, true}},
	    {"SCMP_CMP_LT", 5, 0, {4, 5, 6, UINT64_MAX}, {true, false, false}},
	    {"SCMP_CMP_LE", 5, 0, {4, 5, 6, UINT64_MAX}, {true, true, false}},
	    {"SCMP_CMP_GE", 5, 0, {4, 5, 6, UINT64_MAX}, {false, true, true}},
	    {"SCMP_CMP_GT", 5, 0, {4, 5, 6, UINT64_MAX}, {false, false, true}},
	    {"SCMP_CMP_MASKED_EQ",
	     0xff,
	     0x12,
	     {0x12, 0x1312, 0x13, UINT64_MAX},
	     {true, true, false}},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		ar_autofree char *json = ar_xasprintf(
		    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"getpgid\"],"
		    "\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":42,\"args\":[{\"index\":0,"
		    "\"value\":%llu,\"valueTwo\":%llu,\"op\":\"%s\"}]}]}",
		    (unsigned long long)cases[i].value, (unsigned long long)cases[i].value_two,
		    cases[i].op);
		struct ar_seccomp *s = parse_ok(json);
		const struct ar_seccomp_profile *p = ar_seccomp_profile(s);
		assert_int_equal(p->n_rules, 1);
		assert_int_equal(p->rules[0].n_args, 1);
		assert_int_equal(p->rules[0].args[0].value, cases[i].value);
		assert_int_equal(p->rules[0].args[0].value_two, cases[i].value_two);
		struct outcome o = run_confined(s, probe_getpgid, (void *)cases[i].probe);
		assert_int_equal(o.exited, 0);
		assert_int_equal(o.r.n, 3);
		for (int k = 0; k < 3; k++) {
			if ((o.r.v[k] == -42) != cases[i].match[k])
				fail_msg("%s: getpgid(%#llx) gave %ld", cases[i].op,
					 (unsigned long long)cases[i].probe[k], o.r.v[k]);
		}
		ar_seccomp_free(s);
	}
}

static void probe_two_args(struct results *r, void *arg)
{
	record(r, sc(syscall(SYS_getpgid, 5)));
	record(r, sc(syscall(SYS_getpgid, 6)));
	record(r, sc(syscall(SYS_getpgid, 7)));
	record(r, sc(syscall(SYS_getpriority, 100, 200)));
	record(r, sc(syscall(SYS_getpriority, 100, 201)));
	record(r, sc(syscall(SYS_getpriority, 101, 200)));
}

/* runc's convention: conditions all on one argument are alternatives, on
 * different arguments they must all hold. */
static void test_parse_args_or_and(void **state)
{
	static const char json[] =
	    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
	    "{\"names\":[\"getpgid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":42,\"args\":["
	    "{\"index\":0,\"value\":5,\"op\":\"SCMP_CMP_EQ\"},"
	    "{\"index\":0,\"value\":6,\"op\":\"SCMP_CMP_EQ\"}]},"
	    "{\"names\":[\"getpriority\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":43,\"args\":["
	    "{\"index\":0,\"value\":100,\"op\":\"SCMP_CMP_EQ\"},"
	    "{\"index\":1,\"value\":200,\"op\":\"SCMP_CMP_EQ\"}]}]}";
	struct ar_seccomp *s = parse_ok(json);
	struct outcome o = run_confined(s, probe_two_args, NULL);
	static const long want[] = {-42, -42, 0, -43, 0, 0}; /* 0: not our errno */

	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.n, 6);
	for (int k = 0; k < 6; k++) {
		bool ours = o.r.v[k] == -42 || o.r.v[k] == -43;
		if (want[k] != 0 ? o.r.v[k] != want[k] : ours)
			fail_msg("call #%d: got %ld, want %ld", k, o.r.v[k], want[k]);
	}
	ar_seccomp_free(s);
}

static void test_parse_fields(void **state)
{
	static const char json[] =
	    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":13,"
	    "\"architectures\":[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\",\"SCMP_ARCH_X32\"],"
	    "\"flags\":[\"SECCOMP_FILTER_FLAG_LOG\"],"
	    "\"syscalls\":["
	    "{\"names\":[\"read\",\"write\",\"no_such_call_ar\"],\"action\":\"SCMP_ACT_ALLOW\"},"
	    "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\"},"
	    "{\"names\":[\"getpgid\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":2},"
	    "{\"names\":[\"getsid\"],\"action\":\"SCMP_ACT_KILL\"},"
	    "{\"names\":[\"getuid\"],\"action\":\"SCMP_ACT_KILL_PROCESS\"},"
	    "{\"names\":[\"getgid\"],\"action\":\"SCMP_ACT_TRAP\"},"
	    "{\"names\":[\"geteuid\"],\"action\":\"SCMP_ACT_TRACE\",\"errnoRet\":7},"
	    "{\"names\":[\"getegid\"],\"action\":\"SCMP_ACT_LOG\"},"
	    "{\"names\":[\"gettid\"],\"action\":\"SCMP_ACT_KILL_THREAD\"},"
	    "{\"names\":[\"socketcall\"],\"action\":\"SCMP_ACT_ALLOW\"},"
	    "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":5,"
	    "\"value\":\"0xffffffffffffffff\",\"valueTwo\":9007199254740992,"
	    "\"op\":\"SCMP_CMP_MASKED_EQ\"}]}]}";
	static const struct {
		const char *name;
		uint32_t action;
	} want[] = {
	    {"read", SCMP_ACT_ALLOW},	      {"write", SCMP_ACT_ALLOW},
	    {"getppid", SCMP_ACT_ERRNO(13)},  {"getpgid", SCMP_ACT_ERRNO(2)},
	    {"getsid", SCMP_ACT_KILL_THREAD}, {"getuid", SCMP_ACT_KILL_PROCESS},
	    {"getgid", SCMP_ACT_TRAP},	      {"geteuid", SCMP_ACT_TRACE(7)},
	    {"getegid", SCMP_ACT_LOG},	      {"gettid", SCMP_ACT_KILL_THREAD},
	    {"socketcall", SCMP_ACT_ALLOW}, /* exists on i386, listed */
	    {"getpid", SCMP_ACT_ALLOW},
	};
	struct ar_seccomp *s = parse_ok(json);
	const struct ar_seccomp_profile *p = ar_seccomp_profile(s);

	assert_int_equal(p->default_action, SCMP_ACT_ERRNO(13));
	assert_int_equal(p->bad_arch_action, SCMP_ACT_ERRNO(13));
	assert_int_equal(p->flags, SECCOMP_FILTER_FLAG_LOG);
	assert_int_equal(p->n_arches, 3);
	assert_int_equal(p->arches[0], SCMP_ARCH_X86_64);
	assert_int_equal(p->arches[1], SCMP_ARCH_X86);
	assert_int_equal(p->arches[2], SCMP_ARCH_X32);
	assert_int_equal(p->n_unknown, 1);
	assert_int_equal(p->n_rules, AR_ARRAY_SIZE(want));
	for (size_t i = 0; i < AR_ARRAY_SIZE(want); i++) {
		assert_string_equal(p->rules[i].name, want[i].name);
		assert_int_equal(p->rules[i].action, want[i].action);
	}
	assert_int_equal(p->rules[0].nr, SYS_read);
	assert_int_equal(p->rules[2].entry, 1);
	assert_int_equal(p->rules[11].n_args, 1);
	assert_int_equal(p->rules[11].args[0].index, 5);
	assert_int_equal(p->rules[11].args[0].value, UINT64_MAX);
	assert_int_equal(p->rules[11].args[0].value_two, 9007199254740992ULL);
	assert_int_equal(p->rules[11].args[0].op, SCMP_CMP_MASKED_EQ);
	ar_seccomp_free(s);
}

static void probe_getppid(struct results *r, void *arg)
{
	record(r, sc(syscall(SYS_getppid)));
	record(r, sc(syscall(SYS_getpgid, 0)));
}

/* defaultErrnoRet reaches rules without errnoRet; absent, EPERM. */
static void test_parse_errno_defaults(void **state)
{
	struct ar_seccomp *s =
	    parse_ok("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"defaultErrnoRet\":77,\"syscalls\":["
		     "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\"}]}");
	struct outcome o = run_confined(s, probe_getppid, NULL);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.v[0], -77);
	assert_int_equal(o.r.v[1], 0);
	ar_seccomp_free(s);

	s = parse_ok("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
		     "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_ERRNO\"}]}");
	o = run_confined(s, probe_getppid, NULL);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.v[0], -EPERM);
	ar_seccomp_free(s);

	/* an allow-list with no getpgid: the default errno */
	s = parse_ok("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":38,\"syscalls\":["
		     "{\"names\":[\"getppid\"," ASAN_CALLS "],"
		     "\"action\":\"SCMP_ACT_ALLOW\"}]}");
	o = run_confined(s, probe_getppid, NULL);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.v[0], 0);
	assert_int_equal(o.r.v[1], -38);
	ar_seccomp_free(s);
}

static void probe_kill_action(struct results *r, void *arg)
{
	syscall(SYS_getppid);
	record(r, 0);
}

static void test_parse_kill_and_badarch(void **state)
{
	struct ar_seccomp *s =
	    parse_ok("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
		     "{\"names\":[\"getppid\"],\"action\":\"SCMP_ACT_KILL_PROCESS\"}]}");
	struct outcome o = run_confined(s, probe_kill_action, NULL);
	assert_int_equal(o.signo, SIGSYS);
	/* an allow-default profile kills foreign ABIs rather than letting them through */
	assert_int_equal(ar_seccomp_profile(s)->bad_arch_action, SCMP_ACT_KILL_PROCESS);
	ar_seccomp_free(s);
}

static void probe_int80(struct results *r, void *arg)
{
	record(r, int80_getpid() == getpid() ? 0 : -1);
}

/* Listing SCMP_ARCH_X86 admits the i386 ABI; leaving it out kills it. */
static void test_parse_arches_behaviour(void **state)
{
	AR_NEED(int80_supported(), "a kernel with IA32 emulation (int $0x80)");
	struct ar_seccomp *s =
	    parse_ok("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":"
		     "[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\"],\"syscalls\":[]}");
	struct outcome o = run_confined(s, probe_int80, NULL);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.v[0], 0);
	ar_seccomp_free(s);
	s = parse_ok("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[]}");
	o = run_confined(s, probe_int80, NULL);
	assert_int_equal(o.signo, SIGSYS);
	ar_seccomp_free(s);
}

/* Run `fn` with stderr captured; returns what it printed. */
static char *capture_stderr(void (*fn)(void *), void *arg)
{
	int mfd = memfd_create("stderr", MFD_CLOEXEC), saved = dup(2);
	char *buf = ar_xcalloc(1, 4096);

	assert_true(mfd >= 0 && saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(mfd, 2), 2);
	fn(arg);
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	assert_true(pread(mfd, buf, 4095, 0) >= 0);
	close(mfd);
	return buf;
}

static void parse_shadowed(void *arg)
{
	ar_seccomp_free(parse_ok(arg));
}

static void probe_tiocsti(struct results *r, void *arg)
{
	record(r, sc(ioctl(*(int *)arg, TIOCSTI, "x")));
}

/* libseccomp drops conditional rules under an unconditional one for the same
 * syscall: the parser warns, and the test pins why (TIOCSTI is not denied). */
static void test_parse_shadowed_warning(void **state)
{
	static const char json[] =
	    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":["
	    "{\"names\":[\"ioctl\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":1,"
	    "\"value\":4294967295,\"valueTwo\":21522,\"op\":\"SCMP_CMP_MASKED_EQ\"}]},"
	    "{\"names\":[\"ioctl\"],\"action\":\"SCMP_ACT_LOG\"}]}";
	ar_autofree char *out = capture_stderr(parse_shadowed, (void *)json);
	assert_string_equal(out,
			    "agentrun: warning: t.json: syscalls[0]: the conditions on `ioctl` "
			    "have no effect: syscalls[1] matches it unconditionally\n");

	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	enum ar_log_level level = ar_log_get_level();
	ar_log_set_level(AR_LOG_ERROR);
	struct ar_seccomp *s = parse_ok(json);
	ar_log_set_level(level);
	struct outcome o = run_confined(s, probe_tiocsti, &devnull);
	assert_int_equal(o.r.v[0], -ENOTTY); /* reached the driver: not denied */
	ar_seccomp_free(s);
	close(devnull);
}

/* ---- the parser: errors name the file and field ---- */

static void test_parse_errors(void **state)
{
	static const struct {
		const char *json, *msg;
	} cases[] = {
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\n\"syscalls\": [,]}",
	     "t.json:2:14: invalid JSON"},
	    {"", "t.json:1:1: invalid JSON"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\"}\n x", "t.json:2:2: invalid JSON"},
	    {"[]", "t.json: expected a JSON object"},
	    {"{}", "t.json: defaultAction: missing"},
	    {"{\"defaultAction\":1}", "t.json: defaultAction: expected a string"},
	    {"{\"defaultAction\":\"SCMP_ACT_FOO\"}",
	     "t.json: defaultAction: unknown action `SCMP_ACT_FOO`"},
	    {"{\"defaultAction\":\"SCMP_ACT_NOTIFY\"}",
	     "t.json: defaultAction: `SCMP_ACT_NOTIFY` is not supported (agentrun runs no "
	     "seccomp notification agent)"},
	    {"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":-1}",
	     "t.json: defaultErrnoRet: -1 is not an integer in [0, 4095]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_Z80\"]}",
	     "t.json: architectures[0]: unknown architecture `SCMP_ARCH_Z80`"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":{}}",
	     "t.json: architectures: expected an array"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"flags\":[\"SECCOMP_FILTER_FLAG_X\"]}",
	     "t.json: flags[0]: unknown seccomp filter flag"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":{}}",
	     "t.json: syscalls: expected an array"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_ERRNO\"},{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ERRNO\"},"
	     "{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ERRNO\"},{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_FOO\"}]}",
	     "t.json: syscalls[3].action: unknown action `SCMP_ACT_FOO`"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"]}]}",
	     "t.json: syscalls[0].action: missing"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"action\":\"SCMP_ACT_LOG\"}]}",
	     "t.json: syscalls[0].names: expected an array of syscall names"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[3],"
	     "\"action\":\"SCMP_ACT_LOG\"}]}",
	     "t.json: syscalls[0].names[0]: expected a syscall name"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[1]}",
	     "t.json: syscalls[0]: expected an object"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":5000}]}",
	     "t.json: syscalls[0].errnoRet: 5000 is not an integer in [0, 4095]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_NOTIFY\"}]}",
	     "t.json: syscalls[0].action: `SCMP_ACT_NOTIFY` is not supported (agentrun runs no "
	     "seccomp notification agent)"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\"},{\"names\":[\"read\"],\"action\":\"SCMP_ACT_LOG\","
	     "\"args\":[{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]},{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":0,\"value\":1,\"op\":\"EQ\"}]}]}",
	     "t.json: syscalls[2].args[0].op: unknown operator `EQ`"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":6,\"value\":1,\"op\":\"SCMP_CMP_"
	     "EQ\"}]}]}",
	     "t.json: syscalls[0].args[0].index: 6 is not an integer in [0, 5]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":1,\"op\":\"SCMP_CMP_EQ\"}]}]}",
	     "t.json: syscalls[0].args[0].value: missing"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":1,\"value\":1.5,\"op\":\"SCMP_CMP_"
	     "EQ\"}]}]}",
	     "t.json: syscalls[0].args[0].value: 1.5 is not an integer in [0, "
	     "18446744073709551615]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":1,\"value\":\"x1\",\"op\":\"SCMP_"
	     "CMP_EQ\"}]}]}",
	     "t.json: syscalls[0].args[0].value: expected an integer in [0, 18446744073709551615]"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":1,\"value\":1}]}]}",
	     "t.json: syscalls[0].args[0].op: missing"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":{}}]}",
	     "t.json: syscalls[0].args: expected an array"},
	    /* two conditions on arg 0 plus one on arg 1 cannot be expressed */
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"args\":[{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_"
	     "EQ\"},"
	     "{\"index\":0,\"value\":2,\"op\":\"SCMP_CMP_EQ\"},{\"index\":1,\"value\":2,\"op\":"
	     "\"SCMP_CMP_EQ\"}]}]}",
	     "t.json: syscalls[0]: syscall `read`: libseccomp rejected the rule: Invalid argument"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		struct ar_seccomp *s = (struct ar_seccomp *)0x1;
		ar_error_t err = NULL;
		int rc = ar_seccomp_parse(cases[i].json, strlen(cases[i].json), "t.json", &s, &err);
		if (rc != -1 || err == NULL)
			fail_msg("case %zu: parsed, expected `%s`", i, cases[i].msg);
		assert_null(s);
		if (strcmp(err->msg, cases[i].msg) != 0)
			fail_msg("case %zu:\n got `%s`\nwant `%s`", i, err->msg, cases[i].msg);
		ar_error_release(&err);
	}
}

static void test_prepare_specs(void **state)
{
	struct ar_seccomp *s = (struct ar_seccomp *)0x1;
	ar_error_t err = NULL;

	assert_int_equal(ar_seccomp_prepare("unconfined", &s, &err), 0);
	assert_null(s);
	assert_int_equal(ar_seccomp_install(NULL, &err), 0);
	assert_int_equal(ar_seccomp_prepare("/nonexistent/p.json", &s, &err), -1);
	assert_null(s);
	assert_non_null(strstr(err->msg, "/nonexistent/p.json"));
	assert_int_equal(err->status, ENOENT);
	ar_error_release(&err);

	ar_autofree char *bad = ar_xasprintf("%s/seccomp-bad-action.json", AR_TEST_DATA);
	assert_int_equal(ar_seccomp_prepare(bad, &s, &err), -1);
	ar_autofree char *want =
	    ar_xasprintf("%s: syscalls[1].action: unknown action `SCMP_ACT_FOO`", bad);
	assert_string_equal(err->msg, want);
	ar_error_release(&err);
}

/* Without no_new_privs and without CAP_SYS_ADMIN the kernel refuses the filter;
 * the message says what is missing (agentrun never sets no_new_privs itself). */
static void test_install_needs_nnp(void **state)
{
	struct ar_seccomp *s = parse_ok("{\"defaultAction\":\"SCMP_ACT_ALLOW\"}");
	int status = -1;
	pid_t pid = fork();

	assert_true(pid != -1);
	if (pid == 0) {
		struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
		struct __user_cap_data_struct d[2];
		ar_error_t err = NULL;
		if (syscall(SYS_capget, &h, d) == -1)
			_exit(90);
		d[CAP_SYS_ADMIN / 32].effective &= ~(1U << (CAP_SYS_ADMIN % 32));
		if (syscall(SYS_capset, &h, d) == -1)
			_exit(91);
		if (ar_seccomp_install(s, &err) != -1)
			_exit(92);
		if (err->status != EACCES ||
		    strcmp(err->msg, "install seccomp filter: no_new_privs is not set and "
				     "CAP_SYS_ADMIN is missing: Permission denied") != 0)
			_exit(93);
		_exit(0);
	}
	assert_int_equal(TEMP_FAILURE_RETRY(waitpid(pid, &status, 0)), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	ar_seccomp_free(s);
}

/* ---- docker's format ---- */

static bool has_rule(const struct ar_seccomp_profile *p, const char *name)
{
	for (size_t i = 0; i < p->n_rules; i++) {
		if (strcmp(p->rules[i].name, name) == 0)
			return true;
	}
	return false;
}

static struct ar_seccomp *load_fixture(const char *name, unsigned int kernel)
{
	ar_autofree char *path = ar_xasprintf("%s/%s", AR_TEST_DATA, name);
	ar_autofree char *data = NULL;
	struct ar_seccomp *s = NULL;
	ar_error_t err = NULL;
	size_t len;

	assert_int_equal(ar_read_file(path, 0, &data, &len, &err), 0);
	if (ar_seccomp_parse_kernel(data, len, name, kernel, &s, &err) < 0)
		fail_msg("%s", err->msg);
	return s;
}

static void test_docker_flatten(void **state)
{
	struct ar_seccomp *s = load_fixture("seccomp-docker.json", 5015);
	const struct ar_seccomp_profile *p = ar_seccomp_profile(s);
	static const char *const kept[] = {"read",	 "write",  "exit_group", "getppid",
					   "getpgid",	 "getsid", "getuid",	 "clone",
					   "arch_prctl", "futex"};
	static const char *const dropped[] = {"mount",	 "ptrace",  "setns",  "getgid",
					      "geteuid", "getegid", "gettid", "chroot"};

	assert_int_equal(p->default_action, SCMP_ACT_ERRNO(EPERM));
	assert_int_equal(p->n_arches, 3);
	assert_int_equal(p->arches[0], SCMP_ARCH_X86_64);
	assert_int_equal(p->arches[1], SCMP_ARCH_X86);
	assert_int_equal(p->arches[2], SCMP_ARCH_X32);
	for (size_t i = 0; i < AR_ARRAY_SIZE(kept); i++) {
		if (!has_rule(p, kept[i]))
			fail_msg("`%s` should be kept", kept[i]);
	}
	for (size_t i = 0; i < AR_ARRAY_SIZE(dropped); i++) {
		if (has_rule(p, dropped[i]))
			fail_msg("`%s` should be dropped", dropped[i]);
	}
	ar_seccomp_free(s);

	/* minKernel against an older kernel flips both kinds of condition */
	s = load_fixture("seccomp-docker.json", 4004);
	p = ar_seccomp_profile(s);
	assert_false(has_rule(p, "getsid")); /* includes.minKernel 4.8 */
	assert_true(has_rule(p, "getegid")); /* excludes.minKernel 5.0 */
	ar_seccomp_free(s);
}

static void probe_docker(struct results *r, void *arg)
{
	record(r, sc(syscall(SYS_getppid)));
	record(r, sc(syscall(SYS_getgid)));
	record(r, sc(syscall(SYS_clone3, NULL, 0)));
}

static void test_docker_behaviour(void **state)
{
	struct ar_seccomp *s = load_fixture("seccomp-docker.json", 5015);
	struct outcome o = run_confined(s, probe_docker, NULL);

	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.v[0], 0);
	assert_int_equal(o.r.v[1], -EPERM);
	assert_int_equal(o.r.v[2], -ENOSYS);
	ar_seccomp_free(s);
}

static void test_docker_errors(void **state)
{
	static const struct {
		const char *json, *msg;
	} cases[] = {
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"includes\":{\"caps\":\"CAP_SYS_ADMIN\"}}]}",
	     "t.json: syscalls[0].includes.caps: expected an array of strings"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"excludes\":{\"arches\":[1]}}]}",
	     "t.json: syscalls[0].excludes.arches[0]: expected a string"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"includes\":{\"minKernel\":\"five\"}}]}",
	     "t.json: syscalls[0].includes.minKernel: expected a version like \"5.6\""},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
	     "\"action\":\"SCMP_ACT_LOG\",\"includes\":[]}]}",
	     "t.json: syscalls[0].includes: expected an object"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"archMap\":{}}",
	     "t.json: archMap: expected an array"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"archMap\":[{\"architecture\":"
	     "\"SCMP_ARCH_X86_64\",\"subArchitectures\":[\"SCMP_ARCH_Q\"]}]}",
	     "t.json: archMap[0].subArchitectures[0]: unknown architecture"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"archMap\":[{}]}",
	     "t.json: archMap[0].architecture: expected a string"},
	    {"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_X86\"],"
	     "\"archMap\":[{\"architecture\":\"SCMP_ARCH_X86_64\"}]}",
	     "t.json: architectures: give either architectures or archMap, not both"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		struct ar_seccomp *s = NULL;
		ar_error_t err = NULL;
		if (ar_seccomp_parse(cases[i].json, strlen(cases[i].json), "t.json", &s, &err) !=
		    -1)
			fail_msg("case %zu: parsed, expected `%s`", i, cases[i].msg);
		if (strcmp(err->msg, cases[i].msg) != 0)
			fail_msg("case %zu:\n got `%s`\nwant `%s`", i, err->msg, cases[i].msg);
		ar_error_release(&err);
	}
}

/* Every profile shipped in seccomp/ loads from its path. */
/* A NUL in a string, raw or escaped, would cut "read\0x" to "read": refused, naming
 * the file, the place and the member. */
static void test_parse_nul(void **state)
{
	static const char raw[] =
	    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\n\"syscalls\":[{\"names\":"
	    "[\"read\0x\"],\"action\":\"SCMP_ACT_ALLOW\"}]}";
	static const char esc[] = "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":"
				  "[\"read\"],\"action\":\"SCMP_ACT_ALLOW\\u0000\"}]}";
	static const struct {
		const char *json;
		size_t len;
		const char *msg;
	} cases[] = {
	    {raw, sizeof(raw) - 1,
	     "t.json:2:28: invalid JSON: a NUL byte (raw or \\u0000) in a string of `names` is not "
	     "allowed"},
	    {esc, sizeof(esc) - 1,
	     "t.json:1:89: invalid JSON: a NUL byte (raw or \\u0000) in a string of `action` is "
	     "not allowed"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		struct ar_seccomp *s = NULL;
		ar_error_t err = NULL;
		assert_int_equal(ar_seccomp_parse(cases[i].json, cases[i].len, "t.json", &s, &err),
				 -1);
		assert_null(s);
		assert_non_null(err);
		assert_string_equal(err->msg, cases[i].msg);
		ar_error_release(&err);
	}
	/* the control: the same profiles without the NUL parse */
	struct ar_seccomp *s = NULL;
	ar_error_t err = NULL;
	const char *ok =
	    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\"],"
	    "\"action\":\"SCMP_ACT_ALLOW\"}]}";
	assert_int_equal(ar_seccomp_parse(ok, strlen(ok), "t.json", &s, &err), 0);
	ar_seccomp_free(s);
}

static void test_shipped_profiles_load(void **state)
{
	static const char *const files[] = {"default.json"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(files); i++) {
		ar_autofree char *path = ar_xasprintf("%s/seccomp/%s", AR_SOURCE_DIR, files[i]);
		struct ar_seccomp *s = NULL;
		ar_error_t err = NULL;
		if (access(path, R_OK) != 0)
			continue;
		if (ar_seccomp_prepare(path, &s, &err) < 0)
			fail_msg("%s", err->msg);
		assert_true(ar_seccomp_profile(s)->n_rules > 100);
		ar_seccomp_free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_ops),
	    cmocka_unit_test(test_parse_args_or_and),
	    cmocka_unit_test(test_parse_fields),
	    cmocka_unit_test(test_parse_errno_defaults),
	    cmocka_unit_test(test_parse_kill_and_badarch),
	    cmocka_unit_test(test_parse_arches_behaviour),
	    cmocka_unit_test(test_parse_shadowed_warning),
	    cmocka_unit_test(test_parse_errors),
	    cmocka_unit_test(test_parse_nul),
	    cmocka_unit_test(test_prepare_specs),
	    cmocka_unit_test(test_install_needs_nnp),
	    cmocka_unit_test(test_docker_flatten),
	    cmocka_unit_test(test_docker_behaviour),
	    cmocka_unit_test(test_docker_errors),
	    cmocka_unit_test(test_shipped_profiles_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The default seccomp profile precompiled at build time (cmake/seccomp_bpfgen.c):
 * the generated program is exactly what a fresh compile of the embedded profile
 * gives, the launch path (ar_seccomp_prepare_program) really uses it, and it
 * confines. */
#define _GNU_SOURCE
#include <sched.h>

#include "test_seccomp_child.h"

static struct ar_seccomp *fresh_default(void)
{
	struct ar_seccomp *s = NULL;
	ar_error_t err = NULL;

	if (ar_seccomp_parse(ar_seccomp_default_json, ar_seccomp_default_json_len, "default", &s,
			     &err) < 0)
		fail_msg("default profile: %s", err->msg);
	return s;
}

static void assert_is_precompiled(const struct ar_seccomp *s)
{
	size_t n = 0;
	const struct sock_filter *prog = ar_seccomp_program(s, &n);

	assert_int_equal(n, ar_seccomp_default_bpf_len);
	assert_memory_equal(prog, ar_seccomp_default_bpf, n * sizeof(*prog));
}

static void test_generated_equals_fresh_compile(void **state)
{
	struct ar_seccomp *s = fresh_default();
	const struct scmp_version *v = seccomp_version();

	/* a real program (a stale or empty generated file would be len 0) */
	assert_true(ar_seccomp_default_bpf_len > 100);
	assert_is_precompiled(s);
	assert_int_equal(ar_seccomp_default_bpf_flags, ar_seccomp_profile(s)->flags);
	/* generated with the libseccomp the tests run with, so the runtime uses it */
	assert_int_equal(ar_seccomp_default_bpf_libseccomp[0], v->major);
	assert_int_equal(ar_seccomp_default_bpf_libseccomp[1], v->minor);
	assert_int_equal(ar_seccomp_default_bpf_libseccomp[2], v->micro);
	ar_seccomp_free(s);
}

/* `default` (and no spec) take the precompiled program: no profile model is parsed. */
static void test_prepare_program_default(void **state)
{
	const char *specs[] = {"default", NULL};

	for (size_t i = 0; i < AR_ARRAY_SIZE(specs); i++) {
		struct ar_seccomp *s = NULL;
		ar_error_t err = NULL;

		assert_int_equal(ar_seccomp_prepare_program(specs[i], &s, &err), 0);
		assert_null(err);
		assert_non_null(s);
		assert_is_precompiled(s);
		assert_int_equal(ar_seccomp_profile(s)->n_rules, 0);
		ar_seccomp_free(s);
	}
}

/* Every other spec is ar_seccomp_prepare: unconfined, a file, a missing file. */
static void test_prepare_program_other_specs(void **state)
{
	ar_autofree char *path = ar_xasprintf("%s/seccomp/default.json", AR_SOURCE_DIR);
	struct ar_seccomp *s = NULL;
	ar_error_t err = NULL;

	assert_int_equal(ar_seccomp_prepare_program("unconfined", &s, &err), 0);
	assert_null(s);

	assert_int_equal(ar_seccomp_prepare_program(path, &s, &err), 0);
	assert_non_null(s);
	assert_true(ar_seccomp_profile(s)->n_rules > 250); /* parsed, not precompiled */
	assert_is_precompiled(s);			   /* the same file, the same program */
	ar_seccomp_free(s);

	s = NULL;
	assert_int_equal(ar_seccomp_prepare_program("/nonexistent/p.json", &s, &err), -1);
	assert_null(s);
	assert_non_null(err);
	assert_non_null(strstr(err->msg, "/nonexistent/p.json"));
	ar_error_release(&err);
}

static void probe_basic(struct results *r, void *arg)
{
	record(r, syscall(SYS_getpid) > 0);
	record(r, sc(chroot("/")));
	record(r, sc(unshare(CLONE_NEWNS)));
	record(r, sc(syscall(SYS_unshare, CLONE_NEWUSER)));
}

static void test_precompiled_confines(void **state)
{
	struct ar_seccomp *s = NULL;
	ar_error_t err = NULL;

	assert_int_equal(ar_seccomp_prepare_program("default", &s, &err), 0);
	struct outcome o = run_confined(s, probe_basic, NULL);
	assert_int_equal(o.signo, 0);
	assert_int_equal(o.exited, 0);
	assert_int_equal(o.r.n, 4);
	assert_int_equal(o.r.v[0], 1);
	assert_int_equal(o.r.v[1], -EPERM);
	assert_int_equal(o.r.v[2], -EPERM);
	assert_int_equal(o.r.v[3], -EPERM);
	ar_seccomp_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_generated_equals_fresh_compile),
	    cmocka_unit_test(test_prepare_program_default),
	    cmocka_unit_test(test_prepare_program_other_specs),
	    cmocka_unit_test(test_precompiled_confines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

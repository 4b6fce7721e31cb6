/* seccomp/proxy.json, as embedded in the binary: it parses, denies by default with EPERM,
 * allows what the proxy's loop needs, and leaves out exec, namespaces, ptrace and
 * socket families other than IPv4/IPv6. */
#include <setjmp.h>
#include <stdbool.h>
#include <linux/filter.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <seccomp.h>

#include "agentrun/seccomp.h"

extern const char ar_seccomp_proxy_json[];
extern const size_t ar_seccomp_proxy_json_len;
extern const struct sock_filter ar_seccomp_proxy_bpf[];
extern const size_t ar_seccomp_proxy_bpf_len;
extern const unsigned int ar_seccomp_proxy_bpf_flags;
bool ar_net_proxy_seccomp_precompiled(void);

static const struct ar_seccomp_rule *rule(const struct ar_seccomp_profile *pr, const char *name,
					  size_t nth)
{
	for (size_t i = 0; i < pr->n_rules; i++)
		if (strcmp(pr->rules[i].name, name) == 0 && nth-- == 0)
			return &pr->rules[i];
	return NULL;
}

static void test_proxy_profile(void **state)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autoseccomp struct ar_seccomp *s = NULL;
	assert_int_equal(ar_seccomp_parse(ar_seccomp_proxy_json, ar_seccomp_proxy_json_len,
					  "seccomp/proxy.json", &s, &err),
			 0);
	const struct ar_seccomp_profile *pr = ar_seccomp_profile(s);
	assert_int_equal(pr->default_action, SCMP_ACT_ERRNO(1));
	static const char *const needed[] = {"epoll_wait", "accept4",  "splice",    "connect",
					     "sendto",	   "recvfrom", "signalfd4", "exit_group"};
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		const struct ar_seccomp_rule *r = rule(pr, needed[i], 0);
		assert_non_null(r);
		assert_int_equal(r->action, SCMP_ACT_ALLOW);
	}
	static const char *const absent[] = {"execve", "execveat", "unshare",
					     "setns",  "ptrace",   "clone3",
					     "mount",  "bpf",	   "io_uring_setup"};
	for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
		assert_null(rule(pr, absent[i], 0));
	/* socket: exactly AF_INET and AF_INET6 */
	const struct ar_seccomp_rule *a = rule(pr, "socket", 0), *b = rule(pr, "socket", 1);
	assert_non_null(a);
	assert_non_null(b);
	assert_null(rule(pr, "socket", 2));
	assert_int_equal(a->args[0].value, 2);
	assert_int_equal(b->args[0].value, 10);
}

/* The program precompiled at build time (cmake/seccomp_bpfgen.c) is exactly a fresh
 * compile of the embedded profile, and the proxy child uses it (same libseccomp). */
static void test_precompiled_equals_fresh_compile(void **state)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autoseccomp struct ar_seccomp *s = NULL;
	size_t n = 0;
	assert_int_equal(ar_seccomp_parse(ar_seccomp_proxy_json, ar_seccomp_proxy_json_len,
					  "seccomp/proxy.json", &s, &err),
			 0);
	const struct sock_filter *prog = ar_seccomp_program(s, &n);
	assert_true(ar_seccomp_proxy_bpf_len > 50);
	assert_int_equal(n, ar_seccomp_proxy_bpf_len);
	assert_memory_equal(prog, ar_seccomp_proxy_bpf, n * sizeof(*prog));
	assert_int_equal(ar_seccomp_proxy_bpf_flags, ar_seccomp_profile(s)->flags);
	assert_true(ar_net_proxy_seccomp_precompiled());
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_proxy_profile),
					   cmocka_unit_test(test_precompiled_equals_fresh_compile)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* run's mount plan is made from the agent spec: what the spec says reaches the plan,
 * named as the spec names it. */
#include "../spec_fixture.h"

#include "agentrun/sandbox.h"

/* a mount a --mount override added is named by its flag, as run's mount plan names it
 * (ar_policy_mount_origin); the policy's own by its field */
static void test_mount_origin(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(AR_TEST_SPEC_JSON);
	struct ar_run_opts o = {0};
	ar_auto_error ar_error_t err = NULL;
	assert_int_equal(ar_override_apply(p, &o, "--mount", "/srv/x:/x:rw", &err), 0);
	ar_autospec struct ar_spec *s = ar_test_spec(p, NULL);
	assert_string_equal(s->mounts[4].field, "--mount /srv/x:/x:rw");
	assert_string_equal(s->mounts[2].field, "p.json: mounts[0]");

	/* a flag's bad target is refused as the flag applies, named by the flag */
	assert_int_equal(ar_override_apply(p, &o, "--mount", "/srv/y:/", &err), -1);
	assert_string_equal(err->msg, "--mount /srv/y:/: target: must not be \"/\", got \"/\"");
}

/* run's mount plan masks and protects exactly the spec's table, nothing else */
static void test_mount_plan_reads_table(void **state)
{
	ar_autopolicy struct ar_policy *p =
	    ar_test_policy("{\"name\": \"x\", \"network\": \"none\"}");
	struct ar_mount_plan plan;
	ar_autospec struct ar_spec *s = ar_test_spec(p, NULL);
	ar_mount_plan_build(s, &plan);
	size_t seen = 0;
	for (size_t i = 0; i < plan.n_ops; i++) {
		const struct ar_mount_op *op = &plan.ops[i];
		bool sys = ar_path_under(op->target, "/proc") || ar_path_under(op->target, "/sys");
		if (!sys || (op->kind != AR_MNT_MASK && op->kind != AR_MNT_RO_SELF))
			continue;
		assert_true(seen < ar_spec_n_system_paths);
		const struct ar_spec_path *sp = &ar_spec_system_paths[seen++];
		assert_string_equal(op->target, sp->path);
		assert_int_equal(op->kind,
				 sp->kind == AR_SPEC_MASKED ? AR_MNT_MASK : AR_MNT_RO_SELF);
	}
	assert_int_equal(seen, ar_spec_n_system_paths);
	ar_mount_plan_free(&plan);
}

/* The spec's hidden places and mounts become the plan's, in the spec's order. */
static void test_plan_follows_spec(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(AR_TEST_SPEC_JSON);
	struct ar_spec_opts o = {
	    .caller_private = (const char *[AR_SPEC_CALLER_PRIVATE_MAX]){"/opt/me", NULL, NULL},
	    .ca_bundle = "/run/b.pem",
	    .ca_bundle_target = "/etc/ssl/certs/ca-certificates.crt"};
	ar_autospec struct ar_spec *s = ar_test_spec(p, &o);
	struct ar_mount_plan plan;
	ar_mount_plan_build(s, &plan);
	size_t hidden = 0, mounts = 0;
	for (size_t i = 0; i < plan.n_ops; i++) {
		const struct ar_mount_op *op = &plan.ops[i];
		if (op->kind == AR_MNT_HIDE) {
			assert_true(hidden < s->n_hidden);
			assert_string_equal(op->target, s->hidden[hidden++]);
		} else if (op->kind == AR_MNT_TMPFS || op->kind == AR_MNT_BIND) {
			const struct ar_spec_mount *m = &s->mounts[mounts++];
			assert_string_equal(op->target, m->target);
			assert_string_equal(op->what, m->field);
			assert_int_equal(op->readonly, m->readonly);
			assert_int_equal(op->copy, m->copy);
		}
	}
	assert_int_equal(hidden, s->n_hidden);
	assert_int_equal(mounts, s->n_mounts);
	assert_string_equal(plan.ops[plan.n_ops - 1].source, "/run/b.pem");
	ar_mount_plan_free(&plan);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mount_origin),
	    cmocka_unit_test(test_mount_plan_reads_table),
	    cmocka_unit_test(test_plan_follows_spec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

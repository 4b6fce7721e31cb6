/* Target "seccomp": the profile reader and compiler (runtime-spec and docker JSON,
 * compiled to BPF with libseccomp). A fixed kernel version keeps docker's minKernel
 * conditions deterministic. An accepted profile has a non-empty program and a model
 * within the header's bounds; a refused one names the origin on one line. */
#define _GNU_SOURCE
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/seccomp.h"
#include "agentrun/util.h"
#include "fuzz.h"

#define ORIGIN "fuzz-seccomp.json"
#define KERNEL 6001 /* 6.1, Debian 12's */

static void check_profile(const struct ar_seccomp_profile *p)
{
	AR_FUZZ_CHECK(p != NULL, "no profile");
	AR_FUZZ_CHECK(p->n_arches <= AR_ARRAY_SIZE(p->arches), "%zu arches", p->n_arches);
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct ar_seccomp_rule *r = &p->rules[i];
		AR_FUZZ_CHECK(r->name != NULL && *r->name != '\0', "rule %zu without a name", i);
		/* a syscall only a secondary architecture has (socketcall with
		 * SCMP_ARCH_X86) carries libseccomp's pseudo number (__PNR_*, <= -10000),
		 * which it translates per architecture */
		AR_FUZZ_CHECK(r->nr >= 0 || (r->nr <= -10000 && r->nr != __NR_SCMP_ERROR),
			      "rule %s has nr %d", r->name, r->nr);
		AR_FUZZ_CHECK(r->n_args <= AR_SECCOMP_MAX_ARGS, "rule %s has %u args", r->name,
			      r->n_args);
		for (unsigned int k = 0; k < r->n_args; k++) {
			AR_FUZZ_CHECK(r->args[k].index < 6, "rule %s arg index %u", r->name,
				      r->args[k].index);
			AR_FUZZ_CHECK(r->args[k].op > _SCMP_CMP_MIN &&
					  r->args[k].op < _SCMP_CMP_MAX,
				      "rule %s op %d", r->name, r->args[k].op);
		}
	}
}

void ar_fuzz_seccomp(const uint8_t *data, size_t size)
{
	ar_autofree char *buf = ar_fuzz_dup(data, size);
	ar_auto_error ar_error_t err = NULL;
	ar_autoseccomp struct ar_seccomp *s = NULL;

	if (ar_seccomp_parse_kernel(buf, size, ORIGIN, KERNEL, &s, &err) == -1) {
		AR_FUZZ_CHECK(s == NULL, "failure left a filter behind");
		ar_fuzz_check_error(&err, ORIGIN);
		return;
	}
	AR_FUZZ_CHECK(s != NULL && err == NULL, "success without a filter or with an error");
	check_profile(ar_seccomp_profile(s));
}

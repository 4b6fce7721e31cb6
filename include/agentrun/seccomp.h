/* seccomp profiles: runtime-spec JSON (and docker's format) compiled with libseccomp.
 * Compiled in the parent before clone so errors surface early; installed by the
 * child as the very last step before exec (after no_new_privs). */
#ifndef AGENTRUN_SECCOMP_H
#define AGENTRUN_SECCOMP_H

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>

#include "agentrun/error.h"

struct ar_seccomp;

/* spec: "default" (the embedded seccomp/default.json), "unconfined" (*out = NULL,
 * nothing to install) or a path to a profile file. Errors name the file and field
 * ("p.json: syscalls[3].action: unknown action `SCMP_ACT_FOO`"). */
int ar_seccomp_prepare(const char *spec, struct ar_seccomp **out, ar_error_t *err);
/* Parse a profile from memory; `origin` names it in messages. */
int ar_seccomp_parse(const char *json, size_t len, const char *origin, struct ar_seccomp **out,
		     ar_error_t *err);
/* The launch path's ar_seccomp_prepare: `default` is the BPF program precompiled at
 * build time from the same embedded profile (cmake/seccomp_bpfgen.c), so no JSON is
 * parsed and libseccomp does no work (~2 ms). Used only when the running libseccomp is
 * the one the build compiled with; otherwise, and for any other spec, exactly
 * ar_seccomp_prepare. A precompiled object has the program and the filter flags but
 * no profile model (ar_seccomp_profile: no rules). */
int ar_seccomp_prepare_program(const char *spec, struct ar_seccomp **out, ar_error_t *err);
/* The compiled BPF program and its length in instructions. */
const struct sock_filter *ar_seccomp_program(const struct ar_seccomp *s, size_t *n_insns);
/* Install in the calling thread (needs no_new_privs or CAP_SYS_ADMIN). NULL is a no-op. */
int ar_seccomp_install(const struct ar_seccomp *s, ar_error_t *err);
void ar_seccomp_free(struct ar_seccomp *s);

/* The typed model a profile parses into (after docker's includes/excludes are
 * flattened and names are resolved), kept for tests and diagnostics. Actions are
 * libseccomp SCMP_ACT_* values, ops enum scmp_compare, arches SCMP_ARCH_*. */
#define AR_SECCOMP_MAX_ARGS 6
struct ar_seccomp_arg {
	unsigned int index;
	uint64_t value;
	uint64_t value_two;
	int op;
};
struct ar_seccomp_rule {
	char *name;
	/* x86_64 number; libseccomp's negative pseudo number for a call that exists
	 * only on a listed foreign architecture (socketcall with SCMP_ARCH_X86) */
	int nr;
	size_t entry; /* index in the profile's syscalls[] */
	uint32_t action;
	unsigned int n_args; /* several args on one index are ORed (as runc), else ANDed */
	struct ar_seccomp_arg args[AR_SECCOMP_MAX_ARGS];
};
struct ar_seccomp_profile {
	uint32_t default_action;
	uint32_t bad_arch_action; /* for syscalls of an architecture not listed (x32, i386) */
	unsigned int flags;	  /* SECCOMP_FILTER_FLAG_* for the seccomp(2) call */
	uint32_t arches[8];
	size_t n_arches;
	struct ar_seccomp_rule *rules;
	size_t n_rules;
	size_t n_unknown; /* names skipped: unknown to libseccomp or absent on x86_64 */
};
const struct ar_seccomp_profile *ar_seccomp_profile(const struct ar_seccomp *s);
/* Like ar_seccomp_parse with an explicit kernel version (major*1000+minor) for
 * docker's minKernel conditions; ar_seccomp_parse uses the running kernel's. */
int ar_seccomp_parse_kernel(const char *json, size_t len, const char *origin, unsigned int kernel,
			    struct ar_seccomp **out, ar_error_t *err);
void ar_cleanup_seccompp(struct ar_seccomp **s);
#define ar_autoseccomp __attribute__((cleanup(ar_cleanup_seccompp)))

/* The embedded default profile (generated from seccomp/default.json at build time). */
extern const char ar_seccomp_default_json[];
extern const size_t ar_seccomp_default_json_len;
/* Its BPF program, the filter flags and the libseccomp version (major, minor, micro)
 * that compiled it, generated at build time; len 0 when the build made none. */
extern const struct sock_filter ar_seccomp_default_bpf[];
extern const size_t ar_seccomp_default_bpf_len;
extern const unsigned int ar_seccomp_default_bpf_flags;
extern const unsigned int ar_seccomp_default_bpf_libseccomp[3];

#endif

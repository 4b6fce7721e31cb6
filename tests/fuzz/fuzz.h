/* Fuzz targets for agentrun's parsers: one function per parser, shared by the
 * libFuzzer binary (ar-fuzz, libfuzzer_main.c) and the corpus replay (ar-fuzz-replay,
 * replay_main.c). A target takes arbitrary bytes, must free everything it allocated
 * (a leak is a bug) and aborts through AR_FUZZ_CHECK when an invariant breaks, so
 * both libFuzzer and the replay see a crash. See docs/fuzzing.md. */
#ifndef AGENTRUN_FUZZ_H
#define AGENTRUN_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentrun/error.h"

typedef void (*ar_fuzz_fn)(const uint8_t *data, size_t size);

struct ar_fuzz_target {
	const char *name;
	ar_fuzz_fn fn;
	const char *what; /* one line for --help and the docs */
};

/* All targets, terminated by a {NULL} entry. */
extern const struct ar_fuzz_target ar_fuzz_targets[];
const struct ar_fuzz_target *ar_fuzz_find(const char *name);
/* The target named by AR_FUZZ_TARGET, else by argv0 "ar-fuzz-NAME"; NULL when neither. */
const struct ar_fuzz_target *ar_fuzz_select(const char *argv0);
void ar_fuzz_list(void);

/* Per-target entry points (fuzz_<name>.c). */
void ar_fuzz_policy(const uint8_t *data, size_t size);
void ar_fuzz_rules(const uint8_t *data, size_t size);
void ar_fuzz_secrets(const uint8_t *data, size_t size);
void ar_fuzz_host(const uint8_t *data, size_t size);
void ar_fuzz_audit(const uint8_t *data, size_t size);
void ar_fuzz_seccomp(const uint8_t *data, size_t size);
void ar_fuzz_inspect(const uint8_t *data, size_t size);
void ar_fuzz_k8s(const uint8_t *data, size_t size);
void ar_fuzz_procfs(const uint8_t *data, size_t size);
void ar_fuzz_util(const uint8_t *data, size_t size);
void ar_fuzz_http1(const uint8_t *data, size_t size);
void ar_fuzz_tls(const uint8_t *data, size_t size);
void ar_fuzz_ocistate(const uint8_t *data, size_t size);
void ar_fuzz_bundle(const uint8_t *data, size_t size);
void ar_fuzz_dns(const uint8_t *data, size_t size);
void ar_fuzz_kubeconfig(const uint8_t *data, size_t size);

/* Report a broken invariant and abort (a crash for libFuzzer and for the replay). */
void ar_fuzz_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
#define AR_FUZZ_CHECK(cond, ...)                                                                   \
	do {                                                                                       \
		if (!(cond))                                                                       \
			ar_fuzz_fail(__FILE__, __LINE__, "`" #cond "`: " __VA_ARGS__);             \
	} while (0)

/* An exact-size heap copy (not NUL-terminated, so ASan sees any read past the end). */
char *ar_fuzz_dup(const uint8_t *data, size_t size);
/* A NUL-terminated heap copy of data[0..size). */
char *ar_fuzz_strndup(const uint8_t *data, size_t size);
/* Split data on '\n' into at most max NUL-terminated strings (a NULL-terminated strv;
 * NUL bytes inside a line end that string early, as they would for a C caller). */
char **ar_fuzz_lines(const uint8_t *data, size_t size, size_t max, size_t *n);

/* The error contract: a failure filled *err with one line that starts with prefix.
 * Releases the error. */
void ar_fuzz_check_error(ar_error_t *err, const char *prefix);
/* The container spec of a target's fixed policy (ar_spec_build_container), built once
 * into *cache: what check --inspect and --manifest compare with. */
struct ar_policy;
struct ar_spec;
const struct ar_spec *ar_fuzz_container_spec(const struct ar_policy *p, struct ar_spec **cache);
/* No byte below 0x20 other than tab, and no DEL: one printable line. Always true
 * with AR_FUZZ_LAX_TEXT=1 (to look for other bugs while such a finding is open). */
bool ar_fuzz_is_one_line(const char *s);

#endif

/* Shared between the seccomp profile parser (seccomp.c) and docker's profile
 * format (seccomp_docker.c). Not a public interface. */
#ifndef AGENTRUN_SECCOMP_INTERNAL_H
#define AGENTRUN_SECCOMP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "agentrun/error.h"
#include "agentrun/seccomp.h"

/* Parse "SCMP_ARCH_X86_64" and friends; -1 when unknown. */
int ar_seccomp_arch_lookup(const char *name, uint32_t *out);
/* "5.6" -> 5006; -1 when malformed. */
int ar_seccomp_kernel_parse(const char *s, unsigned int *out);

/* docker's archMap: the x86_64 entry and its subArchitectures, into p->arches. */
int ar_seccomp_docker_arches(const cJSON *archmap, const char *origin, struct ar_seccomp_profile *p,
			     ar_error_t *err);
/* Whether syscalls[i] applies for an empty capability set on x86_64 under
 * `kernel` (docker's includes/excludes on caps, arches, minKernel). */
int ar_seccomp_docker_applies(const cJSON *entry, const char *path, const char *origin,
			      unsigned int kernel, bool *applies, ar_error_t *err);

#endif

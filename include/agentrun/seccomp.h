/* seccomp profiles: runtime-spec JSON (and docker's format) compiled with libseccomp.
 * Compiled in the parent before clone so errors surface early; installed by the
 * child as the very last step before exec (after no_new_privs). */
#ifndef AGENTRUN_SECCOMP_H
#define AGENTRUN_SECCOMP_H

#include <stddef.h>

#include "agentrun/error.h"

struct ar_seccomp;

/* spec: "default" (the embedded seccomp/default.json), "unconfined" (*out = NULL,
 * nothing to install) or a path to a profile file. Errors name the file and field
 * ("p.json: syscalls[3].action: unknown action `SCMP_ACT_FOO`"). */
int ar_seccomp_prepare(const char *spec, struct ar_seccomp **out, ar_error_t *err);
/* Parse a profile from memory; `origin` names it in messages. */
int ar_seccomp_parse(const char *json, size_t len, const char *origin, struct ar_seccomp **out,
		     ar_error_t *err);
/* Install in the calling thread (needs no_new_privs or CAP_SYS_ADMIN). NULL is a no-op. */
int ar_seccomp_install(const struct ar_seccomp *s, ar_error_t *err);
void ar_seccomp_free(struct ar_seccomp *s);

/* The embedded default profile (generated from seccomp/default.json at build time). */
extern const char ar_seccomp_default_json[];
extern const size_t ar_seccomp_default_json_len;

#endif

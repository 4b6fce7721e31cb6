/* The policy's seccomp profile as the config.json `linux.seccomp` object (private to
 * src/render/). */
#ifndef AGENTRUN_RENDER_OCI_SECCOMP_H
#define AGENTRUN_RENDER_OCI_SECCOMP_H

#include "agentrun/error.h"

#include "json_writer.h"

/* Convert a runtime-spec or simple docker-format profile (archMap, `name`, empty
 * includes/excludes) and write it as member "seccomp" of the open object. Profiles
 * using docker-only conditions are refused with a message naming the field. */
int ar_render_oci_seccomp(struct jw *w, const char *json, const char *origin, ar_error_t *err);

#endif

/* Reading JSON or the YAML subset docs/k8s.md describes into cJSON (src/util/manifest.c):
 * Kubernetes manifests for `check --manifest`, kubeconfigs for secrets and review. */
#ifndef AGENTRUN_MANIFEST_H
#define AGENTRUN_MANIFEST_H

#include <stddef.h>

#include "agentrun/error.h"

/* An object, a v1/List, an array, or a YAML stream of documents. Returns a cJSON array
 * of objects (caller frees with cJSON_Delete), or NULL with *err naming origin and
 * line. Pure. */
struct cJSON;
struct cJSON *ar_manifest_read(const char *text, size_t len, const char *origin, ar_error_t *err);

#endif

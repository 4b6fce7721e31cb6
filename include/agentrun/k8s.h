/* Kubernetes: a policy rendered as manifests (`render --format k8s|k8s-json`) and a pod
 * or manifest checked against a policy (`check --pod|--manifest`). See docs/k8s.md.
 *
 * Rendering builds the objects once as a small tree (maps, lists, scalars, each entry
 * with an optional comment naming the policy field it comes from) and prints that tree
 * as a multi-document YAML stream or as one JSON `v1/List`, so both cannot disagree.
 * Checking (agentrun/check.h: ar_check_k8s) reads JSON or the YAML subset docs/k8s.md
 * describes and compares the agent's pod spec with the policy. */
#ifndef AGENTRUN_K8S_H
#define AGENTRUN_K8S_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentrun/error.h"
#include "agentrun/policy.h"
#include "agentrun/render.h"
#include "agentrun/util.h"

/* Labels every rendered object carries; the check finds the agent by them. */
#define AR_K8S_LABEL_NAME      "app.kubernetes.io/name"
#define AR_K8S_LABEL_COMPONENT "app.kubernetes.io/component"
#define AR_K8S_LABEL_MANAGED   "app.kubernetes.io/managed-by"
#define AR_K8S_ANNOTATION_FROM "agentrun.dev/policy-field"
#define AR_K8S_AGENT_CONTAINER "agent"
#define AR_K8S_SECRETS_DIR     "/var/run/secrets/agentrun"

struct ar_k8s_options {
	const char *namespace;	   /* NULL: the policy name */
	bool no_namespace;	   /* do not emit the Namespace object */
	const char *runtime_class; /* NULL: none */
	bool cilium;		   /* also a CiliumNetworkPolicy with toFQDNs */
	bool json;		   /* a v1/List instead of a YAML stream */
};

/* Parse "k8s" or "k8s-json" into AR_RENDER_K8S / AR_RENDER_K8S_JSON; -1 otherwise. */
int ar_render_k8s_format_parse(const char *s, enum ar_render_format *out);

/* Render the objects of the spec (ar_spec_build_container) and its policy into out. Fails naming
 * the field when no agent image is known or the namespace/runtime class is not a DNS label. */
struct ar_spec;
int ar_render_k8s(const struct ar_spec *sp, const struct ar_render_options *o,
		  const struct ar_k8s_options *k, struct ar_buf *out, ar_error_t *err);

#endif

/* Shared between the Kubernetes checks (src/check/k8s*.c). */
#ifndef AGENTRUN_CHECK_K8S_CHECK_H
#define AGENTRUN_CHECK_K8S_CHECK_H

#include <cjson/cJSON.h>

#include "agentrun/check.h"
#include "agentrun/k8s.h"

struct kctx {
	const struct ar_policy *p;
	const struct ar_spec *sp; /* what the agent container must get */
	struct ar_findings *out;
	const cJSON *objects; /* everything read, for NetworkPolicies */
	enum ar_k8s_subject kind;
	const cJSON *obj;    /* the workload checked */
	const char *path;    /* its pod spec: "spec", "spec.template.spec", ... */
	const cJSON *ps;     /* the pod spec */
	const cJSON *labels; /* the pods' labels */
	const char *ns;
	const cJSON *agent; /* the container named agent, else the first */
};

/* Dotted lookups through objects ("spec.template.spec"); NULL when absent. */
const cJSON *k8s_get(const cJSON *o, const char *dotted);
const char *k8s_str(const cJSON *o, const char *dotted);
int k8s_bool(const cJSON *o, const char *dotted); /* 1, 0, -1 absent */
void k8s_add(struct kctx *c, const char *what, const char *expected, const char *actual,
	     const char *fix_fmt, ...) __attribute__((format(printf, 5, 6)));

/* src/check/k8s_container.c */
void k8s_check_containers(struct kctx *c); /* securityContext of every container */
void k8s_check_agent(struct kctx *c);	   /* limits, tmpfs, mounts, env of the agent */
/* A Kubernetes quantity ("256Mi", "0.5", "500m", 1e3) in bytes (cpu false) or
 * thousandths (cpu true), rounded up. Returns 0 or -1. */
int k8s_quantity(const cJSON *v, bool cpu, int64_t *out);

void k8s_check_netpol(struct kctx *c);

#endif

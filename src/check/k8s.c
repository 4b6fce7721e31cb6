/* Kubernetes expectations: the policy (as `render --format k8s` writes it) against a pod
 * spec, from `kubectl get pod -o json` or a manifest. Pod-level, per-container and
 * agent-container expectations are tables of small functions; findings come out in
 * table order and their fix is the manifest field to set. See docs/k8s.md. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/k8s.h"
#include "internal.h"

/* Where a workload keeps its pod spec. */
static const struct {
	const char *kind;
	const char *spec;
} workloads[] = {
    {"Pod", "spec"},
    {"Job", "spec.template.spec"},
    {"CronJob", "spec.jobTemplate.spec.template.spec"},
    {"Deployment", "spec.template.spec"},
    {"StatefulSet", "spec.template.spec"},
    {"DaemonSet", "spec.template.spec"},
    {"ReplicaSet", "spec.template.spec"},
};

const cJSON *k8s_get(const cJSON *o, const char *dotted)
{
	char key[128];
	while (o != NULL && *dotted) {
		size_t n = strcspn(dotted, ".");
		snprintf(key, sizeof(key), "%.*s", (int)n, dotted);
		o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
		dotted += n + (dotted[n] == '.');
	}
	return o;
}

const char *k8s_str(const cJSON *o, const char *dotted)
{
	const cJSON *v = k8s_get(o, dotted);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* 1 true, 0 false, -1 absent or not a boolean. */
int k8s_bool(const cJSON *o, const char *dotted)
{
	const cJSON *v = k8s_get(o, dotted);
	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
}

void k8s_add(struct kctx *c, const char *what, const char *expected, const char *actual,
	     const char *fix_fmt, ...)
{
	va_list ap;
	ar_autobuf struct ar_buf fix = {0};
	va_start(ap, fix_fmt);
	ar_buf_vprintf(&fix, fix_fmt, ap);
	va_end(ap);
	ar_findings_add(c->out, what, expected, actual, fix.data);
}

/* A label's value: label keys have dots, so no dotted lookup. */
static const char *label(const cJSON *labels, const char *key)
{
	const cJSON *v =
	    cJSON_IsObject(labels) ? cJSON_GetObjectItemCaseSensitive(labels, key) : NULL;
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- pod-level ---- */

static void check_host_namespaces(struct kctx *c)
{
	static const char *const fields[] = {"hostNetwork", "hostPID", "hostIPC"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(fields); i++)
		if (k8s_bool(c->ps, fields[i]) == 1)
			k8s_add(c, fields[i], "false", "true", "%s.%s: false", c->path, fields[i]);
}

static void check_default_false(struct kctx *c, const char *field, const char *why)
{
	int v = k8s_bool(c->ps, field);
	if (v != 0)
		k8s_add(c, field, "false", v == 1 ? "true" : "unset (true)", "%s.%s: false%s",
			c->path, field, why);
}

static void check_token(struct kctx *c)
{
	check_default_false(c, "automountServiceAccountToken",
			    " (a projected token volume where the agent needs the API)");
}

static void check_service_links(struct kctx *c)
{
	check_default_false(c, "enableServiceLinks", "");
}

static void check_host_paths(struct kctx *c)
{
	const cJSON *v;
	cJSON_ArrayForEach(v, k8s_get(c->ps, "volumes"))
	{
		const char *path = k8s_str(v, "hostPath.path");
		if (path == NULL)
			continue;
		const char *name = k8s_str(v, "name");
		ar_autofree char *what = ar_xasprintf("hostPath volume %s", name ? name : "?");
		k8s_add(c, what, "absent", path,
			"remove volume %s from %s.volumes (a PersistentVolumeClaim or emptyDir "
			"instead)",
			name ? name : "?", c->path);
	}
}

static const cJSON *find_named(const cJSON *list, const char *name)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, list)
	{
		const char *n = k8s_str(it, "name");
		if (n != NULL && strcmp(n, name) == 0)
			return it;
	}
	return NULL;
}

static void check_network_policy(struct kctx *c)
{
	if (c->kind == AR_K8S_MANIFEST)
		k8s_check_netpol(c);
}

static const struct {
	void (*fn)(struct kctx *c);
} pod_checks[] = {
    {check_host_namespaces}, {check_token},	{check_service_links},	{check_host_paths},
    {k8s_check_containers},  {k8s_check_agent}, {check_network_policy},
};

/* ---- the subject ---- */

static const char *pod_spec_path(const cJSON *o)
{
	const char *kind = k8s_str(o, "kind");
	for (size_t i = 0; kind != NULL && i < AR_ARRAY_SIZE(workloads); i++)
		if (strcmp(kind, workloads[i].kind) == 0 &&
		    cJSON_IsObject(k8s_get(o, workloads[i].spec)))
			return workloads[i].spec;
	return NULL;
}

/* The labels of the pods: Pod metadata.labels, else the template's beside the spec. */
static void labels_path(const char *spec_path, char *path, size_t size)
{
	size_t n = strlen(spec_path);
	snprintf(path, size, "%.*smetadata.labels", (int)(n - 4), spec_path);
}

static const cJSON *pod_labels(const cJSON *o, const char *spec_path)
{
	char path[128];
	labels_path(spec_path, path, sizeof(path));
	return k8s_get(o, path);
}

/* The agent's workload: labelled component=agent if any, else the first workload. */
static const cJSON *find_subject(const cJSON *objects, enum ar_k8s_subject kind)
{
	const cJSON *first = NULL, *o;
	cJSON_ArrayForEach(o, objects)
	{
		const char *spec = pod_spec_path(o);
		if (spec == NULL || (kind == AR_K8S_POD && strcmp(spec, "spec") != 0))
			continue;
		const char *comp = label(pod_labels(o, spec), AR_K8S_LABEL_COMPONENT);
		if (comp != NULL && strcmp(comp, "agent") == 0)
			return o;
		if (first == NULL)
			first = o;
	}
	return first;
}

int ar_check_k8s(const struct ar_spec *sp, const cJSON *objects, enum ar_k8s_subject kind,
		 struct ar_findings *out, char **subject, ar_error_t *err)
{
	const struct ar_policy *p = sp->p;
	const cJSON *o = find_subject(objects, kind);
	if (o == NULL)
		return ar_error_make(
		    err, 0, "%s",
		    kind == AR_K8S_POD ? "no Pod in the input (give `kubectl get pod NAME -o json`)"
				       : "no workload with a pod spec (Pod, Job, CronJob, "
					 "Deployment, StatefulSet, DaemonSet, ReplicaSet)");
	struct kctx c = {.p = p, .sp = sp, .out = out, .objects = objects, .kind = kind, .obj = o};
	c.path = pod_spec_path(o);
	c.ps = k8s_get(o, c.path);
	c.labels = pod_labels(o, c.path);
	c.ns = k8s_str(o, "metadata.namespace");
	c.agent = find_named(k8s_get(c.ps, "containers"), AR_K8S_AGENT_CONTAINER);
	if (c.agent == NULL)
		c.agent = cJSON_GetArrayItem(k8s_get(c.ps, "containers"), 0);
	if (c.agent == NULL)
		return ar_error_make(err, 0, "%s %s: %s.containers is empty or missing",
				     k8s_str(o, "kind"), k8s_str(o, "metadata.name") ?: "?",
				     c.path);
	for (size_t i = 0; i < AR_ARRAY_SIZE(pod_checks); i++)
		pod_checks[i].fn(&c);
	*subject = ar_xasprintf("%s/%s", k8s_str(o, "kind"), k8s_str(o, "metadata.name") ?: "?");
	return 0;
}

/* ---- NetworkPolicy (manifests) ---- */

/* matchLabels all present in the pod's labels; an empty selector selects every pod.
 * matchExpressions cannot be judged here and count as selecting. */
static bool selects(const cJSON *np, const cJSON *labels)
{
	const cJSON *want = k8s_get(np, "spec.podSelector.matchLabels"), *l;
	cJSON_ArrayForEach(l, want)
	{
		const char *have = label(labels, l->string);
		if (!cJSON_IsString(l) || have == NULL || strcmp(have, l->valuestring) != 0)
			return false;
	}
	return true;
}

static bool limits_egress(const cJSON *np)
{
	const cJSON *types = k8s_get(np, "spec.policyTypes"), *t;
	if (types == NULL)
		return k8s_get(np, "spec.egress") != NULL;
	cJSON_ArrayForEach(t, types) if (cJSON_IsString(t) &&
					 strcmp(t->valuestring, "Egress") == 0) return true;
	return false;
}

/* What a proxy-network agent must not have: a rule to anywhere or to addresses. */
static const char *wide_rule(const cJSON *rule)
{
	const cJSON *to = k8s_get(rule, "to"), *peer;
	if (cJSON_GetArraySize(to) == 0)
		return "to anywhere";
	cJSON_ArrayForEach(peer, to) if (k8s_get(peer, "ipBlock") != NULL) return "to an ipBlock";
	return NULL;
}

static void check_egress_rules(struct kctx *c, const cJSON *np)
{
	const char *name = k8s_str(np, "metadata.name") ?: "?";
	const cJSON *rule;
	cJSON_ArrayForEach(rule, k8s_get(np, "spec.egress"))
	{
		const char *wide = c->p->network == AR_NETWORK_NONE ? "a rule" : wide_rule(rule);
		if (wide == NULL)
			continue;
		ar_autofree char *what = ar_xasprintf("NetworkPolicy %s egress", name);
		k8s_add(c, what,
			c->p->network == AR_NETWORK_NONE ? "none (network none)"
							 : "the proxy pods and DNS only",
			wide, "remove the rule from NetworkPolicy %s spec.egress", name);
	}
}

void k8s_check_netpol(struct kctx *c)
{
	bool found = false;
	const cJSON *o;
	cJSON_ArrayForEach(o, c->objects)
	{
		const char *kind = k8s_str(o, "kind"), *ns = k8s_str(o, "metadata.namespace");
		if (kind == NULL || strcmp(kind, "NetworkPolicy") != 0 ||
		    (ns != NULL && c->ns != NULL && strcmp(ns, c->ns) != 0) ||
		    !selects(o, c->labels) || !limits_egress(o))
			continue;
		found = true;
		check_egress_rules(c, o);
	}
	char path[128];
	labels_path(c->path, path, sizeof(path));
	if (!found)
		k8s_add(c, "NetworkPolicy", "egress limited for the pod's labels", "none",
			"a NetworkPolicy with spec.podSelector.matchLabels from %s and "
			"policyTypes [Egress] (agentrun render --format k8s writes %s)",
			path, c->p->agent_name);
}

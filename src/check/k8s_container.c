/* Kubernetes container expectations: every container's securityContext (the pod's as
 * the default, the container's winning), and the agent container's limits, tmpfs,
 * mounts and environment. Secret values are never copied into findings. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct cctx {
	struct kctx *k;
	const cJSON *ctr;
	char who[96];	/* "container agent" */
	char path[192]; /* "spec.template.spec.containers[agent]" */
};

/* The container's securityContext field, else the pod's. */
static const cJSON *effective(const struct cctx *c, const char *field)
{
	char key[96];
	snprintf(key, sizeof(key), "securityContext.%s", field);
	const cJSON *v = k8s_get(c->ctr, key);
	return v != NULL ? v : k8s_get(c->k->ps, key);
}

static void cadd(const struct cctx *c, const char *field, const char *expected, const char *actual,
		 const char *fix_value)
{
	ar_autofree char *what = ar_xasprintf("%s %s", c->who, field);
	k8s_add(c->k, what, expected, actual, "%s.securityContext.%s: %s", c->path, field,
		fix_value);
}

static void want_bool(const struct cctx *c, const char *field, bool want, const char *dflt)
{
	const cJSON *v = k8s_get(c->ctr, "securityContext");
	v = k8s_get(v, field);
	if (cJSON_IsBool(v) && cJSON_IsTrue(v) == want)
		return;
	if (v == NULL && dflt == NULL)
		return; /* absent is the safe default */
	const char *actual = cJSON_IsBool(v) ? (cJSON_IsTrue(v) ? "true" : "false")
			     : v == NULL     ? dflt
					     : "not a boolean";
	cadd(c, field, want ? "true" : "false", actual, want ? "true" : "false");
}

static void check_privileged(const struct cctx *c)
{
	want_bool(c, "privileged", false, NULL);
	want_bool(c, "allowPrivilegeEscalation", false, "unset (true)");
	want_bool(c, "readOnlyRootFilesystem", true, "unset (false)");
}

static char *join(const cJSON *list, const char *sep)
{
	ar_autobuf struct ar_buf b = {0};
	const cJSON *it;
	cJSON_ArrayForEach(it, list)
	{
		if (!cJSON_IsString(it))
			continue;
		if (b.len)
			ar_buf_puts(&b, sep);
		ar_buf_puts(&b, it->valuestring);
	}
	return b.len ? ar_buf_steal(&b) : ar_xstrdup("none");
}

static void check_caps(const struct cctx *c)
{
	const cJSON *drop = k8s_get(c->ctr, "securityContext.capabilities.drop");
	const cJSON *add = k8s_get(c->ctr, "securityContext.capabilities.add"), *it;
	bool all = false;
	cJSON_ArrayForEach(it, drop) all |=
	    cJSON_IsString(it) && strcmp(it->valuestring, "ALL") == 0;
	if (!all) {
		ar_autofree char *have = join(drop, ",");
		cadd(c, "capabilities.drop", "ALL", have, "[ALL]");
	}
	if (cJSON_GetArraySize(add) > 0) {
		ar_autofree char *have = join(add, ",");
		cadd(c, "capabilities.add", "none", have, "[] (remove the list)");
	}
}

static void check_non_root(const struct cctx *c)
{
	const cJSON *v = effective(c, "runAsNonRoot");
	if (!cJSON_IsTrue(v))
		cadd(c, "runAsNonRoot", "true", cJSON_IsFalse(v) ? "false" : "unset", "true");
}

static void check_id(const struct cctx *c, const char *field, int64_t want)
{
	const cJSON *v = effective(c, field);
	if (cJSON_IsNumber(v) && v->valuedouble == (double)want)
		return;
	char actual[64], fix[32];
	if (cJSON_IsNumber(v))
		snprintf(actual, sizeof(actual), "%.0f", v->valuedouble);
	else
		snprintf(actual, sizeof(actual), "unset (the image's)");
	snprintf(fix, sizeof(fix), "%" PRId64, want);
	cadd(c, field, fix, actual, fix);
}

static void check_ids(const struct cctx *c)
{
	check_id(c, "runAsUser", c->k->sp->uid);
	check_id(c, "runAsGroup", c->k->sp->gid);
}

static void check_seccomp(const struct cctx *c)
{
	const char *seccomp = c->k->sp->seccomp;
	if (seccomp != NULL && strcmp(seccomp, "unconfined") == 0)
		return;
	const cJSON *prof = effective(c, "seccompProfile");
	const char *type = k8s_str(prof, "type"), *local = k8s_str(prof, "localhostProfile");
	bool custom = seccomp != NULL && strcmp(seccomp, "default") != 0;
	const char *base = custom ? strrchr(seccomp, '/') : NULL;
	base = base != NULL ? base + 1 : seccomp;
	ar_autofree char *want =
	    custom ? ar_xasprintf("Localhost agentrun/%s", base) : ar_xstrdup("RuntimeDefault");
	if (type != NULL && strcmp(type, "Localhost") == 0 && local != NULL) {
		const char *lb = strrchr(local, '/');
		lb = lb != NULL ? lb + 1 : local;
		if (!custom || strcmp(lb, base) == 0)
			return;
	} else if (type != NULL && strcmp(type, "RuntimeDefault") == 0 && !custom) {
		return;
	}
	ar_autofree char *actual = type == NULL	   ? ar_xstrdup("unset (Unconfined)")
				   : local != NULL ? ar_xasprintf("%s %s", type, local)
						   : ar_xstrdup(type);
	ar_autofree char *fix = custom ? ar_xasprintf("{type: Localhost, localhostProfile: "
						      "agentrun/%s}",
						      base)
				       : ar_xstrdup("{type: RuntimeDefault}");
	cadd(c, "seccompProfile", want, actual, fix);
}

static void (*const container_checks[])(const struct cctx *c) = {
    check_privileged, check_caps, check_non_root, check_ids, check_seccomp,
};

void k8s_check_containers(struct kctx *k)
{
	static const char *const lists[] = {"initContainers", "containers"};
	for (size_t l = 0; l < AR_ARRAY_SIZE(lists); l++) {
		const cJSON *ctr;
		cJSON_ArrayForEach(ctr, k8s_get(k->ps, lists[l]))
		{
			struct cctx c = {.k = k, .ctr = ctr};
			const char *name = k8s_str(ctr, "name") ?: "?";
			snprintf(c.who, sizeof(c.who), "%s %s",
				 l == 0 ? "init container" : "container", name);
			snprintf(c.path, sizeof(c.path), "%s.%s[%s]", k->path, lists[l], name);
			for (size_t i = 0; i < AR_ARRAY_SIZE(container_checks); i++)
				container_checks[i](&c);
		}
	}
}

/* ---- quantities ---- */

static const struct {
	const char *suffix;
	double factor;
} suffixes[] = {
    {"Ki", 1024.0},
    {"Mi", 1048576.0},
    {"Gi", 1073741824.0},
    {"Ti", 1099511627776.0},
    {"Pi", 1125899906842624.0},
    {"Ei", 1152921504606846976.0},
    {"m", 1e-3},
    {"k", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"E", 1e18},
    {"", 1.0},
};

int k8s_quantity(const cJSON *v, bool cpu, int64_t *out)
{
	double x;
	if (cJSON_IsNumber(v)) {
		x = v->valuedouble;
	} else if (cJSON_IsString(v) && v->valuestring[0] != '\0' &&
		   (isdigit((unsigned char)v->valuestring[0]) || v->valuestring[0] == '.')) {
		char *end;
		x = strtod(v->valuestring, &end);
		size_t i = 0;
		while (i < AR_ARRAY_SIZE(suffixes) && strcmp(end, suffixes[i].suffix) != 0)
			i++;
		if (i == AR_ARRAY_SIZE(suffixes))
			return -1;
		x *= suffixes[i].factor;
	} else {
		return -1;
	}
	/* rounded up (a ceil without libm, which agentrun does not load) */
	x = x * (cpu ? 1000.0 : 1.0) - 1e-9;
	if (!(x > -1.0 && x < 9.2e18))
		return -1;
	int64_t n = (int64_t)x;
	*out = (double)n < x ? n + 1 : n;
	return 0;
}

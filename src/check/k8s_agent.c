/* Kubernetes expectations on the agent container (named `agent`, else the first):
 * resource limits, a memory emptyDir per tmpfs, the kubeconfig and policy mounts, the
 * proxy variables and policy env, and no literal secrets in env. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/spec.h"
#include "internal.h"

#define NO_VALUE "(valueFrom)"

static void ctr_path(const struct kctx *c, char *buf, size_t size)
{
	snprintf(buf, size, "%s.containers[%s]", c->path, k8s_str(c->agent, "name") ?: "?");
}

static void check_limit(struct kctx *c, const char *res, int64_t want, const char *want_text)
{
	char key[64], path[192], actual[64];
	snprintf(key, sizeof(key), "resources.limits.%s", res);
	const cJSON *v = k8s_get(c->agent, key);
	int64_t have;
	bool cpu = strcmp(res, "cpu") == 0;
	if (v != NULL && k8s_quantity(v, cpu, &have) == 0 && have == want)
		return;
	if (v == NULL)
		snprintf(actual, sizeof(actual), "unlimited");
	else if (cJSON_IsString(v))
		snprintf(actual, sizeof(actual), "%.60s", v->valuestring);
	else
		snprintf(actual, sizeof(actual), "%.0f", cJSON_IsNumber(v) ? v->valuedouble : -1.0);
	ctr_path(c, path, sizeof(path));
	ar_autofree char *what = ar_xasprintf("%s limit", cpu ? "cpu" : "memory");
	k8s_add(c, what, want_text, actual, "%s.resources.limits.%s: %s", path, res, want_text);
}

static void quantity_text(int64_t v, bool cpu, char *out, size_t size)
{
	if (cpu)
		snprintf(out, size, v % 1000 ? "%" PRId64 "m" : "%" PRId64,
			 v % 1000 ? v : v / 1000);
	else if (v % 1048576 == 0)
		snprintf(out, size, "%" PRId64 "Mi", v / 1048576);
	else
		snprintf(out, size, "%" PRId64, v);
}

static void check_limits(struct kctx *c)
{
	char mem[32], cpu[32];
	quantity_text(c->sp->limits.memory, false, mem, sizeof(mem));
	quantity_text(c->sp->limits.cpus_milli, true, cpu, sizeof(cpu));
	check_limit(c, "memory", c->sp->limits.memory, mem);
	check_limit(c, "cpu", c->sp->limits.cpus_milli, cpu);
}

/* The agent's volumeMount at path (the last one wins, as in the kernel) and its volume. */
static const cJSON *mount_at(const struct kctx *c, const char *path, const cJSON **volume)
{
	const cJSON *m, *found = NULL;
	cJSON_ArrayForEach(m, k8s_get(c->agent, "volumeMounts"))
	{
		const char *mp = k8s_str(m, "mountPath");
		if (mp != NULL && strcmp(mp, path) == 0)
			found = m;
	}
	*volume = NULL;
	const char *name = k8s_str(found, "name");
	const cJSON *v;
	cJSON_ArrayForEach(v, k8s_get(c->ps, "volumes"))
	{
		const char *vn = k8s_str(v, "name");
		if (name != NULL && vn != NULL && strcmp(vn, name) == 0)
			*volume = v;
	}
	return found;
}

static const char *volume_type(const cJSON *v)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, v) if (strcmp(it->string, "name") != 0) return it->string;
	return "?";
}

static void check_tmpfs(struct kctx *c)
{
	char path[192];
	ctr_path(c, path, sizeof(path));
	for (size_t i = 0; i < c->sp->n_mounts; i++) {
		const char *t = c->sp->mounts[i].target;
		if (c->sp->mounts[i].kind != AR_SPEC_MNT_TMPFS)
			continue;
		const cJSON *vol;
		const cJSON *m = mount_at(c, t, &vol);
		const char *medium = k8s_str(vol, "emptyDir.medium");
		if (medium != NULL && strcmp(medium, "Memory") == 0 && k8s_bool(m, "readOnly") != 1)
			continue;
		ar_autofree char *what = ar_xasprintf("tmpfs %s", t);
		ar_autofree char *actual =
		    m == NULL	  ? ar_xstrdup("absent")
		    : vol == NULL ? ar_xstrdup("no such volume")
		    : k8s_get(vol, "emptyDir") != NULL
			? ar_xstrdup(k8s_bool(m, "readOnly") == 1 ? "emptyDir read-only"
								  : "emptyDir")
			: ar_xstrdup(volume_type(vol));
		k8s_add(c, what, "emptyDir Memory", actual,
			"%s.volumes: {emptyDir: {medium: Memory}} mounted at %s.volumeMounts "
			"mountPath %s",
			c->path, path, t);
	}
}

static void check_mount(struct kctx *c, const char *what, const char *target, bool ro)
{
	char path[192];
	ctr_path(c, path, sizeof(path));
	const cJSON *vol;
	const cJSON *m = mount_at(c, target, &vol);
	bool have_ro = k8s_bool(m, "readOnly") == 1;
	if (m != NULL && vol != NULL && have_ro == ro)
		return;
	const char *want = ro ? "read-only" : "read-write";
	k8s_add(c, what, want,
		m == NULL     ? "absent"
		: vol == NULL ? "no such volume"
		: have_ro     ? "read-only"
			      : "read-write",
		"%s.volumeMounts: {mountPath: %s, readOnly: %s}", path, target,
		ro ? "true" : "false");
}

/* The spec's kubeconfig first, then its binds (the CA bundle's is secrets': k8s renders
 * no secrets). */
static void check_mounts(struct kctx *c)
{
	const struct ar_spec *sp = c->sp;
	if (sp->kubeconfig_mount >= 0)
		check_mount(c, "kubeconfig mount", sp->mounts[sp->kubeconfig_mount].target, true);
	for (size_t i = 0; i < sp->n_mounts; i++) {
		const struct ar_spec_mount *m = &sp->mounts[i];
		if (!ar_spec_policy_bind(sp, i))
			continue;
		ar_autofree char *what = ar_xasprintf("mount %s", m->target);
		check_mount(c, what, m->target, m->readonly);
	}
}

/* The agent's env entry by name: its literal value, NO_VALUE for valueFrom, or NULL. */
static const char *env_value(const struct kctx *c, const char *name)
{
	const cJSON *e, *found = NULL;
	cJSON_ArrayForEach(e, k8s_get(c->agent, "env"))
	{
		const char *n = k8s_str(e, "name");
		if (n != NULL && strcmp(n, name) == 0)
			found = e;
	}
	if (found == NULL)
		return NULL;
	const char *v = k8s_str(found, "value");
	return v != NULL ? v : k8s_get(found, "valueFrom") != NULL ? NO_VALUE : "";
}

static void check_env_one(struct kctx *c, const char *name, const char *want)
{
	const char *have = env_value(c, name);
	if (want == NULL ? have == NULL : have != NULL && strcmp(have, want) == 0)
		return;
	char path[192];
	ctr_path(c, path, sizeof(path));
	bool hide = ar_check_is_secret_name(name);
	ar_autofree char *what = ar_xasprintf("env %s", name);
	const char *actual = have == NULL ? "unset" : hide ? "(hidden)" : have;
	if (want == NULL) {
		k8s_add(c, what, "unset", actual, "remove %s from %s.env", name, path);
		return;
	}
	k8s_add(c, what, hide ? "(hidden)" : want, actual, "%s.env: {name: %s, value: %s}", path,
		name, hide ? "..." : want);
}

/* The spec's container environment: the proxy URL variables (unset without the proxy),
 * then the rest but NO_PROXY (no confinement) and what secrets put there (by shape,
 * check_secrets). */
static void check_env(struct kctx *c)
{
	char *const *want = c->sp->container_env;
	for (size_t i = 0; i < AR_PROXY_ENV_N_URL; i++)
		check_env_one(c, ar_proxy_env_url_vars[i],
			      ar_check_env_get(want, ar_proxy_env_url_vars[i]));
	for (char *const *e = want; *e != NULL; e++) {
		const char *eq = strchr(*e, '=');
		ar_autofree char *key = ar_xstrndup(*e, (size_t)(eq - *e));
		if (!ar_proxy_env_is_proxy_var(key) && !ar_spec_env_from_secrets(c->p, key))
			check_env_one(c, key, eq + 1);
	}
}

/* Literal values only: valueFrom (secretKeyRef, a mounted Secret) is the fix. */
static void check_secrets(struct kctx *c)
{
	ar_autostrv char **env = ar_xcalloc(1, sizeof(char *));
	size_t n = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, k8s_get(c->agent, "env"))
	{
		const char *name = k8s_str(e, "name"), *value = k8s_str(e, "value");
		if (name == NULL || value == NULL)
			continue;
		/* a policy secret's value is looked at (a placeholder, or a real value: drift,
		 * never shown); others by name alone */
		bool secret = false;
		for (size_t i = 0; i < c->p->n_secrets && !secret; i++)
			secret = strcmp(c->p->secrets[i].name, name) == 0;
		env = ar_xrealloc(env, (n + 2) * sizeof(char *));
		env[n++] = ar_xasprintf("%s=%s", name, secret ? value : "");
		env[n] = NULL;
	}
	char path[192], fmt[320];
	ctr_path(c, path, sizeof(path));
	/* the path goes into a format string: no % may survive in it */
	for (char *q = path; *q; q++)
		if (*q == '%')
			*q = '_';
	snprintf(fmt, sizeof(fmt),
		 "%s.env: {name: %%s, valueFrom: {secretKeyRef: ...}} instead of a literal "
		 "value",
		 path);
	ar_findings_add_secrets(c->out, c->p, env, fmt);
}

void k8s_check_agent(struct kctx *c)
{
	check_limits(c);
	check_tmpfs(c);
	check_mounts(c);
	check_env(c);
	check_secrets(c);
}

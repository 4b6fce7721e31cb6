/* Seccomp profile -> runtime-spec `linux.seccomp`. The profile is read with cJSON (it is
 * a reader of a profile, like src/sandbox/'s loader) and written back field by field:
 * runtime-spec keys are copied, docker's archMap and `name` are converted, docker's
 * conditional entries (includes/excludes) have no runtime-spec meaning and are refused
 * rather than silently dropped. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "oci_seccomp.h"

#define MAX_NESTING 8

static const char *const top_keys[] = {"defaultAction", "defaultErrnoRet", "architectures",
				       "flags",		"listenerPath",	   "listenerMetadata"};
static const char *const syscall_keys[] = {"names", "action", "errnoRet", "args"};

static void cleanup_cjsonp(cJSON **j)
{
	cJSON_Delete(*j);
}
#define autocjson __attribute__((cleanup(cleanup_cjsonp)))

static bool in_table(const char *const *table, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(table[i], key) == 0)
			return true;
	return false;
}

static int emit_number(struct jw *w, const char *key, const cJSON *v, const char *where,
		       ar_error_t *err)
{
	double d = v->valuedouble;
	/* beyond 2^53 cJSON's double is no longer the value that was written */
	if (d > 9007199254740992.0 || d < -9007199254740992.0 || (double)(int64_t)d != d)
		return ar_error_make(err, 0, "%s: number %s cannot be carried exactly", where,
				     v->string != NULL ? v->string : "value");
	ar_jw_int(w, key, (int64_t)d);
	return 0;
}

static int emit_value(struct jw *w, const char *key, const cJSON *v, int depth, const char *where,
		      ar_error_t *err)
{
	if (depth > MAX_NESTING)
		return ar_error_make(err, 0, "%s: nested too deeply", where);
	if (cJSON_IsString(v))
		ar_jw_str(w, key, v->valuestring);
	else if (cJSON_IsNumber(v))
		return emit_number(w, key, v, where, err);
	else if (cJSON_IsBool(v))
		ar_jw_bool(w, key, cJSON_IsTrue(v));
	else if (cJSON_IsNull(v))
		ar_jw_raw(w, key, "null");
	else {
		bool obj = cJSON_IsObject(v);
		ar_jw_open(w, key, obj ? '{' : '[');
		for (const cJSON *c = v->child; c != NULL; c = c->next)
			if (emit_value(w, obj ? c->string : NULL, c, depth + 1, where, err) < 0)
				return -1;
		ar_jw_close(w, obj ? '}' : ']');
	}
	return 0;
}

/* docker: [{"architecture": A, "subArchitectures": [B, C]}] -> [A, B, C] */
static int emit_arch_map(struct jw *w, const cJSON *map, const char *origin, ar_error_t *err)
{
	if (!cJSON_IsArray(map))
		return ar_error_make(err, 0, "%s: archMap: expected an array", origin);
	ar_jw_open(w, "architectures", '[');
	for (const cJSON *e = map->child; e != NULL; e = e->next) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "architecture");
		if (!cJSON_IsString(a))
			return ar_error_make(err, 0, "%s: archMap: entry without `architecture`",
					     origin);
		ar_jw_str(w, NULL, a->valuestring);
		const cJSON *subs = cJSON_GetObjectItemCaseSensitive(e, "subArchitectures");
		for (const cJSON *s = cJSON_IsArray(subs) ? subs->child : NULL; s; s = s->next)
			if (cJSON_IsString(s))
				ar_jw_str(w, NULL, s->valuestring);
	}
	ar_jw_close(w, ']');
	return 0;
}

static bool empty_condition(const cJSON *c)
{
	return c == NULL || cJSON_IsNull(c) || (cJSON_IsObject(c) && c->child == NULL);
}

static int emit_syscall(struct jw *w, const cJSON *sc, const char *origin, int idx, ar_error_t *err)
{
	char where[512];
	snprintf(where, sizeof(where), "%s: syscalls[%d]", origin, idx);
	if (!cJSON_IsObject(sc))
		return ar_error_make(err, 0, "%s: expected an object", where);
	ar_jw_open(w, NULL, '{');
	for (const cJSON *c = sc->child; c != NULL; c = c->next) {
		if (in_table(syscall_keys, AR_ARRAY_SIZE(syscall_keys), c->string)) {
			if (emit_value(w, c->string, c, 1, where, err) < 0)
				return -1;
		} else if (strcmp(c->string, "name") == 0 && cJSON_IsString(c)) {
			const char *one = c->valuestring;
			ar_jw_strv(w, "names", &one, 1);
		} else if (strcmp(c->string, "includes") == 0 ||
			   strcmp(c->string, "excludes") == 0) {
			if (!empty_condition(c))
				return ar_error_make(err, 0,
						     "%s.%s: docker-only condition, no "
						     "runtime-spec equivalent; write the "
						     "profile in runtime-spec form",
						     where, c->string);
		} else if (strcmp(c->string, "comment") != 0) {
			return ar_error_make(err, 0, "%s: unknown key `%s`", where, c->string);
		}
	}
	ar_jw_close(w, '}');
	return 0;
}

static int emit_member(struct jw *w, const cJSON *c, const char *origin, ar_error_t *err)
{
	if (in_table(top_keys, AR_ARRAY_SIZE(top_keys), c->string))
		return emit_value(w, c->string, c, 1, origin, err);
	if (strcmp(c->string, "archMap") == 0)
		return emit_arch_map(w, c, origin, err);
	if (strcmp(c->string, "syscalls") == 0) {
		if (!cJSON_IsArray(c))
			return ar_error_make(err, 0, "%s: syscalls: expected an array", origin);
		int i = 0;
		ar_jw_open(w, "syscalls", '[');
		for (const cJSON *sc = c->child; sc != NULL; sc = sc->next, i++)
			if (emit_syscall(w, sc, origin, i, err) < 0)
				return -1;
		ar_jw_close(w, ']');
		return 0;
	}
	if (strcmp(c->string, "comment") == 0)
		return 0;
	return ar_error_make(err, 0, "%s: unknown key `%s`", origin, c->string);
}

int ar_render_oci_seccomp(struct jw *w, const char *json, const char *origin, ar_error_t *err)
{
	autocjson cJSON *root = cJSON_ParseWithLength(json, strlen(json));
	if (root == NULL || !cJSON_IsObject(root))
		return ar_error_make(err, 0, "%s: not a JSON object", origin);
	if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "defaultAction")))
		return ar_error_make(err, 0, "%s: defaultAction: missing", origin);
	bool has_arches = cJSON_GetObjectItemCaseSensitive(root, "architectures") != NULL;
	ar_jw_open(w, "seccomp", '{');
	for (const cJSON *c = root->child; c != NULL; c = c->next) {
		if (has_arches && strcmp(c->string, "archMap") == 0)
			continue;
		if (emit_member(w, c, origin, err) < 0)
			return -1;
	}
	ar_jw_close(w, '}');
	return 0;
}

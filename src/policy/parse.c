/* The policy reader: JSON (cJSON, only here) into struct ar_policy. Every key has
 * a handler in a table; unknown keys, wrong types and bad values are errors that
 * name the origin and the key path ("p.json: limits.memory: ..."); null means
 * absent. Pure: no I/O. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agentrun/policy.h"
#include "agentrun/rules.h"
#include "agentrun/util.h"
#include "internal.h"

static void cleanup_cjsonp(cJSON **p)
{
	if (*p)
		cJSON_Delete(*p);
}
#define autojson __attribute__((cleanup(cleanup_cjsonp)))

/* Parse state: where we are and what was seen, for messages and defaults. */
struct pctx {
	const char *origin;
	ar_error_t *err;
	struct ar_policy *p;
	bool network_set;
};

typedef int (*field_fn)(struct pctx *c, const cJSON *v, const char *path, void *target);
struct field {
	const char *key;
	field_fn fn;
};

static int perr(struct pctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int perr(struct pctx *c, const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	policy_verror(c->err, c->origin, path, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *json_type(const cJSON *v)
{
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsBool(v))
		return "boolean";
	if (cJSON_IsNumber(v))
		return "number";
	if (cJSON_IsString(v))
		return "string";
	if (cJSON_IsArray(v))
		return "array";
	if (cJSON_IsObject(v))
		return "object";
	return "invalid value";
}

static int type_err(struct pctx *c, const char *path, const char *want, const cJSON *v)
{
	return perr(c, path, "expected %s, got %s", want, json_type(v));
}

/* A JSON number as text, for messages and for values kept "as written". */
static char *number_text(const cJSON *v)
{
	return ar_xasprintf("%.15g", v->valuedouble);
}

static int get_string(struct pctx *c, const cJSON *v, const char *path, const char **out)
{
	if (!cJSON_IsString(v))
		return type_err(c, path, "a string", v);
	*out = v->valuestring;
	return 0;
}

static int get_int(struct pctx *c, const cJSON *v, const char *path, int64_t min, int64_t max,
		   int64_t *out)
{
	if (!cJSON_IsNumber(v))
		return type_err(c, path, "a number", v);
	double d = v->valuedouble;
	if (!(d >= (double)min && d <= (double)max) || !ar_double_is_int(d)) {
		ar_autofree char *txt = number_text(v);
		return perr(c, path, "must be an integer from %lld to %lld, got %s", (long long)min,
			    (long long)max, txt);
	}
	*out = (int64_t)d;
	return 0;
}

static char *child_path(const char *prefix, const char *key)
{
	return prefix ? ar_xasprintf("%s.%s", prefix, key) : ar_xstrdup(key);
}

static int unknown_key(struct pctx *c, const char *path, const char *key,
		       const struct field *fields, size_t n_fields)
{
	struct ar_suggest s;
	ar_suggest_init(&s, key);
	for (size_t i = 0; i < n_fields; i++)
		ar_suggest_add(&s, fields[i].key);
	const char *near = ar_suggest_best(&s);
	if (near != NULL)
		return perr(c, path, "unknown key (did you mean \"%s\"?)", near);
	return perr(c, path, "unknown key");
}

/* Walk an object through a key table. cJSON keeps duplicate keys; the second one
 * is an error, not silently ignored. */
static int walk_object(struct pctx *c, const cJSON *obj, const char *prefix,
		       const struct field *fields, size_t n_fields, void *target)
{
	if (!cJSON_IsObject(obj))
		return type_err(c, prefix, "an object", obj);
	for (const cJSON *it = obj->child; it; it = it->next) {
		ar_autofree char *path = child_path(prefix, it->string);
		size_t i;
		for (i = 0; i < n_fields; i++)
			if (strcmp(fields[i].key, it->string) == 0)
				break;
		if (i == n_fields)
			return unknown_key(c, path, it->string, fields, n_fields);
		for (const cJSON *prev = obj->child; prev != it; prev = prev->next)
			if (strcmp(prev->string, it->string) == 0)
				return perr(c, path, "duplicate key");
		if (cJSON_IsNull(it))
			continue;
		if (fields[i].fn(c, it, path, target) == -1)
			return -1;
	}
	return 0;
}

static void replace_str(char **slot, const char *s)
{
	free(*slot);
	*slot = ar_xstrdup(s);
}

/* ---- top level ---------------------------------------------------------- */

static int f_name(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	const char *s = NULL;
	if (get_string(c, v, path, &s) == -1)
		return -1;
	if (!policy_name_valid(s))
		return perr(c, path, "must match %s", AR_POLICY_NAME_RE);
	replace_str(&c->p->name, s);
	return 0;
}

static int f_image(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	const char *s = NULL;
	if (get_string(c, v, path, &s) == -1)
		return -1;
	if (!policy_image_valid(s))
		return perr(c, path,
			    "must be a non-empty image reference without spaces, not starting "
			    "with '-'");
	replace_str(&c->p->image, s);
	return 0;
}

static int set_path(struct pctx *c, const cJSON *v, const char *path, enum path_use use,
		    char **slot)
{
	const char *s = NULL, *why = NULL;
	if (get_string(c, v, path, &s) == -1)
		return -1;
	char *norm = policy_path_normalize(s, use, &why);
	if (norm == NULL)
		return perr(c, path, "%s, got \"%s\"", why, s);
	free(*slot);
	*slot = norm;
	return 0;
}

static int f_rootfs(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	const char *s = NULL;
	if (get_string(c, v, path, &s) == -1)
		return -1;
	if (s[0] == '/' && s[strspn(s, "/")] == '\0')
		return perr(c, path,
			    "must not be \"/\" (leave it null for a read-only view of the host "
			    "root with sensitive places hidden)");
	return set_path(c, v, path, PATH_NOT_ROOT, &c->p->rootfs);
}

static int f_kubeconfig(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	return set_path(c, v, path, PATH_NOT_ROOT, &c->p->kubeconfig);
}

/* An array of strings; each element goes through `elem`, which may keep it. */
static int walk_strings(struct pctx *c, const cJSON *v, const char *path,
			int (*elem)(struct pctx *, const char *, const char *, char **),
			char ***out, size_t *n_out)
{
	if (!cJSON_IsArray(v))
		return type_err(c, path, "an array of strings", v);
	size_t n = (size_t)cJSON_GetArraySize(v), i = 0;
	char **list = ar_xcalloc(n + 1, sizeof(char *));
	for (const cJSON *it = v->child; it; it = it->next, i++) {
		ar_autofree char *ipath = ar_xasprintf("%s[%zu]", path, i);
		const char *s = NULL;
		if (get_string(c, it, ipath, &s) == -1 || elem(c, ipath, s, &list[i]) == -1) {
			ar_strv_free(list);
			return -1;
		}
	}
	ar_strv_free(*out);
	*out = list;
	*n_out = n;
	return 0;
}

static int host_elem(struct pctx *c, const char *path, const char *s, char **slot)
{
	/* the rules module judges the text; here it only has to be a non-empty string */
	if (s[0] == '\0')
		return perr(c, path, "must not be empty");
	*slot = ar_xstrdup(s);
	return 0;
}

static int f_allowed_hosts(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	return walk_strings(c, v, path, host_elem, &c->p->allowed_hosts, &c->p->n_allowed_hosts);
}

static int tmpfs_elem(struct pctx *c, const char *path, const char *s, char **slot)
{
	const char *why;
	*slot = policy_path_normalize(s, PATH_TMPFS, &why);
	if (*slot == NULL)
		return perr(c, path, "%s, got \"%s\"", why, s);
	return 0;
}

static int f_tmpfs(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	return walk_strings(c, v, path, tmpfs_elem, &c->p->tmpfs, &c->p->n_tmpfs);
}

/* ---- mounts ------------------------------------------------------------- */

static int m_source(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	return set_path(c, v, path, PATH_PLAIN, &((struct ar_mount *)t)->source);
}

static int m_target(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	return set_path(c, v, path, PATH_MOUNT_TARGET, &((struct ar_mount *)t)->target);
}

static int get_bool(struct pctx *c, const cJSON *v, const char *path, bool *out)
{
	if (!cJSON_IsBool(v))
		return type_err(c, path, "a boolean", v);
	*out = cJSON_IsTrue(v);
	return 0;
}

static int m_readonly(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	return get_bool(c, v, path, &((struct ar_mount *)t)->readonly);
}

static const struct field mount_fields[] = {
    {"source", m_source},
    {"target", m_target},
    {"readonly", m_readonly},
};

static void free_mounts(struct ar_mount *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].source);
		free(m[i].target);
	}
	free(m);
}

static int parse_mount(struct pctx *c, const cJSON *v, const char *path, struct ar_mount *m)
{
	m->readonly = true; /* credentials and data are read-only unless the policy says so */
	if (walk_object(c, v, path, mount_fields, AR_ARRAY_SIZE(mount_fields), m) == -1)
		return -1;
	if (m->source == NULL)
		return perr(c, path, "missing \"source\" (a mount needs source and target)");
	if (m->target == NULL)
		return perr(c, path, "missing \"target\" (a mount needs source and target)");
	return 0;
}

static int f_mounts(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	if (!cJSON_IsArray(v))
		return type_err(c, path, "an array of objects", v);
	size_t n = (size_t)cJSON_GetArraySize(v), i = 0;
	struct ar_mount *mounts = ar_xcalloc(n ? n : 1, sizeof(*mounts));
	for (const cJSON *it = v->child; it; it = it->next, i++) {
		ar_autofree char *ipath = ar_xasprintf("%s[%zu]", path, i);
		if (parse_mount(c, it, ipath, &mounts[i]) == -1) {
			free_mounts(mounts, n);
			return -1;
		}
	}
	free_mounts(c->p->mounts, c->p->n_mounts);
	c->p->mounts = mounts;
	c->p->n_mounts = n;
	return 0;
}

/* ---- limits ------------------------------------------------------------- */

static int l_pids(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	return get_int(c, v, path, 1, AR_POLICY_PIDS_MAX, &c->p->limits.pids);
}

/* memory and cpus accept a string or a number; both keep the text as written. */
static char *string_or_number(const cJSON *v)
{
	if (cJSON_IsString(v))
		return ar_xstrdup(v->valuestring);
	if (cJSON_IsNumber(v))
		return number_text(v);
	return NULL;
}

static int l_memory(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	ar_autofree char *s = string_or_number(v);
	int64_t bytes;

	if (s == NULL)
		return type_err(c, path, "a string or a number", v);
	if (ar_parse_bytes(s, &bytes) == -1)
		return perr(c, path, "cannot parse \"%s\" (use 256m, 1g or bytes)", s);
	if (bytes < AR_POLICY_MEMORY_MIN)
		return perr(c, path, "\"%s\" is below the minimum of 6m", s);
	c->p->limits.memory = bytes;
	free(c->p->limits.memory_str);
	c->p->limits.memory_str = steal_pointer(&s);
	return 0;
}

static int l_cpus(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	ar_autofree char *s = string_or_number(v);
	int64_t milli;

	if (s == NULL)
		return type_err(c, path, "a string or a number", v);
	if (ar_parse_cpus(s, &milli) == -1)
		return perr(c, path,
			    "cannot parse \"%s\" (use 0.5, 2 or a number of CPUs above 0 with "
			    "at most 3 decimals)",
			    s);
	c->p->limits.cpus_milli = milli;
	free(c->p->limits.cpus_str);
	c->p->limits.cpus_str = steal_pointer(&s);
	return 0;
}

/* Root's limits are always required (run fails closed); a caller without root gets
 * a warning instead unless this is true (docs/cgroups.md#without-root). */
static int l_required(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	return get_bool(c, v, path, &c->p->limits.required);
}

static const struct field limit_fields[] = {
    {"pids", l_pids},
    {"memory", l_memory},
    {"cpus", l_cpus},
    {"required", l_required},
};

static int f_limits(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	return walk_object(c, v, path, limit_fields, AR_ARRAY_SIZE(limit_fields), NULL);
}

/* ---- user, env, seccomp, network ---------------------------------------- */

static int f_user(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	ar_autofree char *s = NULL;
	uid_t uid;
	gid_t gid;

	if (cJSON_IsNumber(v)) {
		int64_t n;
		if (get_int(c, v, path, 0, UINT32_MAX - 1, &n) == -1)
			return -1;
		s = ar_xasprintf("%lld", (long long)n);
	} else if (cJSON_IsString(v)) {
		s = ar_xstrdup(v->valuestring);
	} else {
		return type_err(c, path, "a string", v);
	}
	if (policy_parse_user(s, &uid, &gid) == -1)
		return perr(c, path,
			    "must be a numeric \"UID\" or \"UID:GID\" such as \"1000\" or "
			    "\"1000:1000\", got \"%s\" (user names are not resolved)",
			    s);
	c->p->uid = uid;
	c->p->gid = gid;
	c->p->user_set = true;
	free(c->p->user);
	c->p->user = steal_pointer(&s);
	return 0;
}

static int cmp_env(const void *a, const void *b)
{
	return strcmp(((const struct ar_env *)a)->key, ((const struct ar_env *)b)->key);
}

static void free_env(struct ar_env *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(e[i].key);
		free(e[i].value);
	}
	free(e);
}

static int collect_env(struct pctx *c, const cJSON *v, const char *path, struct ar_env *env,
		       size_t *n)
{
	for (const cJSON *it = v->child; it; it = it->next) {
		ar_autofree char *kpath = ar_xasprintf("%s.%s", path, it->string);
		const char *val = NULL;
		if (!policy_env_key_valid(it->string))
			return perr(c, path, "key \"%s\" must match %s", it->string, AR_ENV_KEY_RE);
		if (cJSON_IsNull(it))
			continue;
		if (get_string(c, it, kpath, &val) == -1)
			return -1;
		env[*n].key = ar_xstrdup(it->string);
		env[*n].value = ar_xstrdup(val);
		(*n)++;
	}
	return 0;
}

static int f_env(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	if (!cJSON_IsObject(v))
		return type_err(c, path, "an object of strings", v);
	size_t cap = (size_t)cJSON_GetArraySize(v), n = 0;
	struct ar_env *env = ar_xcalloc(cap ? cap : 1, sizeof(*env));
	if (collect_env(c, v, path, env, &n) == -1) {
		free_env(env, n);
		return -1;
	}
	qsort(env, n, sizeof(*env), cmp_env);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(env[i - 1].key, env[i].key) == 0) {
			perr(c, path, "duplicate key \"%s\"", env[i].key);
			free_env(env, n);
			return -1;
		}
	}
	free_env(c->p->env, c->p->n_env);
	c->p->env = env;
	c->p->n_env = n;
	return 0;
}

static int f_seccomp(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	static const char *const keywords[] = {"default", "unconfined"};
	const char *s = NULL, *why = NULL;

	if (get_string(c, v, path, &s) == -1)
		return -1;
	for (size_t i = 0; i < AR_ARRAY_SIZE(keywords); i++) {
		if (strcmp(s, keywords[i]) == 0) {
			replace_str(&c->p->seccomp, s);
			return 0;
		}
	}
	char *norm = policy_path_normalize(s, PATH_NOT_ROOT, &why);
	if (norm == NULL)
		return perr(c, path,
			    "must be \"default\", \"unconfined\" or an absolute path to an OCI "
			    "seccomp profile, got \"%s\"",
			    s);
	free(c->p->seccomp);
	c->p->seccomp = norm;
	return 0;
}

static const struct {
	const char *word;
	enum ar_network value;
} networks[] = {
    {"proxy", AR_NETWORK_PROXY},
    {"none", AR_NETWORK_NONE},
};

static int f_network(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	const char *s = NULL;
	if (get_string(c, v, path, &s) == -1)
		return -1;
	for (size_t i = 0; i < AR_ARRAY_SIZE(networks); i++) {
		if (strcmp(s, networks[i].word) == 0) {
			c->p->network = networks[i].value;
			c->network_set = true;
			return 0;
		}
	}
	return perr(c, path, "must be \"proxy\" or \"none\", got \"%s\"", s);
}

static int f_mode(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	static const struct {
		const char *word;
		enum ar_mode value;
	} modes[] = {{"enforce", AR_MODE_ENFORCE}, {"learn", AR_MODE_LEARN}};
	const char *s = NULL;
	if (get_string(c, v, path, &s) == -1)
		return -1;
	for (size_t i = 0; i < AR_ARRAY_SIZE(modes); i++) {
		if (strcmp(s, modes[i].word) == 0) {
			c->p->mode = modes[i].value;
			return 0;
		}
	}
	return perr(c, path, "must be \"enforce\" or \"learn\", got \"%s\"", s);
}

/* ---- proxy -------------------------------------------------------------- */

static int x_port(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	int64_t port = 0;
	if (get_int(c, v, path, 1, 65535, &port) == -1)
		return -1;
	c->p->proxy.port = (int)port;
	return 0;
}

static const struct {
	const char *word;
	enum ar_sni_mode value;
} sni_modes[] = {
    {"off", AR_SNI_OFF},
    {"check", AR_SNI_CHECK},
    {"require", AR_SNI_REQUIRE},
};

const char *ar_policy_sni_word(enum ar_sni_mode mode)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(sni_modes); i++)
		if (sni_modes[i].value == mode)
			return sni_modes[i].word;
	return "check";
}

static int x_sni(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	const char *s = NULL;
	if (get_string(c, v, path, &s) == -1)
		return -1;
	for (size_t i = 0; i < AR_ARRAY_SIZE(sni_modes); i++) {
		if (strcmp(s, sni_modes[i].word) == 0) {
			c->p->proxy.sni = sni_modes[i].value;
			return 0;
		}
	}
	return perr(c, path, "must be \"off\", \"check\" or \"require\", got \"%s\"", s);
}

static int cmp_budget(const void *a, const void *b)
{
	return strcmp(((const struct ar_byte_budget *)a)->host,
		      ((const struct ar_byte_budget *)b)->host);
}

static void free_budgets(struct ar_byte_budget *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(b[i].host);
	free(b);
}

static int collect_budgets(struct pctx *c, const cJSON *v, const char *path,
			   struct ar_byte_budget *out, size_t *n)
{
	for (const cJSON *it = v->child; it; it = it->next) {
		ar_autofree char *kpath = ar_xasprintf("%s[\"%s\"]", path, it->string);
		int64_t bytes = 0;
		if (cJSON_IsNull(it))
			continue;
		char *host = policy_host_canonical(it->string);
		if (host == NULL)
			return perr(c, path, "\"%s\" is not a host name", it->string);
		out[*n].host = host;
		(*n)++;
		if (get_int(c, it, kpath, 1, AR_POLICY_INT_MAX, &bytes) == -1)
			return -1;
		out[*n - 1].max_bytes_out = bytes;
	}
	return 0;
}

static int x_max_bytes_out(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	struct ar_proxy_settings *ps = &c->p->proxy;
	if (!cJSON_IsObject(v))
		return type_err(c, path, "an object of host: bytes", v);
	size_t cap = (size_t)cJSON_GetArraySize(v), n = 0;
	struct ar_byte_budget *b = ar_xcalloc(cap ? cap : 1, sizeof(*b));
	if (collect_budgets(c, v, path, b, &n) == -1) {
		free_budgets(b, n);
		return -1;
	}
	qsort(b, n, sizeof(*b), cmp_budget);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(b[i - 1].host, b[i].host) == 0) {
			perr(c, path, "host \"%s\" is listed twice", b[i].host);
			free_budgets(b, n);
			return -1;
		}
	}
	free_budgets(ps->budgets, ps->n_budgets);
	ps->budgets = b;
	ps->n_budgets = n;
	return 0;
}

static int cidr_elem(struct pctx *c, const char *path, const char *s, char **slot)
{
	struct ar_cidr cidr;
	if (ar_cidr_parse(s, &cidr) == -1)
		return perr(c, path,
			    "must be an address or CIDR range such as \"172.16.0.0/12\" or "
			    "\"fd00::/8\", got \"%s\"",
			    s);
	*slot = ar_xstrdup(s);
	return 0;
}

static int x_allow_private(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	return walk_strings(c, v, path, cidr_elem, &c->p->proxy.allow_private,
			    &c->p->proxy.n_allow_private);
}

static int x_transparent(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	return get_bool(c, v, path, &c->p->proxy.transparent);
}

static int x_dns_pool(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	const char *s = NULL;
	if (get_string(c, v, path, &s) == -1)
		return -1;
	free(c->p->proxy.dns_pool);
	c->p->proxy.dns_pool = ar_xstrdup(s); /* checked with allow_private, in check.c */
	return 0;
}

static int x_upstream_ca(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	return set_path(c, v, path, PATH_NOT_ROOT, &c->p->proxy.upstream_ca);
}

static const struct field proxy_fields[] = {
    {"port", x_port},
    {"max_bytes_out", x_max_bytes_out},
    {"sni", x_sni},
    {"allow_private", x_allow_private},
    {"transparent", x_transparent},
    {"dns_pool", x_dns_pool},
    {"upstream_ca", x_upstream_ca},
};

static int f_proxy(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	return walk_object(c, v, path, proxy_fields, AR_ARRAY_SIZE(proxy_fields), NULL);
}

/* ---- secrets ------------------------------------------------------------ */

static int s_from(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	const char *s = NULL;
	if (get_string(c, v, path, &s) == -1)
		return -1;
	replace_str(&((struct ar_secret_spec *)t)->from, s); /* judged in check.c */
	return 0;
}

static int s_hosts(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	struct ar_secret_spec *s = t;
	return walk_strings(c, v, path, host_elem, &s->hosts, &s->n_hosts);
}

static const struct field secret_fields[] = {
    {"from", s_from},
    {"hosts", s_hosts},
};

static int parse_secret(struct pctx *c, const cJSON *it, const char *path, struct ar_secret_spec *s)
{
	s->name = ar_xstrdup(it->string);
	if (walk_object(c, it, path, secret_fields, AR_ARRAY_SIZE(secret_fields), s) == -1)
		return -1;
	if (s->from == NULL)
		return perr(c, path, "missing \"from\" (env:NAME or file:PATH)");
	if (s->n_hosts == 0)
		return perr(c, path, "missing \"hosts\" (the hosts the secret is for)");
	return 0;
}

static int cmp_secret(const void *a, const void *b)
{
	return strcmp(((const struct ar_secret_spec *)a)->name,
		      ((const struct ar_secret_spec *)b)->name);
}

static int f_secrets(struct pctx *c, const cJSON *v, const char *path, void *t)
{
	if (!cJSON_IsObject(v))
		return type_err(c, path, "an object of NAME: {from, hosts}", v);
	size_t cap = (size_t)cJSON_GetArraySize(v), n = 0;
	struct ar_secret_spec *s = ar_xcalloc(cap ? cap : 1, sizeof(*s));
	int r = 0;
	for (const cJSON *it = v->child; it && r == 0; it = it->next) {
		ar_autofree char *kpath = ar_xasprintf("%s.%s", path, it->string);
		if (cJSON_IsNull(it))
			continue;
		r = parse_secret(c, it, kpath, &s[n++]);
	}
	qsort(s, n, sizeof(*s), cmp_secret);
	for (size_t i = 1; r == 0 && i < n; i++)
		if (strcmp(s[i - 1].name, s[i].name) == 0)
			r = perr(c, path, "duplicate key \"%s\"", s[i].name);
	if (r == -1) {
		policy_free_secrets(s, n);
		return -1;
	}
	policy_free_secrets(c->p->secrets, c->p->n_secrets);
	c->p->secrets = s;
	c->p->n_secrets = n;
	return 0;
}

static const struct field top_fields[] = {
    {"name", f_name},
    {"image", f_image},
    {"rootfs", f_rootfs},
    {"allowed_hosts", f_allowed_hosts},
    {"kubeconfig", f_kubeconfig},
    {"mounts", f_mounts},
    {"tmpfs", f_tmpfs},
    {"limits", f_limits},
    {"user", f_user},
    {"env", f_env},
    {"seccomp", f_seccomp},
    {"network", f_network},
    {"proxy", f_proxy},
    {"secrets", f_secrets},
    {"mode", f_mode},
};

/* ---- the document ------------------------------------------------------- */

static int json_error(const char *json, size_t len, const char *at, const char *origin,
		      ar_error_t *err)
{
	struct ar_json_pos pos = ar_json_pos(json, len, at);
	return ar_error_make(err, 0, "%s: invalid JSON at line %d, column %d", origin, pos.line,
			     pos.column);
}

static int parse_json(const char *json, size_t len, const char *origin, cJSON **out,
		      ar_error_t *err)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, false);

	if (root == NULL)
		return json_error(json, len, end, origin, err);
	/* cJSON stops after the first value; anything but whitespace after it is an error */
	const char *p = end;
	while (p != NULL && p < json + len && strchr(" \t\r\n", *p) != NULL && *p != '\0')
		p++;
	if (p == NULL || p != json + len) {
		cJSON_Delete(root);
		return json_error(json, len, p, origin, err);
	}
	/* cJSON would cut a string at a NUL: "/srv/logs\u0000/../x" must not read as
	 * "/srv/logs" */
	if (ar_json_refuse_nul(json, len, origin, err) == -1) {
		cJSON_Delete(root);
		return -1;
	}
	*out = root;
	return 0;
}

int ar_policy_parse(const char *json, size_t len, const char *origin, struct ar_policy **out,
		    ar_error_t *err)
{
	autojson cJSON *root = NULL;
	ar_autopolicy struct ar_policy *p = NULL;

	if (origin == NULL)
		origin = "<policy>";
	if (parse_json(json, len, origin, &root, err) == -1)
		return -1;
	if (!cJSON_IsObject(root))
		return ar_error_make(err, 0, "%s: expected a JSON object at the top level, got %s",
				     origin, json_type(root));
	p = policy_new(origin);
	struct pctx c = {.origin = origin, .err = err, .p = p};
	if (walk_object(&c, root, NULL, top_fields, AR_ARRAY_SIZE(top_fields), NULL) == -1)
		return -1;
	if (!c.network_set)
		p->network = p->n_allowed_hosts > 0 || p->mode == AR_MODE_LEARN ? AR_NETWORK_PROXY
										: AR_NETWORK_NONE;
	ar_policy_derive(p);
	if (policy_check(p, err) == -1)
		return -1;
	*out = steal_pointer(&p);
	return 0;
}

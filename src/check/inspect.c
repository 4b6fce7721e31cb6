/* The `docker inspect` reader: JSON text in, struct ar_docker_facts out. Pure (no I/O),
 * so it is unit-tested on fixtures and fuzzable. Docker omits or nulls many fields
 * depending on version and flags; absent and null both mean "docker's default". */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agentrun/check.h"

static void cleanup_cjson(cJSON **j)
{
	cJSON_Delete(*j);
}
#define autocjson __attribute__((cleanup(cleanup_cjson)))

enum kind {
	K_BOOL,	 /* bool */
	K_STR,	 /* char *, "" when absent */
	K_INT,	 /* int64_t, 0 when absent */
	K_COUNT, /* int, the length of an array of strings; -1 when absent or null */
	/* every kind from here on is a char ** (NULL-terminated, never NULL) */
	K_STRV,	   /* array of strings */
	K_CAPS,	   /* capability names normalised */
	K_KEYS,	   /* the keys of an object, sorted */
	K_MAP,	   /* "KEY=VALUE" of an object of strings, sorted */
	K_DEVICES, /* HostConfig.Devices as --device spells them */
};

static const struct field {
	const char *section; /* NULL: top level */
	const char *key;
	enum kind kind;
	size_t off;
} fields[] = {
/* clang-format off */
#define F(sec, key, kind, member) {sec, key, kind, offsetof(struct ar_docker_facts, member)}
	F(NULL, "Name", K_STR, name),
	F(NULL, "AppArmorProfile", K_STR, apparmor_profile),
	F("State", "Status", K_STR, state_status),
	F("State", "StartedAt", K_STR, started_at),
	F("HostConfig", "ReadonlyRootfs", K_BOOL, readonly_rootfs),
	F("HostConfig", "Privileged", K_BOOL, privileged),
	F("HostConfig", "CapDrop", K_CAPS, cap_drop),
	F("HostConfig", "CapAdd", K_CAPS, cap_add),
	F("HostConfig", "SecurityOpt", K_STRV, security_opt),
	F("HostConfig", "PidMode", K_STR, pid_mode),
	F("HostConfig", "IpcMode", K_STR, ipc_mode),
	F("HostConfig", "UsernsMode", K_STR, userns_mode),
	F("HostConfig", "UTSMode", K_STR, uts_mode),
	F("HostConfig", "NetworkMode", K_STR, network_mode),
	F("HostConfig", "PidsLimit", K_INT, pids_limit),
	F("HostConfig", "Memory", K_INT, memory),
	F("HostConfig", "MemorySwap", K_INT, memory_swap),
	F("HostConfig", "Tmpfs", K_KEYS, tmpfs),
	F("HostConfig", "Devices", K_DEVICES, devices),
	F("HostConfig", "DeviceCgroupRules", K_STRV, device_cgroup_rules),
	F("HostConfig", "GroupAdd", K_STRV, group_add),
	F("HostConfig", "Sysctls", K_MAP, sysctls),
	F("HostConfig", "CgroupnsMode", K_STR, cgroupns_mode),
	F("HostConfig", "OomKillDisable", K_BOOL, oom_kill_disable),
	F("HostConfig", "MaskedPaths", K_COUNT, masked_paths),
	F("HostConfig", "ReadonlyPaths", K_COUNT, readonly_paths),
	F("Config", "User", K_STR, user),
	F("Config", "Env", K_STRV, env),
	F("NetworkSettings", "Networks", K_KEYS, networks),
#undef F
    /* clang-format on */
};

static char **strv_new(size_t n)
{
	return ar_xcalloc(n + 1, sizeof(char *));
}

/* "cap_net_admin", "CAP_NET_ADMIN", "net_admin" -> "NET_ADMIN"; "all" -> "ALL". */
static char *normalise_cap(const char *s)
{
	if (strncasecmp(s, "CAP_", 4) == 0)
		s += 4;
	char *c = ar_xstrdup(s);
	for (char *p = c; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	return c;
}

/* JSON numbers are doubles: saturate instead of converting out of range (undefined). */
static int64_t to_i64(double v)
{
	if (v >= 9.2e18)
		return INT64_MAX;
	if (v <= -9.2e18)
		return INT64_MIN;
	return (int64_t)v;
}

static int strcmp_p(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A device mapping {PathOnHost, PathInContainer, CgroupPermissions} as the --device flag
 * would spell it: "/dev/sda" for the same path with docker's default "rwm". */
static char *device_text(const cJSON *e)
{
	static const char *const keys[] = {"PathOnHost", "PathInContainer", "CgroupPermissions"};
	const char *v[3] = {"", "", "rwm"};
	if (!cJSON_IsObject(e))
		return NULL;
	for (size_t i = 0; i < AR_ARRAY_SIZE(keys); i++) {
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(e, keys[i]);
		if (x != NULL && !cJSON_IsNull(x) && !cJSON_IsString(x))
			return NULL;
		if (cJSON_IsString(x) && x->valuestring[0])
			v[i] = x->valuestring;
	}
	if (v[0][0] == '\0')
		return NULL;
	if (strcmp(v[2], "rwm") != 0)
		return ar_xasprintf("%s:%s:%s", v[0], v[1][0] ? v[1] : v[0], v[2]);
	if (v[1][0] && strcmp(v[1], v[0]) != 0)
		return ar_xasprintf("%s:%s", v[0], v[1]);
	return ar_xstrdup(v[0]);
}

/* One element of a K_STRV..K_DEVICES field, or NULL when it has the wrong type. */
static char *element_text(const cJSON *e, enum kind kind)
{
	switch (kind) {
	case K_KEYS:
		return ar_xstrdup(e->string);
	case K_MAP:
		return cJSON_IsString(e) ? ar_xasprintf("%s=%s", e->string, e->valuestring) : NULL;
	case K_DEVICES:
		return device_text(e);
	case K_CAPS:
		return cJSON_IsString(e) ? normalise_cap(e->valuestring) : NULL;
	default:
		return cJSON_IsString(e) ? ar_xstrdup(e->valuestring) : NULL;
	}
}

static const char *strv_shape(enum kind kind)
{
	switch (kind) {
	case K_KEYS:
		return "an object";
	case K_MAP:
		return "an object of strings";
	case K_DEVICES:
		return "an array of {\"PathOnHost\": ...} objects";
	default:
		return "an array of strings";
	}
}

static int read_strv(const cJSON *v, enum kind kind, char ***out, const char *where,
		     ar_error_t *err)
{
	size_t n = 0;
	char **sv;
	bool object = kind == K_KEYS || kind == K_MAP;
	if (object ? !cJSON_IsObject(v) : !cJSON_IsArray(v))
		return ar_error_make(err, 0, "%s: expected %s", where, strv_shape(kind));
	sv = strv_new((size_t)cJSON_GetArraySize(v));
	for (const cJSON *e = v->child; e; e = e->next) {
		sv[n] = element_text(e, kind);
		if (sv[n++] == NULL) {
			ar_strv_free(sv);
			return ar_error_make(err, 0, "%s: expected %s", where, strv_shape(kind));
		}
	}
	if (object)
		qsort(sv, n, sizeof(char *), strcmp_p);
	ar_strv_free(*out);
	*out = sv;
	return 0;
}

/* MaskedPaths/ReadonlyPaths: only their presence and length matter. */
static int read_count(const cJSON *v, int *out, const char *where, ar_error_t *err)
{
	int n = 0;
	if (!cJSON_IsArray(v))
		return ar_error_make(err, 0, "%s: expected an array of strings", where);
	for (const cJSON *e = v->child; e; e = e->next, n++)
		if (!cJSON_IsString(e))
			return ar_error_make(err, 0, "%s: expected an array of strings", where);
	*out = n;
	return 0;
}

static int read_field(const cJSON *v, const struct field *f, struct ar_docker_facts *d,
		      const char *origin, ar_error_t *err)
{
	char where[128];
	void *dst = (char *)d + f->off;
	snprintf(where, sizeof(where), "%s%s%s", f->section ? f->section : "",
		 f->section ? "." : "", f->key);
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	switch (f->kind) {
	case K_BOOL:
		if (!cJSON_IsBool(v))
			return ar_error_make(err, 0, "%s: %s: expected true or false", origin,
					     where);
		*(bool *)dst = cJSON_IsTrue(v);
		return 0;
	case K_STR:
		if (!cJSON_IsString(v))
			return ar_error_make(err, 0, "%s: %s: expected a string", origin, where);
		free(*(char **)dst);
		*(char **)dst = ar_xstrdup(v->valuestring);
		return 0;
	case K_INT:
		if (!cJSON_IsNumber(v))
			return ar_error_make(err, 0, "%s: %s: expected a number", origin, where);
		*(int64_t *)dst = to_i64(v->valuedouble);
		return 0;
	case K_COUNT:
		if (read_count(v, (int *)dst, where, err) < 0)
			return ar_error_wrap(err, "%s", origin);
		return 0;
	default:
		if (read_strv(v, f->kind, (char ***)dst, where, err) < 0)
			return ar_error_wrap(err, "%s", origin);
		return 0;
	}
}

static const cJSON *section(const cJSON *root, const char *name, const char *origin,
			    ar_error_t *err)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(root, name);
	if (s == NULL || cJSON_IsNull(s))
		return NULL;
	if (!cJSON_IsObject(s)) {
		ar_error_make(err, 0, "%s: %s: expected an object", origin, name);
		return NULL;
	}
	return s;
}

/* NanoCpus (--cpus) wins; else --cpu-quota/--cpu-period (period defaults to 100ms). */
static int read_cpus(const cJSON *hc, struct ar_docker_facts *d, const char *origin,
		     ar_error_t *err)
{
	static const char *const keys[] = {"NanoCpus", "CpuQuota", "CpuPeriod"};
	double v[3] = {0, 0, 0};
	for (size_t i = 0; i < AR_ARRAY_SIZE(keys); i++) {
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(hc, keys[i]);
		if (x == NULL || cJSON_IsNull(x))
			continue;
		if (!cJSON_IsNumber(x))
			return ar_error_make(err, 0, "%s: HostConfig.%s: expected a number", origin,
					     keys[i]);
		v[i] = x->valuedouble;
	}
	if (v[0] > 0)
		d->cpus_milli = to_i64(v[0] / 1e6);
	else if (v[1] > 0)
		d->cpus_milli = to_i64(v[1] * 1000 / (v[2] > 0 ? v[2] : 100000));
	return 0;
}

static int read_mount(const cJSON *m, struct ar_docker_mount *dm, size_t i, const char *origin,
		      ar_error_t *err)
{
	static const struct {
		const char *key;
		size_t off;
	} strs[] = {
	    {"Type", offsetof(struct ar_docker_mount, type)},
	    {"Source", offsetof(struct ar_docker_mount, source)},
	    {"Destination", offsetof(struct ar_docker_mount, target)},
	    {"Name", offsetof(struct ar_docker_mount, name)},
	};
	if (!cJSON_IsObject(m))
		return ar_error_make(err, 0, "%s: Mounts[%zu]: expected an object", origin, i);
	for (size_t k = 0; k < AR_ARRAY_SIZE(strs); k++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, strs[k].key);
		char **dst = (char **)((char *)dm + strs[k].off);
		if (v != NULL && !cJSON_IsNull(v) && !cJSON_IsString(v))
			return ar_error_make(err, 0, "%s: Mounts[%zu].%s: expected a string",
					     origin, i, strs[k].key);
		*dst = ar_xstrdup(cJSON_IsString(v) ? v->valuestring : "");
	}
	if (dm->type[0] == '\0') {
		free(dm->type);
		dm->type = ar_xstrdup("bind");
	}
	if (dm->target[0] == '\0')
		return ar_error_make(err, 0, "%s: Mounts[%zu].Destination: missing", origin, i);
	const cJSON *rw = cJSON_GetObjectItemCaseSensitive(m, "RW");
	if (rw != NULL && !cJSON_IsBool(rw))
		return ar_error_make(err, 0, "%s: Mounts[%zu].RW: expected true or false", origin,
				     i);
	dm->readonly = rw != NULL && cJSON_IsFalse(rw);
	return 0;
}

static int read_mounts(const cJSON *root, struct ar_docker_facts *d, const char *origin,
		       ar_error_t *err)
{
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(root, "Mounts");
	if (ms == NULL || cJSON_IsNull(ms))
		return 0;
	if (!cJSON_IsArray(ms))
		return ar_error_make(err, 0, "%s: Mounts: expected an array", origin);
	d->mounts = ar_xcalloc((size_t)cJSON_GetArraySize(ms), sizeof(*d->mounts));
	for (const cJSON *m = ms->child; m; m = m->next) {
		/* count first so a failure leaves every allocated entry reachable */
		d->n_mounts++;
		if (read_mount(m, &d->mounts[d->n_mounts - 1], d->n_mounts - 1, origin, err) < 0)
			return -1;
	}
	return 0;
}

static struct ar_docker_facts *facts_new(void)
{
	struct ar_docker_facts *d = ar_xcalloc(1, sizeof(*d));
	for (size_t i = 0; i < AR_ARRAY_SIZE(fields); i++) {
		void *dst = (char *)d + fields[i].off;
		if (fields[i].kind == K_STR)
			*(char **)dst = ar_xstrdup("");
		else if (fields[i].kind == K_COUNT)
			*(int *)dst = -1;
		else if (fields[i].kind >= K_STRV)
			*(char ***)dst = strv_new(0);
	}
	return d;
}

static int read_facts(const cJSON *root, struct ar_docker_facts *d, const char *origin,
		      ar_error_t *err)
{
	const cJSON *hc = section(root, "HostConfig", origin, err);
	if (hc == NULL)
		return *err ? -1
			    : ar_error_make(err, 0,
					    "%s: HostConfig: missing (not a container's inspect?)",
					    origin);
	for (size_t i = 0; i < AR_ARRAY_SIZE(fields); i++) {
		const cJSON *sec = root;
		if (fields[i].section) {
			sec = section(root, fields[i].section, origin, err);
			if (sec == NULL && *err)
				return -1;
		}
		const cJSON *v = sec ? cJSON_GetObjectItemCaseSensitive(sec, fields[i].key) : NULL;
		if (read_field(v, &fields[i], d, origin, err) < 0)
			return -1;
	}
	if (read_cpus(hc, d, origin, err) < 0 || read_mounts(root, d, origin, err) < 0)
		return -1;
	if (d->name[0] == '/')
		memmove(d->name, d->name + 1, strlen(d->name));
	if (d->pids_limit < 0) /* docker: 0 and -1 both mean unlimited */
		d->pids_limit = 0;
	if (d->memory < 0)
		d->memory = 0;
	if (d->memory_swap < -1)
		d->memory_swap = -1;
	return 0;
}

/* Said as the policy reader says it ("invalid JSON at line L, column C"), so both
 * inputs of `check` report a position the same way. */
static int json_error(const char *json, size_t len, const char *origin, ar_error_t *err)
{
	struct ar_json_pos pos = ar_json_pos(json, len, cJSON_GetErrorPtr());
	return ar_error_make(err, 0, "%s: invalid JSON at line %d, column %d", origin, pos.line,
			     pos.column);
}

/* A network object (docker network inspect): it has IPAM and no HostConfig. */
static bool is_network(const cJSON *o)
{
	return cJSON_IsObject(o) && cJSON_GetObjectItemCaseSensitive(o, "HostConfig") == NULL &&
	       cJSON_GetObjectItemCaseSensitive(o, "IPAM") != NULL;
}

static const char *str_item(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : "";
}

static const char *first_gateway(const cJSON *net)
{
	const cJSON *ipam = cJSON_GetObjectItemCaseSensitive(net, "IPAM");
	const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(ipam, "Config");
	for (const cJSON *e = cJSON_IsArray(cfg) ? cfg->child : NULL; e; e = e->next)
		if (str_item(e, "Gateway")[0])
			return str_item(e, "Gateway");
	return "";
}

static int read_network(const cJSON *o, struct ar_docker_facts *d, const char *origin,
			ar_error_t *err)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "Name");
	const cJSON *internal = cJSON_GetObjectItemCaseSensitive(o, "Internal");
	const cJSON *opts = cJSON_GetObjectItemCaseSensitive(o, "Options");
	if (!cJSON_IsString(name) || name->valuestring[0] == '\0')
		return ar_error_make(err, 0, "%s: network: Name: expected a string", origin);
	if (internal != NULL && !cJSON_IsBool(internal))
		return ar_error_make(err, 0, "%s: network %s: Internal: expected true or false",
				     origin, name->valuestring);
	d->nets = ar_xrealloc(d->nets, (d->n_nets + 1) * sizeof(*d->nets));
	d->nets[d->n_nets++] = (struct ar_docker_network){
	    .name = ar_xstrdup(name->valuestring),
	    .driver = ar_xstrdup(str_item(o, "Driver")),
	    .gateway = ar_xstrdup(first_gateway(o)),
	    .internal = cJSON_IsTrue(internal),
	    .inhibit_ipv4 =
		strcmp(str_item(opts, "com.docker.network.bridge.inhibit_ipv4"), "true") == 0,
	};
	return 0;
}

int ar_check_inspect_add_networks(const char *json, size_t len, const char *origin,
				  struct ar_docker_facts *d, ar_error_t *err)
{
	if (ar_json_refuse_nul(json, len, origin, err) < 0)
		return -1;
	autocjson cJSON *doc = cJSON_ParseWithLength(json, len);
	if (doc == NULL)
		return json_error(json, len, origin, err);
	if (is_network(doc))
		return read_network(doc, d, origin, err);
	if (!cJSON_IsArray(doc))
		return ar_error_make(err, 0, "%s: expected a docker network inspect array", origin);
	for (const cJSON *e = doc->child; e; e = e->next)
		if (!is_network(e) || read_network(e, d, origin, err) < 0)
			return *err ? -1
				    : ar_error_make(err, 0, "%s: expected network objects", origin);
	return 0;
}

const struct ar_docker_network *ar_check_docker_network(const struct ar_docker_facts *d,
							const char *name)
{
	for (size_t i = 0; i < d->n_nets; i++)
		if (strcmp(d->nets[i].name, name) == 0)
			return &d->nets[i];
	return NULL;
}

int ar_check_inspect_parse(const char *json, size_t len, const char *origin,
			   struct ar_docker_facts **out, ar_error_t *err)
{
	if (ar_json_refuse_nul(json, len, origin, err) < 0)
		return -1;
	autocjson cJSON *doc = cJSON_ParseWithLength(json, len);
	const cJSON *root = doc;
	if (doc == NULL)
		return json_error(json, len, origin, err);
	if (cJSON_IsArray(doc)) {
		if (cJSON_GetArraySize(doc) == 0)
			return ar_error_make(err, 0, "%s: empty array: no container inspected",
					     origin);
		root = doc->child;
	}
	if (!cJSON_IsObject(root))
		return ar_error_make(err, 0, "%s: expected a docker inspect object or array",
				     origin);
	ar_autodocker_facts struct ar_docker_facts *d = facts_new();
	if (read_facts(root, d, origin, err) < 0)
		return -1;
	for (const cJSON *e = root->next; e; e = e->next)
		if (is_network(e) && read_network(e, d, origin, err) < 0)
			return -1;
	*out = steal_pointer(&d);
	return 0;
}

void ar_docker_facts_free(struct ar_docker_facts *d)
{
	if (d == NULL)
		return;
	for (size_t i = 0; i < AR_ARRAY_SIZE(fields); i++) {
		void *dst = (char *)d + fields[i].off;
		if (fields[i].kind == K_STR)
			free(*(char **)dst);
		else if (fields[i].kind >= K_STRV)
			ar_strv_free(*(char ***)dst);
	}
	for (size_t i = 0; i < d->n_mounts; i++) {
		free(d->mounts[i].type);
		free(d->mounts[i].source);
		free(d->mounts[i].target);
		free(d->mounts[i].name);
	}
	free(d->mounts);
	for (size_t i = 0; i < d->n_nets; i++) {
		free(d->nets[i].name);
		free(d->nets[i].driver);
		free(d->nets[i].gateway);
	}
	free(d->nets);
	free(d);
}

void ar_cleanup_docker_factsp(struct ar_docker_facts **d)
{
	ar_docker_facts_free(*d);
}

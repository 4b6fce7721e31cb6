/* check --bundle: drift of an OCI bundle's config.json from the policy. The expected
 * document is the one `render --format oci` writes from the agent spec; each field
 * that carries the sandbox (user, capabilities, no_new_privs, read-only root, env,
 * mounts, masked and read-only paths, namespaces, limits, seccomp, hooks) is compared
 * with the bundle's, one finding per drifted field. Pure over the two texts. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agentrun/check.h"
#include "agentrun/render.h"
#include "agentrun/spec.h"
#include "agentrun/util.h"

#define NETNS_PREFIX "/run/agentrun/netns/"
#define SHOW_MAX     80

struct bctx {
	const cJSON *want, *have;
	struct ar_findings *out;
	bool proxy; /* network proxy */
};

static void cleanup_cjsonp(cJSON **j)
{
	cJSON_Delete(*j);
}
#define autocjson __attribute__((cleanup(cleanup_cjsonp)))

/* The member at a dotted path ("linux.resources.pids.limit"), or NULL. */
static const cJSON *at(const cJSON *root, const char *path)
{
	ar_autofree char *copy = ar_xstrdup(path);
	char *save = NULL;
	const cJSON *v = root;
	for (char *k = strtok_r(copy, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
		v = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, k) : NULL;
	return v;
}

/* A value as a finding shows it: short JSON, "absent", or "a different value". */
static char *show(const cJSON *v)
{
	if (v == NULL || cJSON_IsNull(v))
		return ar_xstrdup("absent");
	if (cJSON_IsString(v))
		return ar_xstrdup(v->valuestring);
	char *t = cJSON_PrintUnformatted(v);
	if (t == NULL || strlen(t) > SHOW_MAX) {
		free(t);
		return ar_xstrdup(cJSON_IsObject(v) ? "a different object" : "a different list");
	}
	return t;
}

static void add(struct bctx *c, const char *what, const cJSON *want, const cJSON *have,
		const char *field)
{
	ar_autofree char *e = show(want), *a = show(have);
	ar_autofree char *fix =
	    ar_xasprintf("config.json %s = %s (agentrun render --format oci)", field, e);
	ar_findings_add(c->out, what, e, a, fix);
}

static const struct {
	const char *what, *path;
} scalars[] = {
    {"no_new_privs", "process.noNewPrivileges"},
    {"read-only rootfs", "root.readonly"},
    {"pids limit", "linux.resources.pids.limit"},
    {"memory limit", "linux.resources.memory.limit"},
    {"memory+swap limit", "linux.resources.memory.swap"},
    {"cpu quota", "linux.resources.cpu.quota"},
    {"cpu period", "linux.resources.cpu.period"},
    /* deny-all: an allow rule opens a host device node to the container */
    {"device cgroup rules", "linux.resources.devices"},
    {"seccomp", "linux.seccomp"},
};

static void check_scalars(struct bctx *c)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(scalars); i++) {
		const cJSON *w = at(c->want, scalars[i].path), *h = at(c->have, scalars[i].path);
		if (w == NULL && h == NULL)
			continue;
		if (w == NULL || h == NULL || !cJSON_Compare(w, h, true))
			add(c, scalars[i].what, w, h, scalars[i].path);
	}
}

static void check_user(struct bctx *c)
{
	const cJSON *w = at(c->want, "process.user"), *h = at(c->have, "process.user");
	const char *keys[] = {"uid", "gid"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(keys); i++) {
		const cJSON *wv = at(w, keys[i]), *hv = h ? at(h, keys[i]) : NULL;
		if (hv == NULL || !cJSON_Compare(wv, hv, true)) {
			ar_autofree char *what = ar_xasprintf("user %s", keys[i]);
			ar_autofree char *field = ar_xasprintf("process.user.%s", keys[i]);
			add(c, what, wv, hv, field);
		}
	}
}

/* A present, non-empty set is drift; absent is none. */
static void check_caps(struct bctx *c)
{
	const cJSON *set;
	cJSON_ArrayForEach(set, at(c->have, "process.capabilities"))
	{
		if (!cJSON_IsArray(set) || cJSON_GetArraySize(set) == 0)
			continue;
		ar_autofree char *what = ar_xasprintf("capabilities %s", set->string);
		ar_autofree char *field = ar_xasprintf("process.capabilities.%s", set->string);
		cJSON *none = cJSON_CreateArray();
		add(c, what, none, set, field);
		cJSON_Delete(none);
	}
}

/* Host access a config can add that the policy never does: each present and non-empty
 * is one finding (docker's --device, --group-add, --sysctl). */
static const struct {
	const char *what, *path, *fix;
} host_access[] = {
    {"devices", "linux.devices", "remove linux.devices from config.json"},
    {"group-add", "process.user.additionalGids", "remove process.user.additionalGids"},
    {"sysctls", "linux.sysctl", "remove linux.sysctl from config.json"},
};

static void check_host_access(struct bctx *c)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(host_access); i++) {
		const cJSON *h = at(c->have, host_access[i].path);
		if (h == NULL || cJSON_IsNull(h) || cJSON_GetArraySize(h) == 0)
			continue;
		ar_autofree char *a = show(h);
		ar_findings_add(c->out, host_access[i].what, "none", a, host_access[i].fix);
	}
}

static char **strv_of(const cJSON *arr)
{
	size_t n = 0;
	char **v = ar_xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof(char *));
	const cJSON *e;
	cJSON_ArrayForEach(e, arr) if (cJSON_IsString(e)) v[n++] = ar_xstrdup(e->valuestring);
	return v;
}

static void check_env(struct bctx *c)
{
	ar_autostrv char **have = strv_of(at(c->have, "process.env"));
	const cJSON *e;
	cJSON_ArrayForEach(e, at(c->want, "process.env"))
	{
		const char *eq = strchr(e->valuestring, '=');
		ar_autofree char *key = ar_xstrndup(e->valuestring, (size_t)(eq - e->valuestring));
		const char *got = ar_check_env_get(have, key);
		if (got != NULL && strcmp(got, eq + 1) == 0)
			continue;
		/* a secret's placeholder is random per rendering: its shape is what counts */
		if (got != NULL && ar_check_is_placeholder(key, eq + 1) &&
		    ar_check_is_placeholder(key, got))
			continue;
		ar_autofree char *what = ar_xasprintf("env %s", key);
		ar_autofree char *fix = ar_xasprintf(
		    "config.json process.env: %s (agentrun render --format oci)", e->valuestring);
		ar_findings_add(c->out, what, eq + 1, got ? got : "unset", fix);
	}
	/* network none: a proxy variable points at nothing the container can reach */
	for (size_t i = 0; !c->proxy && i < AR_SPEC_N_PROXY_VARS; i++) {
		const char *got = ar_check_env_get(have, ar_spec_proxy_vars[i]);
		if (got == NULL)
			continue;
		ar_autofree char *what = ar_xasprintf("proxy variable %s", ar_spec_proxy_vars[i]);
		ar_autofree char *fix =
		    ar_xasprintf("remove %s from config.json process.env (policy network none)",
				 ar_spec_proxy_vars[i]);
		ar_findings_add(c->out, what, "unset", got, fix);
	}
	ar_findings_add_secrets(c->out, NULL, have,
				"remove %s from process.env; mount the secret read-only as a file");
}

/* "bind /srv/logs (rbind,ro,nosuid,nodev)", "tmpfs (nosuid,nodev)", or "absent". */
static char *show_mount(const cJSON *m)
{
	if (m == NULL)
		return ar_xstrdup("absent");
	const cJSON *t = at(m, "type"), *s = at(m, "source"), *o;
	ar_autobuf struct ar_buf b = {0};
	ar_buf_puts(&b, cJSON_IsString(t) ? t->valuestring : "?");
	if (cJSON_IsString(s) && (!cJSON_IsString(t) || strcmp(s->valuestring, t->valuestring)))
		ar_buf_printf(&b, " %s", s->valuestring);
	ar_buf_puts(&b, " (");
	size_t start = b.len;
	cJSON_ArrayForEach(o, at(m, "options")) ar_buf_printf(
	    &b, "%s%s", b.len > start ? "," : "", cJSON_IsString(o) ? o->valuestring : "?");
	ar_buf_putc(&b, ')');
	return ar_buf_steal(&b);
}

/* Hook args as a command line; entries of a stage separated by "; ". */
static char *show_args(const cJSON *entries)
{
	ar_autobuf struct ar_buf b = {0};
	const cJSON *h, *a;
	cJSON_ArrayForEach(h, entries)
	{
		if (b.len > 0)
			ar_buf_puts(&b, "; ");
		const cJSON *args = cJSON_IsArray(h) ? h : at(h, "args");
		size_t start = b.len;
		cJSON_ArrayForEach(a, args) ar_buf_printf(&b, "%s%s", b.len > start ? " " : "",
							  cJSON_IsString(a) ? a->valuestring : "?");
	}
	return b.len ? ar_buf_steal(&b) : ar_xstrdup("absent");
}

static const cJSON *mount_at(const cJSON *root, const char *dst)
{
	const cJSON *m, *found = NULL;
	cJSON_ArrayForEach(m, at(root, "mounts"))
	{
		const cJSON *d = at(m, "destination");
		if (cJSON_IsString(d) && strcmp(d->valuestring, dst) == 0)
			found = m; /* the last one mounted there is what the container sees */
	}
	return found;
}

static void check_mounts(struct bctx *c)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, at(c->want, "mounts"))
	{
		const char *dst = at(m, "destination")->valuestring;
		const cJSON *h = mount_at(c->have, dst);
		if (h != NULL && cJSON_Compare(m, h, true))
			continue;
		ar_autofree char *what = ar_xasprintf("mount %s", dst);
		ar_autofree char *e = show_mount(m), *a = show_mount(h);
		ar_autofree char *fix =
		    ar_xasprintf("config.json mounts: %s at %s (agentrun render "
				 "--format oci)",
				 e, dst);
		ar_findings_add(c->out, what, e, a, fix);
	}
	cJSON_ArrayForEach(m, at(c->have, "mounts"))
	{
		const cJSON *d = at(m, "destination"), *s = at(m, "source");
		if (!cJSON_IsString(d) || mount_at(c->want, d->valuestring) != NULL)
			continue;
		bool sensitive = ar_check_is_sensitive_path(d->valuestring) ||
				 (cJSON_IsString(s) && ar_check_is_sensitive_path(s->valuestring));
		ar_autofree char *what =
		    ar_xasprintf("%s mount %s", sensitive ? "sensitive" : "extra", d->valuestring);
		ar_autofree char *fix =
		    ar_xasprintf("remove the mount at %s from config.json mounts", d->valuestring);
		ar_autofree char *a = show_mount(m);
		ar_findings_add(c->out, what, "absent", a, fix);
	}
}

static bool str_in(const cJSON *arr, const char *s)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, arr) if (cJSON_IsString(e) &&
				       strcmp(e->valuestring, s) == 0) return true;
	return false;
}

static void check_paths(struct bctx *c, const char *key, const char *kind)
{
	ar_autofree char *path = ar_xasprintf("linux.%s", key);
	const cJSON *e, *have = at(c->have, path);
	cJSON_ArrayForEach(e, at(c->want, path))
	{
		if (str_in(have, e->valuestring))
			continue;
		ar_autofree char *what = ar_xasprintf("%s path %s", kind, e->valuestring);
		ar_autofree char *fix =
		    ar_xasprintf("add %s to config.json linux.%s", e->valuestring, key);
		ar_findings_add(c->out, what, kind, "absent", fix);
	}
}

static void check_namespaces(struct bctx *c)
{
	const cJSON *w;
	cJSON_ArrayForEach(w, at(c->want, "linux.namespaces"))
	{
		const char *type = at(w, "type")->valuestring;
		const cJSON *h = NULL, *e;
		cJSON_ArrayForEach(e, at(c->have, "linux.namespaces"))
		{
			const cJSON *t = at(e, "type");
			if (cJSON_IsString(t) && strcmp(t->valuestring, type) == 0)
				h = e;
		}
		const cJSON *hp = h ? at(h, "path") : NULL, *wp = at(w, "path");
		if (h != NULL &&
		    ((hp == NULL && wp == NULL) || (hp && wp && cJSON_Compare(hp, wp, true))))
			continue;
		ar_autofree char *what = ar_xasprintf("namespace %s", type);
		ar_autofree char *actual = h == NULL ? ar_xstrdup("host")
					   : cJSON_IsString(hp)
					       ? ar_xasprintf("joined %s", hp->valuestring)
					       : ar_xstrdup("other");
		ar_autofree char *fix = ar_xasprintf(
		    "config.json linux.namespaces: {\"type\": \"%s\"} (a fresh one)", type);
		ar_findings_add(c->out, what, wp ? wp->valuestring : "private", actual, fix);
	}
}

/* Each expected stage has an entry running `agentrun hook STAGE --policy P`. */
static void check_hooks(struct bctx *c)
{
	const cJSON *stage;
	cJSON_ArrayForEach(stage, at(c->want, "hooks"))
	{
		const cJSON *want_args = at(cJSON_GetArrayItem(stage, 0), "args"), *h;
		bool found = false;
		cJSON_ArrayForEach(
		    h, cJSON_GetObjectItemCaseSensitive(at(c->have, "hooks"), stage->string))
		{
			const cJSON *args = at(h, "args");
			found = found || cJSON_Compare(args, want_args, true);
		}
		if (found)
			continue;
		ar_autofree char *what = ar_xasprintf("hook %s", stage->string);
		ar_autofree char *e = show_args(stage);
		ar_autofree char *a = show_args(
		    cJSON_GetObjectItemCaseSensitive(at(c->have, "hooks"), stage->string));
		ar_autofree char *fix =
		    ar_xasprintf("config.json hooks.%s: {\"path\": AGENTRUN, \"args\": [%s]} "
				 "(agentrun render --format oci)",
				 stage->string, e);
		ar_findings_add(c->out, what, e, a, fix);
	}
}

/* The bundle's prepared netns, when it names one `agentrun net up` made: the expected
 * document then joins it too. */
static const char *prepared_netns(const cJSON *have)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, at(have, "linux.namespaces"))
	{
		const cJSON *t = at(e, "type"), *p = at(e, "path");
		if (cJSON_IsString(t) && strcmp(t->valuestring, "network") == 0 &&
		    cJSON_IsString(p) &&
		    strncmp(p->valuestring, NETNS_PREFIX, strlen(NETNS_PREFIX)) == 0 &&
		    strstr(p->valuestring, "/..") == NULL)
			return p->valuestring;
	}
	return NULL;
}

static int expected_config(const struct ar_spec *sp, const cJSON *have,
			   const struct ar_check_bundle_opts *o, cJSON **out, ar_error_t *err)
{
	static char *const no_cmd[] = {"true"};
	ar_autostrv char **args = strv_of(at(have, "process.args"));
	struct ar_render_options ro = {
	    .cmd = args[0] ? args : no_cmd,
	    .n_cmd = args[0] ? ar_strv_len(args) : 1,
	    .netns = prepared_netns(have),
	    .hook_path = "agentrun",
	    .policy_path = o->policy_path,
	};
	ar_autobuf struct ar_buf text = {0};
	if (ar_render_oci(sp, &ro, o->seccomp_json, o->seccomp_origin, &text, err) < 0)
		return -1;
	*out = cJSON_ParseWithLength(text.data, text.len);
	if (*out == NULL)
		return ar_error_make(err, 0, "the rendered config does not parse");
	return 0;
}

int ar_check_bundle(const struct ar_spec *sp, const char *json, size_t len,
		    const struct ar_check_bundle_opts *o, struct ar_findings *out, ar_error_t *err)
{
	if (ar_json_refuse_nul(json, len, o->origin, err) < 0)
		return -1;
	autocjson cJSON *have = cJSON_ParseWithLength(json, len);
	if (have == NULL)
		return ar_error_make(err, 0, "%s: not valid JSON", o->origin);
	if (!cJSON_IsObject(have) || !cJSON_IsObject(at(have, "process")))
		return ar_error_make(err, 0, "%s: not an OCI config (no `process` object)",
				     o->origin);
	autocjson cJSON *want = NULL;
	if (expected_config(sp, have, o, &want, err) < 0)
		return -1;
	struct bctx c = {
	    .want = want, .have = have, .out = out, .proxy = sp->net.mode == AR_NETWORK_PROXY};
	check_user(&c);
	check_caps(&c);
	check_host_access(&c);
	check_scalars(&c);
	check_env(&c);
	check_mounts(&c);
	check_paths(&c, "maskedPaths", "masked");
	check_paths(&c, "readonlyPaths", "read-only");
	check_namespaces(&c);
	check_hooks(&c);
	return 0;
}

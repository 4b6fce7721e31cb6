/* Process expectations: the policy (as `agentrun run` would enforce it) against the
 * facts read from /proc. Pure; each expectation is a small function in the table at the
 * bottom, and findings come out in table order. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/check.h"
#include "agentrun/spec.h"
#include "agentrun/log.h"

struct ctx {
	const struct ar_policy *p;
	const struct ar_spec *sp; /* what the agent must get */
	const struct ar_proc_facts *f;
	struct ar_findings *out;
};

static void add(const struct ctx *c, const char *what, const char *expected, const char *actual,
		const char *fix)
{
	ar_findings_add(c->out, what, expected, actual, fix);
}

/* "1000" when all four ids agree, else "real,effective,saved,fs". */
static bool ids_text(const unsigned int ids[4], unsigned int want, char *buf, size_t size)
{
	bool all = ids[0] == want && ids[1] == want && ids[2] == want && ids[3] == want;
	if (ids[0] == ids[1] && ids[1] == ids[2] && ids[2] == ids[3])
		snprintf(buf, size, "%u", ids[0]);
	else
		snprintf(buf, size, "%u,%u,%u,%u", ids[0], ids[1], ids[2], ids[3]);
	return all;
}

/* No `user` in the policy: run gives each sandbox a uid/gid of its own from the
 * dynamic range, the same number for both; a container rendered from the policy runs
 * as the rendered default (p->uid:p->gid, 1000:1000), which a renderer must fix in
 * advance; run by an ordinary user, the caller's own uid and gid, mapped to themselves
 * (keep-id). Each is the policy's; anything else is drift. */
static void check_dynamic_ids(const struct ctx *c)
{
	const unsigned int *u = c->f->status.uid, *g = c->f->status.gid;
	char have[64];
	if (c->f->keep_id && ids_text(u, u[0], have, sizeof(have)) &&
	    ids_text(g, g[0], have, sizeof(have)))
		return;
	bool all = ids_text(u, u[0], have, sizeof(have)) && ids_text(g, u[0], have, sizeof(have));
	if (all && u[0] >= AR_DYNAMIC_UID_MIN && u[0] <= AR_DYNAMIC_UID_MAX)
		return;
	snprintf(have, sizeof(have), "uid %u gid %u", u[0], g[0]);
	ar_autofree char *want = ar_xasprintf(
	    "a dynamic uid = gid in %d-%d (agentrun run), the caller's own (agentrun run by a "
	    "user) or %u:%u (rendered)",
	    AR_DYNAMIC_UID_MIN, AR_DYNAMIC_UID_MAX, (unsigned)c->p->uid, (unsigned)c->p->gid);
	add(c, "user", want, have,
	    "agentrun run (a policy without `user` gets a dynamic uid) or the rendered config");
}

static void check_ids(const struct ctx *c)
{
	/* without `user`, a process running as the rendered uid is a rendered container:
	 * its ids are compared one by one with the rendered default, like a given user's */
	if (!c->p->user_set && c->f->status.uid[0] != c->p->uid) {
		check_dynamic_ids(c);
		return;
	}
	const struct {
		const char *what;
		const unsigned int *ids;
		unsigned int want;
	} rows[] = {
	    {"user", c->f->status.uid, c->p->uid},
	    {"group", c->f->status.gid, c->p->gid},
	};
	ar_autofree char *fix =
	    c->p->user_set
		? ar_xasprintf("policy \"user\": \"%s\" (agentrun run switches to it)", c->p->user)
		: ar_xasprintf("the rendered user %u:%u (docker --user, OCI process.user, "
			       "runAsUser/runAsGroup)",
			       (unsigned)c->p->uid, (unsigned)c->p->gid);
	for (size_t i = 0; i < AR_ARRAY_SIZE(rows); i++) {
		char want[16], have[64];
		if (ids_text(rows[i].ids, rows[i].want, have, sizeof(have)))
			continue;
		snprintf(want, sizeof(want), "%u", rows[i].want);
		add(c, rows[i].what, want, have, fix);
	}
}

static void check_caps(const struct ctx *c)
{
	const struct ar_proc_status *s = &c->f->status;
	const struct {
		const char *what;
		uint64_t have;
	} sets[] = {
	    {"capabilities CapInh", s->cap_inh}, {"capabilities CapPrm", s->cap_prm},
	    {"capabilities CapEff", s->cap_eff}, {"capabilities CapBnd", s->cap_bnd},
	    {"capabilities CapAmb", s->cap_amb},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(sets); i++) {
		char have[24];
		if (sets[i].have == 0)
			continue;
		snprintf(have, sizeof(have), "%016" PRIx64, sets[i].have);
		add(c, sets[i].what, "0000000000000000", have,
		    "agentrun run drops every capability from all five sets");
	}
}

static void check_nnp(const struct ctx *c)
{
	int v = c->f->status.no_new_privs;
	if (v != 1)
		add(c, "no_new_privs", "1", v < 0 ? "unknown" : "0",
		    "agentrun run sets no_new_privs");
}

static void check_seccomp(const struct ctx *c)
{
	static const char *const modes[] = {"disabled", "strict", "filter"};
	int v = c->f->status.seccomp;
	if (strcmp(c->sp->seccomp, "unconfined") == 0)
		return;
	if (v == 2)
		return;
	add(c, "seccomp", "filter", v >= 0 && v < 3 ? modes[v] : "unknown",
	    "policy \"seccomp\": \"default\" (agentrun run loads it)");
}

static void check_rootfs(const struct ctx *c)
{
	const struct ar_mountinfo *m = ar_check_mount_at(c->f->mounts, c->f->n_mounts, "/");
	if (m == NULL || !m->readonly)
		add(c, "read-only rootfs", "true", m ? "false" : "unknown",
		    "agentrun run mounts the root read-only (policy \"rootfs\" or the host view)");
}

/* Scratch space: a writable tmpfs (a read-only tmpfs is how places get hidden). */
static void check_tmpfs(const struct ctx *c)
{
	for (size_t i = 0; i < c->sp->n_mounts; i++) {
		const char *t = c->sp->mounts[i].target;
		if (c->sp->mounts[i].kind != AR_SPEC_MNT_TMPFS)
			continue;
		const struct ar_mountinfo *m = ar_check_mount_at(c->f->mounts, c->f->n_mounts, t);
		if (m && strcmp(m->fstype, "tmpfs") == 0 && !m->readonly)
			continue;
		ar_autofree char *what = ar_xasprintf("tmpfs %s", t);
		ar_autofree char *have =
		    m ? ar_xasprintf("%s:%s", m->fstype, m->readonly ? "ro" : "rw")
		      : ar_xstrdup("absent");
		ar_autofree char *fix = ar_xasprintf("policy \"tmpfs\" lists %s", t);
		add(c, what, "tmpfs:rw", have, fix);
	}
}

static void expect_mount(const struct ctx *c, const char *what, const char *target, bool readonly,
			 const char *fix)
{
	const struct ar_mountinfo *m = ar_check_mount_at(c->f->mounts, c->f->n_mounts, target);
	if (m && m->readonly == readonly)
		return;
	add(c, what, readonly ? "ro" : "rw", m ? (m->readonly ? "ro" : "rw") : "absent", fix);
}

/* The spec's kubeconfig, then its binds (not the CA bundle's: secrets, checked by shape). */
static void check_policy_mounts(const struct ctx *c)
{
	const struct ar_spec *sp = c->sp;
	if (sp->kubeconfig_mount >= 0) {
		const struct ar_spec_mount *k = &sp->mounts[sp->kubeconfig_mount];
		ar_autofree char *fix =
		    ar_xasprintf("policy \"kubeconfig\": \"%s\" (mounted read-only at %s)",
				 c->p->kubeconfig, k->target);
		expect_mount(c, "kubeconfig mount", k->target, true, fix);
	}
	for (size_t i = 0; i < sp->n_mounts; i++) {
		const struct ar_spec_mount *m = &sp->mounts[i];
		if (m->kind != AR_SPEC_MNT_BIND || (int)i == sp->kubeconfig_mount ||
		    (int)i == sp->ca_bundle_mount)
			continue;
		ar_autofree char *what = ar_xasprintf("mount %s", m->target);
		ar_autofree char *fix = ar_xasprintf("policy \"mounts\": %s -> %s%s", m->source,
						     m->target, m->readonly ? " read-only" : "");
		expect_mount(c, what, m->target, m->readonly, fix);
	}
}

static bool is_kubeconfig(const struct ar_policy *p, const char *path)
{
	return p->kubeconfig && strcmp(path, p->kubeconfig_target) == 0;
}

static void check_sensitive_mounts(const struct ctx *c)
{
	for (size_t i = 0; i < c->f->n_mounts; i++) {
		const struct ar_mountinfo *m = &c->f->mounts[i];
		if (is_kubeconfig(c->p, m->target))
			continue;
		if (!ar_check_is_credential_path(m->target) &&
		    !ar_check_is_credential_path(m->root))
			continue;
		ar_autofree char *what = ar_xasprintf("sensitive mount %s", m->target);
		ar_autofree char *have = ar_xasprintf("%s:%s", m->root, m->target);
		add(c, what, "absent", have, "remove it from the policy \"mounts\"");
	}
}

/* The kubeconfig the policy mounts lives under a .kube directory: not a leak. */
static bool leads_to_kubeconfig(const struct ar_policy *p, const char *path)
{
	size_t n = strlen(path);
	return p->kubeconfig && strncmp(p->kubeconfig_target, path, n) == 0 &&
	       (p->kubeconfig_target[n] == '/' || p->kubeconfig_target[n] == '\0');
}

static void check_visible(const struct ctx *c)
{
	for (size_t i = 0; c->f->visible_sensitive && c->f->visible_sensitive[i]; i++) {
		const char *path = c->f->visible_sensitive[i];
		if (leads_to_kubeconfig(c->p, path))
			continue;
		ar_autofree char *what = ar_xasprintf("sensitive path %s", path);
		add(c, what, "hidden", "visible",
		    "agentrun run hides it (read-only host view or policy \"rootfs\")");
	}
}

static void check_namespaces(const struct ctx *c)
{
	for (int k = 0; k < AR_SPEC_N_NAMESPACES; k++) {
		int v = c->f->ns_shared[k];
		if (v == 0)
			continue;
		ar_autofree char *what = ar_xasprintf("namespace %s", ar_spec_namespaces[k].proc);
		ar_autofree char *fix =
		    ar_xasprintf("agentrun run (a new %s namespace)", ar_spec_namespaces[k].proc);
		add(c, what, "private", v > 0 ? "host" : "unknown", fix);
	}
}

static void limit_text(int64_t v, bool cpus, char *buf, size_t size)
{
	if (v == AR_LIMIT_UNLIMITED)
		snprintf(buf, size, "unlimited");
	else if (v < 0)
		snprintf(buf, size, "unknown");
	else if (cpus)
		ar_check_format_cpus(v, buf, size);
	else
		snprintf(buf, size, "%" PRId64, v);
}

static void check_limits(const struct ctx *c)
{
	const struct ar_limits *l = &c->sp->limits.cgroup;
	char cpus[32];
	const struct {
		const char *what;
		int64_t want, have;
		bool cpus;
		const char *key;
		const char *value; /* as the policy spells it */
	} rows[] = {
	    {"pids limit", l->pids, c->f->pids_max, false, "pids", NULL},
	    {"memory limit", l->memory, c->f->memory_max, false, "memory", l->memory_str},
	    {"cpu limit", l->cpus_milli, c->f->cpus_milli, true, "cpus",
	     ar_check_format_cpus(l->cpus_milli, cpus, sizeof(cpus))},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(rows); i++) {
		char want[32], have[32];
		if (rows[i].want <= 0 || rows[i].want == rows[i].have)
			continue;
		limit_text(rows[i].want, rows[i].cpus, want, sizeof(want));
		limit_text(rows[i].have, rows[i].cpus, have, sizeof(have));
		ar_autofree char *fix =
		    rows[i].value
			? ar_xasprintf("policy \"limits\": {\"%s\": \"%s\"}", rows[i].key,
				       rows[i].value)
			: ar_xasprintf("policy \"limits\": {\"%s\": %s}", rows[i].key, want);
		add(c, rows[i].what, want, have, fix);
	}
}

static void check_network(const struct ctx *c)
{
	char *const *devs = c->f->netdevs;
	if (c->sp->net.mode == AR_NETWORK_NONE &&
	    !(devs && devs[0] && strcmp(devs[0], "lo") == 0 && devs[1] == NULL)) {
		ar_autobuf struct ar_buf b = {0};
		for (size_t i = 0; devs && devs[i]; i++)
			ar_buf_printf(&b, "%s%s", i ? "," : "", devs[i]);
		add(c, "network interfaces", "lo", b.len ? b.data : "none",
		    "policy \"network\": \"none\" (agentrun run leaves only loopback)");
	}
	/* transparent capture routes everything to the proxy's end of the veth */
	bool capture = c->p->network == AR_NETWORK_PROXY && c->p->proxy.transparent;
	const char *dr = c->f->default_route;
	if (capture && (dr == NULL || strcmp(dr, "eth0") != 0)) {
		ar_autofree char *have = dr ? ar_xasprintf("via %s", dr) : ar_xstrdup("absent");
		add(c, "default route", "via eth0", have,
		    "agentrun run (transparent capture routes everything to the proxy)");
	} else if (!capture && dr) {
		ar_autofree char *have = ar_xasprintf("via %s", dr);
		add(c, "default route", "absent", have,
		    "agentrun run (the sandbox netns has no default route)");
	}
}

/* network: proxy, the sandbox's and the proxy's netns (src/check/netcheck.c) */
static void check_net_proxy(const struct ctx *c)
{
	ar_check_net(c->p, c->f->netdevs, c->f->net, c->out);
}

/* Without the environment, no variable can be said to be absent. */
static void check_environ_readable(const struct ctx *c)
{
	if (c->f->env == NULL)
		add(c, "environment", "readable", "unknown",
		    "run agentrun check as root (or as the process's user)");
}

static void check_proxy_env(const struct ctx *c)
{
	if (c->f->env == NULL)
		return;
	for (size_t i = 0; i < AR_PROXY_ENV_N_URL; i++) {
		const char *key = ar_proxy_env_url_vars[i];
		const char *have = ar_check_env_get(c->f->env, key);
		ar_autofree char *what = ar_xasprintf("proxy variable %s", key);
		if (c->sp->net.mode == AR_NETWORK_NONE) {
			if (have)
				add(c, what, "unset", ar_check_shown_value(key, have),
				    "policy \"network\": \"none\" (no proxy to point at)");
			continue;
		}
		if (have && ar_check_net_is_proxy_url(c->f->net, have, c->p->proxy.port))
			continue;
		ar_autofree char *want =
		    c->f->net && c->f->net->proxy_url[0]
			? ar_xstrdup(c->f->net->proxy_url)
			: ar_xasprintf("http://(first address of a /30):%d", c->p->proxy.port);
		add(c, what, want, have ? ar_check_shown_value(key, have) : "unset",
		    "policy \"network\": \"proxy\" (agentrun run sets it)");
	}
}

static bool policy_sets(const struct ar_policy *p, const char *key)
{
	for (size_t i = 0; i < p->n_env; i++)
		if (strcmp(p->env[i].key, key) == 0)
			return true;
	return false;
}

static void expect_env(const struct ctx *c, const char *key, const char *want, bool derived)
{
	const char *have = ar_check_env_get(c->f->env, key);
	if (have && strcmp(have, want) == 0)
		return;
	ar_autofree char *what = ar_xasprintf("env %s", key);
	ar_autofree char *fix =
	    derived ? ar_xstrdup("policy \"kubeconfig\" (agentrun run sets KUBECONFIG)")
		    : ar_xasprintf("policy \"env\": {\"%s\": ...}", key);
	add(c, what, ar_check_shown_value(key, want),
	    have ? ar_check_shown_value(key, have) : "unset", fix);
}

/* The spec's container environment but the proxy variables (check_proxy_env: their value
 * is the sandbox's own /30) and what secrets put there (by shape, check_secrets). */
static void check_policy_env(const struct ctx *c)
{
	if (c->f->env == NULL)
		return;
	for (char **e = c->sp->container_env; *e != NULL; e++) {
		const char *eq = strchr(*e, '=');
		ar_autofree char *key = ar_xstrndup(*e, (size_t)(eq - *e));
		if (ar_proxy_env_is_proxy_var(key) || ar_spec_env_from_secrets(c->p, key))
			continue;
		/* KUBECONFIG comes from the policy's env, or from its kubeconfig */
		expect_env(c, key, eq + 1,
			   strcmp(key, "KUBECONFIG") == 0 && !policy_sets(c->p, key));
	}
}

/* Names only: the value of a secret is never copied into a finding. */
static void check_secrets(const struct ctx *c)
{
	/* the name once: the second argument is ignored by this format */
	ar_findings_add_secrets(
	    c->out, c->p, c->f->env,
	    "unset %s; mount the secret read-only as a file (policy \"mounts\")");
}

static void (*const expectations[])(const struct ctx *) = {
    check_ids,		 check_caps,
    check_nnp,		 check_seccomp,
    check_rootfs,	 check_tmpfs,
    check_policy_mounts, check_sensitive_mounts,
    check_visible,	 check_namespaces,
    check_limits,	 check_network,
    check_net_proxy,	 check_environ_readable,
    check_proxy_env,	 check_policy_env,
    check_secrets,
};

void ar_check_proc(const struct ar_spec *sp, const struct ar_proc_facts *f, struct ar_findings *out)
{
	const struct ar_policy *p = sp->p;
	const struct ctx c = {p, sp, f, out};
	ar_autofree char *warning = ar_policy_user_warning(p);
	if (warning != NULL) /* not drift: the policy itself asks for it */
		ar_warn("%s", warning);
	for (size_t i = 0; i < AR_ARRAY_SIZE(expectations); i++)
		expectations[i](&c);
}

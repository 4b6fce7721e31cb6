/* Docker expectations: the policy (as `agentrun render` would run it) against the facts
 * of `docker inspect`. Each expectation is a small function in the table at the bottom;
 * findings come out in table order so the output (and the tests) are stable. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agentrun/check.h"
#include "agentrun/spec.h"
#include "agentrun/render.h"

struct ctx {
	const struct ar_policy *p;
	const struct ar_spec *sp; /* what the agent container must get */
	const struct ar_docker_facts *d;
	struct ar_findings *out;
};

static void add(const struct ctx *c, const char *what, const char *expected, const char *actual,
		const char *fix)
{
	ar_findings_add(c->out, what, expected, actual, fix);
}

static bool strv_has(char *const *sv, const char *s)
{
	for (size_t i = 0; sv && sv[i]; i++)
		if (strcmp(sv[i], s) == 0)
			return true;
	return false;
}

static char *strv_join(char *const *sv, const char *sep, const char *empty)
{
	ar_autobuf struct ar_buf b = {0};
	if (sv == NULL || sv[0] == NULL)
		return ar_xstrdup(empty);
	for (size_t i = 0; sv[i]; i++) {
		if (i)
			ar_buf_puts(&b, sep);
		ar_buf_puts(&b, sv[i]);
	}
	return ar_buf_steal(&b);
}

static void check_rootfs(const struct ctx *c)
{
	if (!c->d->readonly_rootfs)
		add(c, "read-only rootfs", "true", "false", "--read-only");
}

static void check_cap_drop(const struct ctx *c)
{
	if (strv_has(c->d->cap_drop, "ALL"))
		return;
	ar_autofree char *have = strv_join(c->d->cap_drop, ",", "none");
	add(c, "cap-drop", "ALL", have, "--cap-drop ALL");
}

static void check_cap_add(const struct ctx *c)
{
	if (c->d->cap_add[0] == NULL)
		return;
	ar_autofree char *have = strv_join(c->d->cap_add, ",", "none");
	ar_autofree char *flags = strv_join(c->d->cap_add, " --cap-add ", "");
	ar_autofree char *fix = ar_xasprintf("remove --cap-add %s", flags);
	add(c, "cap-add", "none", have, fix);
}

static void check_privileged(const struct ctx *c)
{
	if (c->d->privileged)
		add(c, "privileged", "false", "true", "remove --privileged");
}

/* Docker accepts every spelling below; `no-new-privileges:false` is an explicit no. */
static bool opt_is(const char *opt, const char *name, const char *value)
{
	size_t n = strlen(name);
	if (strncmp(opt, name, n) != 0)
		return false;
	if (opt[n] == '\0')
		return value == NULL;
	return (opt[n] == ':' || opt[n] == '=') && value && strcmp(opt + n + 1, value) == 0;
}

static void check_nnp(const struct ctx *c)
{
	for (size_t i = 0; c->d->security_opt[i]; i++)
		if (opt_is(c->d->security_opt[i], "no-new-privileges", NULL) ||
		    opt_is(c->d->security_opt[i], "no-new-privileges", "true"))
			return;
	add(c, "no-new-privileges", "true", "false", "--security-opt no-new-privileges");
}

static bool has_unconfined(const struct ctx *c, const char *name)
{
	for (size_t i = 0; c->d->security_opt[i]; i++)
		if (opt_is(c->d->security_opt[i], name, "unconfined"))
			return true;
	return false;
}

static void check_seccomp(const struct ctx *c)
{
	if (strcmp(c->sp->seccomp, "unconfined") == 0)
		return; /* the policy asks for it */
	if (has_unconfined(c, "seccomp"))
		add(c, "seccomp", "confined", "unconfined",
		    "remove --security-opt seccomp=unconfined");
}

static void check_apparmor(const struct ctx *c)
{
	if (has_unconfined(c, "apparmor") || strcmp(c->d->apparmor_profile, "unconfined") == 0)
		add(c, "apparmor", "confined", "unconfined",
		    "remove --security-opt apparmor=unconfined (and --privileged)");
}

/* --security-opt systempaths=unconfined unmasks /proc and /sys. The docker CLI turns it
 * into empty MaskedPaths and ReadonlyPaths rather than passing it on, so an empty list
 * (not an absent or null one: that is docker's default) is the same drift. */
static void check_system_paths(const struct ctx *c)
{
	if (has_unconfined(c, "systempaths") || c->d->masked_paths == 0 ||
	    c->d->readonly_paths == 0)
		add(c, "system paths", "masked", "unconfined",
		    "remove --security-opt systempaths=unconfined");
}

static void check_modes(const struct ctx *c)
{
	static const struct {
		const char *what;
		size_t off;
		const char *flag;
	} modes[] = {
	    {"pid mode", offsetof(struct ar_docker_facts, pid_mode), "--pid"},
	    {"ipc mode", offsetof(struct ar_docker_facts, ipc_mode), "--ipc"},
	    {"userns mode", offsetof(struct ar_docker_facts, userns_mode), "--userns"},
	    {"uts mode", offsetof(struct ar_docker_facts, uts_mode), "--uts"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(modes); i++) {
		const char *v = *(char *const *)((const char *)c->d + modes[i].off);
		if (strcmp(v, "host") != 0 && strncmp(v, "container:", 10) != 0)
			continue;
		ar_autofree char *fix = ar_xasprintf("remove %s %s", modes[i].flag, v);
		add(c, modes[i].what, "private", v, fix);
	}
}

static void check_cgroupns(const struct ctx *c)
{
	if (strcmp(c->d->cgroupns_mode, "host") == 0)
		add(c, "cgroupns mode", "private", "host", "--cgroupns private");
}

/* Ways into the host's devices, groups and kernel settings: each must be empty. */
static void check_host_lists(const struct ctx *c)
{
	static const struct {
		const char *what;
		size_t off;
		const char *flag;
		bool quote; /* values with spaces */
	} lists[] = {
	    {"devices", offsetof(struct ar_docker_facts, devices), "--device", false},
	    {"device cgroup rules", offsetof(struct ar_docker_facts, device_cgroup_rules),
	     "--device-cgroup-rule", true},
	    {"group-add", offsetof(struct ar_docker_facts, group_add), "--group-add", false},
	    {"sysctls", offsetof(struct ar_docker_facts, sysctls), "--sysctl", false},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(lists); i++) {
		char *const *sv = *(char **const *)((const char *)c->d + lists[i].off);
		if (sv[0] == NULL)
			continue;
		ar_autobuf struct ar_buf fix = {0};
		ar_buf_puts(&fix, "remove");
		for (size_t k = 0; sv[k]; k++)
			ar_buf_printf(&fix, lists[i].quote ? " %s '%s'" : " %s %s", lists[i].flag,
				      sv[k]);
		ar_autofree char *have = strv_join(sv, ",", "none");
		add(c, lists[i].what, "none", have, fix.data);
	}
}

/* `--network host` and `container:X` share another network namespace: one cause, one
 * finding (the network list then says nothing more). */
static bool shares_netns(const char *mode)
{
	return strcmp(mode, "host") == 0 || strncmp(mode, "container:", 10) == 0;
}

static void check_network(const struct ctx *c)
{
	const char *mode = c->d->network_mode[0] ? c->d->network_mode : "default";
	if (c->sp->net.mode == AR_NETWORK_NONE) {
		if (strcmp(mode, "none") != 0)
			add(c, "network mode", "none", mode, "--network none");
		return;
	}
	const char *want = c->p->net_name;
	ar_autofree char *fix = ar_xasprintf(
	    "--network %s (docker network create " AR_DOCKER_NET_CREATE_OPTS " %s)", want, want);
	if (strcmp(mode, want) != 0)
		add(c, "network mode", want, mode, fix);
	if (shares_netns(mode))
		return;
	if (c->d->networks[0] == NULL || c->d->networks[1] != NULL ||
	    strcmp(c->d->networks[0], want) != 0) {
		ar_autofree char *have = strv_join(c->d->networks, ",", "none");
		ar_autofree char *fix2 =
		    ar_xasprintf("only %s (docker network disconnect the others)", want);
		add(c, "networks", want, have, fix2);
	}
}

static bool on_network(const struct ar_docker_facts *d, const char *name)
{
	return strcmp(d->network_mode, name) == 0 || strv_has(d->networks, name);
}

/* What `docker inspect` of the container cannot say: whether the agent's network is
 * --internal (no outbound NAT) and whether the host has an address on it. On a plain
 * internal bridge the host's own services answer at the gateway and every other host
 * address (moby/libnetwork#1151); inhibit_ipv4 leaves the host no address there. */
static void check_agent_network(const struct ctx *c)
{
	const char *want = c->p->net_name;
	if (c->sp->net.mode != AR_NETWORK_PROXY || !on_network(c->d, want))
		return;
	const struct ar_docker_network *n = ar_check_docker_network(c->d, want);
	ar_autofree char *recreate = ar_xasprintf(
	    "docker network rm %s; docker network create " AR_DOCKER_NET_CREATE_OPTS " %s", want,
	    want);
	if (n == NULL) {
		ar_autofree char *note =
		    ar_xasprintf("network %s was not inspected: its --internal setting and the "
				 "host's address on it are not checked (use --container, or save "
				 "`docker inspect CONTAINER %s`)",
				 want, want);
		ar_findings_note(c->out, note);
		return;
	}
	ar_autofree char *what = ar_xasprintf("network %s internal", want);
	if (!n->internal)
		add(c, what, "true", "false (outbound NAT)", recreate);
	if ((n->driver[0] == '\0' || strcmp(n->driver, "bridge") == 0) && !n->inhibit_ipv4) {
		ar_autofree char *w = ar_xasprintf("host services reachable through %s", want);
		ar_autofree char *have = n->gateway[0]
					     ? ar_xasprintf("yes (gateway %s)", n->gateway)
					     : ar_xstrdup("yes");
		ar_autofree char *fix = ar_xasprintf(
		    "%s; or run the agent under `agentrun run` (no path to the host at all)",
		    recreate);
		add(c, w, "no", have, fix);
	}
}

/* Facts of a stopped container are its configuration, not a running process. */
static void check_state(const struct ctx *c)
{
	const char *st = c->d->state_status;
	if (st[0] == '\0' || strcmp(st, "running") == 0)
		return;
	bool never =
	    c->d->started_at[0] == '\0' || strncmp(c->d->started_at, "0001-01-01", 10) == 0;
	ar_autofree char *note =
	    ar_xasprintf(never ? "container %s has never started (state %s): checked as "
				 "configured, nothing has run with it"
			       : "container %s is not running (state %s): checked as "
				 "configured when it last ran",
			 c->d->name[0] ? c->d->name : "?", st);
	ar_findings_note(c->out, note);
}

static void limit_text(int64_t v, bool cpus, char *buf, size_t size)
{
	if (v <= 0)
		snprintf(buf, size, "unlimited");
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
		const char *flag;
		const char *value;
	} rows[] = {
	    {"pids limit", l->pids, c->d->pids_limit, false, "--pids-limit", NULL},
	    {"memory limit", l->memory, c->d->memory, false, "--memory", l->memory_str},
	    {"cpu limit", l->cpus_milli, c->d->cpus_milli, true, "--cpus",
	     ar_check_format_cpus(l->cpus_milli, cpus, sizeof(cpus))},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(rows); i++) {
		char want[32], have[32];
		if (rows[i].want <= 0 || rows[i].want == rows[i].have)
			continue;
		limit_text(rows[i].want, rows[i].cpus, want, sizeof(want));
		limit_text(rows[i].have, rows[i].cpus, have, sizeof(have));
		ar_autofree char *fix =
		    ar_xasprintf("%s %s", rows[i].flag, rows[i].value ? rows[i].value : want);
		add(c, rows[i].what, want, have, fix);
	}
}

/* No swap: memory+swap equal to memory, as `agentrun run` sets memory.swap.max = 0.
 * Docker records 0 for "not given" (then allows as much swap as memory) and -1 for
 * unlimited swap. */
static void check_swap(const struct ctx *c)
{
	const struct ar_limits *l = &c->sp->limits.cgroup;
	char want[32], have[32];
	if (l->memory <= 0 || c->d->memory_swap == c->sp->limits.memory_swap)
		return;
	snprintf(want, sizeof(want), "%" PRId64, c->sp->limits.memory_swap);
	if (c->d->memory_swap == 0)
		snprintf(have, sizeof(have), "unset");
	else if (c->d->memory_swap < 0)
		snprintf(have, sizeof(have), "unlimited");
	else
		snprintf(have, sizeof(have), "%" PRId64, c->d->memory_swap);
	ar_autofree char *fix =
	    ar_xasprintf("--memory-swap %s", l->memory_str ? l->memory_str : want);
	add(c, "memory+swap limit", want, have, fix);
}

static void check_oom_kill(const struct ctx *c)
{
	if (c->d->oom_kill_disable)
		add(c, "oom-kill-disable", "false", "true", "remove --oom-kill-disable");
}

struct user_spec {
	bool root;
	bool numeric;
	long uid;
	bool has_gid;
	long gid;
};

static bool parse_id(const char *s, size_t n, long *out)
{
	char *end;
	if (n == 0 || n > 10 || s[0] < '0' || s[0] > '9')
		return false;
	*out = strtol(s, &end, 10);
	return end == s + n;
}

/* Docker's USER[:GROUP]: empty, 0 and root (with any group) run as root. */
static struct user_spec parse_user(const char *s)
{
	struct user_spec u = {0};
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);
	u.numeric = parse_id(s, n, &u.uid);
	u.root = n == 0 || (u.numeric && u.uid == 0) || (n == 4 && strncmp(s, "root", 4) == 0);
	if (colon)
		u.has_gid = parse_id(colon + 1, strlen(colon + 1), &u.gid);
	return u;
}

/* Always UID:GID: with a bare UID docker runs with gid 0 unless the image's passwd has
 * an entry for it, so a bare UID is drift even when it is the policy's. */
static void check_user(const struct ctx *c)
{
	const char *have = c->d->user;
	struct user_spec u = parse_user(have);
	if (!u.root && u.numeric && u.has_gid && u.uid == (long)c->sp->uid &&
	    u.gid == (long)c->sp->gid)
		return;
	ar_autofree char *want = ar_xasprintf("%u:%u", (unsigned)c->sp->uid, (unsigned)c->sp->gid);
	ar_autofree char *fix = ar_xasprintf("--user %s", want);
	ar_autofree char *actual =
	    have[0] == '\0' ? ar_xstrdup("root")
	    : !u.root && !strchr(have, ':')
		? ar_xasprintf("%s (no group: gid 0 unless the image's passwd names one)", have)
		: ar_xstrdup(have);
	add(c, "user", want, actual, fix);
}

/* Values go through ar_check_shown_value: a secret, or a URL with credentials, is never
 * printed, whether the container or the policy holds it. */
static void expect_env(const struct ctx *c, const char *key, const char *want, const char *what)
{
	const char *have = ar_check_env_get(c->d->env, key);
	if (have && strcmp(have, want) == 0)
		return;
	const char *want_shown = ar_check_shown_value(key, want);
	ar_autofree char *w = ar_xasprintf("%s %s", what, key);
	ar_autofree char *fix = ar_xasprintf("-e %s=%s", key, want_shown == want ? want : "...");
	add(c, w, want_shown, have ? ar_check_shown_value(key, have) : "unset", fix);
}

static bool is_url_var(const char *key)
{
	for (size_t i = 0; i < AR_PROXY_ENV_N_URL; i++)
		if (strcmp(key, ar_proxy_env_url_vars[i]) == 0)
			return true;
	return false;
}

/* The spec's container environment, variable by variable: the proxy URL variables, the
 * policy's env, KUBECONFIG. Not compared: NO_PROXY (no confinement), and what secrets put
 * there (check_secrets: a placeholder is fresh per sandbox, so only its shape says). */
static void check_env(const struct ctx *c)
{
	for (char **e = c->sp->container_env; *e != NULL; e++) {
		const char *eq = strchr(*e, '=');
		ar_autofree char *key = ar_xstrndup(*e, (size_t)(eq - *e));
		bool url = is_url_var(key);
		if (ar_spec_env_from_secrets(c->p, key))
			continue;
		if (url || !ar_proxy_env_is_proxy_var(key))
			expect_env(c, key, eq + 1, url ? "proxy variable" : "env");
	}
}

static bool tmpfs_present(const struct ar_docker_facts *d, const char *target)
{
	if (strv_has(d->tmpfs, target))
		return true;
	for (size_t i = 0; i < d->n_mounts; i++)
		if (strcmp(d->mounts[i].type, "tmpfs") == 0 &&
		    strcmp(d->mounts[i].target, target) == 0)
			return true;
	return false;
}

static void check_tmpfs(const struct ctx *c)
{
	for (size_t i = 0; i < c->sp->n_mounts; i++) {
		const char *t = c->sp->mounts[i].target;
		if (c->sp->mounts[i].kind != AR_SPEC_MNT_TMPFS || tmpfs_present(c->d, t))
			continue;
		ar_autofree char *what = ar_xasprintf("tmpfs %s", t);
		ar_autofree char *fix = ar_xasprintf("--tmpfs %s", t);
		add(c, what, "mounted", "absent", fix);
	}
}

static const struct ar_docker_mount *mount_at(const struct ar_docker_facts *d, const char *target)
{
	for (size_t i = 0; i < d->n_mounts; i++)
		if (strcmp(d->mounts[i].target, target) == 0)
			return &d->mounts[i];
	return NULL;
}

/* As the -v flag would spell it; named volumes by name, not by their host path. */
static const char *mount_source(const struct ar_docker_mount *m)
{
	return strcmp(m->type, "volume") == 0 && m->name[0] ? m->name : m->source;
}

static char *mount_text(const struct ar_docker_mount *m)
{
	if (strcmp(m->type, "tmpfs") == 0)
		return ar_xasprintf("tmpfs:%s", m->target);
	return ar_xasprintf("%s:%s:%s", mount_source(m), m->target, m->readonly ? "ro" : "rw");
}

/* A mount the policy asks for: same source, same target, same mode. */
static void expect_mount(const struct ctx *c, const char *what, const char *src, const char *dst,
			 bool readonly)
{
	const struct ar_docker_mount *m = mount_at(c->d, dst);
	if (m && strcmp(m->type, "tmpfs") != 0 && strcmp(m->source, src) == 0 &&
	    m->readonly == readonly)
		return;
	ar_autofree char *want = ar_xasprintf("%s:%s:%s", src, dst, readonly ? "ro" : "rw");
	ar_autofree char *have = m ? mount_text(m) : ar_xstrdup("absent");
	ar_autofree char *fix = ar_xasprintf("-v %s", want);
	add(c, what, want, have, fix);
}

static void check_kubeconfig(const struct ctx *c)
{
	if (c->sp->kubeconfig_mount < 0)
		return;
	const struct ar_spec_mount *k = &c->sp->mounts[c->sp->kubeconfig_mount];
	expect_mount(c, "kubeconfig mount", k->source, k->target, k->readonly);
}

static void check_policy_mounts(const struct ctx *c)
{
	for (size_t i = 0; i < c->sp->n_mounts; i++) {
		const struct ar_spec_mount *m = &c->sp->mounts[i];
		if (!ar_spec_policy_bind(c->sp, i))
			continue;
		ar_autofree char *what = ar_xasprintf("mount %s", m->target);
		expect_mount(c, what, m->source, m->target, m->readonly);
	}
}

static bool spec_has_tmpfs(const struct ar_spec *sp, const char *target)
{
	for (size_t i = 0; i < sp->n_mounts; i++)
		if (sp->mounts[i].kind == AR_SPEC_MNT_TMPFS &&
		    strcmp(target, sp->mounts[i].target) == 0)
			return true;
	return false;
}

static bool spec_claims(const struct ar_spec *sp, const struct ar_docker_mount *m)
{
	/* secrets: the proxy's CA bundle, the volume render gives the agent read-only */
	if (sp->ca_bundle_mount >= 0 && strcmp(m->target, AR_RENDER_AGENT_CA_DIR) == 0 &&
	    m->readonly)
		return true;
	for (size_t i = 0; i < sp->n_mounts; i++)
		if (sp->mounts[i].kind == AR_SPEC_MNT_BIND && (int)i != sp->ca_bundle_mount &&
		    strcmp(m->target, sp->mounts[i].target) == 0)
			return true;
	return strcmp(m->type, "tmpfs") == 0 && spec_has_tmpfs(sp, m->target);
}

static char *removal_fix(const struct ar_docker_mount *m)
{
	if (strcmp(m->type, "tmpfs") == 0)
		return ar_xasprintf("remove --tmpfs %s", m->target);
	if (strcmp(m->type, "volume") == 0)
		return ar_xasprintf("remove the volume at %s (-v, --mount or the image's VOLUME)",
				    m->target);
	return ar_xasprintf("remove -v %s:%s", m->source, m->target);
}

/* Every mount the policy does not account for is drift; credentials and host
 * control paths are named as sensitive. */
static void check_other_mounts(const struct ctx *c)
{
	for (size_t i = 0; i < c->d->n_mounts; i++) {
		const struct ar_docker_mount *m = &c->d->mounts[i];
		if (spec_claims(c->sp, m))
			continue;
		bool is_kubeconfig =
		    c->sp->kubeconfig_mount >= 0 &&
		    strcmp(m->source, c->sp->mounts[c->sp->kubeconfig_mount].source) == 0;
		bool sensitive = !is_kubeconfig && (ar_check_is_sensitive_path(m->source) ||
						    ar_check_is_sensitive_path(m->target));
		ar_autofree char *what =
		    ar_xasprintf("%s %s", sensitive ? "sensitive mount" : "extra mount", m->target);
		ar_autofree char *have = mount_text(m);
		ar_autofree char *fix = removal_fix(m);
		add(c, what, "absent", have, fix);
	}
	for (size_t i = 0; c->d->tmpfs[i]; i++) {
		const char *t = c->d->tmpfs[i];
		if (spec_has_tmpfs(c->sp, t))
			continue;
		ar_autofree char *what = ar_xasprintf("extra mount %s", t);
		ar_autofree char *have = ar_xasprintf("tmpfs:%s", t);
		ar_autofree char *fix = ar_xasprintf("remove --tmpfs %s", t);
		add(c, what, "absent", have, fix);
	}
}

/* Names only: the value of a secret is never copied into a finding. */
static void check_secrets(const struct ctx *c)
{
	ar_findings_add_secrets(c->out, c->p, c->d->env,
				"remove -e %s; mount the secret as a read-only file "
				"(-v FILE:/run/secrets/%s:ro)");
}

static void (*const expectations[])(const struct ctx *) = {
    check_state,	check_rootfs,	     check_cap_drop,	 check_cap_add,
    check_privileged,	check_nnp,	     check_seccomp,	 check_apparmor,
    check_system_paths, check_modes,	     check_cgroupns,	 check_host_lists,
    check_network,	check_agent_network, check_limits,	 check_swap,
    check_oom_kill,	check_user,	     check_env,		 check_tmpfs,
    check_kubeconfig,	check_policy_mounts, check_other_mounts, check_secrets,
};

void ar_check_docker(const struct ar_spec *sp, const struct ar_docker_facts *d,
		     struct ar_findings *out)
{
	const struct ctx c = {sp->p, sp, d, out};
	for (size_t i = 0; i < AR_ARRAY_SIZE(expectations); i++)
		expectations[i](&c);
}

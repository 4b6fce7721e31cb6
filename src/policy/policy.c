/* The policy object: defaults, lifetime, derived names, the embedded default, the
 * cross-field checks shared by the reader and the CLI overrides, env helpers. */
#define _GNU_SOURCE
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agentrun/policy.h"
#include "agentrun/rules.h"
#include "agentrun/util.h"
#include "policy-private.h"

/* The policy `run` uses without --policy (DESIGN §2). It goes through the same
 * parser as a file, so it is validated the same way. */
static const char embedded_default[] = "{\n"
				       "  \"name\": \"default\",\n"
				       "  \"network\": \"none\",\n"
				       "  \"tmpfs\": [\"/tmp\"],\n"
				       "  \"limits\": {\"pids\": 256, \"memory\": \"512m\", "
				       "\"cpus\": \"1\"},\n"
				       "  \"user\": \"65534\",\n"
				       "  \"seccomp\": \"default\"\n"
				       "}\n";

struct ar_policy *policy_new(const char *origin)
{
	struct ar_policy *p = ar_xcalloc(1, sizeof(*p));

	p->origin = ar_xstrdup(origin);
	p->name = ar_xstrdup("agent");
	p->kubeconfig_target = ar_xstrdup(AR_DEFAULT_KUBECONFIG_TARGET);
	/* string lists are always NULL-terminated arrays, even when empty */
	p->allowed_hosts = ar_xcalloc(1, sizeof(char *));
	p->tmpfs = ar_xcalloc(2, sizeof(char *));
	p->tmpfs[0] = ar_xstrdup("/tmp");
	p->n_tmpfs = 1;
	p->limits.pids = AR_POLICY_DEFAULT_PIDS;
	p->limits.memory = AR_POLICY_DEFAULT_MEMORY;
	p->limits.memory_str = ar_xstrdup(AR_POLICY_DEFAULT_MEMORY_STR);
	p->limits.cpus_milli = AR_POLICY_DEFAULT_CPUS_MILLI;
	p->limits.cpus_str = ar_xstrdup(AR_POLICY_DEFAULT_CPUS_STR);
	p->user = ar_xstrdup("1000");
	p->uid = 1000;
	p->gid = 1000;
	p->seccomp = ar_xstrdup("default");
	p->network = AR_NETWORK_NONE;
	p->proxy.port = AR_DEFAULT_PROXY_PORT;
	p->proxy.sni = AR_SNI_CHECK; /* a tunnel that starts as TLS must name its host */
	p->proxy.transparent = true;
	return p;
}

void ar_policy_free(struct ar_policy *p)
{
	if (p == NULL)
		return;
	free(p->origin);
	free(p->path);
	free(p->name);
	free(p->image);
	free(p->rootfs);
	ar_strv_free(p->allowed_hosts);
	free(p->kubeconfig);
	free(p->kubeconfig_target);
	for (size_t i = 0; i < p->n_mounts; i++) {
		free(p->mounts[i].source);
		free(p->mounts[i].target);
		free(p->mounts[i].flag);
	}
	free(p->mounts);
	ar_strv_free(p->tmpfs);
	free(p->limits.memory_str);
	free(p->limits.cpus_str);
	free(p->user);
	for (size_t i = 0; i < p->n_env; i++) {
		free(p->env[i].key);
		free(p->env[i].value);
	}
	free(p->env);
	free(p->seccomp);
	for (size_t i = 0; i < p->proxy.n_budgets; i++)
		free(p->proxy.budgets[i].host);
	free(p->proxy.budgets);
	ar_strv_free(p->proxy.allow_private);
	free(p->proxy.dns_pool);
	free(p->proxy.upstream_ca);
	policy_free_secrets(p->secrets, p->n_secrets);
	free(p);
}

void ar_cleanup_policyp(struct ar_policy **p)
{
	ar_policy_free(*p);
	*p = NULL;
}

void ar_policy_derive(struct ar_policy *p)
{
	const char *n = p->name ? p->name : "agent";

	if (p->kubeconfig_target == NULL)
		p->kubeconfig_target = ar_xstrdup(AR_DEFAULT_KUBECONFIG_TARGET);
	snprintf(p->net_name, sizeof(p->net_name), "%s-net", n);
	snprintf(p->egress_name, sizeof(p->egress_name), "%s-egress", n);
	snprintf(p->proxy_name, sizeof(p->proxy_name), "%s-proxy", n);
	snprintf(p->agent_name, sizeof(p->agent_name), "%s-agent", n);
	snprintf(p->proxy_url, sizeof(p->proxy_url), "http://%s-proxy:%d", n, p->proxy.port);
}

int ar_policy_default(struct ar_policy **out, ar_error_t *err)
{
	if (ar_policy_parse(embedded_default, sizeof(embedded_default) - 1, "<embedded default>",
			    out, err) == -1)
		return -1;
	/* not a user the policy names: as root, run picks a dynamic uid (DESIGN §3); run
	 * by an ordinary user, the caller's own ids (keep-id, docs/rootless.md) */
	(*out)->user_set = false;
	return 0;
}

/* Where --policy NAME finds a profile, in order, after a file of that name: the
 * administrator's, then the ones installed beside the binary (PREFIX/bin/agentrun ->
 * PREFIX/share/agentrun/profiles, wherever PREFIX is). docs/policy.md says so. */
static char *profile_dir(size_t i)
{
	if (i == 0)
		return ar_xstrdup(AR_POLICY_ETC_PROFILES);
	if (i > 1)
		return NULL;
	ar_autofree char *exe = realpath("/proc/self/exe", NULL);
	char *slash = exe ? strrchr(exe, '/') : NULL;
	if (slash == NULL)
		return ar_xstrdup("");
	*slash = '\0';
	return ar_xasprintf("%s/../share/agentrun/profiles", exe);
}

/* NAME as a file; else, for a bare name, NAME(.json) in the profile directories. */
static char *find_policy(const char *arg, ar_error_t *err)
{
	struct stat st;
	if (strchr(arg, '/') != NULL || stat(arg, &st) == 0 || arg[0] == '\0' || arg[0] == '.')
		return ar_xstrdup(arg);
	bool has_ext = strlen(arg) > 5 && strcmp(arg + strlen(arg) - 5, ".json") == 0;
	ar_autobuf struct ar_buf tried = {0};
	for (size_t i = 0;; i++) {
		ar_autofree char *dir = profile_dir(i);
		if (dir == NULL)
			break;
		char *path = ar_xasprintf("%s/%s%s", dir, arg, has_ext ? "" : ".json");
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			return path;
		free(path);
		ar_autofree char *real = realpath(dir, NULL);
		ar_buf_printf(&tried, "%s%s", i ? ", " : "", real ? real : dir);
	}
	ar_error_make(err, 0,
		      "policy: `%s`: no such file, and no profile of that name in %s (agentrun "
		      "run --help: --policy)",
		      arg, tried.data);
	return NULL;
}

int ar_policy_load(const char *arg, struct ar_policy **out, ar_error_t *err)
{
	ar_autofree char *data = NULL;
	size_t len = 0;
	ar_autofree char *path = find_policy(arg, err);

	if (path == NULL)
		return -1;
	if (ar_read_file(path, AR_POLICY_FILE_MAX, &data, &len, err) == -1)
		return ar_error_wrap(err, "policy");
	if (ar_policy_parse(data, len, path, out, err) == -1)
		return -1;
	(*out)->path = realpath(path, NULL);
	return 0;
}

int ar_policy_validate(const struct ar_policy *p, ar_error_t *err)
{
	return policy_check(p, err);
}

/* ---- env ---------------------------------------------------------------- */

/* Index of KEY, or of where it would be inserted (with *found false). */
static size_t env_find(const struct ar_policy *p, const char *key, bool *found)
{
	size_t lo = 0, hi = p->n_env;

	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = strcmp(p->env[mid].key, key);
		if (r == 0) {
			*found = true;
			return mid;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const char *ar_policy_getenv(const struct ar_policy *p, const char *key)
{
	bool found;
	size_t i = env_find(p, key, &found);
	return found ? p->env[i].value : NULL;
}

void ar_policy_setenv(struct ar_policy *p, const char *key, const char *value)
{
	bool found;
	size_t i = env_find(p, key, &found);

	if (found) {
		free(p->env[i].value);
		p->env[i].value = ar_xstrdup(value);
		return;
	}
	p->env = ar_xrealloc(p->env, (p->n_env + 1) * sizeof(*p->env));
	memmove(&p->env[i + 1], &p->env[i], (p->n_env - i) * sizeof(*p->env));
	p->env[i].key = ar_xstrdup(key);
	p->env[i].value = ar_xstrdup(value);
	p->n_env++;
}

/* A shell that lets someone log in: not nologin, false or empty. */
static bool login_shell(const char *sh)
{
	static const char *const no_login[] = {"nologin", "false", "sync"};
	const char *base = sh ? strrchr(sh, '/') : NULL;
	base = base ? base + 1 : sh;
	if (base == NULL || base[0] == '\0')
		return false;
	for (size_t i = 0; i < AR_ARRAY_SIZE(no_login); i++)
		if (strcmp(base, no_login[i]) == 0)
			return false;
	return true;
}

static char *user_warning(const struct ar_policy *p, const struct passwd *pw)
{
	return ar_xasprintf("%s: user: %u is the host account `%s` (login shell %s): the sandbox "
			    "shares its per-user limits and owns files as it; leave `user` out "
			    "for a dynamic uid of its own",
			    p->origin, (unsigned)p->uid, pw->pw_name, pw->pw_shell);
}

/* /etc/passwd itself, not NSS: loading the NSS modules would cost `run` ~0.6 ms at
 * every start, for a warning. (An account only a directory service knows is missed.) */
char *ar_policy_user_warning(const struct ar_policy *p)
{
	if (!p->user_set)
		return NULL;
	FILE *f = fopen("/etc/passwd", "re");
	struct passwd *pw = NULL;
	while (f != NULL && (pw = fgetpwent(f)) != NULL && pw->pw_uid != p->uid)
		;
	char *msg = pw != NULL && login_shell(pw->pw_shell) ? user_warning(p, pw) : NULL;
	if (f != NULL)
		fclose(f);
	return msg;
}

char *ar_policy_mount_origin(const struct ar_policy *p, size_t i)
{
	if (p->mounts[i].flag != NULL)
		return ar_xstrdup(p->mounts[i].flag);
	return ar_xasprintf("%s: mounts[%zu]", p->origin, i);
}

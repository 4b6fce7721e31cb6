/* ar_spec_build: the policy (after overrides) as what the agent gets, for every back end:
 * run's sandbox, the docker, k8s and OCI renderings, the checks and the OCI hook. What
 * only the back end knows (run's leased ids and user namespace, the proxy's URL, the
 * placeholders the proxy holds, the CA bundle's path) comes in ar_spec_opts; without it
 * the placeholders stand in. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "agentrun/cgroup.h"
#include "agentrun/log.h"
#include "agentrun/seccomp.h"
#include "agentrun/secrets.h"
#include "agentrun/spec.h"
#include "agentrun/util.h"

static void add_mount(struct ar_spec *s, enum ar_spec_mount_kind kind, const char *source,
		      const char *target, bool readonly, char *field);

bool ar_spec_kubeconfig_secret(const struct ar_policy *p)
{
	return p->kubeconfig != NULL && p->network == AR_NETWORK_PROXY;
}

/* The environment, and with secrets the placeholders and the CA bundle that goes with
 * them: the back end's (run: the proxy holds them), else fresh placeholders (the OCI
 * hook's proxy adopts them from config.json) and the bundle's own CA file, which an OCI
 * bundle (in_bundle) also has for its kubeconfig's server alone. */
static int build_env(struct ar_spec *s, const struct ar_spec_opts *o, bool in_bundle,
		     ar_error_t *err)
{
	const struct ar_policy *p = s->p;
	ar_autosecrets struct ar_secrets *fresh = NULL;
	const char *bundle = o->ca_bundle, *target = o->ca_bundle_target;

	s->container_env =
	    ar_spec_container_env(p, s->net.mode == AR_NETWORK_PROXY ? s->net.proxy_url : NULL);
	if (o->secrets == NULL && ar_secrets_new(p, &fresh, err) < 0)
		return -1;
	if (fresh != NULL ||
	    (in_bundle && ar_spec_kubeconfig_secret(p))) { /* relative: in the bundle */
		bundle = AR_SPEC_CA_BUNDLE_FILE;
		target = AR_SPEC_CA_BUNDLE;
	}
	ar_spec_env_secrets(&s->container_env, o->secrets ? o->secrets : fresh,
			    bundle ? target : NULL);
	s->env = ar_spec_env_full(p, o->term, s->container_env);
	if (bundle != NULL) {
		s->ca_bundle_mount = (int)s->n_mounts;
		add_mount(s, AR_SPEC_MNT_BIND, bundle, target, true,
			  ar_xasprintf("%s: secrets (the CA bundle)", p->origin));
	}
	return 0;
}

static void add_mount(struct ar_spec *s, enum ar_spec_mount_kind kind, const char *source,
		      const char *target, bool readonly, char *field)
{
	s->mounts = ar_xrealloc(s->mounts, (s->n_mounts + 1) * sizeof(*s->mounts));
	s->mounts[s->n_mounts++] = (struct ar_spec_mount){
	    .kind = kind, .source = source, .target = target, .readonly = readonly, .field = field};
}

static bool is_tmpfs_target(const struct ar_policy *p, const char *path)
{
	for (size_t i = 0; i < p->n_tmpfs; i++)
		if (strcmp(p->tmpfs[i], path) == 0)
			return true;
	return false;
}

static bool is_hidden(const struct ar_spec *s, const char *path)
{
	for (size_t i = 0; i < s->n_hidden; i++)
		if (ar_path_under(path, s->hidden[i]))
			return true;
	return false;
}

static void hide(struct ar_spec *s, const char *path)
{
	s->hidden = ar_xrealloc(s->hidden, (s->n_hidden + 1) * sizeof(*s->hidden));
	s->hidden[s->n_hidden++] = ar_xstrdup(path);
}

/* Credentials the host root view would show, and the caller's own places (its homes,
 * its runtime directory with the SSH agent, D-Bus, Wayland and keyring sockets): absent
 * from the view already when they lie under /home, /root or /run; hidden by name when
 * they lie in a directory the view shows (/opt, /etc, /usr), since an agent running as
 * the caller's uid could read them. A policy tmpfs replaces the place anyway: one
 * mount, not two. */
static bool seen_before(const char *const *places, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (places[j] != NULL && strcmp(places[j], places[i]) == 0)
			return true;
	return false;
}

static void build_hidden(struct ar_spec *s, const struct ar_spec_opts *o)
{
	if (s->rootfs != NULL)
		return;
	for (size_t i = 0; i < ar_spec_n_hidden_paths; i++)
		if (!is_tmpfs_target(s->p, ar_spec_hidden_paths[i]))
			hide(s, ar_spec_hidden_paths[i]);
	for (size_t i = 0; o->caller_private != NULL && i < AR_SPEC_CALLER_PRIVATE_MAX; i++) {
		const char *path = o->caller_private[i];
		/* "/" is no place of the caller's own (services run with HOME=/) */
		if (path == NULL || path[0] != '/' || path[1] == '\0' ||
		    strstr(path, "/..") != NULL || is_hidden(s, path) ||
		    is_tmpfs_target(s->p, path) || seen_before(o->caller_private, i))
			continue;
		if (ar_spec_needed_dir(path))
			ar_warn("%s, the caller's home or runtime directory, is a system directory "
				"the sandbox needs: it stays visible (read-only), not hidden",
				path);
		else
			hide(s, path);
	}
}

/* Its network is never the host's (none, or the proxy's), so the host's names (its own
 * addresses, other machines, an allowed name pinned to a host address) would resolve
 * to what the sandbox cannot reach, or past the proxy's DNS stub, whose synthetic
 * addresses carry the name to the proxy (docs/network.md). */
static void build_hosts(struct ar_spec *s)
{
	s->hosts = ar_xasprintf("# agentrun: the sandbox's own hosts file (its network is not "
				"the host's)\n"
				"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
				"127.0.1.1\t%s\n",
				s->hostname);
}

static int check_target(const char *field, const char *target, ar_error_t *err)
{
	if (target == NULL || target[0] != '/' || strcmp(target, "/") == 0)
		return ar_error_make(err, 0, "%s: target must be an absolute path below /", field);
	return 0;
}

static void build_mounts(struct ar_spec *s, const struct ar_spec_opts *o, bool in_bundle)
{
	const struct ar_policy *p = s->p;
	for (size_t i = 0; i < p->n_tmpfs; i++)
		add_mount(s, AR_SPEC_MNT_TMPFS, NULL, p->tmpfs[i], false,
			  ar_xasprintf("%s: tmpfs[%zu]", p->origin, i));
	for (size_t i = 0; i < p->n_mounts; i++)
		add_mount(s, AR_SPEC_MNT_BIND, p->mounts[i].source, p->mounts[i].target,
			  p->mounts[i].readonly, ar_policy_mount_origin(p, i));
	if (p->kubeconfig != NULL) {
		s->kubeconfig_mount = (int)s->n_mounts;
		/* the policy's (mode 600, its owner's): run binds a copy the sandbox's uid
		 * reads; the sandbox's own (secrets: a placeholder token) is made for it */
		/* an OCI bundle's is its own file, which the hook fills like run's */
		const char *own =
		    in_bundle && ar_spec_kubeconfig_secret(p) ? AR_SPEC_KUBECONFIG_FILE : NULL;
		if (o->kubeconfig != NULL)
			own = o->kubeconfig;
		add_mount(s, AR_SPEC_MNT_BIND, own ? own : p->kubeconfig,
			  p->kubeconfig_target ? p->kubeconfig_target
					       : AR_DEFAULT_KUBECONFIG_TARGET,
			  true, ar_xasprintf("%s: kubeconfig", p->origin));
		s->mounts[s->n_mounts - 1].copy = own == NULL;
	}
}

static int check_mounts(const struct ar_spec *s, ar_error_t *err)
{
	for (size_t i = 0; i < s->n_mounts; i++)
		if (check_target(s->mounts[i].field, s->mounts[i].target, err) < 0)
			return -1;
	return 0;
}

static void build_limits(struct ar_spec *s)
{
	const struct ar_limits *l = &s->p->limits;
	s->limits = (struct ar_spec_limits){
	    .pids = l->pids,
	    .memory = l->memory,
	    /* memory + swap = memory: no swap, as memory.swap.max = 0 in `run` */
	    .memory_swap = l->memory,
	    .cpus_milli = l->cpus_milli,
	    .cpu_period = AR_CGROUP_CPU_PERIOD,
	    .cpu_quota = l->cpus_milli * AR_CGROUP_CPU_PERIOD / 1000,
	    .cgroup = *l, /* its strings the policy's, which outlives the spec */
	};
}

int ar_spec_build(const struct ar_policy *p, const struct ar_spec_opts *o, struct ar_spec **out,
		  ar_error_t *err)
{
	static const struct ar_spec_opts none = {0};
	bool in_bundle = o == NULL; /* render and check of an OCI bundle, the hook */
	if (o == NULL)
		o = &none;
	ar_autospec struct ar_spec *s = ar_xcalloc(1, sizeof(*s));
	*s = (struct ar_spec){
	    .p = p,
	    .uid = o->ids_set ? o->uid : p->uid,
	    .gid = o->ids_set ? o->gid : p->gid,
	    .idmap = o->idmap,
	    .rootfs = p->rootfs,
	    .hostname = p->name,
	    .readonly_root = true,
	    .no_new_privs = true,
	    .no_capabilities = true,
	    .seccomp = ar_spec_seccomp_of(p),
	    .net = {.mode = p->network},
	    .kubeconfig_mount = -1,
	    .ca_bundle_mount = -1,
	};
	if (p->network == AR_NETWORK_PROXY)
		s->net.proxy_url =
		    o->proxy_url != NULL
			? ar_xstrdup(o->proxy_url)
			: ar_xasprintf("http://%s:%d", AR_SPEC_PROXY_ADDR, p->proxy.port);
	build_hidden(s, o);
	build_mounts(s, o, in_bundle);
	if (build_env(s, o, in_bundle, err) < 0) /* and the CA bundle's mount */
		return -1;
	if (check_mounts(s, err) < 0)
		return -1;
	build_hosts(s);
	build_limits(s);
	*out = steal_pointer(&s);
	return 0;
}

bool ar_spec_policy_bind(const struct ar_spec *s, size_t i)
{
	return s->mounts[i].kind == AR_SPEC_MNT_BIND && (int)i != s->kubeconfig_mount &&
	       (int)i != s->ca_bundle_mount;
}

const char *ar_spec_seccomp_of(const struct ar_policy *p)
{
	return p->seccomp != NULL ? p->seccomp : "default";
}

int ar_spec_build_container(const struct ar_policy *p, struct ar_spec **out, ar_error_t *err)
{
	return ar_spec_build(p, &(struct ar_spec_opts){.proxy_url = p->proxy_url}, out, err);
}

void ar_spec_free(struct ar_spec *s)
{
	if (s == NULL)
		return;
	ar_strv_free(s->env);
	ar_strv_free(s->container_env);
	for (size_t i = 0; i < s->n_hidden; i++)
		free(s->hidden[i]);
	free(s->hidden);
	free(s->hosts);
	for (size_t i = 0; i < s->n_mounts; i++)
		free(s->mounts[i].field);
	free(s->mounts);
	free(s->net.proxy_url);
	free(s);
}

void ar_cleanup_specp(struct ar_spec **s)
{
	ar_spec_free(*s);
	*s = NULL;
}

const char *ar_spec_getenv(const struct ar_spec *s, const char *key)
{
	size_t klen = strlen(key);
	for (char **e = s->env; e != NULL && *e != NULL; e++)
		if (strncmp(*e, key, klen) == 0 && (*e)[klen] == '=')
			return *e + klen + 1;
	return NULL;
}

int ar_spec_seccomp_text(const struct ar_spec *s, char **owned, const char **text,
			 const char **origin, ar_error_t *err)
{
	*owned = NULL;
	*text = NULL;
	*origin = "seccomp/default.json";
	if (strcmp(s->seccomp, "default") == 0) {
		*text = ar_seccomp_default_json;
		return 0;
	}
	if (strcmp(s->seccomp, "unconfined") == 0)
		return 0;
	if (ar_read_file(s->seccomp, 0, owned, NULL, err) < 0)
		return ar_error_wrap(err, "%s: seccomp", s->p->origin);
	*text = *owned;
	*origin = s->seccomp;
	return 0;
}

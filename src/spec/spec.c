/* ar_spec_build: the policy (after overrides) as what the agent gets. The environment
 * comes from the one builder run uses (ar_sandbox_env); the proxy variables carry the
 * network plan's URL. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "agentrun/sandbox.h"
#include "agentrun/seccomp.h"
#include "agentrun/secrets.h"
#include "agentrun/spec.h"
#include "agentrun/util.h"

#define CPU_PERIOD_US 100000

static int build_env(struct ar_spec *s, const struct ar_spec_opts *o, ar_error_t *err)
{
	/* the one definition of the environment, proxy variables included (env.c) */
	s->env = ar_sandbox_env_net(s->p, o->run,
				    s->net.mode == AR_NETWORK_PROXY ? s->net.proxy_url : NULL);
	/* secrets: fresh placeholders (the OCI hook's proxy adopts them from config.json) */
	ar_autosecrets struct ar_secrets *set = NULL;
	if (ar_secrets_new(s->p, &set, err) < 0)
		return -1;
	ar_sandbox_env_secrets(&s->env, set, set ? AR_SPEC_CA_BUNDLE : NULL);
	return 0;
}

static void add_mount(struct ar_spec *s, enum ar_spec_mount_kind kind, const char *source,
		      const char *target, bool readonly, char *field)
{
	s->mounts = ar_xrealloc(s->mounts, (s->n_mounts + 1) * sizeof(*s->mounts));
	s->mounts[s->n_mounts++] = (struct ar_spec_mount){
	    .kind = kind, .source = source, .target = target, .readonly = readonly, .field = field};
}

static int check_target(const char *field, const char *target, ar_error_t *err)
{
	if (target == NULL || target[0] != '/' || strcmp(target, "/") == 0)
		return ar_error_make(err, 0, "%s: target must be an absolute path below /", field);
	return 0;
}

static int build_mounts(struct ar_spec *s, ar_error_t *err)
{
	const struct ar_policy *p = s->p;
	for (size_t i = 0; i < p->n_tmpfs; i++)
		add_mount(s, AR_SPEC_MNT_TMPFS, NULL, p->tmpfs[i], false,
			  ar_xasprintf("%s: tmpfs[%zu]", p->origin, i));
	for (size_t i = 0; i < p->n_mounts; i++)
		add_mount(s, AR_SPEC_MNT_BIND, p->mounts[i].source, p->mounts[i].target,
			  p->mounts[i].readonly, ar_policy_mount_origin(p, i));
	if (p->kubeconfig != NULL)
		add_mount(s, AR_SPEC_MNT_BIND, p->kubeconfig,
			  p->kubeconfig_target ? p->kubeconfig_target
					       : AR_DEFAULT_KUBECONFIG_TARGET,
			  true, ar_xasprintf("%s: kubeconfig", p->origin));
	if (p->n_secrets > 0) /* relative: the runtime finds it in the bundle */
		add_mount(s, AR_SPEC_MNT_BIND, AR_SPEC_CA_BUNDLE_FILE, AR_SPEC_CA_BUNDLE, true,
			  ar_xasprintf("%s: secrets (the CA bundle)", p->origin));
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
	    .cpu_period = CPU_PERIOD_US,
	    .cpu_quota = l->cpus_milli * CPU_PERIOD_US / 1000,
	};
}

int ar_spec_build(const struct ar_policy *p, const struct ar_spec_opts *o, struct ar_spec **out,
		  ar_error_t *err)
{
	static const struct ar_spec_opts none = {0};
	if (o == NULL)
		o = &none;
	ar_autospec struct ar_spec *s = ar_xcalloc(1, sizeof(*s));
	*s = (struct ar_spec){
	    .p = p,
	    .uid = p->uid,
	    .gid = p->gid,
	    .rootfs = p->rootfs,
	    .readonly_root = true,
	    .no_new_privs = true,
	    .no_capabilities = true,
	    .seccomp = p->seccomp != NULL ? p->seccomp : "default",
	    .net = {.mode = p->network},
	};
	if (p->network == AR_NETWORK_PROXY)
		s->net.proxy_url =
		    o->proxy_url != NULL
			? ar_xstrdup(o->proxy_url)
			: ar_xasprintf("http://%s:%d", AR_SPEC_PROXY_ADDR, p->proxy.port);
	if (build_env(s, o, err) < 0)
		return -1;
	build_limits(s);
	if (build_mounts(s, err) < 0)
		return -1;
	*out = steal_pointer(&s);
	return 0;
}

void ar_spec_free(struct ar_spec *s)
{
	if (s == NULL)
		return;
	ar_strv_free(s->env);
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

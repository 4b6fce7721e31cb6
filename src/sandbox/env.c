/* The command's environment: built from scratch, never inherited, so nothing of
 * the caller's (tokens, SSH_AUTH_SOCK, cloud credentials) leaks in by accident. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "agentrun/sandbox.h"
#include "agentrun/secrets.h"
#include "agentrun/util.h"

static void put(char ***env, size_t *n, const char *key, const char *value)
{
	size_t klen = strlen(key);
	for (size_t i = 0; i < *n; i++)
		if (strncmp((*env)[i], key, klen) == 0 && (*env)[i][klen] == '=') {
			free((*env)[i]);
			(*env)[i] = ar_xasprintf("%s=%s", key, value);
			return;
		}
	*env = ar_xrealloc(*env, (*n + 2) * sizeof(char *));
	(*env)[(*n)++] = ar_xasprintf("%s=%s", key, value);
	(*env)[*n] = NULL;
}

struct env_acc {
	char ***env;
	size_t *n;
};

static void put_proxy(const char *key, const char *value, void *data)
{
	struct env_acc *a = data;
	put(a->env, a->n, key, value);
}

char **ar_sandbox_env(const struct ar_policy *p, const struct ar_run_opts *o)
{
	return ar_sandbox_env_net(p, o, NULL);
}

char **ar_sandbox_env_net(const struct ar_policy *p, const struct ar_run_opts *o,
			  const char *proxy_url)
{
	char **env = ar_xcalloc(1, sizeof(char *));
	size_t n = 0;

	put(&env, &n, "PATH", AR_SANDBOX_PATH);
	/* HOME must be somewhere the user can write: the first tmpfs (usually /tmp) */
	put(&env, &n, "HOME", p->n_tmpfs > 0 ? p->tmpfs[0] : "/");
	if (o != NULL && o->term != NULL && o->term[0] != '\0')
		put(&env, &n, "TERM", o->term);
	if (proxy_url != NULL)
		ar_proxy_env_foreach(proxy_url, put_proxy, &(struct env_acc){&env, &n});
	for (size_t i = 0; i < p->n_env; i++)
		put(&env, &n, p->env[i].key, p->env[i].value);
	if (p->kubeconfig != NULL)
		put(&env, &n, "KUBECONFIG",
		    p->kubeconfig_target ? p->kubeconfig_target : AR_DEFAULT_KUBECONFIG_TARGET);
	return env;
}

void ar_sandbox_env_secrets(char ***env, const struct ar_secrets *s, const char *bundle)
{
	size_t n = 0;
	if (s == NULL)
		return;
	while ((*env)[n] != NULL)
		n++;
	for (size_t i = 0; i < s->n; i++)
		if (s->s[i].in_env)
			put(env, &n, s->s[i].name, s->s[i].placeholder);
	for (size_t i = 0; bundle != NULL && i < AR_POLICY_CA_ENV_N; i++)
		put(env, &n, ar_policy_ca_env_vars[i], bundle);
}

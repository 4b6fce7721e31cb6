/* The command's environment: built from scratch, never inherited, so nothing of
 * the caller's (tokens, SSH_AUTH_SOCK, cloud credentials) leaks in by accident. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "agentrun/secrets.h"
#include "agentrun/spec.h"
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

char **ar_spec_container_env(const struct ar_policy *p, const char *proxy_url)
{
	char **env = ar_xcalloc(1, sizeof(char *));
	size_t n = 0;

	if (proxy_url != NULL)
		ar_proxy_env_foreach(proxy_url, put_proxy, &(struct env_acc){&env, &n});
	for (size_t i = 0; i < p->n_env; i++)
		put(&env, &n, p->env[i].key, p->env[i].value);
	if (p->kubeconfig != NULL)
		put(&env, &n, "KUBECONFIG",
		    p->kubeconfig_target ? p->kubeconfig_target : AR_DEFAULT_KUBECONFIG_TARGET);
	return env;
}

char **ar_spec_env_full(const struct ar_policy *p, const char *term, char *const *container)
{
	char **env = ar_xcalloc(1, sizeof(char *));
	size_t n = 0;

	put(&env, &n, "PATH", AR_SPEC_PATH);
	/* HOME must be somewhere the user can write: the first tmpfs (usually /tmp) */
	put(&env, &n, "HOME", p->n_tmpfs > 0 ? p->tmpfs[0] : "/");
	if (term != NULL && term[0] != '\0')
		put(&env, &n, "TERM", term);
	for (size_t i = 0; container != NULL && container[i] != NULL; i++) {
		const char *eq = strchr(container[i], '=');
		ar_autofree char *key = ar_xstrndup(container[i], (size_t)(eq - container[i]));
		put(&env, &n, key, eq + 1);
	}
	return env;
}

char **ar_spec_env(const struct ar_policy *p, const char *term, const char *proxy_url)
{
	ar_autostrv char **container = ar_spec_container_env(p, proxy_url);
	return ar_spec_env_full(p, term, container);
}

void ar_spec_env_secrets(char ***env, const struct ar_secrets *s, const char *bundle)
{
	size_t n = 0;
	if (s == NULL && bundle == NULL)
		return;
	while ((*env)[n] != NULL)
		n++;
	for (size_t i = 0; s != NULL && i < s->n; i++)
		if (s->s[i].in_env)
			put(env, &n, s->s[i].name, s->s[i].placeholder);
	for (size_t i = 0; bundle != NULL && i < AR_POLICY_CA_ENV_N; i++)
		put(env, &n, ar_policy_ca_env_vars[i], bundle);
}

bool ar_spec_env_from_secrets(const struct ar_policy *p, const char *key)
{
	for (size_t i = 0; i < p->n_secrets; i++)
		if (strcmp(key, p->secrets[i].name) == 0)
			return true;
	bool ca = p->n_secrets > 0 || ar_spec_kubeconfig_secret(p);
	for (size_t i = 0; ca && i < AR_POLICY_CA_ENV_N; i++)
		if (strcmp(key, ar_policy_ca_env_vars[i]) == 0)
			return true;
	return false;
}

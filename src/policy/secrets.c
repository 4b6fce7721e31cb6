/* The policy's `secrets` (docs/secrets.md): each a name the sandbox sees as an
 * environment variable holding a placeholder, a source agentrun reads the real value
 * from, and the hosts the proxy may send it to. Checked here, pure: that a source
 * exists is run's business (src/secrets). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agentrun/policy.h"
#include "agentrun/rules.h"
#include "agentrun/util.h"
#include "policy-private.h"

/* The variables that point TLS clients at the sandbox's CA bundle: set by agentrun
 * when the policy has secrets. */
const char *const ar_policy_ca_env_vars[AR_POLICY_CA_ENV_N] = {
    "SSL_CERT_FILE",	   "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO",
};

void policy_free_secrets(struct ar_secret_spec *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(s[i].name);
		free(s[i].from);
		ar_strv_free(s[i].hosts);
	}
	free(s);
}

static int serr(ar_error_t *err, const struct ar_policy *p, const char *name, const char *field,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int serr(ar_error_t *err, const struct ar_policy *p, const char *name, const char *field,
		const char *fmt, ...)
{
	ar_autofree char *key =
	    field ? ar_xasprintf("secrets.%s.%s", name, field) : ar_xasprintf("secrets.%s", name);
	va_list ap;
	va_start(ap, fmt);
	policy_verror(err, p->origin ? p->origin : "<policy>", key, fmt, ap);
	va_end(ap);
	return -1;
}

/* env:NAME with a variable name, or file:/absolute/path. */
static int check_from(const struct ar_policy *p, const struct ar_secret_spec *s, ar_error_t *err)
{
	const char *why = NULL;
	if (strncmp(s->from, "env:", 4) == 0) {
		if (!policy_env_key_valid(s->from + 4))
			return serr(err, p, s->name, "from",
				    "\"%s\": env: needs a variable name matching %s", s->from,
				    AR_ENV_KEY_RE);
		return 0;
	}
	if (strncmp(s->from, "file:", 5) == 0) {
		ar_autofree char *norm = policy_path_normalize(s->from + 5, PATH_NOT_ROOT, &why);
		if (norm == NULL)
			return serr(err, p, s->name, "from", "\"%s\": %s", s->from, why);
		return 0;
	}
	return serr(err, p, s->name, "from", "must be env:NAME or file:PATH, got \"%s\"", s->from);
}

static bool in_allowed_hosts(const struct ar_policy *p, const char *rule)
{
	for (size_t i = 0; i < p->n_allowed_hosts; i++)
		if (strcasecmp(p->allowed_hosts[i], rule) == 0)
			return true;
	return false;
}

static int check_hosts(const struct ar_policy *p, const struct ar_secret_spec *s, ar_error_t *err)
{
	ar_autofree char *what =
	    ar_xasprintf("%s: secrets.%s.hosts", p->origin ? p->origin : "<policy>", s->name);
	ar_autorules struct ar_rules *r = NULL;
	if (ar_rules_compile(s->hosts, s->n_hosts, what, &r, err) == -1)
		return -1;
	for (size_t i = 0; i < s->n_hosts; i++) {
		ar_autofree char *field = ar_xasprintf("hosts[%zu]", i);
		if (!in_allowed_hosts(p, s->hosts[i]))
			return serr(err, p, s->name, field,
				    "\"%s\" is not in allowed_hosts (a secret goes only where "
				    "the sandbox may talk)",
				    s->hosts[i]);
	}
	return 0;
}

static int check_name(const struct ar_policy *p, const struct ar_secret_spec *s, ar_error_t *err)
{
	if (!policy_env_key_valid(s->name))
		return serr(err, p, s->name, NULL, "the name must be a variable name matching %s",
			    AR_ENV_KEY_RE);
	if (strlen(s->name) > AR_POLICY_SECRET_NAME_MAX)
		return serr(err, p, s->name, NULL, "the name is longer than %d characters",
			    AR_POLICY_SECRET_NAME_MAX);
	if (ar_policy_getenv(p, s->name) != NULL)
		return serr(err, p, s->name, NULL,
			    "is also in env (the sandbox gets the secret's placeholder there)");
	const char *why = policy_env_agentrun_var(p, s->name);
	if (why != NULL)
		return serr(err, p, s->name, NULL, "%s", why);
	return 0;
}

int policy_check_secrets(const struct ar_policy *p, ar_error_t *err)
{
	if (p->n_secrets == 0)
		return 0;
	if (p->network != AR_NETWORK_PROXY)
		return serr(err, p, p->secrets[0].name, NULL,
			    "needs network \"proxy\" (the proxy adds the real value)");
	if (p->n_secrets > AR_POLICY_SECRETS_MAX)
		return serr(err, p, p->secrets[AR_POLICY_SECRETS_MAX].name, NULL,
			    "more than %d secrets", AR_POLICY_SECRETS_MAX);
	for (size_t i = 0; i < p->n_secrets; i++) {
		const struct ar_secret_spec *s = &p->secrets[i];
		if (check_name(p, s, err) == -1 || check_from(p, s, err) == -1 ||
		    check_hosts(p, s, err) == -1)
			return -1;
	}
	return 0;
}

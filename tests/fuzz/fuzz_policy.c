/* Target "policy": ar_policy_parse over arbitrary bytes. A refusal names the origin
 * on one line; an accepted policy is one `run` could use as is: it validates again,
 * its allow-list compiles, its arrays are what the header promises. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/policy.h"
#include "agentrun/rules.h"
#include "agentrun/util.h"
#include "fuzz.h"

#define ORIGIN "fuzz.json"

static void check_derived(const struct ar_policy *p)
{
	char want[AR_POLICY_NAME_MAX + 48];
	AR_FUZZ_CHECK(p->name != NULL && *p->name != '\0', "no name");
	AR_FUZZ_CHECK(strlen(p->name) <= AR_POLICY_NAME_MAX, "name too long: %s", p->name);
	snprintf(want, sizeof(want), "%s-net", p->name);
	AR_FUZZ_CHECK(strcmp(p->net_name, want) == 0, "net_name %s", p->net_name);
	snprintf(want, sizeof(want), "%s-proxy", p->name);
	AR_FUZZ_CHECK(strcmp(p->proxy_name, want) == 0, "proxy_name %s", p->proxy_name);
	snprintf(want, sizeof(want), "http://%s-proxy:%d", p->name, p->proxy.port);
	AR_FUZZ_CHECK(strcmp(p->proxy_url, want) == 0, "proxy_url %s", p->proxy_url);
}

static void check_hosts(const struct ar_policy *p)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autorules struct ar_rules *r = NULL;

	AR_FUZZ_CHECK(p->allowed_hosts != NULL, "allowed_hosts is NULL");
	for (size_t i = 0; i < p->n_allowed_hosts; i++)
		AR_FUZZ_CHECK(p->allowed_hosts[i] != NULL, "allowed_hosts[%zu] is NULL", i);
	AR_FUZZ_CHECK(p->allowed_hosts[p->n_allowed_hosts] == NULL,
		      "allowed_hosts is not NULL-terminated");
	if (p->n_allowed_hosts == 0)
		return;
	AR_FUZZ_CHECK(ar_rules_compile(p->allowed_hosts, p->n_allowed_hosts, "fuzz", &r, &err) == 0,
		      "accepted allowed_hosts do not compile: %s", err ? err->msg : "?");
	AR_FUZZ_CHECK(ar_rules_count(r) == p->n_allowed_hosts, "rule count");
	for (size_t i = 0; i < p->proxy.n_budgets; i++)
		AR_FUZZ_CHECK(p->proxy.budgets[i].host != NULL &&
				  p->proxy.budgets[i].max_bytes_out >= 0,
			      "budget %zu", i);
}

static void check_env(const struct ar_policy *p)
{
	for (size_t i = 0; i < p->n_env; i++) {
		const struct ar_env *e = &p->env[i];
		AR_FUZZ_CHECK(e->key != NULL && e->value != NULL, "env[%zu] has NULL", i);
		AR_FUZZ_CHECK(i == 0 || strcmp(p->env[i - 1].key, e->key) < 0,
			      "env not sorted or keys not unique at %s", e->key);
		AR_FUZZ_CHECK(ar_policy_getenv(p, e->key) == e->value, "getenv(%s)", e->key);
	}
}

static void check_paths(const struct ar_policy *p)
{
	for (size_t i = 0; i < p->n_mounts; i++)
		AR_FUZZ_CHECK(p->mounts[i].source[0] == '/' && p->mounts[i].target[0] == '/',
			      "mount %zu not absolute: %s -> %s", i, p->mounts[i].source,
			      p->mounts[i].target);
	for (size_t i = 0; i < p->n_tmpfs; i++)
		AR_FUZZ_CHECK(p->tmpfs[i][0] == '/', "tmpfs %s not absolute", p->tmpfs[i]);
}

static void check_policy(const struct ar_policy *p)
{
	ar_auto_error ar_error_t err = NULL;

	AR_FUZZ_CHECK(p->origin != NULL && strcmp(p->origin, ORIGIN) == 0, "origin");
	AR_FUZZ_CHECK(p->limits.pids > 0 && p->limits.memory > 0 && p->limits.cpus_milli > 0,
		      "limits not positive");
	AR_FUZZ_CHECK(p->proxy.port >= 1 && p->proxy.port <= 65535, "port %d", p->proxy.port);
	AR_FUZZ_CHECK(p->user != NULL && p->seccomp != NULL, "user or seccomp missing");
	check_derived(p);
	check_hosts(p);
	check_env(p);
	check_paths(p);
	AR_FUZZ_CHECK(ar_policy_validate(p, &err) == 0, "an accepted policy does not validate: %s",
		      err ? err->msg : "?");
}

void ar_fuzz_policy(const uint8_t *data, size_t size)
{
	ar_autofree char *buf = ar_fuzz_dup(data, size);
	ar_auto_error ar_error_t err = NULL;
	ar_autopolicy struct ar_policy *p = NULL;

	if (ar_policy_parse(buf, size, ORIGIN, &p, &err) == -1) {
		AR_FUZZ_CHECK(p == NULL, "failure left a policy behind");
		ar_fuzz_check_error(&err, ORIGIN ": ");
		return;
	}
	AR_FUZZ_CHECK(p != NULL && err == NULL, "success without a policy or with an error");
	check_policy(p);
}

/* Target "inspect": the docker inspect reader, then the comparison and both output
 * formats against two policies (the embedded default and a proxy policy), as
 * `agentrun check --inspect FILE` runs them. The inspect file comes from whoever
 * made the container, so findings must stay one line each, the JSON must parse,
 * and a secret's value must never reach the output. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "agentrun/check.h"
#include "agentrun/policy.h"
#include "agentrun/spec.h"
#include "agentrun/util.h"
#include "fuzz.h"

#define ORIGIN "fuzz-inspect.json"

static const char proxy_policy[] =
    "{\"name\": \"triage\", \"allowed_hosts\": [\"api.example.com\", \"*.github.com:443\"],"
    " \"kubeconfig\": \"/srv/kube/config\", \"mounts\": [{\"source\": \"/srv/logs\","
    " \"target\": \"/logs\"}], \"env\": {\"MODE\": \"triage\"}, \"limits\": {\"pids\": 64,"
    " \"memory\": \"256m\", \"cpus\": \"0.5\"}, \"user\": \"1000:1000\"}";

static void cleanup_cjsonp(cJSON **j)
{
	cJSON_Delete(*j);
}
#define autocjson __attribute__((cleanup(cleanup_cjsonp)))

/* Parsed once, kept for the life of the process (still reachable, not a leak). */
static const struct ar_policy *policy(int which)
{
	static struct ar_policy *p[2];
	ar_auto_error ar_error_t err = NULL;
	if (p[which] != NULL)
		return p[which];
	int rc = which == 0 ? ar_policy_default(&p[0], &err)
			    : ar_policy_parse(proxy_policy, sizeof(proxy_policy) - 1, "fuzz-policy",
					      &p[1], &err);
	AR_FUZZ_CHECK(rc == 0, "fixed policy %d does not parse: %s", which, err ? err->msg : "?");
	return p[which];
}

/* ... and its container spec */
static const struct ar_spec *spec(int which)
{
	static struct ar_spec *s[2];
	return ar_fuzz_container_spec(policy(which), &s[which]);
}

static size_t count_ci(const uint8_t *hay, size_t n, const char *needle)
{
	size_t m = strlen(needle), c = 0;
	for (size_t i = 0; m > 0 && i + m <= n; i++)
		if (strncasecmp((const char *)hay + i, needle, m) == 0)
			c++;
	return c;
}

/* A value worth tracking: long, alphanumeric with a letter, written once in the
 * input (so no other field can legitimately print it). */
static bool trackable(const char *v, const uint8_t *data, size_t size)
{
	bool letter = false;
	if (strlen(v) < 8)
		return false;
	for (const char *p = v; *p; p++) {
		if (!isalnum((unsigned char)*p))
			return false;
		letter = letter || isalpha((unsigned char)*p);
	}
	return letter && count_ci(data, size, v) == 1;
}

static void check_findings(const struct ar_findings *f, const struct ar_docker_facts *d,
			   const uint8_t *data, size_t size)
{
	ar_autobuf struct ar_buf text = {0};
	ar_autobuf struct ar_buf json = {0};

	for (size_t i = 0; i < f->n; i++) {
		const struct ar_finding *x = &f->v[i];
		AR_FUZZ_CHECK(x->what && x->expected && x->actual && x->fix, "finding %zu", i);
		AR_FUZZ_CHECK(ar_fuzz_is_one_line(x->what) && ar_fuzz_is_one_line(x->expected) &&
				  ar_fuzz_is_one_line(x->actual) && ar_fuzz_is_one_line(x->fix),
			      "finding %zu is not one line: %s | %s | %s | %s", i, x->what,
			      x->expected, x->actual, x->fix);
	}
	ar_check_format_text(&text, f, "fuzz", "p");
	ar_check_format_json(&json, f, "fuzz", "p");
	autocjson cJSON *doc = cJSON_ParseWithLength(json.data, json.len);
	const cJSON *drift = cJSON_GetObjectItemCaseSensitive(doc, "drift");
	AR_FUZZ_CHECK(cJSON_IsNumber(drift) && (size_t)drift->valuedouble == f->n,
		      "check JSON does not parse or miscounts: %s", json.data);
	for (size_t i = 0; d->env[i] != NULL; i++) {
		ar_autofree char *key = ar_xstrdup(d->env[i]);
		char *eq = strchr(key, '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		if (!ar_check_is_secret_name(key) || !trackable(eq + 1, data, size))
			continue;
		AR_FUZZ_CHECK(strstr(text.data, eq + 1) == NULL &&
				  strstr(json.data, eq + 1) == NULL,
			      "the value of secret %s is printed", key);
	}
}

static void check_facts(const struct ar_docker_facts *d)
{
	char **strvs[] = {d->cap_drop, d->cap_add, d->security_opt, d->networks, d->env, d->tmpfs};
	for (size_t i = 0; i < AR_ARRAY_SIZE(strvs); i++)
		AR_FUZZ_CHECK(strvs[i] != NULL, "strv %zu is NULL", i);
	AR_FUZZ_CHECK(d->name && d->apparmor_profile && d->pid_mode && d->ipc_mode &&
			  d->userns_mode && d->network_mode && d->user,
		      "a string field is NULL");
	AR_FUZZ_CHECK(d->pids_limit >= 0 && d->memory >= 0 && d->cpus_milli >= 0,
		      "negative limit: pids %lld memory %lld cpus %lld", (long long)d->pids_limit,
		      (long long)d->memory, (long long)d->cpus_milli);
	for (size_t i = 1; d->networks[0] && d->networks[i]; i++)
		AR_FUZZ_CHECK(strcmp(d->networks[i - 1], d->networks[i]) <= 0, "networks unsorted");
	for (size_t i = 0; i < d->n_mounts; i++)
		AR_FUZZ_CHECK(d->mounts[i].type && d->mounts[i].source && d->mounts[i].target &&
				  *d->mounts[i].target != '\0',
			      "mount %zu", i);
}

void ar_fuzz_inspect(const uint8_t *data, size_t size)
{
	ar_autofree char *buf = ar_fuzz_dup(data, size);
	ar_auto_error ar_error_t err = NULL;
	ar_autodocker_facts struct ar_docker_facts *d = NULL;

	if (ar_check_inspect_parse(buf, size, ORIGIN, &d, &err) == -1) {
		AR_FUZZ_CHECK(d == NULL, "failure left facts behind");
		ar_fuzz_check_error(&err, ORIGIN ": ");
		return;
	}
	AR_FUZZ_CHECK(d != NULL && err == NULL, "success without facts or with an error");
	check_facts(d);
	for (int which = 0; which < 2; which++) {
		struct ar_findings f = {0};
		ar_check_docker(spec(which), d, &f);
		check_findings(&f, d, data, size);
		ar_findings_free(&f);
	}
}

/* Target "k8s": the manifest reader (YAML subset or JSON), then the Kubernetes checks
 * against two policies (the embedded default and a proxy policy with a kubeconfig),
 * as `agentrun check --manifest FILE` and `--pod FILE` run them. A manifest comes
 * from whoever wrote it: errors name the origin, findings stay one line each, and a
 * secret's literal value never reaches the output. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "agentrun/check.h"
#include "agentrun/k8s.h"
#include "agentrun/manifest.h"
#include "agentrun/spec.h"
#include "agentrun/policy.h"
#include "agentrun/util.h"
#include "fuzz.h"

#define ORIGIN "fuzz-manifest.yaml"

static const char proxy_policy[] =
    "{\"name\": \"triage\", \"allowed_hosts\": [\"api.example.com\"],"
    " \"kubeconfig\": \"/srv/kube/config\", \"mounts\": [{\"source\": \"/srv/logs\","
    " \"target\": \"/logs\"}], \"env\": {\"MODE\": \"triage\"}, \"tmpfs\": [\"/tmp\"],"
    " \"limits\": {\"pids\": 64, \"memory\": \"256m\", \"cpus\": \"0.5\"}, \"user\": \"1000\"}";

/* Parsed once, kept for the life of the process (still reachable, not a leak). */
static const struct ar_policy *policy(int which);

/* ... and its container spec */
static const struct ar_spec *spec(int which)
{
	static struct ar_spec *s[2];
	return ar_fuzz_container_spec(policy(which), &s[which]);
}

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

/* Literal values of secret-named env entries in any container of any object. */
static void secret_values(const cJSON *node, char ***out, size_t *n)
{
	const cJSON *it;
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(node, "name");
	const cJSON *value = cJSON_GetObjectItemCaseSensitive(node, "value");
	if (cJSON_IsString(name) && cJSON_IsString(value) &&
	    ar_check_is_secret_name(name->valuestring) && strlen(value->valuestring) >= 8) {
		*out = ar_xrealloc(*out, (*n + 2) * sizeof(char *));
		(*out)[(*n)++] = value->valuestring;
		(*out)[*n] = NULL;
	}
	cJSON_ArrayForEach(it, node) if (cJSON_IsObject(it) || cJSON_IsArray(it))
	    secret_values(it, out, n);
}

/* A value that shows up once in the input cannot be printed legitimately elsewhere. */
static bool once(const char *v, const uint8_t *data, size_t size)
{
	size_t m = strlen(v), c = 0;
	for (const char *p = v; *p; p++)
		if (!isalnum((unsigned char)*p))
			return false;
	for (size_t i = 0; i + m <= size; i++)
		c += strncasecmp((const char *)data + i, v, m) == 0;
	return c == 1;
}

static void check_output(const struct ar_findings *f, const cJSON *objs, const uint8_t *data,
			 size_t size)
{
	ar_autobuf struct ar_buf text = {0};
	for (size_t i = 0; i < f->n; i++) {
		const struct ar_finding *x = &f->v[i];
		AR_FUZZ_CHECK(ar_fuzz_is_one_line(x->what) && ar_fuzz_is_one_line(x->expected) &&
				  ar_fuzz_is_one_line(x->actual) && ar_fuzz_is_one_line(x->fix),
			      "finding %zu is not one line", i);
	}
	ar_check_format_text(&text, f, "fuzz", "p");
	ar_autofree char **secrets = NULL;
	size_t n = 0;
	secret_values(objs, &secrets, &n);
	for (size_t i = 0; i < n; i++)
		if (once(secrets[i], data, size))
			AR_FUZZ_CHECK(strstr(text.data, secrets[i]) == NULL,
				      "a secret's value is printed");
}

void ar_fuzz_k8s(const uint8_t *data, size_t size)
{
	ar_autofree char *buf = ar_fuzz_dup(data, size);
	ar_auto_error ar_error_t err = NULL;
	cJSON *objs = ar_manifest_read(buf, size, ORIGIN, &err);
	if (objs == NULL) {
		ar_fuzz_check_error(&err, ORIGIN);
		return;
	}
	AR_FUZZ_CHECK(err == NULL && cJSON_IsArray(objs), "success with an error or no array");
	const cJSON *o;
	cJSON_ArrayForEach(o, objs) AR_FUZZ_CHECK(cJSON_IsObject(o), "a non-object in the result");
	for (int which = 0; which < 2; which++) {
		for (int kind = 0; kind < 2; kind++) {
			struct ar_findings f = {0};
			char *subject = NULL;
			ar_auto_error ar_error_t cerr = NULL;
			if (ar_check_k8s(spec(which), objs, kind ? AR_K8S_MANIFEST : AR_K8S_POD, &f,
					 &subject, &cerr) == 0)
				check_output(&f, objs, data, size);
			else
				AR_FUZZ_CHECK(f.n == 0 && subject == NULL, "failure left findings");
			free(subject);
			ar_findings_free(&f);
		}
	}
	cJSON_Delete(objs);
}

/* Targets "ocistate" and "bundle": the OCI state a runtime hands `agentrun hook` on
 * stdin (its id and annotations come from whoever made the container, and the id
 * names a file), and the config.json `check --bundle` reads. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "agentrun/check.h"
#include "agentrun/hook.h"
#include "agentrun/policy.h"
#include "agentrun/spec.h"
#include "agentrun/util.h"
#include "fuzz.h"

void ar_fuzz_ocistate(const uint8_t *data, size_t size)
{
	ar_autofree char *buf = ar_fuzz_dup(data, size);
	ar_auto_error ar_error_t err = NULL;
	ar_autooci_state struct ar_oci_state *s = NULL;
	if (ar_oci_state_parse(buf, size, &s, &err) == -1) {
		AR_FUZZ_CHECK(s == NULL, "failure left a state behind");
		ar_fuzz_check_error(&err, "state: ");
		return;
	}
	AR_FUZZ_CHECK(s != NULL && err == NULL, "success without a state");
	AR_FUZZ_CHECK(s->oci_version && s->id && s->status && s->bundle,
		      "a required field is NULL");
	/* the id becomes a file name under /run/agentrun/hooks */
	AR_FUZZ_CHECK(ar_hook_id_valid(s->id) && strchr(s->id, '/') == NULL &&
			  strcmp(s->id, "..") != 0,
		      "unsafe id accepted: %s", s->id);
	AR_FUZZ_CHECK(s->bundle[0] == '/', "relative bundle accepted");
	AR_FUZZ_CHECK(s->pid >= 0, "negative pid");
	for (size_t i = 0; i < s->n_annotations; i++)
		AR_FUZZ_CHECK(ar_oci_state_annotation(s, s->annotations[2 * i]) != NULL,
			      "annotation %zu not found by its key", i);
}

static const struct ar_spec *spec(void)
{
	static struct ar_policy *p;
	static struct ar_spec *s;
	static const char json[] =
	    "{\"name\": \"t\", \"allowed_hosts\": [\"a.example\"], \"kubeconfig\": \"/k\","
	    " \"mounts\": [{\"source\": \"/s\", \"target\": \"/l\"}], \"env\": {\"M\": \"x\"}}";
	ar_auto_error ar_error_t err = NULL;
	if (s != NULL)
		return s;
	AR_FUZZ_CHECK(ar_policy_parse(json, sizeof(json) - 1, "fuzz-policy", &p, &err) == 0 &&
			  ar_spec_build(p, NULL, &s, &err) == 0,
		      "fixed policy: %s", err ? err->msg : "?");
	return s;
}

void ar_fuzz_bundle(const uint8_t *data, size_t size)
{
	ar_autofree char *buf = ar_fuzz_dup(data, size);
	ar_auto_error ar_error_t err = NULL;
	struct ar_findings f = {0};
	struct ar_check_bundle_opts o = {.origin = "config.json",
					 .policy_path = "/p.json",
					 .seccomp_json = "{\"defaultAction\": \"SCMP_ACT_ERRNO\"}",
					 .seccomp_origin = "profile"};
	if (ar_check_bundle(spec(), buf, size, &o, &f, &err) == -1) {
		AR_FUZZ_CHECK(f.n == 0, "failure with findings");
		ar_fuzz_check_error(&err, "config.json: ");
		return;
	}
	for (size_t i = 0; i < f.n; i++)
		AR_FUZZ_CHECK(f.v[i].what && f.v[i].expected && f.v[i].actual && f.v[i].fix,
			      "finding %zu has a NULL field", i);
	ar_autobuf struct ar_buf text = {0};
	ar_check_format_text(&text, &f, "bundle", "t");
	ar_findings_free(&f);
}

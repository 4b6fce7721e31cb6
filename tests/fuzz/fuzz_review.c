/* Target "kubeconfig": the review's own parsing (docs/review.md) over an arbitrary
 * kubeconfig: the YAML or JSON document, each user's bearer token and the JWT payload
 * in it. Every finding names a kind of the table, has evidence and a fix, and the
 * review's --json and --sarif documents stay JSON; the first line is also tried as a
 * bare token. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agentrun/review.h"
#include "agentrun/util.h"
#include "fuzz.h"

static void check_json(const struct ar_review *r)
{
	void (*fmt[])(const struct ar_review *, struct ar_buf *) = {ar_review_format_json,
								    ar_review_format_sarif};
	for (size_t i = 0; i < 2; i++) {
		ar_autobuf struct ar_buf b = {0};
		fmt[i](r, &b);
		cJSON *doc = cJSON_ParseWithLength(b.data, b.len);
		AR_FUZZ_CHECK(cJSON_IsObject(doc), "output %zu is not JSON: %s", i, b.data);
		cJSON_Delete(doc);
	}
}

void ar_fuzz_kubeconfig(const uint8_t *data, size_t size)
{
	ar_autofree char *buf = ar_fuzz_dup(data, size);
	struct ar_review r = {.policy_path = "p.json"};
	ar_review_kubeconfig(buf, size, "k.yaml", 1767225600, &r);
	for (size_t i = 0; i < r.n; i++) {
		const struct ar_review_finding *f = &r.f[i];
		AR_FUZZ_CHECK(strncmp(f->id, "kubeconfig-", 11) == 0, "finding %s", f->id);
		AR_FUZZ_CHECK(f->evidence && *f->evidence && f->fix && *f->fix, "empty finding");
	}
	check_json(&r);
	ar_review_free(&r);
	ar_autofree char *line = ar_fuzz_strndup(data, size); /* NUL-terminated */
	size_t n = strcspn(line, "\n");
	line[n] = '\0';
	ar_autofree char *payload = ar_jwt_payload(line);
	AR_FUZZ_CHECK(payload == NULL || strlen(payload) <= n, "payload longer than its token");
}

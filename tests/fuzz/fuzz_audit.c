/* Target "audit": ar_audit_summarize over an arbitrary log (a torn or hostile file
 * must never crash `agentrun audit`). The totals add up per host, the host table is
 * sorted and unique, and the --json document is JSON whose summary repeats the
 * totals. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agentrun/audit.h"
#include "agentrun/util.h"
#include "fuzz.h"

static void cleanup_cjsonp(cJSON **j)
{
	cJSON_Delete(*j);
}
#define autocjson __attribute__((cleanup(cleanup_cjsonp)))

static void check_totals(const struct ar_audit_summary *s)
{
	uint64_t allowed = 0, failed = 0, denied = 0, out = 0, in = 0;
	for (size_t i = 0; i < s->n_hosts; i++) {
		const struct ar_audit_host *h = &s->hosts[i];
		AR_FUZZ_CHECK(h->host != NULL, "host %zu is NULL", i);
		AR_FUZZ_CHECK(i == 0 || strcmp(s->hosts[i - 1].host, h->host) < 0,
			      "hosts not sorted or not unique at %zu", i);
		AR_FUZZ_CHECK(h->allowed + h->failed + h->denied > 0, "host %s without requests",
			      h->host);
		allowed += h->allowed;
		failed += h->failed;
		denied += h->denied;
		out += h->bytes_out;
		in += h->bytes_in;
	}
	AR_FUZZ_CHECK(allowed == s->allowed && failed == s->failed && denied == s->denied,
		      "allowed/failed/denied per host");
	AR_FUZZ_CHECK(out == s->bytes_out && in == s->bytes_in, "bytes per host");
	AR_FUZZ_CHECK(s->requests == s->allowed + s->failed + s->denied, "requests");
	AR_FUZZ_CHECK((s->invalid_lines == 0) == (s->first_invalid == 0), "first_invalid");
}

static void check_json(const struct ar_audit_summary *s)
{
	ar_autobuf struct ar_buf b = {0};
	ar_audit_format_json(s, &b);
	autocjson cJSON *doc = cJSON_ParseWithLength(b.data, b.len);
	AR_FUZZ_CHECK(doc != NULL && cJSON_IsObject(doc), "--json output is not JSON: %s", b.data);
	/* one document and nothing after it */
	AR_FUZZ_CHECK(strlen(b.data) == b.len, "--json output holds a NUL byte");
	const cJSON *entries = cJSON_GetObjectItemCaseSensitive(doc, "entries");
	const cJSON *summary = cJSON_GetObjectItemCaseSensitive(doc, "summary");
	AR_FUZZ_CHECK(cJSON_IsArray(entries), "entries");
	AR_FUZZ_CHECK((uint64_t)cJSON_GetArraySize(entries) == s->requests,
		      "entries has %d elements for %llu requests", cJSON_GetArraySize(entries),
		      (unsigned long long)s->requests);
	const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(summary, "hosts");
	AR_FUZZ_CHECK(cJSON_IsNumber(hosts) && (size_t)hosts->valuedouble == s->n_hosts,
		      "summary.hosts");
}

static void check_text(const struct ar_audit_summary *s)
{
	ar_autobuf struct ar_buf b = {0};
	size_t lines = 0;
	ar_audit_format_text(s, &b);
	for (size_t i = 0; i < b.len; i++)
		lines += b.data[i] == '\n';
	AR_FUZZ_CHECK(b.len > 0 && b.data[b.len - 1] == '\n', "text does not end in a newline");
	/* a header, one line per host, the summary (host names are printed as logged:
	 * one with a newline in it would add a line, so only count plain ones) */
	for (size_t i = 0; i < s->n_hosts; i++)
		if (strchr(s->hosts[i].host, '\n') != NULL)
			return;
	AR_FUZZ_CHECK(lines == s->n_hosts + 2, "%zu text lines for %zu hosts", lines, s->n_hosts);
}

void ar_fuzz_audit(const uint8_t *data, size_t size)
{
	ar_autofree char *buf = ar_fuzz_dup(data, size);
	struct ar_audit_summary s;

	ar_audit_summarize(buf, size, &s);
	check_totals(&s);
	check_text(&s);
	check_json(&s);
	ar_audit_summary_free(&s);
}

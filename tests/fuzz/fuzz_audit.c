/* Target "audit": ar_audit_summarize over an arbitrary log (a torn or hostile file
 * must never crash `agentrun audit`). The totals add up per host, the host table is
 * sorted and unique, and the --json document is JSON whose summary repeats the
 * totals. The same log through the proposal builder (`audit --propose`): the
 * proposed policy is a policy agentrun reads, whose rules allow every connection the
 * log allowed, built twice the same byte for byte, against a policy too (the edited
 * file still reads, its diff is empty exactly when nothing changed), and the --json
 * document is JSON. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agentrun/audit.h"
#include "agentrun/policy.h"
#include "agentrun/propose.h"
#include "agentrun/rules.h"
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

static const struct ar_psl *fuzz_psl(void)
{
	static struct ar_psl *psl;
	static bool tried;
	if (!tried) {
		ar_error_t err = NULL;
		tried = true;
		if (ar_psl_open(&psl, &err) == -1)
			ar_error_release(&err); /* folding then stays exact: still checked */
	}
	return psl;
}

/* Every allowed connection of the log is allowed by the proposed policy's rules. */
static void check_allows(const struct ar_audit_entries *es, const struct ar_policy *p)
{
	ar_autorules struct ar_rules *r = NULL;
	ar_error_t err = NULL;
	AR_FUZZ_CHECK(ar_rules_compile(p->allowed_hosts, p->n_allowed_hosts, "fuzz", &r, &err) == 0,
		      "proposed rules do not compile: %s", err ? err->msg : "");
	for (size_t i = 0; i < es->n; i++) {
		const struct ar_audit_entry *e = &es->v[i];
		struct ar_host h;
		struct ar_decision d;
		if (!e->allowed || ar_audit_entry_is_dns(e) || e->host == NULL || e->port <= 0 ||
		    ar_host_canonicalize(e->host, &h, NULL) == -1)
			continue;
		ar_rules_decide(r, &h, e->port, &d);
		AR_FUZZ_CHECK(d.allowed, "the proposal does not allow %s:%d", e->host, e->port);
	}
}

static void propose_once(const struct ar_audit_entries *es, const struct ar_policy *against,
			 const char *text, struct ar_buf *out)
{
	struct ar_proposal pr;
	ar_error_t err = NULL;
	struct ar_propose_opts o = {.psl = fuzz_psl(), .policy = against};
	ar_propose(es, &o, &pr);
	AR_FUZZ_CHECK(ar_propose_policy_text(&pr, text, text ? strlen(text) : 0, out, &err) == 0,
		      "the policy text: %s", err ? err->msg : "");
	ar_autobuf struct ar_buf j = {0};
	ar_proposal_format_json(&pr, out->data, NULL, &j);
	autocjson cJSON *doc = cJSON_ParseWithLength(j.data, j.len);
	AR_FUZZ_CHECK(cJSON_IsObject(doc), "--propose --json is not JSON");
	ar_proposal_free(&pr);
}

static const char against_text[] =
    "{\n  \"name\": \"f\",\n  \"allowed_hosts\": "
    "[\"api.github.com\", \"*.example.com:8443\"],\n  \"proxy\": "
    "{\"allow_private\": [\"127.0.0.0/8\"]},\n  \"mode\": \"learn\"\n}\n";

static void check_proposal(const char *buf, size_t size)
{
	struct ar_audit_entries es;
	ar_autobuf struct ar_buf a = {0}, b = {0}, c = {0}, d = {0};
	ar_autopolicy struct ar_policy *pa = NULL, *pc = NULL, *against = NULL;
	ar_error_t err = NULL;
	ar_audit_read_entries(buf, size, &es);
	propose_once(&es, NULL, NULL, &a);
	propose_once(&es, NULL, NULL, &b);
	AR_FUZZ_CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0, "not deterministic");
	AR_FUZZ_CHECK(ar_policy_parse(a.data, a.len, "proposal", &pa, &err) == 0,
		      "the proposed policy does not read: %s\n%s", err ? err->msg : "", a.data);
	check_allows(&es, pa);
	AR_FUZZ_CHECK(ar_policy_parse(against_text, strlen(against_text), "p", &against, &err) == 0,
		      "fixture");
	propose_once(&es, against, against_text, &c);
	AR_FUZZ_CHECK(ar_policy_parse(c.data, c.len, "edited", &pc, &err) == 0,
		      "the edited policy does not read: %s\n%s", err ? err->msg : "", c.data);
	check_allows(&es, pc);
	AR_FUZZ_CHECK(pc->mode == AR_MODE_ENFORCE, "the edited policy is still in learn mode");
	ar_unified_diff(against_text, strlen(against_text), c.data, c.len, "a", "b", &d);
	AR_FUZZ_CHECK((d.len == 0) == (c.len == strlen(against_text) &&
				       memcmp(c.data, against_text, c.len) == 0),
		      "diff and text disagree");
	ar_audit_entries_free(&es);
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
	check_proposal(buf, size);
}

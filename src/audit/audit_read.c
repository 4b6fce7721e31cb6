/* Audit log reader: JSON Lines in, per-host totals out. Pure over a buffer. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agentrun/audit.h"

static void cjson_cleanup(cJSON **j)
{
	cJSON_Delete(*j);
}
#define ar_autojson __attribute__((cleanup(cjson_cleanup)))

static struct ar_audit_host *host_slot(struct ar_audit_summary *s, const char *host)
{
	/* binary search keeps the table sorted as it grows; hosts are few */
	size_t lo = 0, hi = s->n_hosts;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(s->hosts[mid].host, host);
		if (c == 0)
			return &s->hosts[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	s->hosts = ar_xrealloc(s->hosts, (s->n_hosts + 1) * sizeof(*s->hosts));
	memmove(&s->hosts[lo + 1], &s->hosts[lo], (s->n_hosts - lo) * sizeof(*s->hosts));
	s->n_hosts++;
	s->hosts[lo] = (struct ar_audit_host){.host = ar_xstrdup(host)};
	return &s->hosts[lo];
}

static uint64_t number_field(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9e15)
		return 0; /* negative, NaN or beyond exact doubles: not a byte count */
	return (uint64_t)v->valuedouble;
}

/* Anything but ar_audit_failed_status the origin sent, and the request was served. */
static bool failed_status(const cJSON *o)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "status");
	/* compared as the double it is: converting 1e30 to int would be undefined */
	return cJSON_IsNumber(v) && ar_audit_failed_status(v->valuedouble);
}

static void count(struct ar_audit_summary *s, struct ar_audit_host *h, const cJSON *o, bool allowed)
{
	if (allowed && failed_status(o)) {
		h->failed++;
		s->failed++;
	} else if (allowed) {
		h->allowed++;
		s->allowed++;
	} else {
		h->denied++;
		s->denied++;
	}
}

/* One line; returns 0 when it is an audit object. The entry is re-printed by cJSON
 * rather than copied, so --json stays valid whatever bytes the line held. */
static int add_line(struct ar_audit_summary *s, const char *line, size_t len)
{
	const char *end = NULL;

	if (memchr(line, '\0', len) != NULL)
		return -1;
	ar_autojson cJSON *o = cJSON_ParseWithLengthOpts(line, len, &end, false);
	if (!cJSON_IsObject(o))
		return -1;
	for (; end < line + len; end++)
		if (strchr(" \t\r", *end) == NULL)
			return -1; /* trailing bytes after the object */
	const cJSON *host = cJSON_GetObjectItemCaseSensitive(o, "host");
	const cJSON *allowed = cJSON_GetObjectItemCaseSensitive(o, "allowed");
	/* refusals before a target was known (a 400 on a garbled request line, a 503
	 * over the connection cap) carry "host": null; they still count */
	if (!(cJSON_IsString(host) || cJSON_IsNull(host)) || !cJSON_IsBool(allowed))
		return -1;
	ar_autofree char *entry = cJSON_PrintUnformatted(o);
	if (entry == NULL)
		return -1;
	struct ar_audit_host *h =
	    host_slot(s, cJSON_IsString(host) ? host->valuestring : AR_AUDIT_NO_HOST);
	uint64_t out = number_field(o, "bytes_out"), in = number_field(o, "bytes_in");
	count(s, h, o, cJSON_IsTrue(allowed));
	h->bytes_out += out;
	h->bytes_in += in;
	s->bytes_out += out;
	s->bytes_in += in;
	s->requests++;
	if (s->entries.len > 0)
		ar_buf_putc(&s->entries, ',');
	ar_buf_puts(&s->entries, entry);
	return 0;
}

void ar_audit_summarize(const char *data, size_t len, struct ar_audit_summary *out)
{
	size_t lineno = 0;
	memset(out, 0, sizeof(*out));
	for (size_t pos = 0; pos < len;) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - data) : len;
		lineno++;
		if (end > pos && add_line(out, data + pos, end - pos) < 0) {
			out->invalid_lines++;
			if (out->first_invalid == 0)
				out->first_invalid = lineno;
		}
		pos = end + 1;
	}
}

void ar_audit_summary_free(struct ar_audit_summary *s)
{
	for (size_t i = 0; i < s->n_hosts; i++)
		free(s->hosts[i].host);
	free(s->hosts);
	ar_buf_free(&s->entries);
	memset(s, 0, sizeof(*s));
}

void ar_audit_format_text(const struct ar_audit_summary *s, struct ar_buf *out)
{
	size_t w = 4;
	for (size_t i = 0; i < s->n_hosts; i++)
		if (strlen(s->hosts[i].host) > w)
			w = strlen(s->hosts[i].host);
	ar_buf_printf(out, "%-*s %8s %8s %8s %12s %12s\n", (int)w, "HOST", "ALLOWED", "FAILED",
		      "DENIED", "BYTES_OUT", "BYTES_IN");
	for (size_t i = 0; i < s->n_hosts; i++) {
		const struct ar_audit_host *h = &s->hosts[i];
		ar_buf_printf(
		    out,
		    "%-*s %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n",
		    (int)w, h->host, h->allowed, h->failed, h->denied, h->bytes_out, h->bytes_in);
	}
	ar_buf_printf(out,
		      "%" PRIu64 " request(s) to %zu host(s): %" PRIu64 " allowed, %" PRIu64
		      " failed, %" PRIu64 " denied, %" PRIu64 " bytes out, %" PRIu64 " bytes in\n",
		      s->requests, s->n_hosts, s->allowed, s->failed, s->denied, s->bytes_out,
		      s->bytes_in);
}

void ar_audit_format_json(const struct ar_audit_summary *s, struct ar_buf *out)
{
	ar_buf_puts(out, "{\"entries\": [");
	ar_buf_append(out, s->entries.data ? s->entries.data : "", s->entries.len);
	ar_buf_puts(out, "], \"hosts\": {");
	for (size_t i = 0; i < s->n_hosts; i++) {
		const struct ar_audit_host *h = &s->hosts[i];
		if (i > 0)
			ar_buf_puts(out, ", ");
		ar_json_quote(out, h->host);
		ar_buf_printf(out,
			      ": {\"allowed\": %" PRIu64 ", \"failed\": %" PRIu64
			      ", \"denied\": %" PRIu64 ", \"bytes_out\": %" PRIu64
			      ", \"bytes_in\": %" PRIu64 "}",
			      h->allowed, h->failed, h->denied, h->bytes_out, h->bytes_in);
	}
	ar_buf_printf(out,
		      "}, \"summary\": {\"requests\": %" PRIu64
		      ", \"hosts\": %zu, \"allowed\": %" PRIu64 ", \"failed\": %" PRIu64
		      ", \"denied\": %" PRIu64 ", \"bytes_out\": %" PRIu64
		      ", \"bytes_in\": %" PRIu64 ", \"invalid_lines\": %" PRIu64 "}}\n",
		      s->requests, s->n_hosts, s->allowed, s->failed, s->denied, s->bytes_out,
		      s->bytes_in, s->invalid_lines);
}

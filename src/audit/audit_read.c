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

/* One line as an audit object, or NULL: a JSON object alone on its line with a
 * "host" (string or null: refusals before a target was known, a 400 on a garbled
 * request line, a 503 over the connection cap, still count) and a boolean
 * "allowed". */
static cJSON *parse_line(const char *line, size_t len)
{
	const char *end = NULL;
	if (memchr(line, '\0', len) != NULL)
		return NULL;
	ar_autojson cJSON *o = cJSON_ParseWithLengthOpts(line, len, &end, false);
	if (!cJSON_IsObject(o))
		return NULL;
	for (; end < line + len; end++)
		if (strchr(" \t\r", *end) == NULL)
			return NULL; /* trailing bytes after the object */
	const cJSON *host = cJSON_GetObjectItemCaseSensitive(o, "host");
	const cJSON *allowed = cJSON_GetObjectItemCaseSensitive(o, "allowed");
	if (!(cJSON_IsString(host) || cJSON_IsNull(host)) || !cJSON_IsBool(allowed))
		return NULL;
	return steal_pointer(&o);
}

/* One line; returns 0 when it is an audit object. The entry is re-printed by cJSON
 * rather than copied, so --json stays valid whatever bytes the line held. */
static int add_line(struct ar_audit_summary *s, const char *line, size_t len)
{
	ar_autojson cJSON *o = parse_line(line, len);
	if (o == NULL)
		return -1;
	const cJSON *host = cJSON_GetObjectItemCaseSensitive(o, "host");
	const cJSON *allowed = cJSON_GetObjectItemCaseSensitive(o, "allowed");
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

/* Call fn on every non-empty line; count the lines it refuses. */
static void each_line(const char *data, size_t len, int (*fn)(void *, const char *, size_t),
		      void *arg, uint64_t *invalid, size_t *first_invalid)
{
	size_t lineno = 0;
	for (size_t pos = 0; pos < len;) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - data) : len;
		lineno++;
		if (end > pos && fn(arg, data + pos, end - pos) < 0) {
			(*invalid)++;
			if (*first_invalid == 0)
				*first_invalid = lineno;
		}
		pos = end + 1;
	}
}

static int summary_line(void *arg, const char *line, size_t len)
{
	return add_line(arg, line, len);
}

void ar_audit_summarize(const char *data, size_t len, struct ar_audit_summary *out)
{
	memset(out, 0, sizeof(*out));
	each_line(data, len, summary_line, out, &out->invalid_lines, &out->first_invalid);
}

static char *string_field(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? ar_xstrdup(v->valuestring) : NULL;
}

static int int_field(const cJSON *o, const char *key, int lo, int hi)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
		return 0;
	return (int)v->valuedouble;
}

static int entry_line(void *arg, const char *line, size_t len)
{
	struct ar_audit_entries *es = arg;
	ar_autojson cJSON *o = parse_line(line, len);
	if (o == NULL)
		return -1;
	es->v = ar_xrealloc(es->v, (es->n + 1) * sizeof(*es->v));
	struct ar_audit_entry *e = &es->v[es->n++];
	const cJSON *body = cJSON_GetObjectItemCaseSensitive(o, "body_bytes");
	*e = (struct ar_audit_entry){
	    .method = string_field(o, "method"),
	    .host = string_field(o, "host"),
	    .port = int_field(o, "port", 1, 65535),
	    .addr = string_field(o, "addr"),
	    .rule = string_field(o, "rule"),
	    .allowed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "allowed")),
	    .learned = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "learned")),
	    .has_body = cJSON_IsNumber(body),
	    .status = int_field(o, "status", -1, 999),
	    .bytes_out = number_field(o, "bytes_out"),
	    .bytes_in = number_field(o, "bytes_in"),
	    .body_bytes = number_field(o, "body_bytes"),
	};
	return 0;
}

void ar_audit_read_entries(const char *data, size_t len, struct ar_audit_entries *out)
{
	memset(out, 0, sizeof(*out));
	each_line(data, len, entry_line, out, &out->invalid_lines, &out->first_invalid);
}

void ar_audit_entries_free(struct ar_audit_entries *es)
{
	for (size_t i = 0; i < es->n; i++) {
		struct ar_audit_entry *e = &es->v[i];
		free(e->method);
		free(e->host);
		free(e->addr);
		free(e->rule);
	}
	free(es->v);
	memset(es, 0, sizeof(*es));
}

bool ar_audit_entry_is_dns(const struct ar_audit_entry *e)
{
	return e->method != NULL && strcmp(e->method, "DNS") == 0;
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

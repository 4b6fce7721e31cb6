/* The audit line (JSON Lines, DESIGN §5) and the human log line for one finished
 * request. Formatting is pure; the loop writes each line with one write(2) on an
 * O_APPEND descriptor so concurrent writers and a kill -9 never tear a line. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agentrun/proxy.h"

static void put_time(struct ar_buf *out, int64_t at_ms)
{
	time_t secs = (time_t)(at_ms / 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	ar_buf_printf(out, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900,
		      tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		      (int)(at_ms % 1000));
}

static void put_str_or_null(struct ar_buf *out, const char *s)
{
	if (s)
		ar_json_quote(out, s);
	else
		ar_buf_puts(out, "null");
}

void ar_proxy_audit_format(const struct ar_audit_rec *r, struct ar_buf *out)
{
	ar_buf_puts(out, "{\"at\":");
	put_time(out, r->at_ms);
	ar_buf_printf(out, ",\"id\":%" PRIu64 ",\"method\":", r->id);
	put_str_or_null(out, r->method);
	ar_buf_puts(out, ",\"host\":");
	put_str_or_null(out, r->host);
	if (r->port > 0)
		ar_buf_printf(out, ",\"port\":%d,\"addr\":", r->port);
	else
		ar_buf_puts(out, ",\"port\":null,\"addr\":");
	put_str_or_null(out, r->addr);
	ar_buf_printf(out,
		      ",\"allowed\":%s,\"status\":%d,\"reason\":", r->allowed ? "true" : "false",
		      r->status);
	put_str_or_null(out, r->reason);
	ar_buf_puts(out, ",\"rule\":");
	put_str_or_null(out, r->rule);
	ar_buf_printf(out,
		      ",\"bytes_out\":%" PRIu64 ",\"bytes_in\":%" PRIu64 ",\"duration_ms\":%" PRId64
		      "}\n",
		      r->bytes_out, r->bytes_in, r->duration_ms < 0 ? 0 : r->duration_ms);
}

/* Log text is for a terminal: control bytes from a hostile request become '?'. */
static void put_safe(struct ar_buf *out, const char *s)
{
	for (; *s; s++)
		ar_buf_putc(out, ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s);
}

void ar_proxy_log_format(const struct ar_audit_rec *r, struct ar_buf *out)
{
	put_safe(out, r->method ? r->method : "-");
	ar_buf_putc(out, ' ');
	if (r->host) {
		if (r->host_is_v6)
			ar_buf_putc(out, '[');
		put_safe(out, r->host);
		if (r->host_is_v6)
			ar_buf_putc(out, ']');
		ar_buf_printf(out, ":%d", r->port);
	} else {
		ar_buf_putc(out, '-');
	}
	ar_buf_printf(out, " %s %d out=%" PRIu64 " in=%" PRIu64 " %" PRId64 "ms ",
		      r->allowed ? "ALLOW" : "DENY", r->status, r->bytes_out, r->bytes_in,
		      r->duration_ms < 0 ? 0 : r->duration_ms);
	put_safe(out, r->reason ? r->reason : "-");
	ar_buf_putc(out, '\n');
}

/* The audit line (JSON Lines, DESIGN §5) and the human log line for one finished
 * request. Formatting is pure; the loop writes each line with one write(2) on an
 * O_APPEND descriptor so concurrent writers and a kill -9 never tear a line. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agentrun/proxy.h"

/* "YYYY-MM-DDTHH:MM:SS.mmmZ", quoted; the second's text is kept from the last call (a
 * busy proxy formats many records per second, and gmtime_r takes the time-zone lock). */
static void put_time(struct ar_buf *out, int64_t at_ms)
{
	static __thread time_t last = -1;
	static __thread char text[80];
	time_t secs = (time_t)(at_ms / 1000);
	if (secs != last) {
		struct tm tm;
		gmtime_r(&secs, &tm);
		snprintf(text, sizeof(text), "\"%04d-%02d-%02dT%02d:%02d:%02d.", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		last = secs;
	}
	int ms = (int)(at_ms % 1000);
	char tail[6] = {(char)('0' + ms / 100),
			(char)('0' + ms / 10 % 10),
			(char)('0' + ms % 10),
			'Z',
			'"',
			'\0'};
	ar_buf_puts(out, text);
	ar_buf_append(out, tail, 5);
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
	ar_buf_puts(out, ",\"id\":");
	ar_buf_put_u64(out, r->id);
	ar_buf_puts(out, ",\"method\":");
	put_str_or_null(out, r->method);
	ar_buf_puts(out, ",\"host\":");
	put_str_or_null(out, r->host);
	ar_buf_puts(out, ",\"port\":");
	if (r->port > 0)
		ar_buf_put_i64(out, r->port);
	else
		ar_buf_puts(out, "null");
	ar_buf_puts(out, ",\"addr\":");
	put_str_or_null(out, r->addr);
	ar_buf_puts(out, r->allowed ? ",\"allowed\":true,\"status\":"
				    : ",\"allowed\":false,\"status\":");
	ar_buf_put_i64(out, r->status);
	ar_buf_puts(out, ",\"reason\":");
	put_str_or_null(out, r->reason);
	ar_buf_puts(out, ",\"rule\":");
	put_str_or_null(out, r->rule);
	ar_buf_puts(out, ",\"bytes_out\":");
	ar_buf_put_u64(out, r->bytes_out);
	ar_buf_puts(out, ",\"bytes_in\":");
	ar_buf_put_u64(out, r->bytes_in);
	ar_buf_puts(out, ",\"duration_ms\":");
	ar_buf_put_i64(out, r->duration_ms < 0 ? 0 : r->duration_ms);
	if (r->secret) {
		ar_buf_puts(out, ",\"secret\":");
		ar_json_quote(out, r->secret);
		ar_buf_puts(out, ",\"secret_action\":");
		ar_json_quote(out, r->secret_action);
	}
	if (r->learned)
		ar_buf_puts(out, ",\"learned\":true");
	if (r->has_body) {
		ar_buf_puts(out, ",\"body_bytes\":");
		ar_buf_put_u64(out, r->body_bytes);
	}
	ar_buf_puts(out, "}\n");
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
		ar_buf_putc(out, ':');
		ar_buf_put_i64(out, r->port);
	} else {
		ar_buf_putc(out, '-');
	}
	ar_buf_puts(out, !r->allowed ? " DENY " : r->learned ? " LEARN " : " ALLOW ");
	ar_buf_put_i64(out, r->status);
	ar_buf_puts(out, " out=");
	ar_buf_put_u64(out, r->bytes_out);
	ar_buf_puts(out, " in=");
	ar_buf_put_u64(out, r->bytes_in);
	ar_buf_putc(out, ' ');
	ar_buf_put_i64(out, r->duration_ms < 0 ? 0 : r->duration_ms);
	ar_buf_puts(out, "ms ");
	put_safe(out, r->reason ? r->reason : "-");
	ar_buf_putc(out, '\n');
}

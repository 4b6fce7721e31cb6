/* Reading a proxy audit log (JSON Lines, DESIGN §5) into per-host totals for
 * `agentrun audit`. The writer lives in src/proxy/audit.c. */
#ifndef AGENTRUN_AUDIT_H
#define AGENTRUN_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentrun/error.h"
#include "agentrun/util.h"

/* Statuses the proxy itself answers for an allowed request it could not serve: the byte
 * budget (413), the origin unreachable or failing (502), over capacity (503), a timeout
 * (504). Such a request counts as "failed", not "allowed", in `agentrun audit` and in the
 * proxy's closing line alike. */
static inline bool ar_audit_failed_status(double status)
{
	return status == 413 || status == 502 || status == 503 || status == 504;
}

/* The row for entries without a target host ("host": null). */
#define AR_AUDIT_NO_HOST "(no host)"

struct ar_audit_host {
	char *host;
	uint64_t allowed; /* allowed and served */
	uint64_t failed;  /* allowed but not served: the proxy answered 413, 502, 503 or 504 */
	uint64_t denied;
	uint64_t bytes_out;
	uint64_t bytes_in;
};

struct ar_audit_summary {
	struct ar_audit_host *hosts; /* sorted by host */
	size_t n_hosts;
	uint64_t requests;
	uint64_t allowed;
	uint64_t failed;
	uint64_t denied;
	uint64_t bytes_out;
	uint64_t bytes_in;
	uint64_t invalid_lines; /* lines that are not an audit object */
	size_t first_invalid;	/* 1-based line number of the first, 0 when none */
	struct ar_buf entries;	/* the valid lines as a JSON array body, for --json */
};

/* One audit entry as --propose and review read it (strings owned by the list). */
struct ar_audit_entry {
	char *method; /* NULL when unknown */
	char *host;   /* NULL when unknown */
	int port;     /* 0 when unknown */
	char *addr;   /* the dialled address, or NULL */
	char *rule;   /* the rule that allowed it (learned: would allow it), or NULL */
	bool allowed;
	bool learned;
	bool has_body; /* a plain HTTP request with a body ("body_bytes") */
	int status;
	uint64_t bytes_out, bytes_in, body_bytes;
};

struct ar_audit_entries {
	struct ar_audit_entry *v;
	size_t n;
	uint64_t invalid_lines;
	size_t first_invalid;
};

/* Pure: every audit object of a log, in order; lines that are not one are counted
 * (the same test as ar_audit_summarize). */
void ar_audit_read_entries(const char *data, size_t len, struct ar_audit_entries *out);
void ar_audit_entries_free(struct ar_audit_entries *e);
/* Is the entry a DNS stub's answer (method "DNS"), not a connection? */
bool ar_audit_entry_is_dns(const struct ar_audit_entry *e);

/* Pure: summarise a whole log held in memory. Never fails on content; bad lines
 * are counted. */
void ar_audit_summarize(const char *data, size_t len, struct ar_audit_summary *out);
void ar_audit_summary_free(struct ar_audit_summary *s);
/* Text table or the --json document. */
void ar_audit_format_text(const struct ar_audit_summary *s, struct ar_buf *out);
void ar_audit_format_json(const struct ar_audit_summary *s, struct ar_buf *out);

#endif

/* Secrets in requests (docs/secrets.md): which a request's host may receive, the
 * upstream head with the placeholders of those replaced by the real values, the
 * refusal of a placeholder on its way anywhere else (the request line, a header, the
 * first 64 KiB of a body, a CONNECT target), and response heads that echo a real value
 * masked again. The matching itself is src/secrets (pure, fuzzed); this file applies
 * it to a client's request and writes the reason the 403 and the audit give. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define BODY_SCAN_MAX (64 * 1024)

static const struct ar_secrets *secrets_of(const struct client *c)
{
	return c->px->cfg.secrets;
}

bool secret_any(const struct client *c)
{
	return secrets_of(c) != NULL && secrets_of(c)->n > 0;
}

void secret_begin(struct client *c, const struct ar_host *h, int port)
{
	c->secrets_bound = ar_secrets_bound(secrets_of(c), h, port);
	c->secrets_used = c->secrets_refused = 0;
	memset(&c->body_scan, 0, sizeof(c->body_scan));
}

/* The 403's reason: which secrets, where. */
static int refuse(struct client *c, uint64_t mask, const char *where)
{
	char names[200];
	ar_secrets_names(secrets_of(c), mask, names, sizeof(names));
	c->secrets_refused = mask;
	ar_autobuf struct ar_buf b = {0};
	ar_buf_printf(&b,
		      "the placeholder of secret %s in %s to %s:%d, which is not one of its hosts",
		      names, where, c->host, c->port);
	size_t n = b.len < sizeof(c->reason) - 1 ? b.len : sizeof(c->reason) - 1;
	memcpy(c->reason, b.data, n);
	c->reason[n] = '\0';
	return -1;
}

int secret_check_connect(struct client *c, const char *head, size_t len)
{
	uint64_t found = ar_secrets_find(secrets_of(c), head, len) |
			 ar_secrets_find_name(secrets_of(c), c->host);
	return found ? refuse(c, found, "a CONNECT") : 0;
}

int secret_check_head(struct client *c, const char *head, size_t len)
{
	uint64_t found = ar_secrets_find(secrets_of(c), head, len) |
			 ar_secrets_find_name(secrets_of(c), c->host);
	if (c->is_connect)
		return found ? refuse(c, found, "a CONNECT") : 0;
	found &= ~c->secrets_bound;
	return found ? refuse(c, found, "a request") : 0;
}

int secret_rewrite_head(struct client *c, struct ar_buf *uo)
{
	if (!secret_any(c))
		return 0;
	ar_autobuf struct ar_buf out = {0};
	uint64_t used = 0;
	uint64_t refused = ar_secrets_rewrite_head(secrets_of(c), c->secrets_bound, uo->data,
						   uo->len, &out, &used);
	refused |= ar_secrets_find_name(secrets_of(c), c->host);
	if (refused)
		return refuse(c, refused, "a request");
	c->secrets_used = used;
	if (used) {
		explicit_bzero(uo->data, uo->len);
		ar_buf_reset(uo);
		ar_buf_append(uo, out.data, out.len);
		explicit_bzero(out.data, out.len);
	}
	return 0;
}

int secret_check_body(struct client *c, const char *buf, size_t len)
{
	if (!secret_any(c) || c->body_scan.scanned >= BODY_SCAN_MAX)
		return 0;
	if (len > BODY_SCAN_MAX - c->body_scan.scanned)
		len = BODY_SCAN_MAX - c->body_scan.scanned;
	uint64_t found = ar_secrets_scan_feed(secrets_of(c), &c->body_scan, buf, len);
	found &= ~c->secrets_bound;
	return found ? refuse(c, found, "a request body") : 0;
}

uint32_t secret_mask_response(struct client *c, struct iobuf *b, uint32_t start, uint32_t end)
{
	ar_autobuf struct ar_buf masked = {0};
	if (!secret_any(c) || !ar_secrets_mask(secrets_of(c), b->p + start, end - start, &masked))
		return end;
	uint32_t n = (uint32_t)masked.len, old = end - start;
	if (n > old && b->cap - b->len < n - old) {
		b->p = ar_xrealloc(b->p, b->len + (n - old) + AR_IOBUF_UNIT);
		b->cap = b->len + (n - old) + AR_IOBUF_UNIT;
	}
	memmove(b->p + start + n, b->p + end, b->len - end);
	memcpy(b->p + start, masked.data, n);
	b->len = b->len - old + n;
	return start + n;
}

void secret_audit_names(const struct client *c, char *out, size_t size, const char **action)
{
	uint64_t m = c->secrets_refused ? c->secrets_refused : c->secrets_used;
	*action = c->secrets_refused ? "refused" : "injected";
	ar_secrets_names(secrets_of(c), m, out, size);
}

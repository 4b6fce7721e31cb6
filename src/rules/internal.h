/* Private to src/rules: the host syntax pieces host.c shares with rules.c.
 * Reasons are static strings so rules.c can put them into its own message. */
#ifndef AGENTRUN_RULES_INTERNAL_H
#define AGENTRUN_RULES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "agentrun/rules.h"

/* Canonicalise in[0..len) (no port); -1 with *why set on failure. */
int ar_rules_canon(const char *in, size_t len, struct ar_host *out, const char **why);
/* An IPv6 literal without brackets; ::ffff:a.b.c.d becomes IPv4. */
int ar_rules_canon_v6(const char *in, size_t len, struct ar_host *out, const char **why);
/* Is the last dot-separated label a number (decimal or 0x-hex)? Then the whole
 * string is an IPv4 literal or invalid, never a name (the WHATWG URL rule). */
bool ar_rules_ends_in_number(const char *s, size_t len);
/* Strict decimal port 1-65535: digits only, at most 5. Returns the port or -1. */
int ar_rules_parse_port(const char *s, size_t len);
/* Quote-safe copy for messages: '"' and '\\' escaped, control and non-ASCII bytes
 * as \xHH, cut with "..." when it does not fit. */
void ar_rules_escape(const char *s, size_t len, char *buf, size_t bufsz);

#endif

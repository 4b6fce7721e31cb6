/* Targets "rules" and "host" (DESIGN §4).
 *
 * rules: every input line is a rule; the list is compiled at once. A compiled rule
 * allows the very host it names (a rule that cannot match itself is a silent
 * denial), and each decision's reason says why.
 * host: every line is a host and an authority as a client would write them. A
 * canonical host canonicalises to itself, so there is exactly one spelling of each
 * target for the rules to compare. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/rules.h"
#include "agentrun/util.h"
#include "fuzz.h"

#define MAX_LINES 64

static void check_decision(const struct ar_decision *d)
{
	static const char deny_tail[] = " is not in the allow-list";
	size_t len = strlen(d->reason);
	if (d->allowed) {
		AR_FUZZ_CHECK(d->rule != NULL, "allowed without a rule");
		AR_FUZZ_CHECK(strncmp(d->reason, "matches rule ", 13) == 0, "reason %s", d->reason);
		return;
	}
	AR_FUZZ_CHECK(d->rule == NULL, "denied with a rule");
	AR_FUZZ_CHECK(strncmp(d->reason, "invalid host \"", 14) == 0 ||
			  (len > sizeof(deny_tail) - 1 &&
			   strcmp(d->reason + len - (sizeof(deny_tail) - 1), deny_tail) == 0),
		      "deny reason %s", d->reason);
}

/* Decide host:port and insist the rule set allows it. */
static void must_allow(const struct ar_rules *r, const char *rule, const char *host, int port)
{
	struct ar_decision d;
	ar_rules_decide_str(r, host, port, &d);
	check_decision(&d);
	AR_FUZZ_CHECK(d.allowed, "rule \"%s\" does not allow %s port %d: %s", rule, host, port,
		      d.reason);
}

/* Build a host the rule names and check the compiled set allows it. */
static void self_match(const struct ar_rules *r, const char *text)
{
	char host[2 * AR_HOST_MAX + 4];
	int port = 0;
	ar_auto_error ar_error_t err = NULL;

	if (text[0] == '*' && (text[1] == '\0' || text[1] == ':')) {
		if (ar_host_split_port(text, host, sizeof(host), &port, 443, &err) == -1)
			AR_FUZZ_CHECK(false, "compiled \"%s\" but it does not split: %s", text,
				      err->msg);
		must_allow(r, text, "anything.example", port);
		return;
	}
	if (strncmp(text, "*.", 2) == 0) {
		char dom[2 * AR_HOST_MAX];
		if (ar_host_split_port(text + 2, dom, sizeof(dom), &port, 443, &err) == -1)
			AR_FUZZ_CHECK(false, "compiled \"%s\" but it does not split: %s", text,
				      err->msg);
		/* one more label must still fit in a name */
		if (strlen(dom) + 2 > 253)
			return;
		snprintf(host, sizeof(host), "a.%s", dom);
		must_allow(r, text, host, port);
		return;
	}
	if (ar_host_split_port(text, host, sizeof(host), &port, 443, &err) == -1) {
		/* a bare IPv6 literal rule (no port) */
		ar_error_release(&err);
		must_allow(r, text, text, 443);
		return;
	}
	must_allow(r, text, host, port);
}

void ar_fuzz_rules(const uint8_t *data, size_t size)
{
	size_t n = 0;
	ar_autostrv char **lines = ar_fuzz_lines(data, size, MAX_LINES, &n);
	ar_auto_error ar_error_t err = NULL;
	ar_autorules struct ar_rules *r = NULL;

	if (ar_rules_compile(lines, n, "fuzz", &r, &err) == -1) {
		AR_FUZZ_CHECK(r == NULL, "failure left rules behind");
		ar_fuzz_check_error(&err, "fuzz: ");
		return;
	}
	AR_FUZZ_CHECK(ar_rules_count(r) == n, "count %zu != %zu", ar_rules_count(r), n);
	for (size_t i = 0; i < n; i++) {
		AR_FUZZ_CHECK(strcmp(ar_rules_text(r, i), lines[i]) == 0, "text of rule %zu", i);
		self_match(r, lines[i]);
	}
	AR_FUZZ_CHECK(ar_rules_text(r, n) == NULL, "text past the end");
	/* and every line as a host against the set: decisions explain themselves */
	for (size_t i = 0; i < n; i++) {
		struct ar_decision d;
		ar_rules_decide_str(r, lines[i], 8080, &d);
		check_decision(&d);
	}
}

static bool same_host(const struct ar_host *a, const struct ar_host *b)
{
	if (a->family != b->family || strcmp(a->name, b->name) != 0)
		return false;
	if (a->family == AF_INET)
		return a->addr.v4.s_addr == b->addr.v4.s_addr;
	if (a->family == AF_INET6)
		return memcmp(&a->addr.v6, &b->addr.v6, sizeof(a->addr.v6)) == 0;
	return true;
}

static void check_canonical(const struct ar_host *h)
{
	struct ar_host again;
	ar_auto_error ar_error_t err = NULL;
	char text[INET6_ADDRSTRLEN];
	size_t len = strnlen(h->name, sizeof(h->name));

	AR_FUZZ_CHECK(len > 0 && len < sizeof(h->name), "canonical name length %zu", len);
	for (size_t i = 0; i < len; i++)
		AR_FUZZ_CHECK(!(h->name[i] >= 'A' && h->name[i] <= 'Z'), "uppercase in %s",
			      h->name);
	AR_FUZZ_CHECK(h->name[len - 1] != '.', "trailing dot in %s", h->name);
	AR_FUZZ_CHECK(ar_host_canonicalize(h->name, &again, &err) == 0,
		      "canonical \"%s\" does not canonicalise: %s", h->name, err ? err->msg : "?");
	AR_FUZZ_CHECK(same_host(h, &again), "\"%s\" re-canonicalises to \"%s\"", h->name,
		      again.name);
	if (h->family == AF_INET) {
		inet_ntop(AF_INET, &h->addr.v4, text, sizeof(text));
		AR_FUZZ_CHECK(strcmp(text, h->name) == 0, "v4 text %s vs %s", text, h->name);
	} else if (h->family == AF_INET6) {
		struct in6_addr a;
		AR_FUZZ_CHECK(inet_pton(AF_INET6, h->name, &a) == 1 &&
				  memcmp(&a, &h->addr.v6, sizeof(a)) == 0,
			      "v6 text %s does not parse back", h->name);
		AR_FUZZ_CHECK(!IN6_IS_ADDR_V4MAPPED(&a), "v4-mapped kept as v6: %s", h->name);
	}
}

static void fuzz_one_host(const char *line, size_t len)
{
	struct ar_host h;
	ar_auto_error ar_error_t err = NULL;
	char formatted[AR_HOST_MAX + 16];

	if (ar_host_canonicalize_n(line, len, &h, &err) == -1) {
		ar_fuzz_check_error(&err, "invalid host ");
		return;
	}
	check_canonical(&h);
	ar_host_format(&h, 65535, formatted, sizeof(formatted));
	AR_FUZZ_CHECK(strlen(formatted) < sizeof(formatted) - 1, "format truncated");
}

static void fuzz_one_authority(const char *s, int default_port)
{
	char host[AR_HOST_MAX + 8];
	int port = -7;
	ar_auto_error ar_error_t err = NULL;

	if (ar_host_split_port(s, host, sizeof(host), &port, default_port, &err) == -1) {
		AR_FUZZ_CHECK(port == -7, "port written on failure");
		ar_fuzz_check_error(&err, "invalid authority \"");
		return;
	}
	AR_FUZZ_CHECK(strlen(host) < sizeof(host) && *host != '\0', "host part of %s", s);
	AR_FUZZ_CHECK((port >= 1 && port <= 65535) || port == default_port, "port %d", port);
	AR_FUZZ_CHECK(strncmp(s, host, strlen(host)) == 0, "host %s is not a prefix of %s", host,
		      s);
	fuzz_one_host(host, strlen(host));
}

void ar_fuzz_host(const uint8_t *data, size_t size)
{
	/* each line raw (NUL bytes and all) as a host, then as an authority */
	for (size_t pos = 0, k = 0; pos < size && k < MAX_LINES; k++) {
		const uint8_t *nl = memchr(data + pos, '\n', size - pos);
		size_t end = nl != NULL ? (size_t)(nl - data) : size;
		ar_autofree char *exact = ar_fuzz_dup(data + pos, end - pos);
		ar_autofree char *str = ar_fuzz_strndup(data + pos, end - pos);
		fuzz_one_host(exact, end - pos);
		fuzz_one_authority(str, k % 2 == 0 ? 443 : -1);
		pos = end + 1;
	}
}

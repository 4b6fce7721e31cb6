/* Host rules (DESIGN §4): compile the operator's allow-list once into a flat array,
 * then decide per request without allocating. A rule without a port covers only the
 * web ports 80 and 443; other ports must be named (`host:6443`). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/rules.h"
#include "agentrun/util.h"
#include "internal.h"

#define RULE_MAX_LEN 300 /* "*." + 253 + one dot + ":65535" fits with room */

enum rule_kind {
	RULE_ANY,    /* "*": every host, names and addresses */
	RULE_EXACT,  /* one name */
	RULE_SUFFIX, /* "*.domain": strict subdomains of name */
	RULE_V4,
	RULE_V6,
};

struct rule {
	enum rule_kind kind;
	int port; /* 0: the web ports 80 and 443 */
	size_t len;
	char name[AR_HOST_MAX]; /* the exact name, or the domain under the wildcard */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} addr;
	char *text; /* as the operator wrote it */
};

struct ar_rules {
	size_t n;
	struct rule rules[];
};

/* Multi-label public suffixes a wildcard must not cover (single labels are refused
 * anyway). Not the whole Public Suffix List: the registries and shared hosting
 * domains an operator is likely to type. */
static const char *const public_suffixes[] = {
    /* country second levels */
    "co.uk",
    "org.uk",
    "ac.uk",
    "gov.uk",
    "me.uk",
    "net.uk",
    "ltd.uk",
    "plc.uk",
    "sch.uk",
    "nhs.uk",
    "police.uk",
    "com.au",
    "net.au",
    "org.au",
    "edu.au",
    "gov.au",
    "asn.au",
    "id.au",
    "co.jp",
    "ne.jp",
    "or.jp",
    "ac.jp",
    "go.jp",
    "ad.jp",
    "ed.jp",
    "gr.jp",
    "lg.jp",
    "co.nz",
    "net.nz",
    "org.nz",
    "ac.nz",
    "govt.nz",
    "geek.nz",
    "school.nz",
    "com.br",
    "net.br",
    "org.br",
    "gov.br",
    "edu.br",
    "com.cn",
    "net.cn",
    "org.cn",
    "gov.cn",
    "edu.cn",
    "ac.cn",
    "co.in",
    "net.in",
    "org.in",
    "firm.in",
    "gen.in",
    "ind.in",
    "ac.in",
    "edu.in",
    "gov.in",
    "co.kr",
    "or.kr",
    "ne.kr",
    "ac.kr",
    "go.kr",
    "re.kr",
    "com.mx",
    "net.mx",
    "org.mx",
    "gob.mx",
    "edu.mx",
    "co.za",
    "org.za",
    "gov.za",
    "ac.za",
    "net.za",
    "web.za",
    "com.ar",
    "gob.ar",
    "com.tw",
    "net.tw",
    "org.tw",
    "edu.tw",
    "gov.tw",
    "com.hk",
    "net.hk",
    "org.hk",
    "edu.hk",
    "gov.hk",
    "com.sg",
    "net.sg",
    "org.sg",
    "edu.sg",
    "gov.sg",
    "com.my",
    "net.my",
    "org.my",
    "gov.my",
    "com.tr",
    "net.tr",
    "org.tr",
    "gov.tr",
    "edu.tr",
    "com.ua",
    "net.ua",
    "org.ua",
    "com.pl",
    "net.pl",
    "org.pl",
    "co.il",
    "org.il",
    "net.il",
    "ac.il",
    "gov.il",
    "co.id",
    "or.id",
    "ac.id",
    "go.id",
    "web.id",
    "com.ph",
    "net.ph",
    "org.ph",
    "com.vn",
    "net.vn",
    "org.vn",
    "com.pk",
    "net.pk",
    "org.pk",
    "com.eg",
    "com.sa",
    "com.ng",
    "co.ke",
    "or.ke",
    "co.th",
    "in.th",
    "ac.th",
    "go.th",
    "com.co",
    "net.co",
    "com.pe",
    "com.ve",
    "com.ec",
    "com.uy",
    "com.py",
    "com.bo",
    "co.at",
    "or.at",
    "gv.at",
    "ac.at",
    "com.es",
    "org.es",
    "gob.es",
    "com.pt",
    "com.ru",
    "net.ru",
    "org.ru",
    "msk.ru",
    "spb.ru",
    "com.gr",
    "com.cy",
    "co.ve",
    "com.do",
    "com.gt",
    "com.qa",
    "com.kw",
    "com.lb",
    "co.ae",
    "com.bd",
    "com.np",
    "com.lk",
    "co.tz",
    "co.ug",
    "co.zw",
    "com.gh",
    /* shared hosting: every subdomain belongs to a different customer */
    "github.io",
    "gitlab.io",
    "githubusercontent.com",
    "herokuapp.com",
    "herokudns.com",
    "appspot.com",
    "cloudfront.net",
    "amazonaws.com",
    "s3.amazonaws.com",
    "compute.amazonaws.com",
    "compute-1.amazonaws.com",
    "elb.amazonaws.com",
    "awsglobalaccelerator.com",
    "azurewebsites.net",
    "azureedge.net",
    "cloudapp.net",
    "cloudapp.azure.com",
    "blob.core.windows.net",
    "web.core.windows.net",
    "azurestaticapps.net",
    "trafficmanager.net",
    "blogspot.com",
    "firebaseapp.com",
    "web.app",
    "run.app",
    "cloudfunctions.net",
    "googleusercontent.com",
    "withgoogle.com",
    "vercel.app",
    "now.sh",
    "netlify.app",
    "netlify.com",
    "pages.dev",
    "workers.dev",
    "r2.dev",
    "trycloudflare.com",
    "fly.dev",
    "onrender.com",
    "glitch.me",
    "repl.co",
    "ngrok.io",
    "ngrok-free.app",
    "ngrok.app",
    "readthedocs.io",
    "surge.sh",
    "deno.dev",
    "railway.app",
    "up.railway.app",
    "digitaloceanspaces.com",
    "ondigitalocean.app",
    "duckdns.org",
    "dyndns.org",
    "no-ip.org",
    "ddns.net",
    "myshopify.com",
    "wordpress.com",
    "tumblr.com",
    "wixsite.com",
    "squarespace.com",
    "pythonanywhere.com",
    "codeberg.page",
    "sourceforge.io",
    "bitbucket.io",
};

static bool is_public_suffix(const char *name)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(public_suffixes); i++)
		if (strcmp(public_suffixes[i], name) == 0)
			return true;
	return false;
}

static int set_host(struct rule *r, const struct ar_host *h)
{
	switch (h->family) {
	case AF_INET:
		r->kind = RULE_V4;
		r->addr.v4 = h->addr.v4;
		break;
	case AF_INET6:
		r->kind = RULE_V6;
		r->addr.v6 = h->addr.v6;
		break;
	default:
		r->kind = RULE_EXACT;
		break;
	}
	r->len = strlen(h->name);
	memcpy(r->name, h->name, r->len + 1);
	return 0;
}

/* "*.domain": the domain must be a name of two labels or more and not a public suffix. */
static int compile_wildcard(const char *dom, size_t len, struct rule *r, const char **why)
{
	struct ar_host h;
	size_t l = len > 0 && dom[len - 1] == '.' ? len - 1 : len;
	if (memchr(dom, '*', len) != NULL) {
		*why =
		    "a wildcard must be a whole leading label (\"*.example.com\") or \"*\" alone";
		return -1;
	}
	if (ar_rules_ends_in_number(dom, l)) {
		*why = "a wildcard cannot cover IP addresses";
		return -1;
	}
	if (ar_rules_canon(dom, len, &h, why) == -1)
		return -1;
	if (h.family != 0) {
		*why = "a wildcard cannot cover IP addresses";
		return -1;
	}
	if (strchr(h.name, '.') == NULL) {
		*why = "a wildcard over a single label (a top-level domain) is too broad";
		return -1;
	}
	if (is_public_suffix(h.name)) {
		*why = "a wildcard over a public suffix is too broad";
		return -1;
	}
	set_host(r, &h);
	r->kind = RULE_SUFFIX;
	return 0;
}

static int compile_host(const char *host, size_t len, struct rule *r, const char **why)
{
	struct ar_host h;
	if (len == 1 && host[0] == '*') {
		r->kind = RULE_ANY;
		return 0;
	}
	if (len >= 2 && host[0] == '*' && host[1] == '.')
		return compile_wildcard(host + 2, len - 2, r, why);
	if (memchr(host, '*', len) != NULL) {
		*why =
		    "a wildcard must be a whole leading label (\"*.example.com\") or \"*\" alone";
		return -1;
	}
	if (ar_rules_canon(host, len, &h, why) == -1)
		return -1;
	return set_host(r, &h);
}

/* Several colons and no brackets: a bare IPv6 literal, which cannot carry a port. */
static int compile_bare_v6(const char *text, size_t len, struct rule *r, const char **why)
{
	struct ar_host h;
	if (ar_rules_canon_v6(text, len, &h, why) == 0)
		return set_host(r, &h);
	const char *last = memrchr(text, ':', len);
	const char *ignored;
	size_t plen = len - (size_t)(last + 1 - text);
	if (memchr(text, '%', len) == NULL && ar_rules_parse_port(last + 1, plen) != -1 &&
	    ar_rules_canon_v6(text, (size_t)(last - text), &h, &ignored) == 0)
		*why = "an IPv6 address with a port must be written in brackets, as [ADDR]:PORT";
	return -1;
}

static int compile_port(const char *s, size_t len, struct rule *r, const char **why)
{
	r->port = ar_rules_parse_port(s, len);
	if (r->port == -1) {
		*why = "bad port (expected a number from 1 to 65535)";
		return -1;
	}
	return 0;
}

static int compile_bracketed(const char *text, size_t len, struct rule *r, const char **why)
{
	struct ar_host h;
	const char *rb = memchr(text, ']', len);
	if (rb == NULL) {
		*why = "unterminated '['";
		return -1;
	}
	const char *rest = rb + 1, *end = text + len;
	if (rest < end && *rest != ':') {
		*why = "unexpected text after ']'";
		return -1;
	}
	if (ar_rules_canon_v6(text + 1, (size_t)(rb - text - 1), &h, why) == -1)
		return -1;
	if (rest < end && compile_port(rest + 1, (size_t)(end - rest - 1), r, why) == -1)
		return -1;
	return set_host(r, &h);
}

static int compile_one(const char *text, struct rule *r, const char **why)
{
	size_t len = strnlen(text, RULE_MAX_LEN + 1);
	if (len == 0) {
		*why = "empty rule";
		return -1;
	}
	if (len > RULE_MAX_LEN) {
		*why = "rule too long";
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)text[i] <= ' ' || text[i] == 0x7f) {
			*why = "whitespace or a control character in rule";
			return -1;
		}
	if (strstr(text, "://") != NULL) {
		*why = "a rule is a host with an optional :port, not a URL";
		return -1;
	}
	if (text[0] == '[')
		return compile_bracketed(text, len, r, why);
	const char *colon = memchr(text, ':', len);
	if (colon == NULL)
		return compile_host(text, len, r, why);
	if (memchr(colon + 1, ':', len - (size_t)(colon + 1 - text)) != NULL)
		return compile_bare_v6(text, len, r, why);
	if (compile_port(colon + 1, len - (size_t)(colon + 1 - text), r, why) == -1)
		return -1;
	return compile_host(text, (size_t)(colon - text), r, why);
}

int ar_rules_compile(char *const *rules, size_t n, const char *what, struct ar_rules **out,
		     ar_error_t *err)
{
	if (rules == NULL && n > 0)
		return ar_error_make(err, 0, "%s: no rules given", what != NULL ? what : "rules");
	ar_autorules struct ar_rules *r = ar_xcalloc(1, sizeof(*r) + n * sizeof(r->rules[0]));
	for (size_t i = 0; i < n; i++) {
		const char *why = "invalid rule";
		struct rule *rule = &r->rules[i];
		if (rules[i] == NULL || compile_one(rules[i], rule, &why) == -1) {
			char esc[RULE_MAX_LEN + 16];
			const char *t = rules[i] != NULL ? rules[i] : "";
			ar_rules_escape(t, strnlen(t, RULE_MAX_LEN + 1), esc, sizeof(esc));
			return ar_error_make(err, 0, "%s: rule \"%s\": %s",
					     what != NULL ? what : "rules", esc, why);
		}
		rule->text = ar_xstrdup(rules[i]);
		r->n = i + 1;
	}
	*out = steal_pointer(&r);
	return 0;
}

static bool port_matches(const struct rule *r, int port)
{
	return r->port != 0 ? port == r->port : (port == 80 || port == 443);
}

static bool host_matches(const struct rule *r, const struct ar_host *h, size_t hlen)
{
	switch (r->kind) {
	case RULE_ANY:
		return true;
	case RULE_EXACT:
		return h->family == 0 && hlen == r->len && memcmp(h->name, r->name, hlen) == 0;
	case RULE_SUFFIX:
		/* label boundary: "x.github.com" but never "github.com" or "evilgithub.com" */
		return h->family == 0 && hlen > r->len + 1 && h->name[hlen - r->len - 1] == '.' &&
		       memcmp(h->name + hlen - r->len, r->name, r->len) == 0;
	case RULE_V4:
		return h->family == AF_INET && h->addr.v4.s_addr == r->addr.v4.s_addr;
	case RULE_V6:
		return h->family == AF_INET6 &&
		       memcmp(&h->addr.v6, &r->addr.v6, sizeof(r->addr.v6)) == 0;
	}
	return false;
}

void ar_rules_decide(const struct ar_rules *r, const struct ar_host *host, int port,
		     struct ar_decision *out)
{
	size_t hlen = strnlen(host->name, sizeof(host->name));
	for (size_t i = 0; r != NULL && i < r->n; i++) {
		const struct rule *rule = &r->rules[i];
		if (port_matches(rule, port) && host_matches(rule, host, hlen)) {
			out->allowed = true;
			out->rule = rule->text;
			snprintf(out->reason, sizeof(out->reason), "matches rule %s", rule->text);
			return;
		}
	}
	char hp[AR_HOST_MAX + 16];
	ar_host_format(host, port, hp, sizeof(hp));
	out->allowed = false;
	out->rule = NULL;
	snprintf(out->reason, sizeof(out->reason), "%s is not in the allow-list", hp);
}

void ar_rules_decide_str(const struct ar_rules *r, const char *host, int port,
			 struct ar_decision *out)
{
	struct ar_host h;
	const char *why;
	size_t len = host != NULL ? strnlen(host, AR_HOST_MAX + 1) : 0;
	if (host != NULL && ar_rules_canon(host, len, &h, &why) == 0) {
		ar_rules_decide(r, &h, port, out);
		return;
	}
	char esc[AR_HOST_MAX];
	ar_rules_escape(host != NULL ? host : "", len, esc, sizeof(esc));
	out->allowed = false;
	out->rule = NULL;
	snprintf(out->reason, sizeof(out->reason), "invalid host \"%s\"", esc);
}

size_t ar_rules_count(const struct ar_rules *r)
{
	return r != NULL ? r->n : 0;
}

const char *ar_rules_text(const struct ar_rules *r, size_t i)
{
	return r != NULL && i < r->n ? r->rules[i].text : NULL;
}

bool ar_rules_is_literal(const struct ar_rules *r, size_t i)
{
	return r != NULL && i < r->n &&
	       (r->rules[i].kind == RULE_V4 || r->rules[i].kind == RULE_V6);
}

void ar_rules_free(struct ar_rules *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->rules[i].text);
	free(r);
}

void ar_cleanup_rulesp(struct ar_rules **r)
{
	ar_rules_free(*r);
	*r = NULL;
}

/* Findings (what, expected, actual, fix), their text and JSON output, and the
 * classifications both the docker and the /proc checks share: secret-looking variable
 * names, sensitive paths, CPU amounts. */
#define _GNU_SOURCE
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agentrun/check.h"

char *ar_check_printable(const char *s)
{
	struct ar_buf b = {0};
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			ar_buf_printf(&b, "\\x%02x", *p);
		else
			ar_buf_putc(&b, (char)*p);
	}
	ar_buf_reserve(&b, 0);
	return ar_buf_steal(&b);
}

/* Findings quote what a container or process says about itself (names, users,
 * variables): control characters are escaped so one finding stays one line and cannot
 * forge another or drive the terminal. */
void ar_findings_add(struct ar_findings *f, const char *what, const char *expected,
		     const char *actual, const char *fix)
{
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 16;
		f->v = ar_xrealloc(f->v, f->cap * sizeof(*f->v));
	}
	f->v[f->n++] = (struct ar_finding){
	    .what = ar_check_printable(what),
	    .expected = ar_check_printable(expected),
	    .actual = ar_check_printable(actual),
	    .fix = ar_check_printable(fix),
	};
}

void ar_findings_note(struct ar_findings *f, const char *text)
{
	f->notes = ar_xrealloc(f->notes, (f->n_notes + 1) * sizeof(char *));
	f->notes[f->n_notes++] = ar_check_printable(text);
}

void ar_findings_free(struct ar_findings *f)
{
	for (size_t i = 0; i < f->n_notes; i++)
		free(f->notes[i]);
	free(f->notes);
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].what);
		free(f->v[i].expected);
		free(f->v[i].actual);
		free(f->v[i].fix);
	}
	free(f->v);
	*f = (struct ar_findings){0};
}

void ar_check_format_text(struct ar_buf *out, const struct ar_findings *f, const char *subject,
			  const char *policy_name)
{
	for (size_t i = 0; i < f->n_notes; i++)
		ar_buf_printf(out, "NOTE %s\n", f->notes[i]);
	for (size_t i = 0; i < f->n; i++) {
		const struct ar_finding *x = &f->v[i];
		ar_buf_printf(out, "DRIFT %s expected %s actual %s\n  fix: %s\n", x->what,
			      x->expected, x->actual, x->fix);
	}
	ar_autofree char *who = ar_check_printable(subject);
	ar_buf_printf(out, "%s vs policy %s: %zu drift finding(s)\n", who, policy_name, f->n);
}

static void json_field(struct ar_buf *out, const char *key, const char *value, bool last)
{
	ar_json_quote(out, key);
	ar_buf_puts(out, ": ");
	ar_json_quote(out, value);
	if (!last)
		ar_buf_puts(out, ", ");
}

void ar_check_format_json(struct ar_buf *out, const struct ar_findings *f, const char *subject,
			  const char *policy_name)
{
	ar_buf_puts(out, "{");
	json_field(out, "subject", subject, false);
	json_field(out, "policy", policy_name, false);
	ar_buf_printf(out, "\"drift\": %zu, \"findings\": [", f->n);
	for (size_t i = 0; i < f->n; i++) {
		const struct ar_finding *x = &f->v[i];
		ar_buf_puts(out, i ? ", {" : "{");
		json_field(out, "what", x->what, false);
		json_field(out, "expected", x->expected, false);
		json_field(out, "actual", x->actual, false);
		json_field(out, "fix", x->fix, true);
		ar_buf_puts(out, "}");
	}
	ar_buf_puts(out, "], \"notes\": [");
	for (size_t i = 0; i < f->n_notes; i++) {
		if (i)
			ar_buf_puts(out, ", ");
		ar_json_quote(out, f->notes[i]);
	}
	ar_buf_puts(out, "]}\n");
}

static bool ends_with_ci(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

bool ar_check_is_secret_name(const char *name)
{
	static const char *const suffixes[] = {"_KEY",	       "_TOKEN", "_SECRET",    "_PAT",
					       "_CREDENTIALS", "_AUTH",	 "_CREDENTIAL"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(suffixes); i++)
		if (ends_with_ci(name, suffixes[i]))
			return true;
	return strcasestr(name, "PASSWORD") != NULL;
}

/* The userinfo of the first URL in v ("scheme://USERINFO@host"), or NULL: its start and
 * length. Only the authority counts, so an @ in a path or query is not userinfo. */
static const char *url_userinfo(const char *v, size_t *len)
{
	const char *s = strstr(v, "://");
	if (s == NULL)
		return NULL;
	s += 3;
	size_t auth = strcspn(s, "/?#");
	const char *at = memchr(s, '@', auth);
	if (at == NULL)
		return NULL;
	/* the last @ of the authority ends the userinfo (a password may hold one) */
	for (const char *q = at; (q = memchr(q + 1, '@', auth - (size_t)(q + 1 - s))) != NULL;)
		at = q;
	*len = (size_t)(at - s);
	return s;
}

bool ar_check_value_has_credentials(const char *v)
{
	size_t n;
	return url_userinfo(v, &n) != NULL;
}

static bool token_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '-';
}

/* Well-known token shapes: a prefix at a word start followed by enough token characters
 * that a word like "task-runner" does not match. */
static bool has_token_shape(const char *v)
{
	static const struct {
		const char *prefix;
		size_t min_rest;
		bool upper_alnum; /* AWS key ids: [A-Z0-9] only */
	} shapes[] = {
	    {"ghp_", 30, false}, {"gho_", 30, false},  {"ghs_", 30, false},
	    {"ghu_", 30, false}, {"ghr_", 30, false},  {"github_pat_", 20, false},
	    {"sk-", 20, false},	 {"xoxb-", 10, false}, {"xoxp-", 10, false},
	    {"AKIA", 16, true},	 {"ASIA", 16, true},
	};
	for (const char *p = v; *p; p++) {
		if (p > v && token_char((unsigned char)p[-1]))
			continue;
		for (size_t i = 0; i < AR_ARRAY_SIZE(shapes); i++) {
			size_t k = strlen(shapes[i].prefix), rest = 0;
			if (strncmp(p, shapes[i].prefix, k) != 0)
				continue;
			for (const unsigned char *q = (const unsigned char *)p + k; *q; q++, rest++)
				if (shapes[i].upper_alnum ? !(isupper(*q) || isdigit(*q))
							  : !token_char(*q))
					break;
			if (rest >= shapes[i].min_rest)
				return true;
		}
	}
	return false;
}

/* A password in a URL (user:password@) or a token-shaped value. A bare user@ (git@) is
 * shown masked but is not by itself a secret. */
bool ar_check_is_secret_value(const char *v)
{
	size_t n;
	const char *u = url_userinfo(v, &n);
	if (u != NULL && memchr(u, ':', n) != NULL)
		return true;
	return has_token_shape(v);
}

const char *ar_check_shown_value(const char *key, const char *v)
{
	if (ar_check_value_has_credentials(v))
		return "(set, with credentials)";
	if (ar_check_is_secret_name(key) || ar_check_is_secret_value(v))
		return "(hidden)";
	return v;
}

/* Directories whose contents must never be mounted in: the directory and everything
 * below it. */
static const char *const sensitive_trees[] = {"/proc", "/sys", "/etc", "/root"};
/* Credential directories, matched as path components anywhere. */
static const char *const sensitive_components[] = {"/.aws",    "/.kube",  "/.ssh",
						   "/.docker", "/.azure", "/.config/gcloud"};

static bool has_component_seq(const char *path, const char *seq)
{
	size_t n = strlen(seq);
	for (const char *p = strstr(path, seq); p; p = strstr(p + 1, seq))
		if (p[n] == '\0' || p[n] == '/')
			return true;
	return false;
}

bool ar_check_is_credential_path(const char *path)
{
	size_t len = strlen(path);
	if (len >= 11 && strcmp(path + len - 11, "docker.sock") == 0)
		return true;
	for (size_t i = 0; i < AR_ARRAY_SIZE(sensitive_components); i++)
		if (has_component_seq(path, sensitive_components[i]))
			return true;
	return false;
}

bool ar_check_is_sensitive_path(const char *path)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len == 1 && path[0] == '/')
		return true;
	for (size_t i = 0; i < AR_ARRAY_SIZE(sensitive_trees); i++) {
		size_t n = strlen(sensitive_trees[i]);
		if (strncmp(path, sensitive_trees[i], n) == 0 &&
		    (path[n] == '\0' || path[n] == '/'))
			return true;
	}
	return ar_check_is_credential_path(path);
}

const char *ar_check_format_cpus(int64_t milli, char *buf, size_t size)
{
	int64_t whole = milli / 1000, frac = milli % 1000;
	if (frac == 0)
		snprintf(buf, size, "%" PRId64, whole);
	else if (frac % 100 == 0)
		snprintf(buf, size, "%" PRId64 ".%" PRId64, whole, frac / 100);
	else if (frac % 10 == 0)
		snprintf(buf, size, "%" PRId64 ".%02" PRId64, whole, frac / 10);
	else
		snprintf(buf, size, "%" PRId64 ".%03" PRId64, whole, frac);
	return buf;
}

const char *ar_check_env_get(char *const *env, const char *key)
{
	size_t n = strlen(key);
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], key, n) == 0 && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

bool ar_check_is_placeholder(const char *name, const char *v)
{
	size_t n = strlen(name);
	if (strncmp(v, "agentrun-secret-", 16) != 0 || strncmp(v + 16, name, n) != 0 ||
	    v[16 + n] != '-')
		return false;
	const char *hex = v + 17 + n;
	return strlen(hex) == 32 && strspn(hex, "0123456789abcdef") == 32;
}

static bool policy_secret(const struct ar_policy *p, const char *name)
{
	for (size_t i = 0; p != NULL && i < p->n_secrets; i++)
		if (strcmp(p->secrets[i].name, name) == 0)
			return true;
	return false;
}

void ar_findings_add_secrets(struct ar_findings *f, const struct ar_policy *p, char *const *env,
			     const char *fix_fmt)
{
	for (size_t i = 0; env && env[i]; i++) {
		const char *eq = strchr(env[i], '=');
		ar_autofree char *name =
		    eq ? ar_xstrndup(env[i], (size_t)(eq - env[i])) : ar_xstrdup(env[i]);
		const char *v = eq ? eq + 1 : "";
		if (policy_secret(p, name)) { /* the proxy holds it: the agent a placeholder */
			if (ar_check_is_placeholder(name, v))
				continue;
			ar_autofree char *what = ar_xasprintf("secret %s", name);
			ar_autofree char *fix = ar_xasprintf(
			    "remove the value of %s from the agent; the proxy adds it (policy "
			    "secrets.%s, docs/secrets.md)",
			    name, name);
			ar_findings_add(f, what, "a placeholder (agentrun-secret-NAME-...)",
					"a real value (not shown)", fix);
			continue;
		}
		if (!ar_check_is_secret_name(name) && !(eq && ar_check_is_secret_value(v)))
			continue;
		if (eq && ar_check_is_placeholder(name, v))
			continue; /* another run's placeholder: nothing to leak */
		ar_autofree char *what = ar_xasprintf("secret in environment %s", name);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		ar_autofree char *fix = ar_xasprintf(fix_fmt, name, name);
#pragma GCC diagnostic pop
		ar_findings_add(f, what, "absent", "set", fix);
	}
}

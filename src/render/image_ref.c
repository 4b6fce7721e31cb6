/* Image references as docker's reference grammar (distribution/reference) accepts them,
 * so a value such as `--proxy-image --privileged` is refused before it lands in a
 * `docker run` line as a flag:
 *
 *   reference  := name [":" tag] ["@" digest]
 *   name       := [domain "/"] path ("/" path)*
 *   domain     := host [":" port]      host := label ("." label)*
 *   path       := [a-z0-9]+ (separator [a-z0-9]+)*   separator := [_.] | "__" | "-"+
 *   tag        := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
 *   digest     := algorithm ":" [0-9a-fA-F]{32,}
 *
 * The first component is a domain when it has a "." or ":" or is "localhost". Pure. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "agentrun/render.h"

#define NAME_MAX_LEN 255

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* [a-z0-9]+ ((?:[._]|__|[-]*)[a-z0-9]+)* over s[0..n) */
static bool path_component(const char *s, size_t n)
{
	size_t i = 0;
	if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	while (i < n) {
		while (i < n && lower_alnum(s[i]))
			i++;
		if (i == n)
			return true;
		size_t sep = i;
		while (i < n && !lower_alnum(s[i]))
			i++;
		size_t len = i - sep;
		bool dashes = strspn(s + sep, "-") >= len;
		bool ok = (len == 1 && (s[sep] == '.' || s[sep] == '_')) ||
			  (len == 2 && s[sep] == '_' && s[sep + 1] == '_') || dashes;
		if (!ok)
			return false;
	}
	return true;
}

/* label ("." label)* [":" port], label = [A-Za-z0-9] ([A-Za-z0-9-]* [A-Za-z0-9])? */
static bool domain_component(const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n);
	size_t host = colon ? (size_t)(colon - s) : n;
	if (colon) {
		size_t port = n - host - 1;
		if (port == 0 || port > 5 || strspn(colon + 1, "0123456789") < port)
			return false;
	}
	for (size_t i = 0; i < host;) {
		size_t j = i;
		while (j < host && (isalnum((unsigned char)s[j]) || s[j] == '-'))
			j++;
		if (j == i || s[i] == '-' || s[j - 1] == '-')
			return false;
		if (j < host && s[j] != '.')
			return false;
		if (j < host && j + 1 == host)
			return false; /* trailing dot */
		i = j + 1;
	}
	return host > 0;
}

static bool is_domain(const char *s, size_t n)
{
	return memchr(s, '.', n) || memchr(s, ':', n) ||
	       (n == 9 && strncmp(s, "localhost", 9) == 0);
}

static bool valid_tag(const char *t)
{
	size_t n = strlen(t);
	if (n == 0 || n > 128 || !(isalnum((unsigned char)t[0]) || t[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)t[i]) || strchr("_.-", t[i])))
			return false;
	return true;
}

/* algorithm ":" hex{32,}; algorithm = [A-Za-z][A-Za-z0-9]* ([+._-][A-Za-z][A-Za-z0-9]*)* */
static bool valid_digest(const char *d)
{
	const char *colon = strchr(d, ':');
	if (colon == NULL || colon == d || !isalpha((unsigned char)d[0]))
		return false;
	for (const char *p = d + 1; p < colon; p++) {
		if (isalnum((unsigned char)*p))
			continue;
		if (!strchr("+._-", *p) || p + 1 == colon || !isalpha((unsigned char)p[1]))
			return false;
	}
	size_t hex = strlen(colon + 1);
	return hex >= 32 && strspn(colon + 1, "0123456789abcdefABCDEF") == hex;
}

static bool valid_name(const char *s, size_t n)
{
	if (n == 0 || n > NAME_MAX_LEN)
		return false;
	for (size_t i = 0, k = 0; i <= n; k++) {
		const char *slash = memchr(s + i, '/', n - i);
		size_t end = slash ? (size_t)(slash - s) : n;
		bool ok = k == 0 && slash && is_domain(s + i, end - i)
			      ? domain_component(s + i, end - i)
			      : path_component(s + i, end - i);
		if (!ok)
			return false;
		i = end + 1;
	}
	return true;
}

int ar_render_image_check(const char *ref, const char *what, ar_error_t *err)
{
	const char *at = strchr(ref, '@');
	size_t name_end = at ? (size_t)(at - ref) : strlen(ref);
	/* the tag's colon is the last one after the last slash (a domain may have a port) */
	const char *slash = memrchr(ref, '/', name_end);
	const char *colon =
	    memchr(slash ? slash : ref, ':', name_end - (size_t)(slash ? slash - ref : 0));
	size_t name_len = colon ? (size_t)(colon - ref) : name_end;
	ar_autofree char *tag = colon ? ar_xstrndup(colon + 1, name_end - name_len - 1) : NULL;

	if (!valid_name(ref, name_len) || (tag && !valid_tag(tag)) || (at && !valid_digest(at + 1)))
		return ar_error_make(
		    err, 0,
		    "%s: \"%s\" is not a docker image reference "
		    "(NAME[:TAG][@DIGEST], lower-case name such as "
		    "\"python:3.12-alpine\" or \"registry.example:5000/team/agent\")",
		    what, ref);
	return 0;
}

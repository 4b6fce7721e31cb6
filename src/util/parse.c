/* Strict number parsers shared by the policy reader and the CLI overrides. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/util.h"

bool ar_double_is_int(double d)
{
	return d >= -9007199254740992.0 && d <= 9007199254740992.0 && d == (double)(int64_t)d;
}

int ar_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	if (s == NULL || (!isdigit((unsigned char)s[0]) && s[0] != '-'))
		return -1;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int ar_parse_bytes(const char *s, int64_t *out)
{
	static const struct {
		char suffix;
		int shift;
	} units[] = {{'b', 0}, {'k', 10}, {'m', 20}, {'g', 30}, {'t', 40}};
	char *end;

	if (s == NULL || !isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	int shift = 0;
	if (*end != '\0') {
		char c = (char)tolower((unsigned char)*end);
		size_t i;
		for (i = 0; i < AR_ARRAY_SIZE(units); i++)
			if (units[i].suffix == c)
				break;
		if (i == AR_ARRAY_SIZE(units))
			return -1;
		shift = units[i].shift;
		end++;
		/* accept docker's "256mb"/"1gb" spelling as well */
		if ((*end == 'b' || *end == 'B') && shift > 0)
			end++;
		if (*end != '\0')
			return -1;
	}
	if (v == 0 || v > ((unsigned long long)INT64_MAX >> shift))
		return -1;
	*out = (int64_t)(v << shift);
	return 0;
}

int ar_parse_cpus(const char *s, int64_t *millicpus)
{
	int64_t whole = 0, frac = 0;
	int digits = 0;
	const char *p = s;

	if (s == NULL || !isdigit((unsigned char)*p))
		return -1;
	while (isdigit((unsigned char)*p)) {
		whole = whole * 10 + (*p - '0');
		if (whole > 1024)
			return -1;
		p++;
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		while (isdigit((unsigned char)*p)) {
			if (++digits > 3)
				return -1;
			frac = frac * 10 + (*p - '0');
			p++;
		}
		while (digits++ < 3)
			frac *= 10;
	}
	if (*p != '\0')
		return -1;
	int64_t v = whole * 1000 + frac;
	if (v <= 0)
		return -1;
	*millicpus = v;
	return 0;
}

int ar_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool is_octal(char c, char max)
{
	return c >= '0' && c <= max;
}

char *ar_mountinfo_unescape(const char *s, size_t n)
{
	char *out = ar_xmalloc(n + 1), *o = out;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 3 < n && is_octal(s[i + 1], '3') &&
		    is_octal(s[i + 2], '7') && is_octal(s[i + 3], '7')) {
			*o++ =
			    (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

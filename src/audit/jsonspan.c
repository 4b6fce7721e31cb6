/* The JSON span scanner (jsonspan.h). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "jsonspan.h"

size_t json_skip_ws(const char *s, size_t len, size_t i)
{
	while (i < len && strchr(" \t\r\n", s[i]) != NULL && s[i] != '\0')
		i++;
	return i;
}

static int scan_string(const char *s, size_t len, size_t *pos)
{
	size_t i = *pos + 1;
	for (; i < len && s[i] != '"'; i++)
		if (s[i] == '\\')
			i++;
	if (i >= len)
		return -1;
	*pos = i + 1;
	return 0;
}

/* An array or object: walk to its closing bracket. */
static int scan_nested(const char *s, size_t len, size_t *pos, int depth)
{
	char close = s[*pos] == '{' ? '}' : ']';
	size_t i = json_skip_ws(s, len, *pos + 1);
	if (depth > 64)
		return -1;
	while (i < len && s[i] != close) {
		if (close == '}') {
			if (s[i] != '"' || scan_string(s, len, &i) == -1)
				return -1;
			i = json_skip_ws(s, len, i);
			if (i >= len || s[i] != ':')
				return -1;
			i = json_skip_ws(s, len, i + 1);
		}
		if (json_scan_value(s, len, &i, depth + 1) == -1)
			return -1;
		i = json_skip_ws(s, len, i);
		if (i < len && s[i] == ',')
			i = json_skip_ws(s, len, i + 1);
	}
	if (i >= len)
		return -1;
	*pos = i + 1;
	return 0;
}

int json_scan_value(const char *s, size_t len, size_t *pos, int depth)
{
	size_t i = *pos;
	if (i >= len)
		return -1;
	if (s[i] == '"')
		return scan_string(s, len, pos);
	if (s[i] == '{' || s[i] == '[')
		return scan_nested(s, len, pos, depth);
	while (i < len && strchr(",}] \t\r\n", s[i]) == NULL && s[i] != '\0')
		i++;
	if (i == *pos)
		return -1;
	*pos = i;
	return 0;
}

/* The members of the object whose '{' is at `at`. */
int json_read_object(const char *s, size_t len, size_t at, struct json_object *o)
{
	size_t i = json_skip_ws(s, len, at + 1);
	memset(o, 0, sizeof(*o));
	o->open = at;
	while (i < len && s[i] != '}') {
		struct json_member m = {.key_at = i};
		size_t k = i;
		if (s[i] != '"' || scan_string(s, len, &k) == -1 || o->n == JSON_MAX_MEMBERS)
			return -1;
		if (k - i - 2 < sizeof(m.key))
			memcpy(m.key, s + i + 1, k - i - 2);
		i = json_skip_ws(s, len, k);
		if (i >= len || s[i] != ':')
			return -1;
		m.vstart = i = json_skip_ws(s, len, i + 1);
		if (json_scan_value(s, len, &i, 0) == -1)
			return -1;
		m.vend = i;
		o->m[o->n++] = m;
		i = json_skip_ws(s, len, i);
		if (i < len && s[i] == ',')
			i = json_skip_ws(s, len, i + 1);
	}
	if (i >= len)
		return -1;
	o->close = i;
	return 0;
}

const struct json_member *json_find(const struct json_object *o, const char *key)
{
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->m[i].key, key) == 0)
			return &o->m[i];
	return NULL;
}

/* The element `index` of the array whose '[' is at `at`: its offset, or -1. */
static long array_elem(const char *s, size_t len, size_t at, long index)
{
	size_t i = json_skip_ws(s, len, at + 1);
	for (long k = 0; i < len && s[i] != ']'; k++) {
		if (k == index)
			return (long)i;
		if (json_scan_value(s, len, &i, 0) == -1)
			return -1;
		i = json_skip_ws(s, len, i);
		if (i < len && s[i] == ',')
			i = json_skip_ws(s, len, i + 1);
	}
	return -1;
}

/* One step of a path: a member name (up to '.' or '['), or "[N]". */
static long step(const char *s, size_t len, size_t at, const char **path)
{
	const char *p = *path;
	if (*p == '[') {
		char *end;
		long index = strtol(p + 1, &end, 10);
		*path = *end == ']' ? end + 1 : end;
		return s[at] == '[' ? array_elem(s, len, at, index) : -1;
	}
	size_t n = strcspn(p, ".[");
	char key[sizeof(((struct json_member *)0)->key)];
	struct json_object *o = malloc(sizeof(*o));
	long r = -1;
	*path = p + n;
	if (n < sizeof(key) && s[at] == '{' && json_read_object(s, len, at, o) == 0) {
		memcpy(key, p, n);
		key[n] = '\0';
		const struct json_member *m = json_find(o, key);
		r = m ? (long)m->vstart : -1;
	}
	free(o);
	return r;
}

long json_locate(const char *s, size_t len, const char *path, bool *exact)
{
	size_t at = json_skip_ws(s, len, 0);
	*exact = false;
	if (at >= len)
		return -1;
	while (*path != '\0') {
		if (*path == '.')
			path++;
		long next = step(s, len, at, &path);
		if (next < 0)
			return (long)at; /* the deepest part that exists */
		at = (size_t)next;
	}
	*exact = true;
	return (long)at;
}

int json_line_of(const char *s, size_t len, long off)
{
	int line = 1;
	for (long i = 0; i < off && (size_t)i < len; i++)
		line += s[i] == '\n';
	return line;
}

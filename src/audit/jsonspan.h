/* A small scanner over JSON text that says where each value sits (byte offsets), for
 * the edits of `audit --propose` and the lines of `review --sarif`. It checks only
 * what it needs to walk: the policy was read by the real parser first. Private to
 * src/audit and src/review. */
#ifndef AGENTRUN_JSONSPAN_H
#define AGENTRUN_JSONSPAN_H

#include <stdbool.h>
#include <stddef.h>

#define JSON_MAX_MEMBERS 64

struct json_member {
	char key[32]; /* "" when longer: no key we edit is */
	size_t key_at, vstart, vend;
};

struct json_object {
	size_t open, close; /* the braces */
	struct json_member m[JSON_MAX_MEMBERS];
	size_t n;
};

size_t json_skip_ws(const char *s, size_t len, size_t i);
/* Past the value at *pos (string, number, literal, array, object): 0, or -1. */
int json_scan_value(const char *s, size_t len, size_t *pos, int depth);
/* The members of the object whose '{' is at `at`. */
int json_read_object(const char *s, size_t len, size_t at, struct json_object *o);
const struct json_member *json_find(const struct json_object *o, const char *key);
/* The offset where the value at path starts ("allowed_hosts[2]", "limits.memory",
 * "env.KEY"; "" is the document; *exact true), or of the deepest existing part of it
 * when the rest is absent (*exact false); -1 when the text is empty. */
long json_locate(const char *s, size_t len, const char *path, bool *exact);
/* 1-based line of a byte offset. */
int json_line_of(const char *s, size_t len, long off);

#endif

/* ar_json_refuse_nul: cJSON copies a raw NUL byte inside a string and decodes \u0000,
 * and either cuts the C string the readers see ("/srv/a\u0000/../b" would read as
 * "/srv/a"): the readers of documents other programs wrote (docker inspect, OCI state
 * and config.json) refuse both before parsing, as the policy reader does. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <string.h>

#include "agentrun/error.h"
#include "agentrun/util.h"

struct ar_json_pos ar_json_pos(const char *json, size_t len, const char *at)
{
	struct ar_json_pos pos = {1, 1};
	if (at == NULL || at < json || at > json + len)
		at = json + len;
	for (const char *p = json; p < at; p++) {
		pos.column = *p == '\n' ? 1 : pos.column + 1;
		pos.line += *p == '\n';
	}
	return pos;
}

int ar_json_refuse_nul(const char *json, size_t len, const char *origin, ar_error_t *err)
{
	const char *raw = memchr(json, '\0', len);
	struct ar_json_pos at;
	if (raw != NULL) { /* never valid JSON, in a string or out of one */
		at = ar_json_pos(json, len, raw);
		return ar_error_make(err, 0, "%s: invalid JSON at line %d, column %d: a NUL byte",
				     origin, at.line, at.column);
	}
	bool in_string = false;
	for (size_t i = 0; i < len; i++) {
		if (json[i] == '"') {
			in_string = !in_string;
		} else if (in_string && json[i] == '\\' && i + 1 < len) {
			if (json[i + 1] == 'u' && i + 6 <= len &&
			    memcmp(json + i + 2, "0000", 4) == 0) {
				at = ar_json_pos(json, len, json + i);
				return ar_error_make(err, 0,
						     "%s: invalid JSON at line %d, column %d: "
						     "\\u0000 in a string is not supported",
						     origin, at.line, at.column);
			}
			i++; /* an escaped quote or backslash */
		}
	}
	return 0;
}

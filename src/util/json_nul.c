/* ar_json_refuse_nul: cJSON copies a raw NUL byte inside a string and decodes \u0000,
 * and either cuts the C string the readers see ("/srv/a\u0000/../b" would read as
 * "/srv/a"): the readers of documents other programs wrote (docker inspect, OCI state
 * and config.json) refuse both before parsing, as the policy reader does. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <string.h>

#include "agentrun/error.h"
#include "agentrun/util.h"

static int line_at(const char *json, const char *at)
{
	int line = 1;
	for (const char *p = json; p < at; p++)
		line += *p == '\n';
	return line;
}

int ar_json_refuse_nul(const char *json, size_t len, const char *origin, ar_error_t *err)
{
	const char *raw = memchr(json, '\0', len);
	if (raw != NULL) /* never valid JSON, in a string or out of one */
		return ar_error_make(err, 0, "%s: invalid JSON near line %d: a NUL byte", origin,
				     line_at(json, raw));
	bool in_string = false;
	for (size_t i = 0; i < len; i++) {
		if (json[i] == '"') {
			in_string = !in_string;
		} else if (in_string && json[i] == '\\' && i + 1 < len) {
			if (json[i + 1] == 'u' && i + 6 <= len &&
			    memcmp(json + i + 2, "0000", 4) == 0)
				return ar_error_make(err, 0,
						     "%s: invalid JSON near line %d: \\u0000 in a "
						     "string is not supported",
						     origin, line_at(json, json + i));
			i++; /* an escaped quote or backslash */
		}
	}
	return 0;
}

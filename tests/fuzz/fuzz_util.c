/* Target "util": the shared value parsers (sizes, CPU counts, integers: policy values
 * and CLI flags) and the two quoting functions every printer relies on (render's shell
 * commands, every JSON output). Each line is one value. Quoting must round-trip:
 * a JSON-quoted string parses back to itself, a shell-quoted one unquotes to itself. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agentrun/util.h"
#include "fuzz.h"

#define MAX_LINES 32

static void cleanup_cjsonp(cJSON **j)
{
	cJSON_Delete(*j);
}
#define autocjson __attribute__((cleanup(cleanup_cjsonp)))

static void check_numbers(const char *s)
{
	int64_t v = 0;
	if (ar_parse_bytes(s, &v) == 0)
		AR_FUZZ_CHECK(v > 0, "bytes \"%s\" -> %lld", s, (long long)v);
	if (ar_parse_cpus(s, &v) == 0)
		AR_FUZZ_CHECK(v > 0 && v <= 1024999, "cpus \"%s\" -> %lld", s, (long long)v);
	if (ar_parse_int(s, -1000, 1000, &v) == 0)
		AR_FUZZ_CHECK(v >= -1000 && v <= 1000, "int \"%s\" -> %lld", s, (long long)v);
}

static bool ascii(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p >= 0x80)
			return false;
	return true;
}

static void check_json_quote(const char *s)
{
	ar_autobuf struct ar_buf b = {0};
	ar_json_quote(&b, s);
	autocjson cJSON *j = cJSON_ParseWithLength(b.data, b.len);
	AR_FUZZ_CHECK(cJSON_IsString(j), "json_quote output does not parse: %s", b.data);
	for (size_t i = 0; i < b.len; i++)
		AR_FUZZ_CHECK((unsigned char)b.data[i] >= 0x20 && b.data[i] != 0x7f,
			      "raw control byte in json_quote output");
	/* invalid UTF-8 becomes U+FFFD, so compare only what must come back byte for byte */
	if (ascii(s))
		AR_FUZZ_CHECK(strcmp(j->valuestring, s) == 0, "json_quote round trip: %s", b.data);
}

static void check_shell_quote(const char *s)
{
	ar_autobuf struct ar_buf b = {0};
	ar_autobuf struct ar_buf back = {0};
	ar_shell_quote(&b, s);
	AR_FUZZ_CHECK(b.len > 0, "empty shell word for \"%s\"", s);
	if (b.data[0] != '\'') {
		AR_FUZZ_CHECK(strcmp(b.data, s) == 0, "bare word changed");
		for (const char *p = s; *p; p++)
			AR_FUZZ_CHECK(strchr("'\"\\$`!*?[]{}()<>|&;~# \t\n", *p) == NULL,
				      "metacharacter %c left bare in %s", *p, s);
		return;
	}
	/* '...' with each ' written as '\'' : undo it */
	AR_FUZZ_CHECK(b.len >= 2 && b.data[b.len - 1] == '\'', "unterminated quote");
	for (size_t i = 1; i + 1 < b.len; i++) {
		if (strncmp(b.data + i, "'\\''", 4) == 0) {
			ar_buf_putc(&back, '\'');
			i += 3;
			continue;
		}
		AR_FUZZ_CHECK(b.data[i] != '\'', "stray quote in %s", b.data);
		ar_buf_putc(&back, b.data[i]);
	}
	AR_FUZZ_CHECK(strcmp(back.data ? back.data : "", s) == 0, "shell_quote round trip: %s",
		      b.data);
}

void ar_fuzz_util(const uint8_t *data, size_t size)
{
	size_t n = 0;
	ar_autostrv char **lines = ar_fuzz_lines(data, size, MAX_LINES, &n);
	for (size_t i = 0; i < n; i++) {
		check_numbers(lines[i]);
		check_json_quote(lines[i]);
		check_shell_quote(lines[i]);
	}
}

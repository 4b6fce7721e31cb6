/* A tiny pretty-printing JSON writer: two-space indent, one member per line, short
 * string arrays inline. Strings go through ar_json_quote. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>

#include "json_writer.h"

static void indent(struct jw *w)
{
	for (int i = 0; i < w->depth; i++)
		ar_buf_puts(w->out, "  ");
}

/* Separator, newline, indent and `"key": ` before a value. */
static void member(struct jw *w, const char *key)
{
	if (w->depth > 0) {
		ar_buf_puts(w->out, w->first[w->depth] ? "\n" : ",\n");
		w->first[w->depth] = false;
	}
	indent(w);
	if (key != NULL) {
		ar_json_quote(w->out, key);
		ar_buf_puts(w->out, ": ");
	}
}

void ar_jw_open(struct jw *w, const char *key, char bracket)
{
	member(w, key);
	ar_buf_putc(w->out, bracket);
	/* nesting is bounded by the fixed shape of the config and the seccomp walk's check */
	if (w->depth + 1 >= JW_MAX_DEPTH)
		abort();
	w->depth++;
	w->first[w->depth] = true;
}

void ar_jw_close(struct jw *w, char bracket)
{
	bool empty = w->first[w->depth];
	w->depth--;
	if (!empty) {
		ar_buf_putc(w->out, '\n');
		indent(w);
	}
	ar_buf_putc(w->out, bracket);
	if (w->depth == 0)
		ar_buf_putc(w->out, '\n');
}

void ar_jw_str(struct jw *w, const char *key, const char *v)
{
	member(w, key);
	ar_json_quote(w->out, v);
}

void ar_jw_int(struct jw *w, const char *key, int64_t v)
{
	member(w, key);
	ar_buf_printf(w->out, "%" PRId64, v);
}

void ar_jw_bool(struct jw *w, const char *key, bool v)
{
	ar_jw_raw(w, key, v ? "true" : "false");
}

void ar_jw_raw(struct jw *w, const char *key, const char *literal)
{
	member(w, key);
	ar_buf_puts(w->out, literal);
}

void ar_jw_strv(struct jw *w, const char *key, const char *const *v, size_t n)
{
	member(w, key);
	ar_buf_putc(w->out, '[');
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			ar_buf_puts(w->out, ", ");
		ar_json_quote(w->out, v[i]);
	}
	ar_buf_putc(w->out, ']');
}

/* A tiny pretty-printing JSON writer for the OCI config (private to src/render/). */
#ifndef AGENTRUN_RENDER_JSON_WRITER_H
#define AGENTRUN_RENDER_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "agentrun/util.h"

#define JW_MAX_DEPTH 32

struct jw {
	struct ar_buf *out;
	int depth;
	bool first[JW_MAX_DEPTH];
};

/* key is NULL inside arrays (and for the top-level value). */
void ar_jw_open(struct jw *w, const char *key, char bracket);
void ar_jw_close(struct jw *w, char bracket);
void ar_jw_str(struct jw *w, const char *key, const char *v);
void ar_jw_int(struct jw *w, const char *key, int64_t v);
void ar_jw_bool(struct jw *w, const char *key, bool v);
void ar_jw_raw(struct jw *w, const char *key, const char *literal);
/* An array of strings on one line: ["a", "b"]. */
void ar_jw_strv(struct jw *w, const char *key, const char *const *v, size_t n);

#endif

/* Small helpers every module uses: cleanup attributes, ownership transfer,
 * EINTR-safe I/O, a growable buffer, shell and JSON quoting. */
#ifndef AGENTRUN_UTIL_H
#define AGENTRUN_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentrun/error.h"

#define AR_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#ifndef TEMP_FAILURE_RETRY
#define TEMP_FAILURE_RETRY(expr)                                                                   \
	({                                                                                         \
		long _r;                                                                           \
		do                                                                                 \
			_r = (long)(expr);                                                         \
		while (_r == -1L && errno == EINTR);                                               \
		_r;                                                                                \
	})
#endif

void ar_cleanup_freep(void *p);
void ar_cleanup_closep(int *fd);
void ar_cleanup_fclosep(void *fp);
void ar_cleanup_strvp(void *strv);

#define ar_autofree   __attribute__((cleanup(ar_cleanup_freep)))
#define ar_autoclose  __attribute__((cleanup(ar_cleanup_closep)))
#define ar_autofclose __attribute__((cleanup(ar_cleanup_fclosep)))
#define ar_autostrv   __attribute__((cleanup(ar_cleanup_strvp)))

static inline void *ar_steal_pointer_impl(void *pp)
{
	void **p = pp;
	void *v = *p;
	*p = NULL;
	return v;
}
#define steal_pointer(pp) ar_steal_pointer_impl(pp)
static inline int steal_fd(int *fd)
{
	int v = *fd;
	*fd = -1;
	return v;
}

/* Allocation failure aborts: there is no sensible recovery for a launcher. */
void *ar_xmalloc(size_t n);
void *ar_xcalloc(size_t n, size_t size);
void *ar_xrealloc(void *p, size_t n);
char *ar_xstrdup(const char *s);
char *ar_xstrndup(const char *s, size_t n);
char *ar_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ar_strv_free(char **strv);
size_t ar_strv_len(char *const *strv);

/* Whole-file read, NUL-terminated; the error names the path. max_size 0 = 64 MiB. */
int ar_read_file(const char *path, size_t max_size, char **out, size_t *len, ar_error_t *err);
/* Write everything, retrying EINTR and short writes. Returns 0 or -1 (errno set). */
int ar_write_all(int fd, const void *buf, size_t len);
/* Write a whole file atomically (tmp + rename) or, for /proc and /sys files, in place. */
int ar_write_file(const char *path, const char *data, size_t len, ar_error_t *err);

/* One byte and up to AR_FDS_MAX descriptors in one message on a unix socket (src/util/
 * fds.c): the go-aheads and hand-overs between agentrun, the sandbox's init and the
 * proxy child. Send: 0, or -1 with errno (EPIPE, never SIGPIPE); n may be 0. Receive:
 * 1 with the byte, *n descriptors (close-on-exec) in fds; 0 at EOF; -1 with errno
 * (EMSGSIZE: more than max came, or a truncated message: none is kept open). */
#define AR_FDS_MAX 72 /* the proxy's listeners: one explicit, two DNS, up to 64 captured */
int ar_send_fds(int sock, char byte, const int *fds, size_t n);
int ar_recv_fds(int sock, char *byte, int *fds, size_t max, size_t *n);
/* A memfd holding text, sealed against any change (a file the sandbox is given, such
 * as its resolv.conf or hosts): the fd, or -1 with errno. */
int ar_sealed_memfd(const char *name, const char *text, size_t len);

/* Growable byte buffer, always NUL-terminated. */
struct ar_buf {
	char *data;
	size_t len;
	size_t cap;
};
void ar_buf_reserve(struct ar_buf *b, size_t extra);
void ar_buf_append(struct ar_buf *b, const void *data, size_t len);
void ar_buf_puts(struct ar_buf *b, const char *s);
void ar_buf_putc(struct ar_buf *b, char c);
/* Decimal, without printf (the audit's hot path). */
void ar_buf_put_u64(struct ar_buf *b, uint64_t v);
void ar_buf_put_i64(struct ar_buf *b, int64_t v);
void ar_buf_printf(struct ar_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ar_buf_vprintf(struct ar_buf *b, const char *fmt, va_list ap);
void ar_buf_reset(struct ar_buf *b);
void ar_buf_free(struct ar_buf *b);
char *ar_buf_steal(struct ar_buf *b);
void ar_cleanup_bufp(struct ar_buf *b);
#define ar_autobuf __attribute__((cleanup(ar_cleanup_bufp)))

/* Value of a hex digit, or -1. */
int ar_hexval(int c);
/* A copy of s[0..n) with mountinfo's octal escapes (\040 for a space) undone. */
char *ar_mountinfo_unescape(const char *s, size_t n);

/* POSIX shell quoting: bare when only [A-Za-z0-9_./:=@%+,-] (and non-empty), else '...'. */
void ar_shell_quote(struct ar_buf *out, const char *s);
/* A copy safe to print on one line: newline, tab and other control bytes escaped
 * (\n, \t, \xNN), cut with "..." past max bytes. Every error message goes through it. */
char *ar_printable(const char *s, size_t max);
/* JSON string literal with quotes; control characters and invalid UTF-8 bytes escaped. */
void ar_json_quote(struct ar_buf *out, const char *s);
/* -1 with "ORIGIN: invalid JSON near line N: ..." when json holds a raw NUL byte or a
 * \u0000 escape in a string (cJSON would cut the C string there), else 0. */
/* The candidate nearest to word, when it is close enough to be a typo (at most
 * a third of its letters edited), else NULL: for "did you mean". */
struct ar_suggest {
	const char *word;
	const char *best;
	size_t dist;
};
void ar_suggest_init(struct ar_suggest *s, const char *word);
void ar_suggest_add(struct ar_suggest *s, const char *candidate);
const char *ar_suggest_best(const struct ar_suggest *s);

int ar_json_refuse_nul(const char *json, size_t len, const char *origin, ar_error_t *err);
/* Where `at` is in json, 1-based (the end when at is NULL or outside): every JSON
 * reader says "invalid JSON at line L, column C" from this. */
struct ar_json_pos {
	int line, column;
};
struct ar_json_pos ar_json_pos(const char *json, size_t len, const char *at);

/* Sizes and numbers, strict: "256m", "1g", "1048576", "512k" (binary units, as docker).
 * Return 0 or -1 without touching err; callers name the field. */
int ar_parse_bytes(const char *s, int64_t *out);
/* "0.5", "2", "1.25" -> millicpus (500, 2000, 1250); > 0, at most 3 decimals. */
int ar_parse_cpus(const char *s, int64_t *millicpus);
/* Strict decimal integer in [min,max]. */
int ar_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);
/* Is d a whole number within +-2^53 (what a JSON number holds exactly)? Without libm:
 * agentrun does not load it. NaN and infinities are not. */
bool ar_double_is_int(double d);

/* Is `path` equal to or below `dir` (both absolute, normalised)? */
bool ar_path_under(const char *path, const char *dir);

#endif

/* Memory, file and cleanup helpers. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentrun/util.h"

void ar_cleanup_freep(void *p)
{
	free(*(void **)p);
}

void ar_cleanup_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

void ar_cleanup_fclosep(void *fp)
{
	FILE **f = fp;
	if (*f)
		fclose(*f);
}

void ar_cleanup_strvp(void *strv)
{
	ar_strv_free(*(char ***)strv);
}

void *ar_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		abort();
	return p;
}

void *ar_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (p == NULL)
		abort();
	return p;
}

void *ar_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		abort();
	return p;
}

char *ar_xstrdup(const char *s)
{
	char *d = strdup(s);
	if (d == NULL)
		abort();
	return d;
}

char *ar_xstrndup(const char *s, size_t n)
{
	char *d = strndup(s, n);
	if (d == NULL)
		abort();
	return d;
}

char *ar_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	return s;
}

void ar_strv_free(char **strv)
{
	if (strv == NULL)
		return;
	for (char **p = strv; *p; p++)
		free(*p);
	free(strv);
}

size_t ar_strv_len(char *const *strv)
{
	size_t n = 0;
	while (strv && strv[n])
		n++;
	return n;
}

int ar_read_file(const char *path, size_t max_size, char **out, size_t *len, ar_error_t *err)
{
	ar_autoclose int fd = -1;
	struct ar_buf b = {0};
	char chunk[65536];

	if (max_size == 0)
		max_size = 64u << 20;
	fd = TEMP_FAILURE_RETRY(open(path, O_RDONLY | O_CLOEXEC));
	if (fd == -1)
		return ar_error_make(err, errno, "open `%s`", path);
	for (;;) {
		ssize_t n = TEMP_FAILURE_RETRY(read(fd, chunk, sizeof(chunk)));
		if (n == -1) {
			int e = errno;
			ar_buf_free(&b);
			return ar_error_make(err, e, "read `%s`", path);
		}
		if (n == 0)
			break;
		if (b.len + (size_t)n > max_size) {
			ar_buf_free(&b);
			return ar_error_make(err, 0, "`%s`: larger than %zu bytes", path, max_size);
		}
		ar_buf_append(&b, chunk, (size_t)n);
	}
	ar_buf_reserve(&b, 0);
	if (len)
		*len = b.len;
	*out = ar_buf_steal(&b);
	return 0;
}

int ar_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ar_write_file(const char *path, const char *data, size_t len, ar_error_t *err)
{
	if (strncmp(path, "/proc/", 6) == 0 || strncmp(path, "/sys/", 5) == 0) {
		ar_autoclose int fd = TEMP_FAILURE_RETRY(open(path, O_WRONLY | O_CLOEXEC));
		if (fd == -1)
			return ar_error_make(err, errno, "open `%s`", path);
		if (ar_write_all(fd, data, len) == -1)
			return ar_error_make(err, errno, "write `%s`", path);
		return 0;
	}
	ar_autofree char *tmp = ar_xasprintf("%s.tmp.%d", path, (int)getpid());
	ar_autoclose int fd =
	    TEMP_FAILURE_RETRY(open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	if (fd == -1)
		return ar_error_make(err, errno, "create `%s`", tmp);
	if (ar_write_all(fd, data, len) == -1 || fsync(fd) == -1) {
		int e = errno;
		unlink(tmp);
		return ar_error_make(err, e, "write `%s`", tmp);
	}
	if (rename(tmp, path) == -1) {
		int e = errno;
		unlink(tmp);
		return ar_error_make(err, e, "rename `%s` to `%s`", tmp, path);
	}
	return 0;
}

bool ar_path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

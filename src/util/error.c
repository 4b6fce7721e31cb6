/* The error contract: make, wrap, print once. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/error.h"
#include "agentrun/util.h"

/* Messages quote user input (paths, keys, names from hostile files): keep each one a
 * single printable line of bounded length, whichever module made it. */
#define AR_ERROR_MSG_MAX 4096

static char *printable_take(char *msg)
{
	char *shown = ar_printable(msg, AR_ERROR_MSG_MAX);
	free(msg);
	return shown;
}

int ar_error_make(ar_error_t *err, int errno_value, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;

	if (err == NULL || *err != NULL)
		return -1; /* the first error wins: it is the cause */
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	if (errno_value != 0) {
		char *full = ar_xasprintf("%s: %s", msg, strerror(errno_value));
		free(msg);
		msg = full;
	}
	*err = ar_xcalloc(1, sizeof(**err));
	(*err)->status = errno_value;
	(*err)->msg = printable_take(msg);
	return -1;
}

int ar_error_wrap(ar_error_t *err, const char *fmt, ...)
{
	va_list ap;
	char *ctx = NULL;

	if (err == NULL || *err == NULL)
		return -1;
	va_start(ap, fmt);
	if (vasprintf(&ctx, fmt, ap) < 0)
		abort();
	va_end(ap);
	char *full = ar_xasprintf("%s: %s", ctx, (*err)->msg);
	free(ctx);
	free((*err)->msg);
	(*err)->msg = printable_take(full);
	return -1;
}

void ar_error_print(ar_error_t *err)
{
	if (err == NULL || *err == NULL)
		return;
	fprintf(stderr, "agentrun: %s\n", (*err)->msg);
	fflush(stderr);
	ar_error_release(err);
}

void ar_error_release(ar_error_t *err)
{
	if (err == NULL || *err == NULL)
		return;
	free((*err)->msg);
	free(*err);
	*err = NULL;
}

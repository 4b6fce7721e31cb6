/* stderr diagnostics with the agentrun: prefix and a level switch. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>

#include "agentrun/log.h"

static enum ar_log_level current = AR_LOG_WARN;

void ar_log_set_level(enum ar_log_level level)
{
	current = level;
}

enum ar_log_level ar_log_get_level(void)
{
	return current;
}

void ar_log(enum ar_log_level level, const char *fmt, ...)
{
	static const char *const prefix[] = {
	    [AR_LOG_ERROR] = "",
	    [AR_LOG_WARN] = "warning: ",
	    [AR_LOG_INFO] = "",
	    [AR_LOG_DEBUG] = "debug: ",
	};
	va_list ap;

	if (level > current)
		return;
	fprintf(stderr, "agentrun: %s", prefix[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

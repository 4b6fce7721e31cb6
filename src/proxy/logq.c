/* The decision log (stderr for the CLI): written without ever blocking the loop. A
 * pipe nobody reads must not stall every connection, so the descriptor is made
 * non-blocking (a fresh open file description of the same pipe or terminal when
 * /proc allows, so the parent's stderr keeps its flags), lines wait in a bounded
 * buffer while the reader is slow, and lines that do not fit are dropped and counted;
 * the count is reported in the log once there is room again. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agentrun/audit.h"
#include "internal.h"

#define LOGQ_CAP (64 * 1024)

/* A descriptor of our own for fd that never blocks; -1 when fd is -1. */
static int nonblocking_fd(int fd, bool *is_sock, bool *is_file, bool *owned)
{
	struct stat st;
	*is_sock = *is_file = *owned = false;
	if (fd < 0 || fstat(fd, &st) == -1)
		return fd;
	if (S_ISREG(st.st_mode)) {
		*is_file = true;
		return fd; /* a file never makes a writer wait for a reader */
	}
	if (S_ISSOCK(st.st_mode)) {
		*is_sock = true; /* send(MSG_DONTWAIT) leaves the descriptor alone */
		return fd;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int nfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (nfd >= 0) {
		*owned = true;
		return nfd;
	}
	/* no /proc: the shared description it is */
	int fl = fcntl(fd, F_GETFL);
	if (fl != -1)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	return fd;
}

void logq_open(struct logq *q, int fd)
{
	memset(q, 0, sizeof(*q));
	q->fd = nonblocking_fd(fd, &q->is_sock, &q->is_file, &q->owned);
	q->notes = true;
}

void logq_close(struct logq *q)
{
	if (q->owned)
		close(q->fd);
	free(q->buf);
	memset(q, 0, sizeof(*q));
	q->fd = -1;
}

static ssize_t put(struct logq *q, const char *p, size_t n)
{
	if (q->is_sock)
		return send(q->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	return write(q->fd, p, n);
}

/* Room for n bytes in the buffer, or false (the line is dropped). */
static bool reserve(struct logq *q, size_t n)
{
	if (q->len + n > LOGQ_CAP)
		return false;
	if (q->cap < q->len + n) {
		q->cap = LOGQ_CAP;
		q->buf = ar_xrealloc(q->buf, q->cap);
	}
	return true;
}

static void report_dropped(struct logq *q)
{
	char msg[128];
	if (!q->notes || q->dropped == q->reported || q->len > 0)
		return;
	int n = snprintf(msg, sizeof(msg),
			 "agentrun proxy: %" PRIu64 " log line(s) dropped: the log would have "
			 "blocked\n",
			 q->dropped - q->reported);
	q->reported = q->dropped;
	memcpy(q->buf, msg, (size_t)n); /* len is 0 and cap is LOGQ_CAP: it fits */
	q->len = (uint32_t)n;
}

/* The bytes to write next: whole lines of at most PIPE_BUF bytes, which a pipe takes
 * entirely or not at all, so a reader that stops never finds half a line. */
static size_t chunk(const struct logq *q)
{
	if (q->len <= PIPE_BUF || q->is_file) /* a file takes a whole write */
		return q->len;
	const char *nl = memrchr(q->buf, '\n', PIPE_BUF);
	return nl ? (size_t)(nl - q->buf) + 1 : PIPE_BUF;
}

void logq_flush(struct logq *q)
{
	while (q->fd >= 0 && q->len > 0) {
		ssize_t n = put(q, q->buf, chunk(q));
		if (n > 0) {
			memmove(q->buf, q->buf + n, q->len - (size_t)n);
			q->len -= (uint32_t)n;
			if (q->len == 0)
				report_dropped(q);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		q->len = 0; /* a closed or broken log: nothing more to do */
		return;
	}
}

void logq_line(struct logq *q, const char *s, size_t n)
{
	if (q->fd < 0 || n == 0)
		return;
	if (q->len == 0 && !q->held) {
		/* the common case: straight out, buffering only the rest */
		ssize_t w = put(q, s, n);
		if (w == (ssize_t)n)
			return;
		if (w > 0) {
			s += w;
			n -= (size_t)w;
		}
	}
	if (q->held && q->len + n > LOGQ_CAP)
		logq_flush(q); /* a held batch larger than the buffer goes out in parts */
	if (!reserve(q, n)) {
		q->dropped++;
		return;
	}
	memcpy(q->buf + q->len, s, n);
	q->len += (uint32_t)n;
}

void logq_hold(struct logq *q)
{
	q->held++;
}

void logq_release(struct logq *q)
{
	if (q->held > 0 && --q->held == 0)
		logq_flush(q);
}

/* At exit: give a slow reader a bounded moment for what is still buffered. */
void logq_drain(struct logq *q, int timeout_ms)
{
	int64_t end = proxy_now() + timeout_ms;
	logq_flush(q);
	while (q->fd >= 0 && q->len > 0) {
		int64_t left = end - proxy_now();
		struct pollfd pfd = {.fd = q->fd, .events = POLLOUT};
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return;
		logq_flush(q);
	}
}

/* One record, to the audit queue and the log queue: neither write ever blocks. A
 * regular audit file takes every line (a write to a file does not wait for a reader);
 * only a pipe or FIFO nobody drains loses lines, counted in audit.dropped. */
void proxy_record(struct ar_proxy *px, struct ar_audit_rec *r)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	r->at_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (r->id == 0)
		r->id = ++px->next_id;
	px->stats.requests++;
	/* counted as `agentrun audit` counts the same lines */
	if (r->allowed && ar_audit_failed_status(r->status))
		px->stats.failed++;
	else if (r->allowed)
		px->stats.allowed++;
	else
		px->stats.denied++;
	px->stats.bytes_out += r->bytes_out;
	px->stats.bytes_in += r->bytes_in;
	ar_buf_reset(&px->line);
	ar_proxy_audit_format(r, &px->line);
	logq_line(&px->audit, px->line.data, px->line.len);
	ar_buf_reset(&px->line);
	ar_proxy_log_format(r, &px->line);
	logq_line(&px->log, px->line.data, px->line.len);
}

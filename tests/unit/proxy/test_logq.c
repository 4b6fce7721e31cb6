/* The proxy's line queues (src/proxy/logq.c) on a real file: held lines go out
 * together at the last release (the loop holds the audit and the log over each batch
 * of events), and a held batch larger than the queue goes out in parts, never
 * dropping a line of a regular file. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../src/proxy/internal.h"

static int temp_file(char *path, size_t n)
{
	snprintf(path, n, "/tmp/ar-test-logq.%d.XXXXXX", (int)getpid());
	int fd = mkostemp(path, O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static off_t size_of(int fd)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	return st.st_size;
}

static void test_hold_nests(void **state)
{
	(void)state;
	char path[64];
	int fd = temp_file(path, sizeof(path));
	struct logq q;
	logq_open(&q, fd);
	logq_line(&q, "a\n", 2);
	assert_int_equal(size_of(fd), 2); /* not held: straight out */
	logq_hold(&q);
	logq_hold(&q); /* the DNS stub's hold inside the loop's */
	logq_line(&q, "b\n", 2);
	logq_release(&q);
	assert_int_equal(size_of(fd), 2); /* the outer hold still gathers */
	logq_line(&q, "c\n", 2);
	logq_release(&q);
	assert_int_equal(size_of(fd), 6);
	char buf[16] = "";
	assert_int_equal(pread(fd, buf, sizeof(buf) - 1, 0), 6);
	assert_string_equal(buf, "a\nb\nc\n");
	logq_close(&q);
	close(fd);
	unlink(path);
}

/* More than the queue holds, in one held batch: every line reaches the file, whole and
 * in order. */
static void test_held_overflow_keeps_every_line(void **state)
{
	(void)state;
	char path[64], line[64];
	int fd = temp_file(path, sizeof(path));
	struct logq q;
	logq_open(&q, fd);
	logq_hold(&q);
	enum { N = 5000 }; /* ~5000 * 20 bytes: past the 64 KiB queue */
	size_t total = 0;
	for (int i = 0; i < N; i++) {
		int n = snprintf(line, sizeof(line), "line %012d\n", i);
		logq_line(&q, line, (size_t)n);
		total += (size_t)n;
	}
	logq_release(&q);
	assert_int_equal(q.dropped, 0);
	assert_int_equal((size_t)size_of(fd), total);
	char *all = malloc(total + 1);
	assert_non_null(all);
	assert_int_equal(pread(fd, all, total, 0), (ssize_t)total);
	all[total] = '\0';
	const char *p = all;
	for (int i = 0; i < N; i++) {
		snprintf(line, sizeof(line), "line %012d\n", i);
		assert_memory_equal(p, line, strlen(line));
		p += strlen(line);
	}
	free(all);
	logq_close(&q);
	close(fd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hold_nests),
	    cmocka_unit_test(test_held_overflow_keeps_every_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

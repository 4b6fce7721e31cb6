/* Unit tests for the error contract, buffers, quoting and number parsers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agentrun/error.h"
#include "agentrun/util.h"

static void test_error_make_wrap(void **state)
{
	ar_error_t err = NULL;
	assert_int_equal(ar_error_make(&err, ENOENT, "open `%s`", "p.json"), -1);
	assert_non_null(err);
	assert_int_equal(err->status, ENOENT);
	assert_string_equal(err->msg, "open `p.json`: No such file or directory");
	/* the first error is the cause and is kept */
	ar_error_make(&err, 0, "later");
	ar_error_wrap(&err, "policy");
	assert_string_equal(err->msg, "policy: open `p.json`: No such file or directory");
	ar_error_release(&err);
	assert_null(err);
}

static void test_error_printable(void **state)
{
	ar_error_t err = NULL;
	char big[9000];
	ar_error_make(&err, 0, "file `%s`: bad\x01", "a\nb\tc\x7f");
	assert_string_equal(err->msg, "file `a\\nb\\tc\\x7f`: bad\\x01");
	ar_error_wrap(&err, "ctx\r");
	assert_string_equal(err->msg, "ctx\\x0d: file `a\\nb\\tc\\x7f`: bad\\x01");
	ar_error_release(&err);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ar_error_make(&err, 0, "%s", big);
	assert_int_equal(strlen(err->msg), 4096 + 3);
	assert_string_equal(err->msg + 4096, "...");
	ar_error_release(&err);
}

static void test_shell_quote(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"abc", "abc"},
	    {"--memory=256m", "--memory=256m"},
	    {"", "''"},
	    {"a b", "'a b'"},
	    {"it's", "'it'\\''s'"},
	    {"$HOME", "'$HOME'"},
	    {"*.github.com:443", "'*.github.com:443'"},
	    {"a;rm -rf /", "'a;rm -rf /'"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		struct ar_buf b = {0};
		ar_shell_quote(&b, cases[i].in);
		assert_string_equal(b.data, cases[i].out);
		ar_buf_free(&b);
	}
}

static void test_json_quote(void **state)
{
	struct ar_buf b = {0};
	ar_json_quote(&b, "a\"b\\c\n\x01\xff\xc3\xa9");
	assert_string_equal(b.data, "\"a\\\"b\\\\c\\n\\u0001\\ufffd\xc3\xa9\"");
	ar_buf_free(&b);
}

static void test_parse_bytes(void **state)
{
	int64_t v;
	assert_int_equal(ar_parse_bytes("256m", &v), 0);
	assert_int_equal(v, 256LL << 20);
	assert_int_equal(ar_parse_bytes("1g", &v), 0);
	assert_int_equal(v, 1LL << 30);
	assert_int_equal(ar_parse_bytes("1G", &v), 0);
	assert_int_equal(ar_parse_bytes("512kb", &v), 0);
	assert_int_equal(v, 512LL << 10);
	assert_int_equal(ar_parse_bytes("1048576", &v), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(ar_parse_bytes("0", &v), -1);
	assert_int_equal(ar_parse_bytes("lots", &v), -1);
	assert_int_equal(ar_parse_bytes("256x", &v), -1);
	assert_int_equal(ar_parse_bytes("-1m", &v), -1);
	assert_int_equal(ar_parse_bytes("99999999999999999999", &v), -1);
	assert_int_equal(ar_parse_bytes("9999999999t", &v), -1);
}

static void test_parse_cpus(void **state)
{
	int64_t v;
	assert_int_equal(ar_parse_cpus("0.5", &v), 0);
	assert_int_equal(v, 500);
	assert_int_equal(ar_parse_cpus("2", &v), 0);
	assert_int_equal(v, 2000);
	assert_int_equal(ar_parse_cpus("1.25", &v), 0);
	assert_int_equal(v, 1250);
	assert_int_equal(ar_parse_cpus("0", &v), -1);
	assert_int_equal(ar_parse_cpus("0.0001", &v), -1);
	assert_int_equal(ar_parse_cpus("1.", &v), -1);
	assert_int_equal(ar_parse_cpus("one", &v), -1);
	assert_int_equal(ar_parse_cpus("-1", &v), -1);
}

static void test_mountinfo_unescape(void **state)
{
	ar_autofree char *a = ar_mountinfo_unescape("/a\\040b\\011c\\134d\\012", 21);
	assert_string_equal(a, "/a b\tc\\d\n");
	/* not an escape: a digit past octal, or too short at the end */
	ar_autofree char *b = ar_mountinfo_unescape("/x\\089\\04", 9);
	assert_string_equal(b, "/x\\089\\04");
	assert_int_equal(ar_hexval('f'), 15);
	assert_int_equal(ar_hexval('A'), 10);
	assert_int_equal(ar_hexval('g'), -1);
	assert_int_equal(ar_hexval(-3), -1);
}

static void test_buf(void **state)
{
	ar_autobuf struct ar_buf b = {0};
	for (int i = 0; i < 1000; i++)
		ar_buf_printf(&b, "%d,", i);
	assert_int_equal(b.len, strlen(b.data));
	assert_memory_equal(b.data, "0,1,2,", 6);
}

static void test_buf_ints(void **state)
{
	ar_autobuf struct ar_buf b = {0};
	ar_buf_put_u64(&b, 0);
	ar_buf_putc(&b, ' ');
	ar_buf_put_u64(&b, UINT64_MAX);
	ar_buf_putc(&b, ' ');
	ar_buf_put_i64(&b, -1);
	ar_buf_putc(&b, ' ');
	ar_buf_put_i64(&b, INT64_MIN);
	ar_buf_putc(&b, ' ');
	ar_buf_put_i64(&b, 1000);
	assert_string_equal(b.data, "0 18446744073709551615 -1 -9223372036854775808 1000");
	/* printf into the room there is, and past it */
	ar_buf_reset(&b);
	ar_buf_printf(&b, "%s", "x");
	size_t cap = b.cap;
	char big[4096];
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ar_buf_printf(&b, "%s|%d", big, 7);
	assert_true(b.cap > cap);
	assert_int_equal(b.len, 1 + 4095 + 2);
	assert_string_equal(b.data + 4096, "|7");
}

/* ar_json_refuse_nul: raw NUL anywhere, \u0000 only inside a string (an escaped quote
 * does not end it, an escaped backslash is not an escape of u) */
static void test_json_refuse_nul(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		size_t len;
		const char *msg;
	} cases[] = {
	    {"{\"a\": \"x\"}", 10, NULL},
	    {"{\"a\": \"x\"}\0", 11, "o: invalid JSON at line 1, column 11: a NUL byte"},
	    {"{\"a\": \"\\\"\\u0000\"}", 17,
	     "o: invalid JSON at line 1, column 10: \\u0000 in a string is not supported"},
	    {"{\"a\": \"\\\\u0000\"}", 16, NULL},
	    {"{\"a\":\n \"\\u00000\"}", 17,
	     "o: invalid JSON at line 2, column 3: \\u0000 in a string is not supported"},
	    {"{\"a\": \"\\u0001\"}", 15, NULL},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		ar_auto_error ar_error_t err = NULL;
		int r = ar_json_refuse_nul(cases[i].json, cases[i].len, "o", &err);
		if (cases[i].msg == NULL) {
			assert_int_equal(r, 0);
			continue;
		}
		assert_int_equal(r, -1);
		assert_string_equal(err->msg, cases[i].msg);
	}
}

/* The same files come out (by inode), close-on-exec, with the byte; more than the
 * receiver has room for: none kept open, EMSGSIZE; the byte alone; EOF. */
static void test_fds(void **state)
{
	(void)state;
	int sv[2], fds[2], got[AR_FDS_MAX];
	size_t n = 99;
	char b = 0;
	struct stat a, c;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fds[0] = open("/dev/null", O_RDONLY);
	fds[1] = open("/", O_RDONLY | O_DIRECTORY);
	assert_true(fds[0] >= 0 && fds[1] >= 0);
	assert_int_equal(ar_send_fds(sv[0], 'x', fds, 2), 0);
	assert_int_equal(ar_recv_fds(sv[1], &b, got, 2, &n), 1);
	assert_int_equal(b, 'x');
	assert_int_equal(n, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fstat(fds[i], &a), 0);
		assert_int_equal(fstat(got[i], &c), 0);
		assert_true(a.st_ino == c.st_ino && a.st_dev == c.st_dev);
		assert_true(fcntl(got[i], F_GETFD) & FD_CLOEXEC);
		close(got[i]);
	}
	/* two sent, room for one: neither stays open here */
	int before = dup(0);
	close(before);
	assert_int_equal(ar_send_fds(sv[0], 'y', fds, 2), 0);
	assert_int_equal(ar_recv_fds(sv[1], &b, got, 1, &n), -1);
	assert_int_equal(errno, EMSGSIZE);
	assert_int_equal(n, 0);
	int next = dup(0);
	assert_int_equal(next, before); /* the lowest free number: nothing leaked */
	close(next);
	assert_int_equal(ar_send_fds(sv[0], 'z', NULL, 0), 0);
	assert_int_equal(ar_recv_fds(sv[1], &b, got, 2, &n), 1);
	assert_int_equal(b, 'z');
	assert_int_equal(n, 0);
	assert_int_equal(ar_send_fds(sv[0], 'z', fds, AR_FDS_MAX + 1), -1);
	assert_int_equal(errno, EINVAL);
	close(sv[0]);
	assert_int_equal(ar_recv_fds(sv[1], &b, got, 2, &n), 0);
	assert_int_equal(ar_send_fds(sv[1], 'q', NULL, 0), -1); /* EPIPE, no SIGPIPE */
	assert_int_equal(errno, EPIPE);
	close(sv[1]);
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_error_make_wrap),
	    cmocka_unit_test(test_error_printable),
	    cmocka_unit_test(test_shell_quote),
	    cmocka_unit_test(test_json_quote),
	    cmocka_unit_test(test_parse_bytes),
	    cmocka_unit_test(test_parse_cpus),
	    cmocka_unit_test(test_buf),
	    cmocka_unit_test(test_buf_ints),
	    cmocka_unit_test(test_mountinfo_unescape),
	    cmocka_unit_test(test_json_refuse_nul),
	    cmocka_unit_test(test_fds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The proxy as a library (how `run` uses it): created from an in-memory policy on an
 * inherited listening socket, served on a thread, stopped with ar_proxy_stop; a
 * CONNECT relayed and one refused, the counters checked. Loopback only. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agentrun/policy.h"
#include "agentrun/proxy.h"

static int listen_any(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &sl), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static int dial(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Read until the end of a head or `want` bytes. */
static void read_some(int fd, char *buf, size_t size, size_t want)
{
	size_t got = 0;
	while (got < want && got < size - 1) {
		ssize_t n = read(fd, buf + got, size - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	buf[got] = '\0';
}

static void *serve(void *arg)
{
	ar_error_t err = NULL;
	intptr_t rc = ar_proxy_run(arg, &err);
	ar_error_release(&err);
	return (void *)rc;
}

static void test_library(void **state)
{
	int origin_port, proxy_port;
	int origin = listen_any(&origin_port);
	int lfd = listen_any(&proxy_port);
	char json[256];
	snprintf(json, sizeof(json),
		 "{\"name\": \"lib\", \"allowed_hosts\": [\"127.0.0.1:%d\"],"
		 " \"proxy\": {\"max_bytes_out\": {\"127.0.0.1\": 1000}}}",
		 origin_port);
	ar_error_t err = NULL;
	struct ar_policy *p = NULL;
	assert_int_equal(ar_policy_parse(json, strlen(json), "mem.json", &p, &err), 0);

	struct ar_proxy_config cfg;
	ar_proxy_config_init(&cfg);
	cfg.listen_fds[cfg.n_listen_fds++] = lfd;
	cfg.policy = p;
	struct ar_proxy *px = NULL;
	assert_int_equal(ar_proxy_create(&cfg, &px, &err), 0);
	ar_policy_free(p); /* the proxy keeps its own copy */
	char name[64];
	snprintf(name, sizeof(name), "127.0.0.1:%d", proxy_port);
	assert_string_equal(ar_proxy_listen_name(px, 0), name);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, serve, px), 0);

	/* allowed: a tunnel carrying "ping" and "pong" */
	char buf[512];
	int c = dial(proxy_port);
	int n =
	    snprintf(buf, sizeof(buf), "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\nping", origin_port);
	assert_int_equal(write(c, buf, (size_t)n), n);
	read_some(c, buf, sizeof(buf), sizeof(buf));
	assert_string_equal(buf, "HTTP/1.1 200 Connection established\r\n\r\n");
	int o = accept(origin, NULL, NULL);
	assert_true(o >= 0);
	read_some(o, buf, sizeof(buf), 4);
	assert_string_equal(buf, "ping");
	assert_int_equal(write(o, "pong!", 5), 5);
	read_some(c, buf, sizeof(buf), 5);
	assert_string_equal(buf, "pong!");
	close(o);
	read_some(c, buf, sizeof(buf), 1); /* EOF relayed */
	assert_string_equal(buf, "");
	close(c);

	/* denied: another port */
	c = dial(proxy_port);
	n = snprintf(buf, sizeof(buf), "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n", proxy_port);
	assert_int_equal(write(c, buf, (size_t)n), n);
	read_some(c, buf, sizeof(buf), sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 403 Egress denied\r\n"));
	close(c);
	usleep(100000);

	ar_proxy_stop(px);
	void *rc;
	assert_int_equal(pthread_join(th, &rc), 0);
	assert_int_equal((intptr_t)rc, 0);
	struct ar_proxy_stats st;
	ar_proxy_get_stats(px, &st);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.allowed, 1);
	assert_int_equal(st.denied, 1);
	assert_int_equal(st.bytes_out, 4);
	assert_int_equal(st.bytes_in, 5);
	ar_proxy_free(px);
	close(origin);
}

/* One CONNECT to localhost:PORT; returns the status line's code. */
static int connect_status(int proxy_port, int port)
{
	char buf[512];
	int c = dial(proxy_port);
	int n = snprintf(buf, sizeof(buf), "CONNECT localhost:%d HTTP/1.1\r\n\r\n", port);
	assert_int_equal(write(c, buf, (size_t)n), n);
	read_some(c, buf, sizeof(buf), sizeof(buf));
	close(c);
	int code = 0;
	sscanf(buf, "HTTP/1.1 %d", &code);
	return code;
}

/* `run`'s path: proxy.allow_private of an in-memory policy lets a name rule reach
 * loopback; an egress object swapped in from another thread takes over at once. */
static void test_allow_private_and_swap(void **state)
{
	int origin_port, proxy_port;
	int origin = listen_any(&origin_port);
	int lfd = listen_any(&proxy_port);
	char json[256];
	snprintf(json, sizeof(json),
		 "{\"name\": \"lib\", \"allowed_hosts\": [\"localhost:%d\"],"
		 " \"proxy\": {\"allow_private\": [\"127.0.0.0/8\", \"::1\"]}}",
		 origin_port);
	ar_error_t err = NULL;
	struct ar_policy *p = NULL;
	assert_int_equal(ar_policy_parse(json, strlen(json), "mem.json", &p, &err), 0);
	struct ar_proxy_config cfg;
	ar_proxy_config_init(&cfg);
	cfg.listen_fds[cfg.n_listen_fds++] = lfd;
	cfg.policy = p;
	cfg.dns_files_only = true;
	struct ar_proxy *px = NULL;
	assert_int_equal(ar_proxy_create(&cfg, &px, &err), 0);
	ar_policy_free(p);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, serve, px), 0);
	assert_int_equal(connect_status(proxy_port, origin_port), 200);

	/* the same rule without allow_private: localhost is a loopback address */
	struct ar_egress_settings s;
	ar_egress_settings_init(&s);
	snprintf(json, sizeof(json), "localhost:%d", origin_port);
	char *rules[] = {json};
	s.allow = rules;
	s.n_allow = 1;
	struct ar_egress *e = NULL;
	assert_int_equal(ar_egress_new(&s, &e, &err), 0);
	ar_proxy_set_egress(px, e);
	ar_egress_unref(e); /* the proxy holds its own reference */
	usleep(50000);
	assert_int_equal(connect_status(proxy_port, origin_port), 403);

	ar_proxy_stop(px);
	void *rc;
	assert_int_equal(pthread_join(th, &rc), 0);
	ar_proxy_free(px);
	close(origin);
}

static void test_create_errors(void **state)
{
	struct ar_proxy_config cfg;
	struct ar_proxy *px = NULL;
	ar_error_t err = NULL;
	ar_proxy_config_init(&cfg);
	assert_int_equal(ar_proxy_create(&cfg, &px, &err), -1);
	assert_string_equal(err->msg, "no listener: give --listen ADDR:PORT or --listen-fd N");
	ar_error_release(&err);

	cfg.listen[cfg.n_listen++] = "localhost:3128";
	assert_int_equal(ar_proxy_create(&cfg, &px, &err), -1);
	assert_string_equal(err->msg, "--listen `localhost:3128`: expected ADDR:PORT with an IP "
				      "address and a port from 0 to 65535 (127.0.0.1:3128, "
				      "[::1]:3128)");
	ar_error_release(&err);

	cfg.listen[0] = "127.0.0.1:0";
	char *bad[] = {"*.com"};
	cfg.allow = bad;
	cfg.n_allow = 1;
	assert_int_equal(ar_proxy_create(&cfg, &px, &err), -1);
	assert_non_null(strstr(err->msg, "--allow"));
	assert_null(px);
	ar_error_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_library),
	    cmocka_unit_test(test_allow_private_and_swap),
	    cmocka_unit_test(test_create_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

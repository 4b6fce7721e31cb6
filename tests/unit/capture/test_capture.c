/* Unit tests for src/capture: the ports derived from the rules, argument errors, and
 * (as root) the real thing inside private network namespaces made by a forked child:
 * the rule and routes land in the netns named by the fd and nowhere else, the
 * listeners carry IP_TRANSPARENT, the original destination of an accepted connection,
 * and a DNS reply that leaves from the address the query was sent to. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agentrun/capture.h"
#include "agentrun/error.h"
#include "agentrun/rules.h"
#include "agentrun/util.h"

static void test_ports(void **state)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autorules struct ar_rules *r = NULL;
	char *rules[] = {"github.com:22", "*.k8s.test:6443", "api.test", "x.test:53"};
	assert_int_equal(ar_rules_compile(rules, AR_ARRAY_SIZE(rules), "t", &r, &err), 0);
	uint16_t *ports;
	size_t n;
	ar_capture_ports(r, &ports, &n);
	uint16_t want[] = {22, 53, 80, 443, 6443};
	assert_int_equal(n, AR_ARRAY_SIZE(want));
	assert_memory_equal(ports, want, sizeof(want));
	free(ports);
}

static void test_bad_arguments(void **state)
{
	ar_error_t err = NULL;
	assert_int_equal(ar_capture_setup_proxy_netns(-1, "", 0, NULL, &err), -1);
	assert_non_null(strstr(err->msg, "bad veth name"));
	ar_error_release(&err);
	assert_int_equal(ar_capture_setup_proxy_netns(-1, "averyveryverylongname", 0, NULL, &err),
			 -1);
	ar_error_release(&err);
	assert_int_equal(ar_capture_setup_proxy_netns(-1, "lo", 0, "fd00::/8", &err), -1);
	assert_non_null(strstr(err->msg, "synthetic address pool \"fd00::/8\""));
	ar_error_release(&err);
	/* an fd that is not a netns */
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_int_equal(ar_capture_setup_proxy_netns(fd, "lo", 0, NULL, &err), -1);
	assert_non_null(strstr(err->msg, "setns"));
	ar_error_release(&err);
	close(fd);
	struct ar_capture_listeners l = {.dns_udp = -1, .dns_tcp = -1};
	ar_capture_listeners_close(&l); /* safe on an empty set, and twice */
	ar_capture_listeners_close(&l);
}

/* --- as root, in a forked child inside its own network namespaces --- */

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "%s:%d: check failed: %s (errno %s)\n", __FILE__,          \
				__LINE__, #c, strerror(errno));                                    \
			_exit(1);                                                                  \
		}                                                                                  \
	} while (0)
static void lo_up(void)
{
	struct ifreq ifr = {0};
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	strcpy(ifr.ifr_name, "lo");
	CHECK(ioctl(s, SIOCGIFFLAGS, &ifr) == 0);
	ifr.ifr_flags |= IFF_UP;
	CHECK(ioctl(s, SIOCSIFFLAGS, &ifr) == 0);
	close(s);
}

static struct sockaddr_in sin4(const char *a, uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, a, &sa.sin_addr);
	return sa;
}

/* In netns A (the caller's): a datagram to 127.0.0.9:53 comes back from 127.0.0.9,
 * and a connection to 127.0.0.7:8443 shows that destination. */
static void child_io(struct ar_capture_listeners *l)
{
	ar_error_t err = NULL;
	uint8_t buf[64];
	struct ar_capture_peer peer;
	int c = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in to = sin4("127.0.0.9", 53), from;
	socklen_t flen = sizeof(from);
	CHECK(sendto(c, "query", 5, 0, (struct sockaddr *)&to, sizeof(to)) == 5);
	struct timeval tv = {2, 0};
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	usleep(10000);
	CHECK(ar_capture_recv_query(l->dns_udp, buf, sizeof(buf), &peer) == 5);
	CHECK(peer.to.s_addr == to.sin_addr.s_addr);
	CHECK(ar_capture_send_reply(l->dns_udp, (const uint8_t *)"reply", 5, &peer) == 0);
	CHECK(recvfrom(c, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen) == 5);
	CHECK(from.sin_addr.s_addr == to.sin_addr.s_addr && from.sin_port == htons(53));
	CHECK(ar_capture_recv_query(l->dns_udp, buf, sizeof(buf), &peer) == -1 && errno == EAGAIN);
	close(c);

	int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	to = sin4("127.0.0.7", 8443);
	CHECK(connect(t, (struct sockaddr *)&to, sizeof(to)) == 0);
	usleep(10000);
	int a = accept4(l->tcp[0], NULL, NULL, SOCK_CLOEXEC);
	CHECK(a >= 0);
	struct sockaddr_in dst;
	CHECK(ar_capture_original_dst(a, &dst, &err) == 0);
	CHECK(dst.sin_addr.s_addr == to.sin_addr.s_addr && dst.sin_port == htons(8443));
	close(a);
	close(t);
}

/* Batches: three datagrams to three addresses, replies to the first and the third. */
static void child_batch(struct ar_capture_listeners *l)
{
	static struct ar_capture_dgram v[AR_CAPTURE_BATCH];
	static const char *const to[] = {"127.0.0.9", "127.0.0.10", "127.0.0.11"};
	int c[3];
	uint8_t buf[16];
	for (int i = 0; i < 3; i++) {
		struct sockaddr_in sa = sin4(to[i], 53);
		c[i] = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		CHECK(sendto(c[i], "q", 1, 0, (struct sockaddr *)&sa, sizeof(sa)) == 1);
	}
	usleep(10000);
	CHECK(ar_capture_recv_queries(l->dns_udp, v, AR_CAPTURE_BATCH) == 3);
	for (int i = 0; i < 3; i++) {
		struct in_addr want;
		inet_pton(AF_INET, to[i], &want);
		CHECK(v[i].len == 1 && v[i].peer.to.s_addr == want.s_addr);
		CHECK(v[i].reply_len == 0);
	}
	memcpy(v[0].reply, "r0", 2);
	v[0].reply_len = 2;
	memcpy(v[2].reply, "r2", 2);
	v[2].reply_len = 2;
	CHECK(ar_capture_send_replies(l->dns_udp, v, 3) == 2);
	usleep(10000);
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	CHECK(recvfrom(c[0], buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen) == 2);
	CHECK(memcmp(buf, "r0", 2) == 0 && from.sin_addr.s_addr == v[0].peer.to.s_addr);
	CHECK(recv(c[1], buf, sizeof(buf), 0) == -1 && errno == EAGAIN);
	CHECK(recvfrom(c[2], buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen) == 2);
	CHECK(memcmp(buf, "r2", 2) == 0 && from.sin_addr.s_addr == v[2].peer.to.s_addr);
	CHECK(ar_capture_recv_queries(l->dns_udp, v, AR_CAPTURE_BATCH) == -1 && errno == EAGAIN);
	for (int i = 0; i < 3; i++)
		close(c[i]);
}

static int setup_a(int fd, ar_error_t *err)
{
	return ar_capture_setup_proxy_netns(fd, "lo", 0, "198.18.0.0/15", err);
}

static void child_main(void)
{
	/* netns A, then netns B: the child ends up in B and works on A through its fd */
	CHECK(unshare(CLONE_NEWNET) == 0);
	lo_up();
	int a = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	CHECK(a >= 0);
	CHECK(unshare(CLONE_NEWNET) == 0);
	const char *what = NULL;
	ar_error_t err = NULL;
	CHECK(ar_capture_verify_proxy_netns(a, "lo", 0, &what, &err) == 0);
	CHECK(what != NULL && strstr(what, "iif") != NULL);
	ar_error_t e = NULL;
	CHECK(setup_a(a, &e) == 0);
	CHECK(setup_a(a, &e) == 0); /* idempotent */
	CHECK(ar_capture_verify_proxy_netns(a, "lo", 0, &what, &err) == 1);
	/* B, where the calling thread is, is untouched */
	CHECK(ar_capture_verify_proxy_netns(-1, "lo", 0, &what, &err) == 0);

	uint16_t ports[] = {8443, 53};
	struct ar_capture_listeners l;
	CHECK(ar_capture_listen(a, ports, 2, &l, &err) == 0);
	CHECK(l.n_tcp == 1 && l.ports[0] == 8443); /* 53 is the stub's own */
	int on = 0;
	socklen_t len = sizeof(on);
	CHECK(getsockopt(l.tcp[0], SOL_IP, IP_TRANSPARENT, &on, &len) == 0 && on == 1);
	CHECK(fcntl(l.dns_udp, F_GETFL) & O_NONBLOCK);
	/* the listeners live in A: come back to A to use them */
	CHECK(setns(a, CLONE_NEWNET) == 0);
	child_io(&l);
	child_batch(&l);
	/* a second set on the same ports fails, and leaves nothing open */
	int before = open("/dev/null", O_RDONLY);
	close(before);
	struct ar_capture_listeners l2;
	CHECK(ar_capture_listen(-1, ports, 1, &l2, &err) == -1);
	CHECK(err != NULL && strstr(err->msg, "bind 0.0.0.0:53") != NULL);
	int after = open("/dev/null", O_RDONLY);
	CHECK(after == before);
	ar_capture_listeners_close(&l);
	_exit(0);
}

static void test_in_netns(void **state)
{
	if (geteuid() != 0) {
		skip();
		return;
	}
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child_main();
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ports),
	    cmocka_unit_test(test_bad_arguments),
	    cmocka_unit_test(test_in_netns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

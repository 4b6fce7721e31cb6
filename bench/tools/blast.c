/* ar-blast: the load tool of bench/proxy.sh (not a test).
 *   ar-blast sink PORT              epoll sink on 127.0.0.1:PORT: each connection announces its
 *                                   length in 8 bytes, the sink reads that much, answers
 *                                   "OK <bytes>\n" and closes; idle connections are held
 *   ar-blast send PORT BYTES [PROXYPORT]   send BYTES to the sink (through an HTTP CONNECT proxy
 *                                   on 127.0.0.1:PROXYPORT) and wait for the count (no half-close:
 *                                   not every peer proxy forwards one);
 *                                   prints "BYTES SECONDS GBPS"
 *                                   (AR_BLAST_HOST: the sink's IPv4 address, else 127.0.0.1)
 *   ar-blast idle PORT N PROXYPORT  open N idle CONNECT tunnels to the sink, print "ready",
 *                                   hold them until stdin closes */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 20)

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* The sink on 127.0.0.1, or on $AR_BLAST_HOST (bench/net.sh: a synthetic address a
 * sandbox's DNS stub handed out, reached through transparent capture). */
static int dial(int port)
{
	const char *host = getenv("AR_BLAST_HOST");
	struct sockaddr_in a = loopback(port);
	if (host != NULL && inet_pton(AF_INET, host, &a.sin_addr) != 1)
		die("AR_BLAST_HOST");
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || connect(fd, (struct sockaddr *)&a, sizeof(a)) == -1)
		die("connect");
	return fd;
}

/* The proxy on 127.0.0.1, or on $AR_BLAST_PROXY_HOST (bench/net.sh: a sandbox's
 * listener at the far end of its veth). */
static int dial_proxy(int port)
{
	const char *host = getenv("AR_BLAST_PROXY_HOST");
	struct sockaddr_in a = loopback(port);
	if (host != NULL && inet_pton(AF_INET, host, &a.sin_addr) != 1)
		die("AR_BLAST_PROXY_HOST");
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || connect(fd, (struct sockaddr *)&a, sizeof(a)) == -1)
		die("connect to the proxy");
	return fd;
}

/* CONNECT through the proxy; returns once "200" and the header end were read. */
static int dial_via(int proxy, int port)
{
	char req[128], resp[1024];
	size_t got = 0;
	int fd = dial_proxy(proxy);
	int n = snprintf(req, sizeof(req),
			 "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", port, port);
	if (write(fd, req, (size_t)n) != n)
		die("write CONNECT");
	while (got < sizeof(resp) - 1) {
		ssize_t r = read(fd, resp + got, 1); /* byte by byte: never eat tunnel data */
		if (r <= 0)
			die("read CONNECT reply");
		got++;
		resp[got] = '\0';
		if (got >= 4 && memcmp(resp + got - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	if (strncmp(resp, "HTTP/1.1 200", 12) != 0 && strncmp(resp, "HTTP/1.0 200", 12) != 0) {
		fprintf(stderr, "proxy refused: %.*s\n", 60, resp);
		exit(1);
	}
	return fd;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmd_send(int port, long long bytes, int proxy)
{
	char *buf = malloc(CHUNK), reply[64] = {0};
	memset(buf, 'x', CHUNK);
	double t0 = now();
	int fd = proxy ? dial_via(proxy, port) : dial(port);
	uint64_t len = (uint64_t)bytes;
	if (write(fd, &len, sizeof(len)) != sizeof(len))
		die("write length");
	for (long long left = bytes; left > 0;) {
		ssize_t w = write(fd, buf, left < CHUNK ? (size_t)left : CHUNK);
		if (w == -1)
			die("write");
		left -= w;
	}
	if (read(fd, reply, sizeof(reply) - 1) <= 0)
		die("read reply");
	double dt = now() - t0;
	long long counted = strtoll(reply + 3, NULL, 10);
	if (strncmp(reply, "OK ", 3) != 0 || counted != bytes) {
		fprintf(stderr, "sink counted %lld of %lld bytes\n", counted, bytes);
		return 1;
	}
	printf("%lld %.3f %.3f\n", bytes, dt, (double)bytes / dt / 1e9);
	return 0;
}

__attribute__((noreturn)) static void cmd_sink(int port)
{
	struct sockaddr_in a = loopback(port);
	int one = 1, ep = epoll_create1(EPOLL_CLOEXEC);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	static long long count[1 << 16];
	static uint64_t want[1 << 16];
	static size_t hdr[1 << 16];
	char *buf = malloc(CHUNK);

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) == -1 || listen(lfd, 4096) == -1)
		die("listen");
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, -1);
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == lfd) {
				int c;
				while ((c = accept4(lfd, NULL, NULL,
						    SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					if (c >= (int)(sizeof(count) / sizeof(count[0]))) {
						close(c);
						continue;
					}
					count[c] = 0;
					hdr[c] = 0;
					struct epoll_event cev = {.events = EPOLLIN, .data.fd = c};
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
				}
				continue;
			}
			for (;;) {
				ssize_t r;
				if (hdr[fd] < sizeof(want[fd])) {
					r = read(fd, (char *)&want[fd] + hdr[fd],
						 sizeof(want[fd]) - hdr[fd]);
					if (r > 0)
						hdr[fd] += (size_t)r;
				} else {
					r = read(fd, buf, CHUNK);
					if (r > 0)
						count[fd] += r;
				}
				bool done =
				    hdr[fd] == sizeof(want[fd]) && (uint64_t)count[fd] >= want[fd];
				if (r > 0 && !done)
					continue;
				if (done || r == 0 || errno != EAGAIN) {
					char reply[64];
					int m =
					    snprintf(reply, sizeof(reply), "OK %lld\n", count[fd]);
					if (write(fd, reply, (size_t)m) != m)
						perror("write reply");
					close(fd);
				}
				break;
			}
		}
	}
}

static int cmd_idle(int port, int n, int proxy)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	for (int i = 0; i < n; i++)
		dial_via(proxy, port);
	printf("ready\n");
	fflush(stdout);
	char c;
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "sink") == 0)
		cmd_sink(atoi(argv[2]));
	if (argc >= 4 && strcmp(argv[1], "send") == 0)
		return cmd_send(atoi(argv[2]), atoll(argv[3]), argc > 4 ? atoi(argv[4]) : 0);
	if (argc >= 5 && strcmp(argv[1], "idle") == 0)
		return cmd_idle(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	fprintf(
	    stderr,
	    "usage: ar-blast sink PORT | send PORT BYTES [PROXYPORT] | idle PORT N PROXYPORT\n");
	return 2;
}

/* ar-capture-test: drives src/capture and src/dns for tests/integration/capture_*.sh
 * and bench/dns.sh: the capture and the stub on their own, and the proxy library with
 * the capture's listeners.
 *
 *   ar-capture-test serve --proxy-netns PATH --veth NAME [--sandbox-netns PATH --gw ADDR]
 *                         [--pool CIDR] [--audit FILE] --allow RULE...
 *       set up the capture (rule + local route in the proxy netns, default route in the
 *       sandbox netns), open the transparent listeners there and serve: DNS over UDP
 *       and TCP through the stub; a captured TCP connection gets one line
 *       "ORIG ADDR:PORT NAME ALLOW|DENY REASON\n" (the original destination, the name
 *       its synthetic address stands for or "-", the decision on name:port) and is
 *       closed. Prints "READY ports=..." once
 *       listening, one line per DNS event, and counters on SIGTERM/SIGINT.
 *   ar-capture-test proxy --policy FILE --listen ADDR:PORT
 *       the proxy library (ar_proxy_create/run) with the capture's listeners for the
 *       policy's ports, made in the caller's netns; SIGHUP re-reads the policy (the
 *       reload warning for ports that stay uncaptured, capture_run.sh).
 *   ar-capture-test load --server ADDR:PORT --name NAME [--type N] [--seconds S]
 *                        [--inflight K]
 *       send queries for S seconds with K outstanding; print qps and latency.
 *   ar-capture-test answer-bench --name NAME --seconds M --allow RULE...
 *       time ar_dns_stub_answer alone, M million times (no sockets). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agentrun/capture.h"
#include "agentrun/dns.h"
#include "agentrun/proxy.h"
#include "agentrun/util.h"

#define MAX_ALLOW 32

struct opts {
	const char *proxy_netns, *sandbox_netns, *veth, *gw, *pool, *audit, *listen, *server, *name;
	const char *policy;
	char *allow[MAX_ALLOW];
	size_t n_allow;
	int type, seconds, inflight;
};

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct counters {
	unsigned long udp_queries, udp_replies, tcp_queries, tcp_replies, conns, dropped;
};

struct server {
	struct ar_rules *rules;
	struct ar_dns_pool *pool;
	struct ar_dns_stub *stub;
	int audit_fd;
	struct counters c;
};

static void die(ar_error_t *err)
{
	ar_error_print(err);
	exit(1);
}

/* Flags with a value: a string field or an int field of struct opts. */
static const struct {
	const char *flag;
	size_t off;
	bool is_int;
} flags[] = {
    {"--proxy-netns", offsetof(struct opts, proxy_netns), false},
    {"--sandbox-netns", offsetof(struct opts, sandbox_netns), false},
    {"--veth", offsetof(struct opts, veth), false},
    {"--gw", offsetof(struct opts, gw), false},
    {"--pool", offsetof(struct opts, pool), false},
    {"--audit", offsetof(struct opts, audit), false},
    {"--listen", offsetof(struct opts, listen), false},
    {"--server", offsetof(struct opts, server), false},
    {"--name", offsetof(struct opts, name), false},
    {"--policy", offsetof(struct opts, policy), false},
    {"--type", offsetof(struct opts, type), true},
    {"--seconds", offsetof(struct opts, seconds), true},
    {"--inflight", offsetof(struct opts, inflight), true},
};

static int set_opt(struct opts *o, const char *k, const char *v)
{
	if (strcmp(k, "--allow") == 0 && o->n_allow < MAX_ALLOW) {
		o->allow[o->n_allow++] = (char *)v;
		return 0;
	}
	for (size_t i = 0; i < AR_ARRAY_SIZE(flags); i++) {
		if (strcmp(k, flags[i].flag) != 0)
			continue;
		char *field = (char *)o + flags[i].off;
		if (flags[i].is_int)
			*(int *)(void *)field = atoi(v);
		else
			*(const char **)(void *)field = v;
		return 0;
	}
	return -1;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.type = AR_DNS_T_A, .seconds = 2, .inflight = 32};
	for (int i = 2; i + 1 < argc; i += 2)
		if (set_opt(o, argv[i], argv[i + 1]) == -1)
			return -1;
	return argc % 2 == 0 ? 0 : -1;
}

static void server_init(struct server *s, const struct opts *o)
{
	ar_error_t err = NULL;
	memset(s, 0, sizeof(*s));
	s->audit_fd = -1;
	if (ar_rules_compile(o->allow, o->n_allow, "--allow", &s->rules, &err) == -1 ||
	    ar_dns_pool_create(o->pool, 0, &s->pool, &err) == -1)
		die(&err);
	s->stub = ar_dns_stub_new(s->rules, s->pool);
	if (o->audit != NULL) {
		s->audit_fd = open(o->audit, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (s->audit_fd == -1) {
			perror(o->audit);
			exit(1);
		}
	}
}

static void report(struct server *s, const char *via, const struct ar_dns_event *ev)
{
	char tb[16];
	struct ar_audit_rec rec;
	printf("DNS %s %s %s %s %s %s\n", via, ev->name[0] ? ev->name : "-",
	       ar_dns_type_name(ev->qtype, tb, sizeof(tb)), ar_dns_rcode_name(ev->rcode),
	       ev->addr[0] ? ev->addr : "-", ev->reason);
	if (s->audit_fd >= 0) {
		ar_autobuf struct ar_buf line = {0};
		ar_dns_event_audit(ev, &rec);
		rec.at_ms = (int64_t)time(NULL) * 1000;
		ar_proxy_audit_format(&rec, &line);
		if (ar_write_all(s->audit_fd, line.data, line.len) == -1)
			perror("audit");
	}
}

static void serve_udp(struct server *s, int fd, bool quiet)
{
	static struct ar_capture_dgram v[AR_CAPTURE_BATCH];
	struct ar_dns_event ev;
	for (int burst = 0; burst < 4; burst++) {
		int n = ar_capture_recv_queries(fd, v, AR_CAPTURE_BATCH);
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++) {
			s->c.udp_queries++;
			if (v[i].len == 0) {
				s->c.dropped++;
				continue;
			}
			v[i].reply_len = ar_dns_stub_answer(s->stub, v[i].query, v[i].len,
							    v[i].reply, sizeof(v[i].reply), &ev);
			if (v[i].reply_len == 0)
				s->c.dropped++;
			if (!quiet)
				report(s, "udp", &ev);
		}
		int sent = ar_capture_send_replies(fd, v, (size_t)n);
		s->c.udp_replies += sent > 0 ? (unsigned long)sent : 0;
	}
}

/* DNS over TCP: one connection at a time is plenty for a test (2 s budget). */
static void serve_dns_tcp(struct server *s, int lfd)
{
	ar_autoclose int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	uint8_t buf[2 + AR_DNS_MAX_QUERY], r[2 + AR_DNS_MAX_REPLY];
	size_t have = 0;
	if (fd == -1)
		return;
	struct timeval tv = {2, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (;;) {
		const uint8_t *msg;
		size_t len;
		int f = ar_dns_tcp_frame(buf, have, AR_DNS_MAX_QUERY, &msg, &len);
		if (f == -1)
			return;
		if (f == 0) {
			ssize_t n = read(fd, buf + have, sizeof(buf) - have);
			if (n <= 0)
				return;
			have += (size_t)n;
			continue;
		}
		struct ar_dns_event ev;
		s->c.tcp_queries++;
		size_t m = ar_dns_stub_answer(s->stub, msg, len, r + 2, sizeof(r) - 2, &ev);
		report(s, "tcp", &ev);
		if (m > 0) {
			ar_dns_tcp_prefix(m, r);
			if (ar_write_all(fd, r, m + 2) == 0)
				s->c.tcp_replies++;
		}
		memmove(buf, buf + 2 + len, have - 2 - len);
		have -= 2 + len;
	}
}

static void serve_captured(struct server *s, int lfd)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autoclose int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	struct sockaddr_in dst;
	char a[INET_ADDRSTRLEN], line[512];
	if (fd == -1)
		return;
	s->c.conns++;
	if (ar_capture_original_dst(fd, &dst, &err) == -1) {
		ar_error_print(&err);
		return;
	}
	struct ar_dns_target t;
	ar_dns_target(s->pool, s->rules, dst.sin_addr, ntohs(dst.sin_port), &t);
	inet_ntop(AF_INET, &dst.sin_addr, a, sizeof(a));
	int n = snprintf(line, sizeof(line), "ORIG %s:%u %s %s %s\n", a, ntohs(dst.sin_port),
			 t.name != NULL ? t.name : "-", t.decision.allowed ? "ALLOW" : "DENY",
			 t.decision.reason);
	printf("%s", line);
	ar_write_all(fd, line, (size_t)n);
}

static int open_netns(const char *path)
{
	if (path == NULL)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		perror(path);
		exit(1);
	}
	return fd;
}

static void setup_capture(const struct opts *o, struct server *s, struct ar_capture_listeners *l)
{
	ar_error_t err = NULL;
	ar_autoclose int pfd = open_netns(o->proxy_netns);
	ar_autoclose int sfd = open_netns(o->sandbox_netns);
	if (ar_capture_setup_proxy_netns(pfd, o->veth, 0, ar_dns_pool_range(s->pool), &err) == -1)
		die(&err);
	if (sfd >= 0) {
		struct in_addr gw;
		if (o->gw == NULL || inet_pton(AF_INET, o->gw, &gw) != 1) {
			fprintf(stderr, "ar-capture-test: --gw ADDR needed with --sandbox-netns\n");
			exit(2);
		}
		if (ar_capture_setup_sandbox_route(sfd, gw, &err) == -1)
			die(&err);
	}
	const char *missing = NULL;
	if (ar_capture_verify_proxy_netns(pfd, o->veth, 0, &missing, &err) != 1) {
		fprintf(stderr, "ar-capture-test: capture not in place: %s\n",
			missing != NULL ? missing : "error");
		die(&err);
	}
	uint16_t *ports;
	size_t n;
	ar_capture_ports(s->rules, &ports, &n);
	int r = ar_capture_listen(pfd, ports, n, l, &err);
	free(ports);
	if (r == -1)
		die(&err);
}

static int cmd_serve(const struct opts *o)
{
	struct server s;
	ar_autocapture struct ar_capture_listeners l = {.dns_udp = -1, .dns_tcp = -1};
	if (o->proxy_netns == NULL || o->veth == NULL)
		return 2;
	server_init(&s, o);
	setup_capture(o, &s, &l);
	printf("READY ports=");
	for (size_t i = 0; i < l.n_tcp; i++)
		printf("%s%u", i ? "," : "", l.ports[i]);
	printf("\n");
	fflush(stdout);
	struct pollfd pf[64];
	size_t npf = 0;
	pf[npf++] = (struct pollfd){l.dns_udp, POLLIN, 0};
	pf[npf++] = (struct pollfd){l.dns_tcp, POLLIN, 0};
	for (size_t i = 0; i < l.n_tcp && npf < AR_ARRAY_SIZE(pf); i++)
		pf[npf++] = (struct pollfd){l.tcp[i], POLLIN, 0};
	while (!stop) {
		if (poll(pf, npf, 200) <= 0)
			continue;
		if (pf[0].revents)
			serve_udp(&s, l.dns_udp, false);
		if (pf[1].revents)
			serve_dns_tcp(&s, l.dns_tcp);
		for (size_t i = 2; i < npf; i++)
			if (pf[i].revents)
				serve_captured(&s, pf[i].fd);
		fflush(stdout);
	}
	printf("STATS udp_queries=%lu udp_replies=%lu tcp_queries=%lu tcp_replies=%lu conns=%lu "
	       "dropped=%lu names=%zu\n",
	       s.c.udp_queries, s.c.udp_replies, s.c.tcp_queries, s.c.tcp_replies, s.c.conns,
	       s.c.dropped, ar_dns_pool_size(s.pool));
	ar_dns_stub_free(s.stub);
	ar_dns_pool_free(s.pool);
	ar_rules_free(s.rules);
	return 0;
}

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = s != NULL ? strrchr(s, ':') : NULL;
	if (colon == NULL || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	*sa = (struct sockaddr_in){.sin_family = AF_INET,
				   .sin_port = htons((uint16_t)atoi(colon + 1))};
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

/* The proxy library with the capture's listeners, in the caller's netns (a test's own):
 * the ports of the policy's rules at start; SIGHUP re-reads the policy. */
static int cmd_proxy(const struct opts *o)
{
	ar_error_t err = NULL;
	ar_autopolicy struct ar_policy *p = NULL;
	struct ar_rules *rules = NULL;
	ar_autocapture struct ar_capture_listeners l = {.dns_udp = -1, .dns_tcp = -1};
	ar_autofree uint16_t *ports = NULL;
	size_t n = 0;
	if (o->policy == NULL || o->listen == NULL)
		return 2;
	if (ar_policy_load(o->policy, &p, &err) == -1 ||
	    ar_rules_compile(p->allowed_hosts, p->n_allowed_hosts, p->origin, &rules, &err) == -1)
		die(&err);
	ar_capture_ports(rules, &ports, &n);
	ar_rules_free(rules);
	if (ar_capture_listen(-1, ports, n, &l, &err) == -1)
		die(&err);
	struct ar_proxy_config cfg;
	ar_proxy_config_init(&cfg);
	cfg.listen[cfg.n_listen++] = o->listen;
	cfg.policy_path = o->policy;
	cfg.log_fd = 2;
	cfg.handle_signals = true;
	cfg.dns_files_only = true;
	cfg.dns_udp_fd = steal_fd(&l.dns_udp);
	cfg.dns_tcp_fd = steal_fd(&l.dns_tcp);
	for (size_t i = 0; i < l.n_tcp && i < AR_PROXY_MAX_CAPTURE; i++)
		cfg.capture_fds[cfg.n_capture_fds++] = steal_fd(&l.tcp[i]);
	ar_autoproxy struct ar_proxy *px = NULL;
	if (ar_proxy_create(&cfg, &px, &err) == -1)
		die(&err);
	printf("READY ports=");
	for (size_t i = 0; i < l.n_tcp; i++)
		printf("%s%u", i ? "," : "", l.ports[i]);
	printf("\n");
	fflush(stdout);
	if (ar_proxy_run(px, &err) == -1)
		die(&err);
	return 0;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Closed loop with K queries outstanding: each reply sends the next query. */
static int cmd_load(const struct opts *o)
{
	struct sockaddr_in sa;
	uint8_t q[512], r[AR_DNS_MAX_QUERY];
	static double sent_at[65536];
	if (parse_addr(o->server, &sa) == -1 || o->name == NULL || o->inflight < 1)
		return 2;
	ar_autoclose int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		perror("load");
		return 1;
	}
	size_t cap = 1 << 20, nlat = 0;
	double *lat = ar_xmalloc(cap * sizeof(*lat));
	unsigned long seq = 0, replies = 0, lost = 0, rcodes[16] = {0};
	for (int i = 0; i < o->inflight; i++, seq++) {
		sent_at[seq & 0xffff] = now_us();
		send(fd, q,
		     ar_dns_build_query((uint16_t)seq, o->name, (uint16_t)o->type, q, sizeof(q)),
		     0);
	}
	double start = now_us(), end = start + o->seconds * 1e6;
	struct pollfd pf = {fd, POLLIN, 0};
	while (now_us() < end && !stop) {
		if (poll(&pf, 1, 100) <= 0) { /* lost: refill the window */
			lost += (unsigned long)o->inflight;
			for (int i = 0; i < o->inflight; i++, seq++) {
				sent_at[seq & 0xffff] = now_us();
				send(fd, q,
				     ar_dns_build_query((uint16_t)seq, o->name, (uint16_t)o->type,
							q, sizeof(q)),
				     0);
			}
			continue;
		}
		ssize_t n = recv(fd, r, sizeof(r), 0);
		if (n < 12)
			continue;
		double t = now_us();
		replies++;
		rcodes[r[3] & 0x0f]++;
		if (nlat < cap)
			lat[nlat++] = t - sent_at[(r[0] << 8 | r[1])];
		sent_at[seq & 0xffff] = t;
		send(fd, q,
		     ar_dns_build_query((uint16_t)seq++, o->name, (uint16_t)o->type, q, sizeof(q)),
		     0);
	}
	double secs = (now_us() - start) / 1e6, sum = 0;
	qsort(lat, nlat, sizeof(*lat), cmp_double);
	for (size_t i = 0; i < nlat; i++)
		sum += lat[i];
	printf("qps=%.0f replies=%lu lost=%lu p50_us=%.1f p99_us=%.1f mean_us=%.1f noerror=%lu "
	       "nxdomain=%lu refused=%lu\n",
	       (double)replies / secs, replies, lost, nlat ? lat[nlat / 2] : 0.0,
	       nlat ? lat[nlat * 99 / 100] : 0.0, nlat ? sum / (double)nlat : 0.0, rcodes[0],
	       rcodes[3], rcodes[5]);
	free(lat);
	return replies > 0 ? 0 : 1;
}

/* The pure answering path, no sockets: ns per answer for one name. */
static int cmd_answer_bench(const struct opts *o)
{
	struct server s;
	uint8_t q[512], r[AR_DNS_MAX_REPLY];
	struct ar_dns_event ev;
	if (o->name == NULL)
		return 2;
	server_init(&s, o);
	size_t n = ar_dns_build_query(1, o->name, (uint16_t)o->type, q, sizeof(q));
	long count = (long)o->seconds * 1000000L;
	double t0 = now_us();
	for (long i = 0; i < count; i++)
		ar_dns_stub_answer(s.stub, q, n, r, sizeof(r), &ev);
	double ns = (now_us() - t0) * 1000.0 / (double)count;
	printf("ns_per_answer=%.0f rcode=%s name=%s\n", ns, ar_dns_rcode_name(ev.rcode), o->name);
	ar_dns_stub_free(s.stub);
	ar_dns_pool_free(s.pool);
	ar_rules_free(s.rules);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (argc < 2 || parse_opts(argc, argv, &o) == -1) {
		fprintf(stderr, "usage: ar-capture-test serve|proxy|load OPTIONS (see the "
				"source)\n");
		return 2;
	}
	if (strcmp(argv[1], "serve") == 0)
		return cmd_serve(&o);
	if (strcmp(argv[1], "proxy") == 0)
		return cmd_proxy(&o);
	if (strcmp(argv[1], "load") == 0)
		return cmd_load(&o);
	if (strcmp(argv[1], "answer-bench") == 0)
		return cmd_answer_bench(&o);
	fprintf(stderr, "ar-capture-test: unknown command %s\n", argv[1]);
	return 2;
}

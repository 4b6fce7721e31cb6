/* ar-tlsget: the HTTPS client of bench/secrets.sh (not a test). curl, one process per
 * connection with URL globbing, spent more CPU per request than the proxy it measured
 * (docs/benchmarks.md); this one does only what a kept-alive request needs, the same for
 * every proxy compared, and checks every answer so a broken path cannot look fast.
 *   ar-tlsget [-x PROXY] [-c CONNS] [-n REQS] [-t SECONDS] [-C CAFILE] [-H HEADER]...
 *             -l BODYLEN https://HOST[:PORT]/PATH
 * Each of CONNS threads opens one connection (a CONNECT through PROXY, host:port or
 * http://host:port, else $HTTPS_PROXY / $https_proxy, else, or with -x "", straight to
 * HOST), does TLS verifying the server against CAFILE (else OpenSSL's defaults, which
 * follow $SSL_CERT_FILE) with the hostname checked, then sends REQS kept-alive GETs one
 * after the other. Every answer must be "200" with a Content-Length of BODYLEN and that many
 * body bytes. Timing starts once every connection is up (handshakes are not counted) and
 * the whole run is bounded by SECONDS (default 120): past it the process dies.
 * Prints "REQUESTS_PER_SECOND BODY_MIB_PER_SECOND"; exit 1 on any failure. */
#define _GNU_SOURCE
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define MAX_HEADERS 8
#define BUF_SIZE    (64 << 10)

struct opts {
	char proxy_host[256], proxy_port[16];
	bool via_proxy, direct; /* -x "": no proxy, whatever the environment says */
	char host[256], port[16], path[1024];
	const char *cafile;
	const char *headers[MAX_HEADERS];
	int n_headers, conns, timeout;
	long reqs;
	long long body_len;
};

struct worker {
	pthread_t tid;
	const struct opts *o;
	SSL_CTX *ctx;
	pthread_barrier_t *start;
	char req[4096];
	size_t req_len;
	char err[512];
};

static atomic_int failures;

__attribute__((noreturn, format(printf, 1, 2))) static void usage(const char *fmt, ...);

static void usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ar-tlsget: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nusage: ar-tlsget [-x PROXY] [-c CONNS] [-n REQS] [-t SECONDS] [-C CAFILE] "
	      "[-H HEADER]... -l BODYLEN https://HOST[:PORT]/PATH\n",
	      stderr);
	exit(2);
}

/* "host:port" after an optional scheme, up to an optional path; false when malformed. */
static bool split_authority(const char *s, char *host, size_t hn, char *port, size_t pn,
			    const char *default_port, const char **rest)
{
	const char *end = s + strcspn(s, "/");
	const char *colon = memchr(s, ':', (size_t)(end - s));
	const char *hend = colon ? colon : end;
	if (hend == s || (size_t)(hend - s) >= hn)
		return false;
	snprintf(host, hn, "%.*s", (int)(hend - s), s);
	if (colon && (size_t)(end - colon - 1) >= pn)
		return false;
	snprintf(port, pn, "%.*s", colon ? (int)(end - colon - 1) : (int)strlen(default_port),
		 colon ? colon + 1 : default_port);
	if (rest)
		*rest = end;
	return port[0] != '\0';
}

static void parse_proxy(struct opts *o, const char *p)
{
	if (strncmp(p, "http://", 7) == 0)
		p += 7;
	if (!split_authority(p, o->proxy_host, sizeof(o->proxy_host), o->proxy_port,
			     sizeof(o->proxy_port), "3128", NULL))
		usage("proxy `%s` is not host:port", p);
	o->via_proxy = true;
}

static void parse_url(struct opts *o, const char *url)
{
	const char *rest;
	if (strncmp(url, "https://", 8) != 0)
		usage("the URL must start with https://");
	if (!split_authority(url + 8, o->host, sizeof(o->host), o->port, sizeof(o->port), "443",
			     &rest))
		usage("URL `%s` has no host", url);
	snprintf(o->path, sizeof(o->path), "%s", *rest ? rest : "/");
}

static void parse_args(struct opts *o, int argc, char **argv)
{
	int ch;
	o->conns = 1, o->reqs = 1, o->timeout = 120, o->body_len = -1;
	while ((ch = getopt(argc, argv, "x:c:n:t:C:H:l:")) != -1) {
		switch (ch) {
		case 'x':
			if (*optarg)
				parse_proxy(o, optarg);
			o->direct = *optarg == '\0';
			break;
		case 'c':
			o->conns = atoi(optarg);
			break;
		case 'n':
			o->reqs = atol(optarg);
			break;
		case 't':
			o->timeout = atoi(optarg);
			break;
		case 'C':
			o->cafile = optarg;
			break;
		case 'H':
			if (o->n_headers == MAX_HEADERS)
				usage("at most %d -H", MAX_HEADERS);
			o->headers[o->n_headers++] = optarg;
			break;
		case 'l':
			o->body_len = atoll(optarg);
			break;
		default:
			usage("unknown option");
		}
	}
	if (optind != argc - 1)
		usage("one URL expected");
	if (o->conns < 1 || o->conns > 1024 || o->reqs < 1 || o->timeout < 1 || o->body_len < 0)
		usage("-c 1..1024, -n >= 1, -t >= 1 and -l >= 0 are needed");
	parse_url(o, argv[optind]);
	const char *env = getenv("HTTPS_PROXY") ? getenv("HTTPS_PROXY") : getenv("https_proxy");
	if (!o->via_proxy && !o->direct && env && *env)
		parse_proxy(o, env);
}

__attribute__((format(printf, 2, 3))) static int fail(struct worker *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (w->err[0] == '\0')
		vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
	return -1;
}

static int dial(struct worker *w, const char *host, const char *port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return fail(w, "cannot resolve `%s`", host);
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd == -1 || connect(fd, ai->ai_addr, ai->ai_addrlen) == -1) {
		freeaddrinfo(ai);
		if (fd != -1)
			close(fd);
		return fail(w, "cannot connect to `%s`", host);
	}
	freeaddrinfo(ai);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* as curl does */
	return fd;
}

/* CONNECT, then the proxy's answer read byte by byte (never eating TLS bytes). */
static int tunnel(struct worker *w, int fd)
{
	const struct opts *o = w->o;
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", o->host,
			 o->port, o->host, o->port);
	if (write(fd, buf, (size_t)n) != n)
		return fail(w, "%s: writing CONNECT", o->proxy_host);
	size_t got = 0;
	while (got < 4 || memcmp(buf + got - 4, "\r\n\r\n", 4) != 0) {
		if (got == sizeof(buf) - 1 || read(fd, buf + got, 1) != 1)
			return fail(w, "%s: no answer to CONNECT", o->proxy_host);
		got++;
	}
	buf[got] = '\0';
	if (strncmp(buf, "HTTP/1.1 200", 12) != 0 && strncmp(buf, "HTTP/1.0 200", 12) != 0)
		return fail(w, "CONNECT refused: %.80s", buf);
	return 0;
}

static SSL *open_conn(struct worker *w)
{
	const struct opts *o = w->o;
	int fd = o->via_proxy ? dial(w, o->proxy_host, o->proxy_port) : dial(w, o->host, o->port);
	if (fd == -1 || (o->via_proxy && tunnel(w, fd) == -1))
		return NULL;
	SSL *ssl = SSL_new(w->ctx);
	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 ||
	    SSL_set_tlsext_host_name(ssl, o->host) != 1 || SSL_set1_host(ssl, o->host) != 1 ||
	    SSL_connect(ssl) != 1) {
		long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
		fail(w, "TLS with `%s` failed: %s", o->host,
		     v != X509_V_OK ? X509_verify_cert_error_string(v)
				    : ERR_reason_error_string(ERR_peek_last_error()));
		SSL_free(ssl);
		close(fd);
		return NULL;
	}
	return ssl;
}

/* Reads until the head of a response is in buf; returns its length (the blank line
 * included) and leaves *have at the bytes read so far. */
static long read_head(struct worker *w, SSL *ssl, char *buf, size_t *have)
{
	for (;;) {
		char *end = *have >= 4 ? memmem(buf, *have, "\r\n\r\n", 4) : NULL;
		if (end)
			return end + 4 - buf;
		size_t got = 0;
		if (*have == BUF_SIZE - 1 ||
		    SSL_read_ex(ssl, buf + *have, BUF_SIZE - 1 - *have, &got) != 1)
			return fail(w, "%s", "the connection ended before a response head");
		*have += got;
	}
}

/* One response: status 200, Content-Length equal to -l, that many body bytes, nothing
 * after them (no request is pipelined). */
static int read_response(struct worker *w, SSL *ssl, char *buf)
{
	size_t have = 0, got;
	long head = read_head(w, ssl, buf, &have);
	if (head < 0)
		return -1;
	buf[head - 2] = '\0';
	if (strncmp(buf, "HTTP/1.1 200 ", 13) != 0)
		return fail(w, "answered: %.80s", buf);
	long long len = -1;
	for (char *l = strstr(buf, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n"))
		if (strncasecmp(l + 2, "content-length:", 15) == 0)
			len = atoll(l + 17);
	if (len != w->o->body_len)
		return fail(w, "%s", "a response without the expected Content-Length");
	long long left = len - (long long)(have - (size_t)head);
	if (left < 0)
		return fail(w, "%s", "more bytes than the Content-Length");
	while (left > 0) {
		if (SSL_read_ex(ssl, buf, left < BUF_SIZE ? (size_t)left : BUF_SIZE, &got) != 1)
			return fail(w, "%s", "the connection ended inside a body");
		left -= (long long)got;
	}
	return 0;
}

static void *run_worker(void *arg)
{
	struct worker *w = arg;
	char *buf = malloc(BUF_SIZE);
	SSL *ssl = buf ? open_conn(w) : NULL;
	if (buf == NULL)
		fail(w, "%s", "out of memory");
	pthread_barrier_wait(w->start); /* the clock starts when every connection is up */
	for (long i = 0; ssl && i < w->o->reqs; i++) {
		size_t put;
		if (SSL_write_ex(ssl, w->req, w->req_len, &put) != 1 || put != w->req_len) {
			fail(w, "%s", "writing a request failed");
			break;
		}
		if (read_response(w, ssl, buf) == -1)
			break;
	}
	if (w->err[0])
		atomic_fetch_add(&failures, 1);
	if (ssl) {
		int fd = SSL_get_fd(ssl);
		SSL_free(ssl);
		close(fd);
	}
	free(buf);
	return NULL;
}

static SSL_CTX *make_ctx(const struct opts *o)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL || (o->cafile ? SSL_CTX_load_verify_locations(ctx, o->cafile, NULL)
				      : SSL_CTX_set_default_verify_paths(ctx)) != 1) {
		fprintf(stderr, "ar-tlsget: cannot load the CA file `%s`\n",
			o->cafile ? o->cafile : "(OpenSSL's default)");
		exit(1);
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	return ctx;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void build_request(struct worker *w, const struct opts *o)
{
	bool default_port = strcmp(o->port, "443") == 0;
	int n = snprintf(w->req, sizeof(w->req),
			 "GET %s HTTP/1.1\r\nHost: %s%s%s\r\n"
			 "User-Agent: ar-tlsget\r\nAccept: */*\r\n",
			 o->path, o->host, default_port ? "" : ":", default_port ? "" : o->port);
	for (int i = 0; i < o->n_headers && n > 0 && (size_t)n < sizeof(w->req); i++)
		n += snprintf(w->req + n, sizeof(w->req) - (size_t)n, "%s\r\n", o->headers[i]);
	if (n < 0 || (size_t)n + 3 > sizeof(w->req))
		usage("the request is longer than %zu bytes", sizeof(w->req));
	memcpy(w->req + n, "\r\n", 3);
	w->req_len = (size_t)n + 2;
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	parse_args(&o, argc, argv);
	alarm((unsigned)o.timeout); /* a stuck path ends the run: SIGALRM kills */
	SSL_CTX *ctx = make_ctx(&o);
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)o.conns + 1);
	struct worker *ws = calloc((size_t)o.conns, sizeof(*ws));
	if (ws == NULL)
		return 1;
	for (int i = 0; i < o.conns; i++) {
		ws[i] = (struct worker){.o = &o, .ctx = ctx, .start = &start};
		build_request(&ws[i], &o);
		if (pthread_create(&ws[i].tid, NULL, run_worker, &ws[i]) != 0) {
			fputs("ar-tlsget: cannot start a thread\n", stderr);
			return 1;
		}
	}
	pthread_barrier_wait(&start);
	double t0 = now();
	for (int i = 0; i < o.conns; i++)
		pthread_join(ws[i].tid, NULL);
	double dt = now() - t0;
	for (int i = 0; i < o.conns; i++)
		if (ws[i].err[0])
			fprintf(stderr, "ar-tlsget: connection %d: %s\n", i, ws[i].err);
	if (atomic_load(&failures) > 0)
		return 1;
	double reqs = (double)o.reqs * o.conns;
	printf("%.0f %.0f\n", reqs / dt, reqs * (double)o.body_len / dt / (1 << 20));
	return 0;
}

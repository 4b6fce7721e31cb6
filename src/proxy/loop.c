/* The proxy's event loop: listeners, accept (the driver is conn.c), timers, signals,
 * the allow-list swap on reload, and the proxy object's lifetime. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agentrun/log.h"
#include "agentrun/policy.h"
#include "internal.h"

#define HOUSE_MS	1000  /* idle upstream expiry granularity */
#define ACCEPT_PAUSE_MS 100   /* out of descriptors: accept again after this */
#define WARN_EVERY_MS	10000 /* at most one accept-EMFILE warning per this */

void ar_proxy_config_init(struct ar_proxy_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->audit_fd = -1;
	cfg->log_fd = -1;
	cfg->dns_udp_fd = cfg->dns_tcp_fd = -1;
	cfg->stop_fd = -1;
}

int ar_proxy_busy_poll_arg(const char *v, int *us)
{
	int64_t n;
	if (ar_parse_int(v, 0, AR_PROXY_BUSY_POLL_US_MAX, &n) == -1)
		return -1;
	*us = n > 0 ? (int)n : -1;
	return 0;
}

/* Out of descriptors: said through the log queue (never a blocking write), at most
 * once per WARN_EVERY_MS however often accept is paused meanwhile. */
static void warn_accept(struct ar_proxy *px, int error)
{
	px->n_pauses++;
	if (px->warned_at != 0 && px->loop.now - px->warned_at < WARN_EVERY_MS)
		return;
	ar_buf_reset(&px->line);
	ar_buf_printf(&px->line,
		      "agentrun: warning: proxy: accept: %s; new connections wait (%" PRIu64
		      " pause(s) of %d ms since the last warning)\n",
		      strerror(error), px->n_pauses, ACCEPT_PAUSE_MS);
	logq_line(&px->log, px->line.data, px->line.len);
	px->warned_at = px->loop.now;
	px->n_pauses = 0;
}

static void do_accept(void *arg, uint32_t events)
{
	struct listener *l = arg;
	struct ar_proxy *px = l->px;
	(void)events;
	for (;;) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			struct client *c = client_new(px, fd);
			if (c != NULL)
				conn_start(c, CS_HEAD);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			/* out of descriptors: stop accepting for a moment instead of spinning */
			for (size_t i = 0; i < px->n_listeners; i++)
				ev_del(&px->loop, px->listeners[i].fd, NULL);
			px->accept_paused = true;
			ev_timer_at(&px->loop, &px->resume, px->loop.now + ACCEPT_PAUSE_MS);
			warn_accept(px, errno);
		}
		return;
	}
}

static int watch_listeners(struct ar_proxy *px, ar_error_t *err)
{
	for (size_t i = 0; i < px->n_listeners; i++) {
		if (ev_add(&px->loop, px->listeners[i].fd, EPOLLIN, &px->listeners[i].io) == -1)
			return ar_error_make(err, errno, "epoll_ctl listener %s",
					     px->listeners[i].name);
	}
	return 0;
}

static void resume_accept(void *arg)
{
	struct ar_proxy *px = arg;
	px->accept_paused = false;
	watch_listeners(px, NULL);
}

static void housekeeping(void *arg)
{
	struct ar_proxy *px = arg;
	pool_expire(px, px->loop.now - 30000);
	ev_timer_at(&px->loop, &px->house, px->loop.now + HOUSE_MS);
}

/* ---- signals and reload ---- */

static void read_signals(void *arg, uint32_t events);
static void take_pending(void *arg, uint32_t events);

static void stop_now(void *arg, uint32_t events)
{
	struct ar_proxy *px = arg;
	(void)events;
	atomic_store(&px->stop, true);
}

static int setup_signals(struct ar_proxy *px, ar_error_t *err)
{
	px->loop.on_wake = take_pending;
	px->loop.wake_arg = px;
	px->stop_io = (struct ev_io){stop_now, px};
	if (px->stopfd >= 0 && ev_add(&px->loop, px->stopfd, EPOLLIN, &px->stop_io) == -1)
		return ar_error_make(err, errno, "proxy: watch the stop descriptor");
	if (!px->cfg.handle_signals)
		return 0;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
		return ar_error_make(err, errno, "sigprocmask");
	px->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	px->sig_io = (struct ev_io){read_signals, px};
	if (px->sigfd == -1 || ev_add(&px->loop, px->sigfd, EPOLLIN, &px->sig_io) == -1)
		return ar_error_make(err, errno, "signalfd");
	return 0;
}

static void read_signals(void *arg, uint32_t events)
{
	struct ar_proxy *px = arg;
	(void)events;
	struct signalfd_siginfo si;
	while (read(px->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP)
			px->reload = true;
		else
			atomic_store(&px->stop, true);
	}
}

/* A fresh egress object from the policy file and the settings beside it. */
static int load_egress(struct ar_proxy *px, struct ar_egress **out, ar_error_t *err)
{
	ar_autopolicy struct ar_policy *p = NULL;
	if (px->policy_path == NULL)
		return ar_egress_new(&px->base, out, err);
	if (ar_policy_load(px->policy_path, &p, err) == -1)
		return -1;
	/* the placeholders live with a sandbox: a proxy of its own would forward them as
	 * they are, and the operator would think the values went in */
	if (p->n_secrets > 0 && px->cfg.secrets == NULL)
		return ar_error_make(err, 0,
				     "%s: secrets: a proxy of its own takes them as --secret flags "
				     "(what agentrun render writes), not from a policy "
				     "(docs/secrets.md)",
				     px->policy_path);
	return ar_egress_from_policy(p, &px->base, out, err);
}

static void egress_swap(struct ar_proxy *px, struct ar_egress *e)
{
	if (px->dns_stub) { /* the pool, and every address handed out, stays */
		ar_dns_stub_set_rules(px->dns_stub, e->rules);
		ar_dns_stub_set_learn(px->dns_stub, e->learn ? px->shape : NULL);
	}
	capture_rules_changed(px, e->rules);
	ar_egress_unref(px->egress);
	px->egress = e;
}

int ar_proxy_reload(struct ar_proxy *px, ar_error_t *err)
{
	struct ar_egress *e = NULL;
	if (px->policy_path == NULL)
		return 0; /* a fixed egress object: nothing to re-read */
	if (load_egress(px, &e, err) == -1)
		return ar_error_wrap(err, "reload");
	egress_swap(px, e);
	return 0;
}

void ar_proxy_set_egress(struct ar_proxy *px, struct ar_egress *e)
{
	struct ar_egress *old = atomic_exchange(&px->pending, ar_egress_ref(e));
	ar_egress_unref(old);
	ev_wake(&px->loop);
}

static void take_pending(void *arg, uint32_t events)
{
	struct ar_proxy *px = arg;
	(void)events;
	struct ar_egress *e = atomic_exchange(&px->pending, NULL);
	if (e)
		egress_swap(px, e);
}

static void log_rules(struct ar_proxy *px, const char *what)
{
	ar_buf_reset(&px->line);
	ar_buf_printf(&px->line, "agentrun proxy %s", what);
	for (size_t i = 0; i < px->n_listeners; i++)
		ar_buf_printf(&px->line, "%s%s", i ? ", " : " ", px->listeners[i].name);
	size_t n = ar_rules_count(px->egress->rules);
	ar_buf_printf(&px->line, "; %zu rule(s):", n);
	for (size_t i = 0; i < n; i++)
		ar_buf_printf(&px->line, "%s%s", i ? ", " : " ",
			      ar_rules_text(px->egress->rules, i));
	if (n == 0)
		ar_buf_puts(&px->line,
			    px->egress->learn ? " none" : " none (everything is denied)");
	if (px->egress->learn)
		ar_buf_puts(&px->line, "; learn mode: names outside the list are let through and "
				       "audited as learned");
	ar_buf_putc(&px->line, '\n');
	logq_line(&px->log, px->line.data, px->line.len);
}

static void do_reload(struct ar_proxy *px)
{
	ar_auto_error ar_error_t err = NULL;
	px->reload = false;
	if (px->policy_path == NULL) {
		/* run's and the hook's proxy: the policy came in memory and its file is not in
		 * the proxy's view; saying "reloaded" would claim a change that did not happen */
		static const char msg[] =
		    "agentrun: proxy: SIGHUP ignored: this proxy serves the policy it was "
		    "started with (no policy file to re-read); the rules are unchanged\n";
		logq_line(&px->log, msg, sizeof(msg) - 1);
		return;
	}
	if (ar_proxy_reload(px, &err) == -1) {
		ar_buf_reset(&px->line);
		ar_buf_printf(&px->line, "agentrun: proxy: %s; keeping the previous rules\n",
			      err->msg);
		logq_line(&px->log, px->line.data, px->line.len);
		return;
	}
	log_rules(px, "reloaded");
}

/* ---- listeners ---- */

static int listener_name(int fd, char *name, size_t size)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN];
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == -1)
		return -1;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(name, size, "%s:%u", host, ntohs(s4->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(name, size, "[%s]:%u", host, ntohs(s6->sin6_port));
	} else {
		errno = EAFNOSUPPORT;
		return -1;
	}
	return 0;
}

static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *sl)
{
	char host[AR_H1_HOST_MAX];
	int port;
	bool v6;
	size_t len = strlen(s);
	memset(ss, 0, sizeof(*ss));
	/* port 0 (any free port) is fine for a listener, unlike for a URL */
	bool any = len > 2 && strcmp(s + len - 2, ":0") == 0;
	if (ar_h1_split_authority(s, any ? len - 2 : len, host, sizeof(host), &port, &v6,
				  any ? 0 : -1) == -1)
		return -1;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (!v6 && inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		*sl = sizeof(*s4);
		return 0;
	}
	if (v6 && inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*sl = sizeof(*s6);
		return 0;
	}
	return -1;
}

static int bind_listener(const char *spec, int *out, ar_error_t *err)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	if (parse_listen(spec, &ss, &sl) == -1)
		return ar_error_make(err, 0,
				     "--listen `%s`: expected ADDR:PORT with an IP address and a "
				     "port from 0 to 65535 (127.0.0.1:3128, [::1]:3128)",
				     spec);
	ar_autoclose int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return ar_error_make(err, errno, "--listen `%s`: socket", spec);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) == -1)
		return ar_error_make(err, errno, "--listen `%s`: bind", spec);
	if (listen(fd, 4096) == -1)
		return ar_error_make(err, errno, "--listen `%s`: listen", spec);
	*out = steal_fd(&fd);
	return 0;
}

static int add_listener(struct ar_proxy *px, int fd, ar_error_t *err)
{
	struct listener *l = &px->listeners[px->n_listeners];
	l->io = (struct ev_io){do_accept, l};
	l->px = px;
	l->fd = fd;
	px->n_listeners++;
	if (listener_name(fd, l->name, sizeof(l->name)) == -1)
		return ar_error_make(err, errno, "listening socket %d", fd);
	int fl = fcntl(fd, F_GETFL);
	if (fl == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		return ar_error_make(err, errno, "listening socket %d", fd);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return 0;
}

static int open_listeners(struct ar_proxy *px, const struct ar_proxy_config *cfg, ar_error_t *err)
{
	/* inherited descriptors are ours from the start, even if something fails */
	for (size_t i = 0; i < cfg->n_listen_fds; i++) {
		px->listeners[px->n_listeners].fd = cfg->listen_fds[i];
		if (add_listener(px, cfg->listen_fds[i], err) == -1)
			return ar_error_wrap(err, "--listen-fd %d", cfg->listen_fds[i]);
	}
	for (size_t i = 0; i < cfg->n_listen; i++) {
		int fd = -1;
		if (bind_listener(cfg->listen[i], &fd, err) == -1)
			return -1;
		if (add_listener(px, fd, err) == -1)
			return -1;
	}
	if (px->n_listeners == 0)
		return ar_error_make(err, 0,
				     "no listener: give --listen ADDR:PORT or --listen-fd N");
	return 0;
}

/* ---- lifetime ---- */

static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void apply_defaults(struct ar_proxy_config *cfg)
{
	if (cfg->max_conns <= 0)
		cfg->max_conns = 4096;
}

/* The audit goes through a queue like the log's. A FIFO with no reader yet is opened
 * read-write: open never waits for a reader, and lines wait in the FIFO for one. */
static int open_audit(struct ar_proxy *px, const struct ar_proxy_config *cfg, ar_error_t *err)
{
	if (cfg->audit_path == NULL) {
		px->audit_fd = cfg->audit_fd; /* ours to close */
		logq_open(&px->audit, cfg->audit_fd);
		px->audit.notes = false; /* JSON Lines only: the count goes to the log */
		return 0;
	}
	const char *p = cfg->audit_path;
	px->audit_fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0640);
	if (px->audit_fd == -1 && errno == ENXIO)
		px->audit_fd = open(p, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (px->audit_fd == -1)
		return ar_error_make(err, errno, "--audit `%s`", p);
	logq_open(&px->audit, px->audit_fd);
	px->audit.notes = false;
	return 0;
}

/* The settings beside a policy file, copied: they outlive the caller's config. */
static void copy_base(struct ar_proxy *px, const struct ar_proxy_config *cfg)
{
	struct ar_egress_settings *b = &px->base;
	ar_egress_settings_init(b);
	char **allow = ar_xcalloc(cfg->n_allow + 1, sizeof(char *));
	for (size_t i = 0; i < cfg->n_allow; i++)
		allow[i] = ar_xstrdup(cfg->allow[i]);
	b->allow = allow;
	b->n_allow = cfg->n_allow;
	struct ar_cidr *c = ar_xcalloc(cfg->n_allow_private + 1, sizeof(*c));
	if (cfg->n_allow_private)
		memcpy(c, cfg->allow_private, cfg->n_allow_private * sizeof(*c));
	b->allow_private = c;
	b->n_allow_private = cfg->n_allow_private;
	b->connect_timeout_ms = cfg->connect_timeout_ms;
	b->header_timeout_ms = cfg->header_timeout_ms;
	b->idle_timeout_ms = cfg->idle_timeout_ms;
	b->keepalive_timeout_ms = cfg->keepalive_timeout_ms;
	b->pass_forwarded = cfg->pass_forwarded;
	b->learn = cfg->learn;
}

static void free_base(struct ar_egress_settings *b)
{
	ar_strv_free((char **)b->allow);
	free((void *)b->allow_private);
	memset(b, 0, sizeof(*b));
}

/* The egress object in force at start: given, from an in-memory policy, or from the
 * policy file and flags (and re-read from them on reload). */
static int first_egress(struct ar_proxy *px, const struct ar_proxy_config *cfg, ar_error_t *err)
{
	if (cfg->egress) {
		px->egress = ar_egress_ref(cfg->egress);
		return 0;
	}
	copy_base(px, cfg);
	if (cfg->policy_path) {
		px->policy_path = ar_xstrdup(cfg->policy_path);
		return load_egress(px, &px->egress, err);
	}
	if (cfg->policy)
		return ar_egress_from_policy(cfg->policy, &px->base, &px->egress, err);
	return ar_egress_new(&px->base, &px->egress, err);
}

static void copy_config(struct ar_proxy *px, const struct ar_proxy_config *cfg)
{
	px->cfg = *cfg;
	apply_defaults(&px->cfg);
	/* pointers into the caller's memory must not outlive this call */
	px->cfg.allow = NULL;
	px->cfg.policy_path = NULL;
	px->cfg.policy = NULL;
	px->cfg.egress = NULL;
	px->cfg.audit_path = NULL;
	px->cfg.allow_private = NULL;
	memset(px->cfg.listen, 0, sizeof(px->cfg.listen));
}

int ar_proxy_create(const struct ar_proxy_config *cfg, struct ar_proxy **out, ar_error_t *err)
{
	ar_autoproxy struct ar_proxy *px = ar_xcalloc(1, sizeof(*px));
	px->loop.epfd = px->loop.wakefd = px->sigfd = px->audit_fd = -1;
	px->dns_udp = px->dns_tcp = -1;
	px->log.fd = px->audit.fd = -1;
	px->stopfd = cfg->stop_fd;
	copy_config(px, cfg);
	logq_open(&px->log, cfg->log_fd);
	raise_nofile();
	struct sigaction sa;
	if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
		signal(SIGPIPE, SIG_IGN); /* splice(2) to a reset socket raises it */
	if (open_listeners(px, cfg, err) == -1 || capture_init(px, cfg, err) == -1 ||
	    first_egress(px, cfg, err) == -1 || open_audit(px, cfg, err) == -1)
		return -1;
	if (ev_init(&px->loop, err) == -1)
		return -1;
	ev_set_busy_poll(&px->loop, cfg->busy_poll_us == 0  ? AR_PROXY_BUSY_POLL_US
				    : cfg->busy_poll_us < 0 ? 0
							    : cfg->busy_poll_us);
	px->house = (struct ev_timer){.fn = housekeeping, .arg = px};
	px->resume = (struct ev_timer){.fn = resume_accept, .arg = px};
	if (setup_signals(px, err) == -1 || resolver_init(px, err) == -1 || pipes_init(px) == -1)
		return -1;
	px->pools = ar_xcalloc(256, sizeof(*px->pools));
	px->shape = ar_dns_shape_new(); /* a reload may turn learn mode on */
	*out = steal_pointer(&px);
	return 0;
}

static void finish_all(struct ar_proxy *px)
{
	conn_close_all(px);
	dnsd_close_all(px);
	ev_collect(&px->loop);
}

static void log_summary(struct ar_proxy *px)
{
	ar_buf_reset(&px->line);
	/* before the summary, which stays the last line when nothing was dropped */
	if (px->loop.poll.polls > 0)
		ar_buf_printf(&px->line,
			      "agentrun proxy: busy polling (up to %" PRId64
			      " us) answered %" PRIu64 " of %" PRIu64 " wait(s)\n",
			      px->loop.poll.max, px->loop.poll.caught, px->loop.poll.polls);
	ar_buf_printf(&px->line,
		      "agentrun proxy stopped: %" PRIu64 " request(s), %" PRIu64
		      " allowed, %" PRIu64 " failed, %" PRIu64 " denied, %" PRIu64 " bytes out\n",
		      px->stats.requests, px->stats.allowed, px->stats.failed, px->stats.denied,
		      px->stats.bytes_out);
	if (px->log.dropped > 0) /* this line may be the first to get through */
		ar_buf_printf(&px->line,
			      "agentrun proxy: %" PRIu64 " log line(s) dropped in all: the log "
			      "would have blocked\n",
			      px->log.dropped);
	if (px->audit.dropped > 0)
		ar_buf_printf(&px->line,
			      "agentrun proxy: %" PRIu64 " audit line(s) dropped in all: the "
			      "audit pipe would have blocked\n",
			      px->audit.dropped);
	logq_drain(&px->audit, 500);
	logq_drain(&px->log, 500);
	logq_line(&px->log, px->line.data, px->line.len);
	logq_drain(&px->log, 1000);
}

int ar_proxy_run(struct ar_proxy *px, ar_error_t *err)
{
	if (watch_listeners(px, err) == -1 || capture_start(px, err) == -1)
		return -1;
	log_rules(px, "listening on");
	px->loop.now = proxy_now();
	ev_timer_at(&px->loop, &px->house, px->loop.now + HOUSE_MS);
	while (!atomic_load(&px->stop)) {
		/* the audit and log lines of one batch of events go out together, whole
		 * lines in one write(2) per file, not two writes per request */
		logq_hold(&px->audit);
		logq_hold(&px->log);
		int r = ev_run_once(&px->loop, resolver_timeout(px, -1), err);
		if (r == 0) {
			resolver_tick(px);
			if (px->reload)
				do_reload(px);
		}
		logq_release(&px->log);
		logq_release(&px->audit);
		if (r == -1) /* (a slow reader's pipe is retried by every release) */
			return -1;
	}
	finish_all(px);
	log_summary(px);
	return 0;
}

void ar_proxy_stop(struct ar_proxy *px)
{
	atomic_store(&px->stop, true);
	ev_wake(&px->loop);
}

void ar_proxy_get_stats(const struct ar_proxy *px, struct ar_proxy_stats *out)
{
	*out = px->stats;
	out->open_conns = px->n_clients;
	out->log_dropped = px->log.dropped;
	out->audit_dropped = px->audit.dropped;
}

const char *ar_proxy_listen_name(const struct ar_proxy *px, size_t i)
{
	return i < px->n_listeners ? px->listeners[i].name : NULL;
}

void ar_proxy_free(struct ar_proxy *px)
{
	if (px == NULL)
		return;
	finish_all(px);
	pool_free_all(px);
	resolver_free(px);
	pipes_free(px);
	ev_collect(&px->loop);
	for (size_t i = 0; i < px->n_listeners; i++)
		close(px->listeners[i].fd);
	capture_free(px);
	ev_free(&px->loop);
	int fds[] = {px->sigfd, px->audit_fd, px->stopfd};
	for (size_t i = 0; i < AR_ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	ar_egress_unref(px->egress);
	ar_egress_unref(atomic_exchange(&px->pending, NULL));
	free_base(&px->base);
	while (px->budgets) {
		struct budget_use *b = px->budgets;
		px->budgets = b->next;
		free(b);
	}
	free(px->pools);
	ar_dns_shape_free(px->shape);
	free(px->policy_path);
	for (size_t i = 0; i < px->n_spare; i++)
		free(px->spare[i]);
	ar_buf_free(&px->line);
	logq_close(&px->log);
	logq_close(&px->audit);
	free(px);
}

void ar_cleanup_proxyp(struct ar_proxy **px)
{
	ar_proxy_free(*px);
}

/* Private to src/proxy: the proxy's objects and the functions its files share.
 *
 * The files form layers, lowest first; a file calls only into layers below its own (no
 * cycle, no call within a layer: tests/integration/lint_proxy_layers.sh reads this list
 * and checks it against the object files):
 *   layers: ev -> iobuf, http1, tls, audit, egress, tlsio, secret, learn -> logq, budget
 *   -> pool -> resolve -> tunnel -> forward -> conn (the driver) -> dnsd -> capture -> loop.
 * (tlsio: client and upstream I/O, plain or through the TLS module; secret: the
 * placeholders in a request, docs/secrets.md; learn: learn mode's decisions.)
 * A lower layer reaches an upper one only through a pointer the upper one set (the
 * upstream's owner's ev_io, the search's done callback, a captured connection's
 * sniff step and first-bytes check).
 *
 * The event core (ev.h) calls back per descriptor and per timer. A client or upstream
 * socket is registered once, edge-triggered, for IN|OUT|RDHUP; a client's step
 * function retries its operations until one would block and then returns CS_WAIT, so
 * no epoll_ctl is needed while a connection lives. Objects closed while an event batch
 * is being dispatched are freed after the batch (ev_defer_free). */
#ifndef AGENTRUN_PROXY_INTERNAL_H
#define AGENTRUN_PROXY_INTERNAL_H

#include <ares.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agentrun/capture.h"
#include "agentrun/dns.h"
#include "agentrun/http1.h"
#include "agentrun/policy.h"
#include "agentrun/proxy.h"
#include "agentrun/rules.h"
#include "agentrun/secrets.h"
#include "ev.h"

/* A listening socket; its kind is its accept callback (a transparent listener or a
 * DNS stub is another callback and entry state, not another case in a switch). */
struct listener {
	struct ev_io io;
	struct ar_proxy *px;
	int fd;
	char name[INET6_ADDRSTRLEN + 16];
};

struct iobuf {
	char *p;
	uint32_t off, len, cap;
};

/* The egress object (egress.c): immutable once built; the loop holds the one in
 * force and every request holds the one it was decided with. */
struct ar_egress {
	atomic_uint refs; /* the caller may drop its reference from another thread */
	struct ar_rules *rules;
	struct ar_byte_budget *budgets; /* proxy.max_bytes_out */
	size_t n_budgets;
	enum ar_sni_mode sni;
	struct ar_cidr *allow_private;
	size_t n_allow_private;
	int connect_timeout_ms, header_timeout_ms, idle_timeout_ms, keepalive_timeout_ms;
	bool pass_forwarded;
	bool learn; /* learn mode: learn.c */
	/* how a 403 for a private address says to allow it: the flag, or the policy key
	 * when a policy drives the proxy (a sandbox's user never typed the flag) */
	const char *private_hint;
};
bool egress_private_ok(const struct ar_egress *e, int family, const void *addr);

/* Bytes sent upstream to a host with a budget, over the proxy's lifetime (kept
 * across reloads). */
struct budget_use {
	struct budget_use *next;
	uint64_t used;
	char host[];
};

struct origin_pool;
struct client;
enum cstate {
	CS_HEAD,      /* reading a request head */
	CS_UPSTREAM,  /* to start the upstream search (pool, resolve, dial) */
	CS_RESOLVE,   /* waiting for c-ares */
	CS_CONNECT,   /* upstream connect in progress */
	CS_FORWARD,   /* plain HTTP exchange */
	CS_TUNNEL,    /* CONNECT relay */
	CS_REPLY,     /* sending a response the proxy made */
	CS_LINGER,    /* write side shut, draining input before close */
	CS_SNIFF,     /* captured, to a literal address: reading the SNI or Host it names */
	CS_TLSACCEPT, /* a CONNECT to a secret's host: the 200, then the TLS handshake */
	CS_CLOSE,     /* returned by a step: the driver closes the connection */
	CS_DEAD,      /* closed; freed after the batch */
	CS_WAIT,      /* returned by a step: stay in this state until the next event */
};
/* A step does what its state can do now and returns the next state (CS_WAIT: none
 * yet). Only the driver (conn.c) loops over steps and sets c->state. */
typedef enum cstate step_fn(struct client *c);
/* How an upstream search ends: the state the client goes to (from a step it is
 * returned; from an asynchronous completion it is handed to conn_resume). */
typedef enum cstate upstream_done_fn(struct client *c, int status, const char *why);

struct ar_tlsmod_conn;
struct upstream {
	struct ev_io io;
	int fd;
	struct ar_tlsmod_conn *tls; /* the origin's leg of a terminated connection */
	struct ar_proxy *px;
	bool connected;
	bool ready; /* reported writable/error while connecting (pool.c sets, resolve.c reads) */
	uint32_t events; /* epoll events since the owner's last tunnel step (tunnel.c clears) */
	struct client *owner;		/* NULL while idle in a pool */
	struct ev_io *owner_io;		/* the owner's driver entry, called on events */
	struct origin_pool *pool;	/* while idle */
	struct upstream *pnext, *pprev; /* the pool's idle list */
	struct upstream *gnext, *gprev; /* every idle upstream, oldest first */
	int64_t idle_since;
	char addr[INET6_ADDRSTRLEN];
};

struct cand {
	int family;
	uint8_t addr[16];
};

struct tpipe {
	int r, w; /* -1 when none is held */
	uint32_t size;
};

/* One direction of a tunnel: src -> pipe -> dst. The pipe is borrowed from the
 * pool only while it holds data, so an idle tunnel costs two sockets. */
struct tdir {
	struct tpipe pipe;
	uint32_t in_pipe;
	bool eof;  /* src said EOF */
	bool shut; /* dst got SHUT_WR */
	uint64_t bytes;
};

/* The upstream search (resolve.c; the pin is set by capture.c): the candidates, the
 * lookup in flight, and how the search ends. */
struct search {
	struct lookup *lookup;
	upstream_done_fn *done;
	struct cand *cands;
	struct cand pin; /* family 0, or the only address the name may be dialled at */
	uint8_t n_cands, next;
	bool resolved; /* on_resolved has answered: step_resolve takes it */
	bool reused;   /* the upstream came from the pool */
	bool retried;  /* a pooled upstream failed and the request went to a fresh one */
	int ares_status;
};

/* The CONNECT relay (tunnel.c). */
struct tunnel {
	struct tdir dir[2]; /* [0] client->upstream, [1] upstream->client */
	bool sni_wait;	    /* the ClientHello is read and checked before relaying */
	bool bufs_freed;    /* the prologue is over: no user-space buffers */
};

/* The plain HTTP exchange (forward.c). */
struct exchange {
	struct ar_buf uo; /* request head to the upstream */
	size_t uo_off;
	bool req_done, resp_head_done, resp_done, up_eof, up_reusable;
	bool resp_started;   /* response bytes reached the client */
	bool upgrade;	     /* the request asked to upgrade (a WebSocket) */
	bool upgraded;	     /* 101: both ways relayed as they come until a close */
	uint32_t req_ready;  /* validated body bytes at in.off not yet sent */
	struct ar_h1m req_m; /* the request body's framing */
	struct ar_h1m resp_m;
	struct ar_h1_scan rscan;
	uint32_t rbase;	 /* start of the response head being read, in out */
	uint32_t rready; /* out bytes before this may go to the client */
};

struct client {
	struct ev_io io;
	struct ev_timer timer; /* the nearest deadline; see conn.c */
	struct ev_task task;   /* runs the driver after the batch (a completion) */
	uint8_t state;	       /* enum cstate; set by the driver (conn.c) only */
	step_fn *sniff;	       /* CS_SNIFF's step (capture.c, for a literal address) */
	uint32_t events;       /* epoll events since the last tunnel step (tunnel.c clears) */
	/* captured: what the first bytes are, before the SNI check (capture.c); 2 hands
	 * the connection to c->sniff (plain HTTP to be parsed) */
	int (*first_bytes)(struct client *c, int r);
	bool keepalive;	    /* the client connection may carry another request */
	bool close_after;   /* close once the current reply is flushed */
	bool first_request; /* no request finished on this connection yet */
	bool head_deadline; /* deadline is the 408 one (else a silent idle close) */
	bool rule_literal;  /* the matching rule names an IP literal */
	bool host_is_ip;    /* the request names an IP literal */
	bool captured;	    /* transparent capture: no request head, decided by name */
	bool term;	    /* a terminated CONNECT: requests arrive decrypted (c->tls) */
	bool one_origin;    /* requests arrive in origin-form for term_host:term_port (a
			       terminated connection, or captured plain HTTP with secrets) */
	int fd;
	struct ar_tlsmod_conn *tls;	/* the sandbox's leg of a terminated connection */
	char term_host[AR_H1_HOST_MAX]; /* the CONNECT target of a terminated connection */
	int term_port;
	uint64_t secrets_bound; /* the secrets the request's host may receive */
	uint64_t secrets_used;	/* the request's placeholders replaced (the audit names them) */
	uint64_t secrets_refused;
	struct ar_secrets_scan body_scan; /* a plain-HTTP body's first 64 KiB */
	struct ar_proxy *px;
	struct client *next, *prev;
	int64_t deadline;
	int64_t last_active;
	struct iobuf in;  /* from the client */
	struct iobuf out; /* to the client */
	struct upstream *up;
	struct ar_h1_scan scan;

	/* the request in flight */
	uint64_t id;
	int64_t started;
	struct ar_egress *egress;
	const char *rule;
	struct budget_use *budget; /* NULL: no budget for this host */
	uint64_t budget_max;
	bool audited, allowed, is_connect, is_head, host_v6, have_method;
	int status;
	int port;
	char method[24];
	char host[AR_H1_HOST_MAX];
	char reason[AR_HOST_MAX + 160];
	char uo_addr[INET6_ADDRSTRLEN + 8]; /* the address dialled */
	uint64_t bytes_out, bytes_in;
	bool learned;	     /* learn mode let it through (learn.c); rule = learn_rule */
	bool has_body;	     /* a plain HTTP request with a body (forward.c) */
	uint64_t body_bytes; /* of it, sent upstream */
	char learn_rule[AR_HOST_MAX + 16];

	struct search s;   /* resolve.c */
	struct exchange x; /* forward.c */
	struct tunnel tn;  /* tunnel.c */
};

struct pipe_pool;

/* The decision log (logq.c): never blocks; lines that do not fit are counted. */
struct logq {
	int fd;
	bool is_sock, is_file, owned;
	bool notes;    /* note dropped lines in the queue itself (the log; not the audit) */
	uint32_t held; /* logq_hold, nested: lines gather until the last logq_release */
	char *buf;
	uint32_t len, cap;
	uint64_t dropped, reported;
};
void logq_open(struct logq *q, int fd);
void logq_line(struct logq *q, const char *s, size_t n);
void logq_flush(struct logq *q);
/* Gather the lines of a batch (an event batch of the loop, the DNS stub's recvmmsg) and
 * write them together; holds nest. */
void logq_hold(struct logq *q);
void logq_release(struct logq *q);
void logq_drain(struct logq *q, int timeout_ms);
void logq_close(struct logq *q);
/* Audit and log one record (at_ms, and id when 0, are set here; it is counted). */
void proxy_record(struct ar_proxy *px, struct ar_audit_rec *r);

struct ar_proxy {
	struct ar_proxy_config cfg;
	struct ev_loop loop;
	int sigfd;
	int stopfd; /* cfg.stop_fd: readable stops the loop */
	struct ev_io stop_io;
	struct ev_io sig_io;
	struct ev_timer house;	/* idle upstream expiry, once a second */
	struct ev_timer resume; /* accept again after running out of descriptors */
	struct listener listeners[AR_PROXY_MAX_LISTEN * 2];
	size_t n_listeners;
	bool accept_paused;
	struct ar_egress *egress;	     /* in force for new requests */
	_Atomic(struct ar_egress *) pending; /* ar_proxy_set_egress, taken by the loop */
	char *policy_path;		     /* re-read on reload */
	struct ar_egress_settings base;	     /* flags beside the policy file (copies) */
	int audit_fd;	   /* the audit descriptor we own (closed at free), or -1 */
	struct logq audit; /* the audit lines: a FIFO nobody reads drops, never blocks */
	struct logq log;
	int64_t warned_at; /* the last accept-EMFILE warning */
	uint64_t n_pauses; /* accept pauses since that warning */
	uint64_t next_id;
	struct ar_proxy_stats stats;
	struct client *clients; /* all live clients */
	size_t n_clients;
	struct origin_pool **pools;
	struct upstream *idle_head, *idle_tail;
	struct pipe_pool *pipes;
	ares_channel ares;
	struct dns_sock *dns_socks;
	/* transparent capture (capture.c, dnsd.c) */
	struct listener capture[AR_PROXY_MAX_CAPTURE];
	size_t n_capture;
	int dns_udp, dns_tcp;
	struct ev_io dns_udp_io, dns_tcp_io;
	struct ar_capture_dgram *dgrams; /* AR_CAPTURE_BATCH, allocated once */
	size_t n_dns_conns;
	struct dns_conn *dns_conns; /* open DNS-over-TCP clients, closed at free */
	struct ar_dns_pool *dns_pool;
	struct ar_dns_stub *dns_stub;
	char *spare[128]; /* idle AR_IOBUF_UNIT buffers */
	size_t n_spare;
	struct ar_buf line; /* scratch for audit and log lines */
	struct budget_use *budgets;
	struct ar_dns_shape *shape; /* learn mode's limits on names, shared with the stub */
	atomic_bool stop;
	bool reload;
};

/* dnsd.c: the DNS stub; capture.c: captured TCP connections (above the driver) */
int dnsd_start(struct ar_proxy *px, ar_error_t *err);
void dnsd_close_all(struct ar_proxy *px); /* before the loop's final ev_collect */
int capture_init(struct ar_proxy *px, const struct ar_proxy_config *cfg, ar_error_t *err);
int capture_start(struct ar_proxy *px, ar_error_t *err);
void capture_free(struct ar_proxy *px);
/* New rules in force (reload, ar_proxy_set_egress): warn about the ports they name
 * that no captured listener serves (those stay uncaptured until a restart). */
void capture_rules_changed(struct ar_proxy *px, const struct ar_rules *rules);

/* conn.c: the connection driver */
/* A client on an accepted socket, registered with the loop (not yet run); NULL when
 * refused (over --max-conns: answered 503 and audited). */
struct client *client_new(struct ar_proxy *px, int fd);
/* Enter `next` and run the steps now (from an accept or event callback only). */
void conn_start(struct client *c, enum cstate next);
/* Close every client (at stop). */
void conn_close_all(struct ar_proxy *px);
#define proxy_now ev_clock_ms

/* tlsio.c: client and upstream I/O, plain or TLS (answers like recv/send) */
ssize_t cio_recv(struct client *c, void *buf, size_t n);
ssize_t cio_send(struct client *c, const void *buf, size_t n);
ssize_t uio_recv(struct upstream *up, void *buf, size_t n);
ssize_t uio_send(struct upstream *up, const void *buf, size_t n);
int uio_idle_check(struct upstream *up);
int tlsio_accept(struct client *c, const char *host, char *why, size_t n);
int tlsio_connect(struct upstream *up, const char *host, char *why, size_t n);
/* 0 done, -1 with errno EAGAIN (wait) or failed (tlsio_error says why) */
int tlsio_handshake(struct ar_proxy *px, struct ar_tlsmod_conn *tc);
const char *tlsio_error(struct ar_proxy *px, struct ar_tlsmod_conn *tc);
const char *tlsio_server_name(struct ar_proxy *px, struct ar_tlsmod_conn *tc);
void tlsio_free(struct ar_proxy *px, struct ar_tlsmod_conn **tc);

/* secret.c: secrets in requests (0, or -1 with c->reason set for the 403) */
bool secret_any(const struct client *c);
void secret_begin(struct client *c, const struct ar_host *h, int port);
int secret_check_connect(struct client *c, const char *head, size_t len);
/* Before the allow-list's verdict: any placeholder the host may not receive. */
int secret_check_head(struct client *c, const char *head, size_t len);
int secret_rewrite_head(struct client *c, struct ar_buf *uo);
int secret_check_body(struct client *c, const char *buf, size_t len);
/* Mask real values in the response head b[start, end); returns the new end. */
uint32_t secret_mask_response(struct client *c, struct iobuf *b, uint32_t start, uint32_t end);
void secret_audit_names(const struct client *c, char *out, size_t size, const char **action);

/* iobuf.c */
#define AR_IOBUF_UNIT 16384
void iobuf_free(struct ar_proxy *px, struct iobuf *b);
void iobuf_take(struct ar_proxy *px, struct iobuf *b);
bool iobuf_reserve(struct ar_proxy *px, struct iobuf *b, uint32_t want, uint32_t max);
void iobuf_compact(struct iobuf *b);

/* forward.c: request heads, decisions, plain HTTP exchange, generated replies */
enum cstate step_head(struct client *c);
enum cstate step_forward(struct client *c);
enum cstate step_reply(struct client *c);
enum cstate step_linger(struct client *c);
enum cstate step_tls_accept(struct client *c);
/* A captured connection to a secret's host:port: terminated (CS_TLSACCEPT). */
enum cstate term_captured(struct client *c);
/* A captured connection that speaks HTTP/1 while the policy has secrets: its requests
 * are read (from c->in first) and forwarded one by one like an explicit proxy's. */
enum cstate captured_requests(struct client *c);
enum cstate timeout_head(struct client *c);
enum cstate timeout_forward(struct client *c);
/* Answer the request ourselves (403, 400, 502, ...) and audit it: returns CS_REPLY. */
enum cstate reply_with(struct client *c, int status, const char *reason, bool allowed);
/* The audit of a connection closing (499 for one decided but never answered). */
void client_audit_close(struct client *c);
void client_audit(struct client *c);
void exchange_free(struct client *c);

/* pool.c: upstream objects and the per-origin idle pool */
void upstream_release(struct client *c, bool reusable);
void upstream_close(struct ar_proxy *px, struct upstream *up);
/* Give c the upstream: its events now run c's driver (through c->io). */
void upstream_attach(struct client *c, struct upstream *up);
/* The event callback of every upstream socket: its client's, or the pool's. */
void upstream_event(void *arg, uint32_t events);
struct upstream *pool_get(struct ar_proxy *px, const char *host, int port, bool tls);
void pool_expire(struct ar_proxy *px, int64_t older_than);
void pool_free_all(struct ar_proxy *px);
/* budget.c: find the request's budget, how much more may go upstream, spend it, and
 * the 413 reason. */
/* The budget attached is used up: the reason is set (the caller answers 413 before
 * opening anything upstream). */
bool budget_spent(struct client *c);
void budget_attach(struct client *c);
uint64_t budget_room(const struct client *c);
void budget_spend(struct client *c, uint64_t n);
void budget_reason(struct client *c);

/* learn.c: learn mode. A decision the rules refused, for a name, becomes a learned
 * allow (true; c->rule is the rule that would have allowed it) unless the name's shape
 * is refused; an address is never learned (d's reason then says so). */
bool learn_decision(struct client *c, const struct ar_host *h, int port, struct ar_decision *d);

/* resolve.c: c-ares, address checks, dialling */
int resolver_init(struct ar_proxy *px, ar_error_t *err);
void resolver_free(struct ar_proxy *px);
void resolver_tick(struct ar_proxy *px);
int resolver_timeout(struct ar_proxy *px, int max_ms);
/* Forget the search (a lookup in flight is cancelled): a new request, or the end. */
void search_reset(struct client *c);
/* A literal address is the only candidate. */
void search_literal(struct client *c, int family, const void *addr);
/* Start a search that ends in `done`: returns CS_UPSTREAM for the caller's step. */
enum cstate search_start(struct client *c, upstream_done_fn *done);
/* A pooled upstream failed before the response: once, the request goes to a fresh
 * upstream (true), else false. */
bool search_retry(struct client *c);
void resolver_cancel(struct client *c);
/* CS_UPSTREAM: find an upstream for the client's host:port: the pool, else resolve ->
 * filter the addresses -> dial, trying the next address on failure. Ends in one call
 * of c->up_done: status 0 with c->up connected, or the HTTP status (403 refused
 * address, 502, 504, ...) and the reason for the client's answer. */
enum cstate step_upstream(struct client *c);
enum cstate step_resolve(struct client *c);
enum cstate step_connect(struct client *c);
enum cstate timeout_upstream(struct client *c);

/* tunnel.c */
int pipes_init(struct ar_proxy *px);
void pipes_free(struct ar_proxy *px);
/* The upstream is connected: CONNECT's 200 queued (`established`), the SNI check
 * armed (`sni`). */
enum cstate tunnel_begin(struct client *c, bool established, bool sni);
void tunnel_init(struct client *c);
enum cstate step_tunnel(struct client *c);
enum cstate timeout_tunnel(struct client *c);
void tunnel_release(struct client *c);

/* The end of a tunnel, as pump/sni_step report it. */
enum tunnel_end {
	TUNNEL_OPEN,	    /* not ended */
	TUNNEL_BROKEN,	    /* a socket error or both sides done */
	TUNNEL_BUDGET,	    /* proxy.max_bytes_out spent: 413 */
	TUNNEL_SNI,	    /* the ClientHello was refused: 421 */
	TUNNEL_SNI_TIMEOUT, /* no whole ClientHello in time: 421 */
	TUNNEL_MORE,	    /* tunnel.c only: a captured HTTP head is still arriving */
	TUNNEL_HTTP,	    /* a captured HTTP head to be parsed: handed to c->sniff */
};

#endif

/* Private to src/proxy: the proxy's objects and the functions its files share.
 *
 * The event core (ev.h) calls back per descriptor and per timer. A client or upstream
 * socket is registered once, edge-triggered, for IN|OUT|RDHUP; a client's state
 * machine (client_run) then retries every operation until it would block, so no
 * epoll_ctl is needed while a connection lives. Objects closed while an event batch
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
typedef void upstream_done_fn(struct client *c, int status, const char *why);

struct upstream {
	struct ev_io io;
	int fd;
	struct ar_proxy *px;
	bool connected;
	struct client *owner;		/* NULL while idle in a pool */
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

enum cstate {
	CS_HEAD,    /* reading a request head */
	CS_RESOLVE, /* waiting for c-ares */
	CS_CONNECT, /* upstream connect in progress */
	CS_FORWARD, /* plain HTTP exchange */
	CS_TUNNEL,  /* CONNECT relay */
	CS_REPLY,   /* sending a response the proxy made */
	CS_LINGER,  /* write side shut, draining input before close */
	CS_SNIFF,   /* captured, to a literal address: reading the SNI or Host it names */
	CS_DEAD,
};

struct client {
	struct ev_io io;
	struct ev_timer timer; /* the nearest deadline; see client_arm */
	uint8_t state;
	bool in_run, again;
	bool keepalive;	    /* the client connection may carry another request */
	bool close_after;   /* close once the current reply is flushed */
	bool first_request; /* no request finished on this connection yet */
	bool head_deadline; /* deadline is the 408 one (else a silent idle close) */
	bool up_ready;	    /* the upstream reported writable/error while connecting */
	bool rule_literal;  /* the matching rule names an IP literal */
	bool resp_started;  /* response bytes reached the client */
	bool tunnel_bufs_freed;
	bool sni_wait;	 /* CONNECT: the ClientHello is read and checked before relaying */
	bool host_is_ip; /* the request names an IP literal */
	bool captured;	 /* transparent capture: no request head, decided by name */
	int fd;
	struct ar_proxy *px;
	struct client *next, *prev;
	int64_t deadline;
	int64_t last_active;
	struct iobuf in;  /* from the client */
	struct iobuf out; /* to the client */
	struct ar_buf uo; /* request head to the upstream */
	size_t uo_off;
	struct upstream *up;
	struct lookup *lookup;
	upstream_done_fn *up_done; /* how upstream_start ends */
	struct cand *cands;
	struct cand pin; /* family 0, or the only address the name may be dialled at */
	uint8_t n_cands, next_cand;
	struct ar_h1_scan scan;

	/* the request in flight */
	uint64_t id;
	int64_t started;
	struct ar_egress *egress;
	const char *rule;
	struct budget_use *budget; /* NULL: no budget for this host */
	uint64_t budget_max;
	bool audited, allowed, is_connect, is_head, host_v6, reused, retried, have_method;
	int status;
	int port;
	char method[24];
	char host[AR_H1_HOST_MAX];
	char reason[AR_HOST_MAX + 160];
	char uo_addr[INET6_ADDRSTRLEN + 8]; /* the address dialled */

	/* plain HTTP framing */
	bool req_done, resp_head_done, resp_done, up_eof, up_reusable;
	uint32_t req_ready;  /* validated body bytes at in.off not yet sent */
	struct ar_h1m req_m; /* the request body's framing */
	struct ar_h1m resp_m;
	struct ar_h1_scan rscan;
	uint32_t rbase;	 /* start of the response head being read, in out */
	uint32_t rready; /* out bytes before this may go to the client */
	uint64_t bytes_out, bytes_in;

	struct tdir dir[2]; /* [0] client->upstream, [1] upstream->client */
};

struct pipe_pool;

/* The decision log (logq.c): never blocks; lines that do not fit are counted. */
struct logq {
	int fd;
	bool is_sock, owned;
	char *buf;
	uint32_t len, cap;
	uint64_t dropped, reported;
};
void logq_open(struct logq *q, int fd);
void logq_line(struct logq *q, const char *s, size_t n);
void logq_flush(struct logq *q);
void logq_drain(struct logq *q, int timeout_ms);
void logq_close(struct logq *q);

struct ar_proxy {
	struct ar_proxy_config cfg;
	struct ev_loop loop;
	int sigfd;
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
	int audit_fd;
	struct logq log;
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
	struct dns_conn *dns_conns;	  /* open DNS-over-TCP clients, closed at free */
	struct ar_buf dns_audit, dns_log; /* dnsd.c: the lines of one UDP batch */
	struct ar_dns_pool *dns_pool;
	struct ar_dns_stub *dns_stub;
	char *spare[128]; /* idle AR_IOBUF_UNIT buffers */
	size_t n_spare;
	struct ar_buf line; /* scratch for audit and log lines */
	struct budget_use *budgets;
	atomic_bool stop;
	bool reload;
};

/* dnsd.c: the DNS stub; capture.c: captured TCP connections */
int dnsd_start(struct ar_proxy *px, ar_error_t *err);
void dnsd_close_all(struct ar_proxy *px); /* before the loop's final ev_collect */
/* Audit and log a record made outside a client (sets at_ms and id, counts it). */
void proxy_record(struct ar_proxy *px, struct ar_audit_rec *r);
int capture_init(struct ar_proxy *px, const struct ar_proxy_config *cfg, ar_error_t *err);
int capture_start(struct ar_proxy *px, ar_error_t *err);
void capture_free(struct ar_proxy *px);
/* New rules in force (reload, ar_proxy_set_egress): warn about the ports they name
 * that no captured listener serves (those stay uncaptured until a restart). */
void capture_rules_changed(struct ar_proxy *px, const struct ar_rules *rules);
/* The first bytes of a captured connection (r: what the ClientHello parser made of
 * them) name the audit's method (TLS, HTTP, TCP); plain HTTP must carry Host == the
 * connection's name. 0, or -1 with c->reason set (421). */
int captured_check(struct client *c, int r);
/* Is a captured connection's plain HTTP request head still arriving (read more
 * before captured_check)? */
bool captured_wants_more(const struct client *c);
/* CS_SNIFF: a captured connection to a literal address, until its SNI or Host. */
bool step_sniff(struct client *c);

/* loop.c: the connection driver */
/* A client on an accepted socket, registered with the loop (not yet run); NULL when
 * refused (over --max-conns: answered 503 and audited). */
struct client *client_new(struct ar_proxy *px, int fd);
void client_run(struct client *c);
void client_close(struct client *c);
/* Move the client's timer to its nearest deadline (only ever earlier: a timer that
 * fires early finds nothing due and re-arms). */
void client_arm(struct client *c);
#define proxy_now ev_clock_ms

/* iobuf.c */
#define AR_IOBUF_UNIT 16384
void iobuf_free(struct ar_proxy *px, struct iobuf *b);
void iobuf_take(struct ar_proxy *px, struct iobuf *b);
bool iobuf_reserve(struct ar_proxy *px, struct iobuf *b, uint32_t want, uint32_t max);
void iobuf_compact(struct iobuf *b);

/* forward.c: request heads, decisions, plain HTTP exchange, generated replies */
bool step_head(struct client *c);
bool step_forward(struct client *c);
bool step_reply(struct client *c);
bool step_linger(struct client *c);
void client_reply(struct client *c, int status, const char *reason, bool allowed);
void client_finish(struct client *c);
void client_audit(struct client *c);
void client_timeout(struct client *c);
void upstream_release(struct client *c, bool reusable);
void upstream_close(struct ar_proxy *px, struct upstream *up);
void pool_idle_event(struct upstream *up);
/* The event callback of every upstream socket: its client's, or the pool's. */
void upstream_event(void *arg, uint32_t events);
struct upstream *pool_get(struct ar_proxy *px, const char *host, int port);
void pool_expire(struct ar_proxy *px, int64_t older_than);
void pool_free_all(struct ar_proxy *px);
/* budget.c: find the request's budget, how much more may go upstream, spend it, and
 * the 413 reason. */
void budget_attach(struct client *c);
uint64_t budget_room(const struct client *c);
void budget_spend(struct client *c, uint64_t n);
void budget_reason(struct client *c);

/* resolve.c: c-ares, address checks, dialling */
int resolver_init(struct ar_proxy *px, ar_error_t *err);
void resolver_free(struct ar_proxy *px);
void resolver_tick(struct ar_proxy *px);
int resolver_timeout(struct ar_proxy *px, int max_ms);
void resolver_cancel(struct client *c);
/* Find an upstream for the client's host:port: the pool, else resolve -> filter the
 * addresses -> dial, trying the next address on failure. Ends in one call of `done`:
 * status 0 with c->up connected, or the HTTP status (403 refused address, 502, ...)
 * and the reason for the client's answer. */
void upstream_start(struct client *c, upstream_done_fn *done);
bool step_connect(struct client *c);
bool upstream_try_next(struct client *c);

/* tunnel.c */
int pipes_init(struct ar_proxy *px);
void pipes_free(struct ar_proxy *px);
bool step_tunnel(struct client *c);
void tunnel_release(struct client *c);
/* The ClientHello did not arrive within the header timeout: 421. */
void tunnel_timeout(struct client *c);

/* The end of a tunnel, as pump/sni_step report it. */
enum tunnel_end {
	TUNNEL_OPEN,	    /* not ended */
	TUNNEL_BROKEN,	    /* a socket error or both sides done */
	TUNNEL_BUDGET,	    /* proxy.max_bytes_out spent: 413 */
	TUNNEL_SNI,	    /* the ClientHello was refused: 421 */
	TUNNEL_SNI_TIMEOUT, /* no whole ClientHello in time: 421 */
};

#endif

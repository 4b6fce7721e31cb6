/* The egress proxy as a library (DESIGN §5): `agentrun proxy` runs it on its own,
 * `agentrun run` can start it in-process or in a forked child with a listening socket
 * created inside the proxy network namespace (listen_fds).
 *
 * One event loop (src/proxy/ev.c), non-blocking sockets; what may leave is one egress
 * object (below), swapped whole on reload; CONNECT tunnels relay with splice(2); plain
 * HTTP is forwarded with keep-alive on both sides; names resolve with c-ares inside
 * the loop and every resolved address is checked before it is dialled. */
#ifndef AGENTRUN_PROXY_H
#define AGENTRUN_PROXY_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentrun/audit.h"
#include "agentrun/error.h"
#include "agentrun/policy.h"
#include "agentrun/rules.h"
#include "agentrun/util.h"

#define AR_PROXY_MAX_LISTEN  8
#define AR_PROXY_MAX_CAPTURE 64 /* transparent TCP listeners (ports) */

struct ar_policy;

/* The egress object: the compiled allow-list, the private ranges name rules may reach,
 * byte budgets, the SNI mode and the timeouts, built once by the caller and handed to
 * the proxy (cfg.egress) or swapped in whole (ar_proxy_set_egress). Immutable and
 * reference-counted; a request keeps the object it was decided with. */
struct ar_egress;

struct ar_egress_settings {
	char *const *allow; /* host rules (as --allow RULE) */
	size_t n_allow;
	const char *origin; /* names the rules in messages: "--allow", "p.json" */
	const struct ar_byte_budget *budgets;
	size_t n_budgets;
	enum ar_sni_mode sni; /* default AR_SNI_CHECK */
	const struct ar_cidr *allow_private;
	size_t n_allow_private;
	int connect_timeout_ms;	  /* 0 = 10000 */
	int header_timeout_ms;	  /* 0 = 10000; also the time a ClientHello may take */
	int idle_timeout_ms;	  /* tunnels, 0 = 120000 */
	int keepalive_timeout_ms; /* idle client connections, 0 = 60000 */
	bool pass_forwarded;	  /* keep a client's Forwarded / X-Forwarded-For */
	/* Learn mode (docs/learn.md): a name outside the list is let through and audited
	 * as learned; addresses, private ranges, SNI mismatches and refused name shapes
	 * are not. */
	bool learn;
};

/* Defaults: no rules, sni check, default timeouts. */
void ar_egress_settings_init(struct ar_egress_settings *s);
/* Compile the rules and copy everything; nothing in *s is kept. */
int ar_egress_new(const struct ar_egress_settings *s, struct ar_egress **out, ar_error_t *err);
/* A policy's allowed_hosts, proxy.max_bytes_out, proxy.sni and proxy.allow_private,
 * joined with extra's rules and private ranges; timeouts and pass_forwarded from
 * extra. */
int ar_egress_from_policy(const struct ar_policy *p, const struct ar_egress_settings *extra,
			  struct ar_egress **out, ar_error_t *err);
struct ar_egress *ar_egress_ref(struct ar_egress *e);
void ar_egress_unref(struct ar_egress *e); /* thread-safe */
void ar_cleanup_egressp(struct ar_egress **e);
#define ar_autoegress __attribute__((cleanup(ar_cleanup_egressp)))

struct ar_proxy_config {
	/* "ADDR:PORT" / "[V6]:PORT" to bind, and/or already bound listening sockets
	 * (ownership passes to the proxy). At least one of the two. */
	const char *listen[AR_PROXY_MAX_LISTEN];
	size_t n_listen;
	int listen_fds[AR_PROXY_MAX_LISTEN];
	size_t n_listen_fds;
	/* Allow-list rules (as --allow RULE) and/or a policy file whose allowed_hosts
	 * join them; the policy is re-read by ar_proxy_reload (SIGHUP). */
	char **allow;
	size_t n_allow;
	const char *policy_path;
	/* Or an in-memory policy (after CLI overrides, as `run` has it): its
	 * allowed_hosts, proxy.max_bytes_out, proxy.sni and proxy.allow_private are
	 * copied at create time (joined with allow and allow_private below). Ignored when
	 * policy_path is set. */
	const struct ar_policy *policy;
	/* Or a ready egress object (the proxy takes its own reference); when set, allow,
	 * policy_path, policy, allow_private and the timeouts below are ignored. */
	struct ar_egress *egress;
	const char *audit_path; /* JSON Lines, O_APPEND; NULL: no audit file */
	int audit_fd;		/* or an open descriptor (-1: none); the proxy owns it */
	int log_fd;		/* decision lines; -1: none (the CLI passes 2) */
	struct ar_cidr *allow_private;
	size_t n_allow_private;
	int max_conns;		  /* client connections; 0 = default 4096 */
	int connect_timeout_ms;	  /* 0 = 10000 */
	int header_timeout_ms;	  /* 0 = 10000 */
	int idle_timeout_ms;	  /* tunnels, 0 = 120000 */
	int keepalive_timeout_ms; /* idle client connections, 0 = 60000 */
	bool dns_files_only;	  /* resolve from /etc/hosts only (tests) */
	bool handle_signals;	  /* SIGTERM/SIGINT stop, SIGHUP reloads (signalfd) */
	int stop_fd; /* readable stops the proxy (a pidfd: the container it serves has exited);
		      * -1: none; ownership passes to the proxy */
	bool pass_forwarded; /* keep a client's Forwarded / X-Forwarded-For */
	bool learn;	     /* learn mode (also a policy's "mode": "learn") */
	/* Transparent capture (docs/network.md): listening sockets made in the proxy netns
	 * with IP_TRANSPARENT (ownership passes to the proxy; -1: none), and the synthetic
	 * range the DNS stub hands out (NULL: AR_DNS_POOL_DEFAULT). */
	int capture_fds[AR_PROXY_MAX_CAPTURE];
	size_t n_capture_fds;
	int dns_udp_fd, dns_tcp_fd;
	const char *dns_pool;
	/* Secrets (docs/secrets.md): the set with its values loaded, and the TLS context
	 * made by ar_proxy_tls_prepare; both borrowed, outliving the proxy. NULL: none (no
	 * substitution; every CONNECT a tunnel). */
	const struct ar_secrets *secrets;
	struct ar_proxy_tls *tls;
	/* The roots and the sandbox CA (PEM), served to `GET /agentrun/ca-bundle.pem` asked
	 * of the proxy itself: how an agent in another pod learns what to trust (agentrun
	 * proxy --secret; docs/secrets.md). Borrowed; NULL: not served. */
	const char *ca_bundle_pem;
	/* Before the loop sleeps it may poll for up to this many µs, adaptively (nothing
	 * while idle or while answers take longer: docs/proxy.md "Busy polling"); a round
	 * trip through a fast upstream then skips two wakeups, which on a virtual machine
	 * cost tens of µs each. 0 = AR_PROXY_BUSY_POLL_US, negative = never. */
	int busy_poll_us;
};
#define AR_PROXY_BUSY_POLL_US	  100
#define AR_PROXY_BUSY_POLL_US_MAX 10000
/* A --busy-poll / --proxy-busy-poll value: 0 (never: *us = -1) to the max; -1 on
 * anything else (the caller names its flag). */
int ar_proxy_busy_poll_arg(const char *v, int *us);

struct ar_proxy_stats {
	uint64_t requests;
	uint64_t allowed; /* allowed and served */
	uint64_t failed;  /* allowed, but answered 413, 502, 503 or 504 by the proxy */
	uint64_t denied;
	uint64_t bytes_out;
	uint64_t bytes_in;
	uint64_t open_conns;
	uint64_t log_dropped;	/* log lines dropped because the log would have blocked */
	uint64_t dns_queries;	/* answered (or dropped) by the DNS stub; never forwarded */
	uint64_t audit_dropped; /* audit lines dropped: the audit FIFO would have blocked */
};

struct ar_proxy;
struct ar_secrets;

/* TLS termination for secrets: loads agentrun-tls.so (beside the binary, or in
 * ../lib/agentrun) and makes the per-sandbox CA and the upstream trust store (the
 * host's bundle, plus the file upstream_ca and the PEM text upstream_ca_pem when not NULL). Called
 * before the proxy loses the view of the host's files; a start without secrets never calls it. */
struct ar_proxy_tls;
int ar_proxy_tls_prepare(const char *upstream_ca, const char *upstream_ca_pem, const char *ca_name,
			 struct ar_proxy_tls **out, ar_error_t *err);
/* The CA certificate in PEM (what the sandbox trusts); its length, or -1. */
int ar_proxy_tls_ca_pem(const struct ar_proxy_tls *t, char *out, size_t size);
void ar_proxy_tls_free(struct ar_proxy_tls *t);
/* The host's CA bundle: the first of the distributions' paths that exists under root
 * ("/" or a rootfs), or NULL. */
const char *ar_proxy_tls_host_bundle(const char *root);

/* Initialise cfg with the defaults (no listeners, no rules). */
void ar_proxy_config_init(struct ar_proxy_config *cfg);
/* Bind, compile the rules, open the audit file, set up the resolver. Nothing is left
 * behind on failure. */
int ar_proxy_create(const struct ar_proxy_config *cfg, struct ar_proxy **out, ar_error_t *err);
/* Serve until ar_proxy_stop (or SIGTERM/SIGINT with handle_signals). */
int ar_proxy_run(struct ar_proxy *px, ar_error_t *err);
/* Ask the loop to stop; async-signal-safe and callable from another thread. */
void ar_proxy_stop(struct ar_proxy *px);
/* Re-read the policy file and swap the allow-list; open tunnels are kept. On error the
 * old rules stay. */
int ar_proxy_reload(struct ar_proxy *px, ar_error_t *err);
/* Put a new egress object in force for new requests, from any thread (the proxy
 * takes a reference; the loop swaps it in at its next wakeup). */
void ar_proxy_set_egress(struct ar_proxy *px, struct ar_egress *e);
void ar_proxy_get_stats(const struct ar_proxy *px, struct ar_proxy_stats *out);
/* The address a listener is bound to ("127.0.0.1:3128"), for messages and tests. */
const char *ar_proxy_listen_name(const struct ar_proxy *px, size_t i);
void ar_proxy_free(struct ar_proxy *px);
void ar_cleanup_proxyp(struct ar_proxy **px);
#define ar_autoproxy __attribute__((cleanup(ar_cleanup_proxyp)))

/* --- pieces exposed for unit tests --- */

/* The server_name of a TLS ClientHello at the start of buf (proxy.sni). A buffer
 * whose first byte is not a handshake record (22) is NOT_TLS; anything else that is
 * not a complete, well-formed ClientHello of at most AR_SNI_HELLO_MAX bytes, in
 * non-empty handshake records, is MORE (not all there yet) or MALFORMED, never
 * skipped. */
#define AR_SNI_HELLO_MAX (64 * 1024)
enum {
	AR_SNI_FOUND = 1,      /* out holds the name as sent */
	AR_SNI_NONE = 0,       /* a complete ClientHello without server_name */
	AR_SNI_MORE = -1,      /* not enough bytes yet */
	AR_SNI_NOT_TLS = -2,   /* not a TLS handshake / not a ClientHello */
	AR_SNI_MALFORMED = -3, /* a ClientHello that does not parse */
};
int ar_proxy_client_hello_sni(const uint8_t *buf, size_t len, char *out, size_t size);
/* The same, with *why (static text) saying what is wrong for NOT_TLS and MALFORMED. */
int ar_proxy_client_hello_parse(const uint8_t *buf, size_t len, char *out, size_t size,
				const char **why);

/* The JSON Lines object with its trailing newline (DESIGN §5). */
void ar_proxy_audit_format(const struct ar_audit_rec *r, struct ar_buf *out);
/* `CONNECT api.github.com:443 ALLOW 200 out=590 in=6911 80ms matches rule *.github.com:443` */
void ar_proxy_log_format(const struct ar_audit_rec *r, struct ar_buf *out);

#endif

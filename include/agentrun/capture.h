/* Transparent capture (DESIGN §7, issue 9): every TCP connection and every DNS query
 * from the sandbox lands on the proxy, without netfilter and without touching the
 * host. In the proxy netns a policy-routing rule `iif <veth> lookup <table>` and a
 * route `local 0.0.0.0/0 dev lo table <table>` make every packet that comes from the
 * sandbox local there; listeners with IP_TRANSPARENT on 0.0.0.0 accept connections
 * to any address (getsockname gives the original destination) and a UDP socket on
 * 0.0.0.0:53 with IP_PKTINFO answers queries from the address they were sent to.
 *
 * Who calls what:
 *  - the topology (src/net, while privileged): ar_capture_setup_proxy_netns,
 *    ar_capture_setup_sandbox_route, ar_capture_listen (then hands the fds to the
 *    proxy, which may drop its privileges: IP_TRANSPARENT is checked at setsockopt);
 *  - the proxy loop: ar_capture_original_dst on each accepted connection,
 *    ar_capture_recv_query / ar_capture_send_reply on the UDP socket, the DNS stub
 *    (dns.h) for the answer.
 *
 * Namespaces: each setup function takes an fd of the target netns (an open
 * /run/netns/NAME or /proc/PID/ns/net; -1 = the caller's own) and does its work on a
 * short-lived thread that setns()es into it: the netlink socket and the listeners are
 * created inside the netns and stay there, while the calling thread never changes
 * namespace (so the caller may be multi-threaded and keeps its host sockets). */
#ifndef AGENTRUN_CAPTURE_H
#define AGENTRUN_CAPTURE_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentrun/dns.h"
#include "agentrun/error.h"
#include "agentrun/rules.h"

/* The routing table the capture uses in the proxy netns (nothing else lives there)
 * and the priority of its rule: after "lookup local" (0), so the proxy's own address
 * stays its own, and before "lookup main" (32766). */
#define AR_CAPTURE_TABLE     100
#define AR_CAPTURE_RULE_PRIO 100
#define AR_CAPTURE_DNS_PORT  53

/* Run fn(arg, err) on a thread inside the netns (netns_fd -1: directly, here).
 * Returns what fn returns; -1 with *err when the thread or setns fails. */
int ar_capture_in_netns(int netns_fd, int (*fn)(void *arg, ar_error_t *err), void *arg,
			ar_error_t *err);

/* In the proxy netns: the rule `iif VETH lookup TABLE` (priority AR_CAPTURE_RULE_PRIO;
 * VETH need not exist yet: the rule matches the name once it does)
 * and the route `local 0.0.0.0/0 dev lo table TABLE` (table 0: AR_CAPTURE_TABLE), and
 * with pool (the synthetic range, e.g. ar_dns_pool_range(); NULL: none) the route
 * `local POOL dev lo table local`, so that the kernel's own RST for an unlisted port
 * (and ICMP port unreachable for UDP other than DNS) can leave from a synthetic
 * address. All exist afterwards; one already there is fine. Errors name the
 * netlink request. */
int ar_capture_setup_proxy_netns(int netns_fd, const char *veth, uint32_t table, const char *pool,
				 ar_error_t *err);
/* The synthetic range (NULL: AR_DNS_POOL_DEFAULT) against the network range in force
 * (base in host order, /prefix; $AGENTRUN_NET_RANGE may move it off the default the
 * policy check knows): -1 with an error naming proxy.dns_pool when they overlap. */
int ar_capture_pool_check(const char *pool, uint32_t base, int prefix, ar_error_t *err);
/* In the sandbox netns: `default via GW` (the proxy's end of the veth, on-link). */
int ar_capture_setup_sandbox_route(int netns_fd, struct in_addr gw, ar_error_t *err);
/* The same through a route socket already open inside that netns. */
struct nl_sock;
int ar_capture_add_sandbox_route(struct nl_sock *sk, struct in_addr gw, ar_error_t *err);
/* Is the capture in place in the proxy netns (rule and route), for `check --name`?
 * 1 yes, 0 no (*what says which piece is missing), -1 on error. */
int ar_capture_verify_proxy_netns(int netns_fd, const char *veth, uint32_t table, const char **what,
				  ar_error_t *err);

/* The listening sockets of the capture, created in the proxy netns (all
 * non-blocking, close-on-exec, IP_TRANSPARENT set). */
struct ar_capture_listeners {
	int *tcp;	 /* one per port, listening on 0.0.0.0:port */
	uint16_t *ports; /* the port of each */
	size_t n_tcp;
	int dns_udp; /* 0.0.0.0:53, IP_PKTINFO */
	int dns_tcp; /* 0.0.0.0:53 */
};
/* The ports to capture: 80, 443 and every port an allow-list rule names (see
 * ar_dns_rule_ports); a connection to any other port is refused by the kernel (RST),
 * as no rule could allow it. *out is malloc'ed. */
void ar_capture_ports(const struct ar_rules *rules, uint16_t **out, size_t *n);
/* Open the listeners in netns_fd (-1: here). Needs CAP_NET_ADMIN there (for
 * IP_TRANSPARENT). Port 53 in ports is skipped: TCP 53 is the DNS stub's. On failure
 * nothing is left open. */
int ar_capture_listen(int netns_fd, const uint16_t *ports, size_t n,
		      struct ar_capture_listeners *out, ar_error_t *err);
/* Close every fd still open (set -1) and free the arrays; safe twice. */
void ar_capture_listeners_close(struct ar_capture_listeners *l);
void ar_cleanup_capture_listenersp(struct ar_capture_listeners *l);
#define ar_autocapture __attribute__((cleanup(ar_cleanup_capture_listenersp)))

/* The destination the client dialled, of a connection accepted on a capture
 * listener (getsockname on the accepted socket). */
int ar_capture_original_dst(int fd, struct sockaddr_in *dst, ar_error_t *err);

/* One datagram on the DNS socket: who sent it and the address it was sent to. */
struct ar_capture_peer {
	struct sockaddr_in from;
	struct in_addr to; /* the header's destination: the reply's source */
	int ifindex;
};
/* Receive one query (MSG_TRUNC: a datagram over cap is reported by its real length,
 * the caller drops it). Returns the length, or -1 with errno (EAGAIN when none). */
ssize_t ar_capture_recv_query(int fd, uint8_t *buf, size_t cap, struct ar_capture_peer *peer);
/* Send the reply to peer->from from the address peer->to. 0, or -1 with errno. */
int ar_capture_send_reply(int fd, const uint8_t *buf, size_t len,
			  const struct ar_capture_peer *peer);

/* The same in batches, one system call each way (recvmmsg/sendmmsg), for a loop under
 * load: allocate AR_CAPTURE_BATCH of these once. */
#define AR_CAPTURE_BATCH     32
#define AR_CAPTURE_DGRAM_MAX 2048 /* a larger UDP query is dropped */
struct ar_capture_dgram {
	struct ar_capture_peer peer;
	size_t len;	  /* the query's length; 0: drop it (truncated or unanswerable) */
	size_t reply_len; /* set by the caller; 0: no reply */
	uint8_t query[AR_CAPTURE_DGRAM_MAX];
	uint8_t reply[AR_DNS_MAX_REPLY];
};
/* Receive up to n (<= AR_CAPTURE_BATCH) queries; sets reply_len = 0 in each. Returns
 * how many arrived, or -1 with errno (EAGAIN when none). */
int ar_capture_recv_queries(int fd, struct ar_capture_dgram *v, size_t n);
/* Send the reply of each of v[0..n) with reply_len > 0, from its peer.to. Returns
 * how many left, or -1 with errno when none could. */
int ar_capture_send_replies(int fd, const struct ar_capture_dgram *v, size_t n);

#endif

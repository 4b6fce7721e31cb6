/* The DNS stub of transparent capture (DESIGN §7, issue 9): pure functions over
 * buffers, no I/O. A query from the sandbox is parsed, decided by name against the
 * allow-list and answered here; nothing is ever forwarded. An allowed name gets a
 * synthetic address from a per-sandbox pool that the proxy maps back to the name
 * when a connection to it arrives; everything else gets NXDOMAIN, REFUSED or FORMERR
 * and an event for the audit. The I/O (sockets, IP_PKTINFO) is in capture.h. */
#ifndef AGENTRUN_DNS_H
#define AGENTRUN_DNS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentrun/error.h"
#include "agentrun/rules.h"

/* Answers are small (one A record at most), so every reply fits the 512 bytes any
 * client accepts over UDP, EDNS or not. */
#define AR_DNS_MAX_REPLY 512
/* The largest query accepted (over TCP a client may send up to 65535). */
#define AR_DNS_MAX_QUERY 4096
/* A name in presentation form, with \DDD escapes for bytes that are not printable. */
#define AR_DNS_NAME_MAX (255 * 4 + 1)
#define AR_DNS_TTL	60

enum ar_dns_rcode {
	AR_DNS_NOERROR = 0,
	AR_DNS_FORMERR = 1,
	AR_DNS_SERVFAIL = 2,
	AR_DNS_NXDOMAIN = 3,
	AR_DNS_NOTIMP = 4,
	AR_DNS_REFUSED = 5,
};

enum ar_dns_type {
	AR_DNS_T_A = 1,
	AR_DNS_T_NS = 2,
	AR_DNS_T_CNAME = 5,
	AR_DNS_T_SOA = 6,
	AR_DNS_T_PTR = 12,
	AR_DNS_T_MX = 15,
	AR_DNS_T_TXT = 16,
	AR_DNS_T_AAAA = 28,
	AR_DNS_T_SRV = 33,
	AR_DNS_T_OPT = 41,
	AR_DNS_T_HTTPS = 65,
	AR_DNS_T_ANY = 255,
};
#define AR_DNS_CLASS_IN 1

/* What ar_dns_parse_query found. */
enum ar_dns_parse {
	AR_DNS_PARSE_OK = 0,
	AR_DNS_PARSE_DROP = -1,	   /* too short for a header, or a response: never answered */
	AR_DNS_PARSE_FORMERR = -2, /* header readable, the rest is not a well-formed query */
	AR_DNS_PARSE_NOTIMP = -3,  /* an opcode other than QUERY */
};

/* One parsed query. The question is kept as it came on the wire (the reply echoes it
 * byte for byte: clients check the case they randomised, 0x20 encoding). */
struct ar_dns_query {
	uint16_t id;
	uint16_t flags; /* as received */
	uint16_t qtype;
	uint16_t qclass;
	bool has_question; /* false when the question itself was malformed */
	bool edns;	   /* an OPT record came with the query: the reply carries one */
	bool host_name;	   /* every label is LDH/underscore: name is usable for the rules */
	uint8_t qname_wire[255];
	size_t qname_wire_len;
	char name[AR_DNS_NAME_MAX]; /* presentation form, lowercased, no trailing dot */
	const char *why;	    /* for FORMERR/NOTIMP: what was wrong (static text) */
};

/* Parse a query. Bounds-checked everywhere; a compression pointer in the question is
 * FORMERR (a query has nothing before its name to point at), so are label types other
 * than plain labels, names over 255 bytes, more than one question, answer or authority
 * records, anything but one OPT record in the additional section, and trailing bytes.
 * On FORMERR/NOTIMP the id and flags are still set, so the reply can be built. */
enum ar_dns_parse ar_dns_parse_query(const uint8_t *buf, size_t len, struct ar_dns_query *q);

/* An answer to build: rcode plus at most one record (A or PTR). */
struct ar_dns_answer {
	enum ar_dns_rcode rcode;
	uint16_t type;	      /* 0: no answer record */
	struct in_addr a;     /* for AR_DNS_T_A */
	const char *ptr_name; /* for AR_DNS_T_PTR: a host name in presentation form */
	uint32_t ttl;
};

/* Build the reply to q into out (cap bytes, AR_DNS_MAX_REPLY is always enough).
 * Returns the length, or 0 when it does not fit or ptr_name is not a valid name. */
size_t ar_dns_build_reply(const struct ar_dns_query *q, const struct ar_dns_answer *a, uint8_t *out,
			  size_t cap);

/* A query (RD set, class IN) for a name in presentation form ("" is the root), as a
 * client sends it: for probes (check) and load tools. 0 when the name is not made of
 * 1-63 byte labels within 253 characters or cap is too small. */
size_t ar_dns_build_query(uint16_t id, const char *name, uint16_t qtype, uint8_t *out, size_t cap);

/* DNS over TCP (RFC 1035 4.2.2): each message is preceded by its length in two bytes.
 * Scan a receive buffer: 1 when a whole message is there (*msg at buf + 2, *msg_len;
 * consume 2 + *msg_len), 0 when more bytes are needed, -1 when the length is 0 or over
 * max (close the connection). */
int ar_dns_tcp_frame(const uint8_t *buf, size_t len, size_t max, const uint8_t **msg,
		     size_t *msg_len);
/* Write the two-byte prefix for a message of len bytes (len <= 65535). */
void ar_dns_tcp_prefix(size_t len, uint8_t out[2]);

/* "A", "AAAA", "TXT", ... or "TYPE<n>" into buf (>= 12 bytes). */
const char *ar_dns_type_name(uint16_t qtype, char *buf, size_t size);
const char *ar_dns_rcode_name(int rcode);

/* --- the synthetic address pool: allowed names <-> addresses, per sandbox --- */

struct ar_dns_pool;

#define AR_DNS_POOL_DEFAULT   "198.18.0.0/15"
#define AR_DNS_POOL_MAX_NAMES 65536

/* A pool over an IPv4 range (NULL: AR_DNS_POOL_DEFAULT) holding at most max_names
 * names (0: AR_DNS_POOL_MAX_NAMES; never more than the range minus its first and last
 * address). Errors name the range. */
int ar_dns_pool_create(const char *cidr, size_t max_names, struct ar_dns_pool **out,
		       ar_error_t *err);
/* The address of a canonical name (lowercase, no trailing dot), handing out the next
 * free one on first use: the same name always gets the same address for the pool's
 * life. -1 when the pool is full or the name is empty or too long. */
int ar_dns_pool_get(struct ar_dns_pool *p, const char *name, struct in_addr *out);
/* The name an address was handed out for, or NULL (connect time, PTR answers). */
const char *ar_dns_pool_name(const struct ar_dns_pool *p, struct in_addr addr);
/* Is the address inside the pool's range (handed out or not)? */
bool ar_dns_pool_contains(const struct ar_dns_pool *p, struct in_addr addr);
size_t ar_dns_pool_size(const struct ar_dns_pool *p);
/* The range as "198.18.0.0/15". */
const char *ar_dns_pool_range(const struct ar_dns_pool *p);
void ar_dns_pool_free(struct ar_dns_pool *p);
void ar_cleanup_dns_poolp(struct ar_dns_pool **p);
#define ar_autodnspool __attribute__((cleanup(ar_cleanup_dns_poolp)))

/* What a captured connection to dst:port stands for (the proxy's first step on a
 * connection accepted by a capture listener, with dst from ar_capture_original_dst). */
enum ar_dns_target_kind {
	AR_DNS_TARGET_NAME,    /* a synthetic address handed out: name, decided on name:port */
	AR_DNS_TARGET_UNKNOWN, /* in the pool, never handed out: refused */
	AR_DNS_TARGET_LITERAL, /* any other address: decide by the SNI or Host it carries */
};
struct ar_dns_target {
	enum ar_dns_target_kind kind;
	const char *name;	     /* AR_DNS_TARGET_NAME: owned by the pool */
	struct ar_decision decision; /* NAME: the rules on name:port; UNKNOWN: denied; LITERAL:
				      * denied until the proxy decides on the SNI/Host */
};
void ar_dns_target(const struct ar_dns_pool *p, const struct ar_rules *rules, struct in_addr dst,
		   int port, struct ar_dns_target *out);
/* Does a name a client sent (SNI, Host without its port) equal the name behind the
 * synthetic address? Case and one trailing dot do not matter; anything else does. */
bool ar_dns_same_name(const char *sent, const char *name);

/* --- learn mode: the shapes of a name never learned (src/dns/shape.c) --- */

#define AR_DNS_LEARN_LABEL_MAX	 40    /* a longer label is refused */
#define AR_DNS_LEARN_FLOOD	 16    /* random-looking names per parent */
#define AR_DNS_LEARN_MAX_PARENTS 4096  /* parents counted */
#define AR_DNS_LEARN_MAX_NAMES	 65536 /* distinct names learned */

struct ar_dns_shape;
struct ar_dns_shape *ar_dns_shape_new(void);
void ar_dns_shape_free(struct ar_dns_shape *s);
/* May learn mode let a canonical name through (0), or is its shape refused (-1, *why
 * says which limit)? A name let through is remembered: asking again costs nothing and
 * counts once. */
int ar_dns_shape_check(struct ar_dns_shape *s, const char *name, char *why, size_t size);
/* Shannon entropy of a label, in bits per character; "random-looking": at least 12
 * characters and at least 3 bits per character. */
double ar_dns_label_entropy(const char *label, size_t len);
bool ar_dns_label_random(const char *label, size_t len);

/* --- the stub: decide and answer --- */

/* Every port the rules can allow, sorted and unique: 80 and 443 (a rule without a
 * port covers those) and each port a rule names. *out is malloc'ed. These are the
 * ports transparent capture listens on, and a name is answerable when a rule covers it
 * on any of them. */
void ar_dns_rule_ports(const struct ar_rules *rules, uint16_t **out, size_t *n);

/* What happened to one query, for the audit (ar_dns_event_audit) and the log. */
struct ar_dns_event {
	char name[AR_DNS_NAME_MAX]; /* "" when the question was unreadable */
	uint16_t qtype;
	int rcode;    /* the rcode answered; -1 when the query was dropped */
	bool allowed; /* an allowed name (answered NOERROR, with or without an address) */
	char addr[INET_ADDRSTRLEN]; /* the synthetic address handed out, or "" */
	const char *rule;	    /* the rule that covers the name, or NULL */
	bool learned;		    /* learn mode answered a name no rule covers */
	char reason[AR_HOST_MAX + 96];
};

struct ar_dns_stub;

/* rules and pool are borrowed and must outlive the stub; the rules may be swapped
 * with ar_dns_stub_set_rules (policy reload) while addresses already handed out stay. */
struct ar_dns_stub *ar_dns_stub_new(const struct ar_rules *rules, struct ar_dns_pool *pool);
void ar_dns_stub_set_rules(struct ar_dns_stub *s, const struct ar_rules *rules);
/* Learn mode (shape non-NULL, borrowed): a well-formed name no rule covers is answered
 * like an allowed one, audited as learned, unless its shape is refused. NULL: enforce. */
void ar_dns_stub_set_learn(struct ar_dns_stub *s, struct ar_dns_shape *shape);
void ar_dns_stub_free(struct ar_dns_stub *s);

/* Answer one query (a UDP datagram, or one TCP message without its prefix): the reply
 * goes to out (cap >= AR_DNS_MAX_REPLY) and its length is returned; 0 means drop (not
 * a query: too short or a response). ev is always filled. */
size_t ar_dns_stub_answer(struct ar_dns_stub *s, const uint8_t *query, size_t len, uint8_t *out,
			  size_t cap, struct ar_dns_event *ev);

/* The audit record of an event (method "DNS", host = the name, port 53, addr = the
 * synthetic address, status = the DNS rcode, reason starting with the query type).
 * The record points into ev, which must outlive it. */
struct ar_audit_rec;
void ar_dns_event_audit(const struct ar_dns_event *ev, struct ar_audit_rec *rec);

#endif

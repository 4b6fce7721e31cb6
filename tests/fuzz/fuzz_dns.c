/* Target "dns": the DNS stub of transparent capture (src/dns). The sandbox writes
 * these bytes, as one UDP datagram and as a TCP stream of length-prefixed messages.
 * Invariants: a reply is never longer than AR_DNS_MAX_REPLY, carries the query's id
 * and the rcode the event reports, is itself a response (the stub would drop it: two
 * stubs never ping-pong); a query that parses gets its question echoed byte for byte;
 * an address is handed out only with NOERROR to an allowed name and maps back to that
 * name (a connection to it stands for that name); asking twice gives the same reply;
 * names and reasons are one printable line. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/dns.h"
#include "agentrun/util.h"
#include "fuzz.h"

static struct ar_dns_stub *stub(struct ar_dns_pool **pool_out)
{
	static struct ar_rules *rules;
	static struct ar_dns_pool *pool;
	static struct ar_dns_stub *s;
	if (s == NULL) {
		char *text[] = {"allowed.example.test", "*.wild.test", "api.example.test:6443",
				"*.example.org", "10.1.2.3"};
		ar_error_t err = NULL;
		if (ar_rules_compile(text, AR_ARRAY_SIZE(text), "fuzz", &rules, &err) == -1 ||
		    ar_dns_pool_create("198.18.0.0/15", 4096, &pool, &err) == -1)
			abort();
		s = ar_dns_stub_new(rules, pool);
	}
	*pool_out = pool;
	return s;
}

static void check_reply(const uint8_t *q, size_t qlen, const uint8_t *r, size_t n,
			const struct ar_dns_event *ev, struct ar_dns_pool *pool)
{
	struct ar_dns_query parsed, reply;
	AR_FUZZ_CHECK(ar_fuzz_is_one_line(ev->reason), "reason: %s", ev->reason);
	AR_FUZZ_CHECK(ar_fuzz_is_one_line(ev->name), "name: %s", ev->name);
	if (n == 0) {
		AR_FUZZ_CHECK(ev->rcode == -1, "no reply but rcode %d", ev->rcode);
		return;
	}
	AR_FUZZ_CHECK(n >= 12 && n <= AR_DNS_MAX_REPLY, "reply of %zu bytes", n);
	AR_FUZZ_CHECK(qlen >= 12 && memcmp(r, q, 2) == 0, "reply id differs");
	AR_FUZZ_CHECK((r[2] & 0x80) != 0, "reply without QR");
	AR_FUZZ_CHECK((r[3] & 0x0f) == ev->rcode, "rcode %d vs event %d", r[3] & 0x0f, ev->rcode);
	AR_FUZZ_CHECK(ar_dns_parse_query(r, n, &reply) == AR_DNS_PARSE_DROP,
		      "a reply that parses as a query");
	if (ar_dns_parse_query(q, qlen, &parsed) == AR_DNS_PARSE_OK)
		AR_FUZZ_CHECK(n >= 12 + parsed.qname_wire_len + 4 &&
				  memcmp(r + 12, parsed.qname_wire, parsed.qname_wire_len) == 0,
			      "question not echoed");
	if (ev->addr[0] != '\0') {
		struct in_addr a;
		AR_FUZZ_CHECK(ev->allowed && ev->rcode == 0, "address %s handed out with rcode %d",
			      ev->addr, ev->rcode);
		AR_FUZZ_CHECK(inet_pton(AF_INET, ev->addr, &a) == 1, "address %s", ev->addr);
		const char *name = ar_dns_pool_name(pool, a);
		AR_FUZZ_CHECK(name != NULL, "address %s not in the pool", ev->addr);
		if (parsed.qtype == AR_DNS_T_A) {
			AR_FUZZ_CHECK(strcmp(name, ev->name) == 0, "address %s is %s, asked %s",
				      ev->addr, name, ev->name);
			/* a connection to it stands for that name */
			struct ar_dns_target t;
			ar_dns_target(pool, NULL, a, 443, &t);
			AR_FUZZ_CHECK(t.kind == AR_DNS_TARGET_NAME &&
					  ar_dns_same_name(ev->name, t.name),
				      "target of %s: kind %d", ev->addr, t.kind);
		}
	}
}

static void answer(const uint8_t *data, size_t size)
{
	struct ar_dns_pool *pool;
	struct ar_dns_stub *s = stub(&pool);
	struct ar_dns_event ev, ev2;
	uint8_t r[AR_DNS_MAX_REPLY], r2[AR_DNS_MAX_REPLY];
	/* exact-size copy so a read past the end is caught */
	ar_autofree uint8_t *q = (uint8_t *)ar_fuzz_dup(data, size);
	size_t n = ar_dns_stub_answer(s, q, size, r, sizeof(r), &ev);
	check_reply(q, size, r, n, &ev, pool);
	size_t n2 = ar_dns_stub_answer(s, q, size, r2, sizeof(r2), &ev2);
	AR_FUZZ_CHECK(n2 == n && memcmp(r, r2, n) == 0, "a second answer differs");
}

void ar_fuzz_dns(const uint8_t *data, size_t size)
{
	answer(data, size);
	/* the same bytes as a TCP stream: each framed message is a query */
	size_t off = 0;
	for (int i = 0; i < 64; i++) {
		const uint8_t *msg;
		size_t len;
		ar_autofree uint8_t *buf = (uint8_t *)ar_fuzz_dup(data + off, size - off);
		int f = ar_dns_tcp_frame(buf, size - off, AR_DNS_MAX_QUERY, &msg, &len);
		if (f != 1)
			break;
		AR_FUZZ_CHECK(msg == buf + 2 && 2 + len <= size - off, "frame outside the buffer");
		answer(msg, len);
		off += 2 + len;
	}
}

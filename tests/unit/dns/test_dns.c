/* Unit tests for the DNS stub (src/dns): the query parser, the reply builder, TCP
 * framing, the synthetic address pool and the stub's decision. */
#include <arpa/inet.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/dns.h"
#include "agentrun/error.h"
#include "agentrun/proxy.h"
#include "agentrun/rules.h"
#include "agentrun/util.h"

/* A query as a client sends it: header, one question, optionally an OPT record. */
static size_t make_query(uint8_t *b, uint16_t id, const char *name, uint16_t qtype, uint16_t qclass,
			 bool edns)
{
	size_t o = 12;
	memset(b, 0, 12);
	b[0] = (uint8_t)(id >> 8), b[1] = (uint8_t)id;
	b[2] = 0x01; /* RD */
	b[5] = 1;
	b[11] = edns ? 1 : 0;
	for (const char *p = name; *p != '\0';) {
		const char *dot = strchr(p, '.');
		size_t n = dot != NULL ? (size_t)(dot - p) : strlen(p);
		b[o++] = (uint8_t)n;
		memcpy(b + o, p, n);
		o += n;
		p += n + (dot != NULL);
	}
	b[o++] = 0;
	b[o++] = (uint8_t)(qtype >> 8), b[o++] = (uint8_t)qtype;
	b[o++] = (uint8_t)(qclass >> 8), b[o++] = (uint8_t)qclass;
	if (edns) {
		static const uint8_t opt[] = {0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0};
		memcpy(b + o, opt, sizeof(opt));
		o += sizeof(opt);
	}
	return o;
}

static unsigned rcode_of(const uint8_t *r)
{
	return r[3] & 0x0f;
}
static unsigned ancount_of(const uint8_t *r)
{
	return (unsigned)(r[6] << 8 | r[7]);
}

static void test_parse_ok(void **state)
{
	uint8_t b[512];
	struct ar_dns_query q;
	size_t n = make_query(b, 0x1234, "AlLoWeD.Example.TEST", AR_DNS_T_A, 1, false);
	assert_int_equal(ar_dns_parse_query(b, n, &q), AR_DNS_PARSE_OK);
	assert_int_equal(q.id, 0x1234);
	assert_int_equal(q.qtype, AR_DNS_T_A);
	assert_int_equal(q.qclass, 1);
	assert_true(q.has_question);
	assert_true(q.host_name);
	assert_false(q.edns);
	assert_string_equal(q.name, "allowed.example.test");
	/* the wire name keeps the client's case (0x20 encoding) */
	assert_memory_equal(q.qname_wire,
			    "\x07"
			    "AlLoWeD",
			    8);

	n = make_query(b, 1, "x.test", AR_DNS_T_AAAA, 1, true);
	assert_int_equal(ar_dns_parse_query(b, n, &q), AR_DNS_PARSE_OK);
	assert_true(q.edns);
	assert_int_equal(q.qtype, AR_DNS_T_AAAA);
}

static void test_parse_drop_and_notimp(void **state)
{
	uint8_t b[512];
	struct ar_dns_query q;
	size_t n = make_query(b, 7, "a.test", AR_DNS_T_A, 1, false);
	assert_int_equal(ar_dns_parse_query(b, 11, &q), AR_DNS_PARSE_DROP);
	assert_int_equal(ar_dns_parse_query(NULL, 0, &q), AR_DNS_PARSE_DROP);
	b[2] |= 0x80; /* a response */
	assert_int_equal(ar_dns_parse_query(b, n, &q), AR_DNS_PARSE_DROP);
	b[2] = 0x01 | (4 << 3); /* opcode NOTIFY */
	assert_int_equal(ar_dns_parse_query(b, n, &q), AR_DNS_PARSE_NOTIMP);
	assert_int_equal(q.id, 7);
}

static void test_parse_formerr(void **state)
{
	uint8_t b[600];
	struct ar_dns_query q;
	size_t n = make_query(b, 9, "a.test", AR_DNS_T_A, 1, false);

	uint8_t c[600];
	memcpy(c, b, n);
	c[5] = 2; /* two questions */
	assert_int_equal(ar_dns_parse_query(c, n, &q), AR_DNS_PARSE_FORMERR);
	assert_int_equal(q.id, 9);
	memcpy(c, b, n);
	c[5] = 0;
	assert_int_equal(ar_dns_parse_query(c, n, &q), AR_DNS_PARSE_FORMERR);
	memcpy(c, b, n);
	c[7] = 1; /* an answer record in a query */
	assert_int_equal(ar_dns_parse_query(c, n, &q), AR_DNS_PARSE_FORMERR);
	memcpy(c, b, n);
	c[11] = 2;
	assert_int_equal(ar_dns_parse_query(c, n, &q), AR_DNS_PARSE_FORMERR);
	/* a compression pointer (to the header, or to itself) */
	memcpy(c, b, n);
	c[12] = 0xc0, c[13] = 12;
	assert_int_equal(ar_dns_parse_query(c, n, &q), AR_DNS_PARSE_FORMERR);
	assert_string_equal(q.why, "compression pointer in the question");
	assert_false(q.has_question);
	memcpy(c, b, n);
	c[12] = 0x41; /* extended label type */
	assert_int_equal(ar_dns_parse_query(c, n, &q), AR_DNS_PARSE_FORMERR);
	/* truncated at every length inside the question */
	for (size_t k = 12; k < n; k++)
		assert_int_equal(ar_dns_parse_query(b, k, &q), AR_DNS_PARSE_FORMERR);
	/* trailing bytes */
	memcpy(c, b, n);
	c[n] = 0;
	assert_int_equal(ar_dns_parse_query(c, n + 1, &q), AR_DNS_PARSE_FORMERR);
	/* an additional record that is not OPT, and a truncated OPT */
	n = make_query(c, 9, "a.test", AR_DNS_T_A, 1, true);
	c[n - 9] = 1; /* type 0x0101 */
	assert_int_equal(ar_dns_parse_query(c, n, &q), AR_DNS_PARSE_FORMERR);
	n = make_query(c, 9, "a.test", AR_DNS_T_A, 1, true);
	c[n - 1] = 4; /* rdlen 4, no data */
	assert_int_equal(ar_dns_parse_query(c, n, &q), AR_DNS_PARSE_FORMERR);
	assert_string_equal(q.why, "truncated OPT record");
}

static void test_parse_long_and_odd_names(void **state)
{
	uint8_t b[600];
	struct ar_dns_query q;
	char name[400] = "";
	/* 4 labels of 63 = 256 wire bytes with the lengths and the root: too long */
	for (int i = 0; i < 4; i++) {
		memset(name + 64 * i, 'a', 63);
		name[64 * i + 63] = i < 3 ? '.' : '\0';
	}
	size_t n = make_query(b, 1, name, AR_DNS_T_A, 1, false);
	assert_int_equal(ar_dns_parse_query(b, n, &q), AR_DNS_PARSE_FORMERR);
	assert_string_equal(q.why, "name longer than 255 bytes");
	/* 3 x 63 + 61: exactly 255 */
	name[3 * 64 + 61] = '\0';
	n = make_query(b, 1, name, AR_DNS_T_A, 1, false);
	assert_int_equal(ar_dns_parse_query(b, n, &q), AR_DNS_PARSE_OK);
	assert_int_equal(q.qname_wire_len, 255);

	/* bytes a host name cannot hold are escaped and make it "not a host name" */
	n = make_query(b, 1, "a.x.test", AR_DNS_T_A, 1, false);
	b[13] = '\n';
	assert_int_equal(ar_dns_parse_query(b, n, &q), AR_DNS_PARSE_OK);
	assert_false(q.host_name);
	assert_string_equal(q.name, "\\010.x.test");
	b[13] = '.';
	assert_int_equal(ar_dns_parse_query(b, n, &q), AR_DNS_PARSE_OK);
	assert_string_equal(q.name, "\\..x.test");
	assert_false(q.host_name);
	/* the root name */
	n = make_query(b, 1, "", AR_DNS_T_NS, 1, false);
	assert_int_equal(ar_dns_parse_query(b, n, &q), AR_DNS_PARSE_OK);
	assert_string_equal(q.name, "");
	assert_false(q.host_name);
}

static void test_build_reply(void **state)
{
	uint8_t b[512], r[AR_DNS_MAX_REPLY];
	struct ar_dns_query q;
	size_t n = make_query(b, 0xbeef, "A.Test", AR_DNS_T_A, 1, true);
	assert_int_equal(ar_dns_parse_query(b, n, &q), AR_DNS_PARSE_OK);
	struct ar_dns_answer a = {.rcode = AR_DNS_NOERROR, .type = AR_DNS_T_A, .ttl = 60};
	inet_pton(AF_INET, "198.18.0.1", &a.a);
	size_t m = ar_dns_build_reply(&q, &a, r, sizeof(r));
	size_t qlen = n - 11; /* the query without its OPT */
	assert_int_equal(m, qlen + 16 + 11);
	assert_int_equal(r[0], 0xbe);
	assert_int_equal(r[1], 0xef);
	assert_int_equal(r[2], 0x85); /* QR AA RD */
	assert_int_equal(r[3], 0x80); /* RA, NOERROR */
	assert_int_equal(ancount_of(r), 1);
	assert_int_equal(r[11], 1); /* OPT echoed */
	assert_memory_equal(r + 12, b + 12, qlen - 12);
	const uint8_t *rr = r + qlen;
	assert_int_equal(rr[0], 0xc0);
	assert_int_equal(rr[1], 12);
	assert_int_equal(rr[3], AR_DNS_T_A);
	assert_int_equal(rr[9], 60);
	assert_int_equal(rr[11], 4);
	assert_memory_equal(rr + 12, "\xc6\x12\x00\x01", 4);
	/* too small a buffer */
	assert_int_equal(ar_dns_build_reply(&q, &a, r, m - 1), 0);

	/* PTR */
	n = make_query(b, 1, "1.0.18.198.in-addr.arpa", AR_DNS_T_PTR, 1, false);
	assert_int_equal(ar_dns_parse_query(b, n, &q), AR_DNS_PARSE_OK);
	a = (struct ar_dns_answer){.type = AR_DNS_T_PTR, .ptr_name = "a.test", .ttl = 1};
	m = ar_dns_build_reply(&q, &a, r, sizeof(r));
	assert_int_equal(m, n + 12 + 8);
	assert_memory_equal(r + n + 12,
			    "\x01"
			    "a\x04test\x00",
			    8);
	a.ptr_name = "bad..name";
	assert_int_equal(ar_dns_build_reply(&q, &a, r, sizeof(r)), 0);

	/* FORMERR without a question: a bare header */
	b[12] = 0xc0;
	assert_int_equal(ar_dns_parse_query(b, n, &q), AR_DNS_PARSE_FORMERR);
	a = (struct ar_dns_answer){.rcode = AR_DNS_FORMERR};
	assert_int_equal(ar_dns_build_reply(&q, &a, r, sizeof(r)), 12);
	assert_int_equal(rcode_of(r), AR_DNS_FORMERR);
	assert_int_equal(r[5], 0);
}

static void test_build_query(void **state)
{
	uint8_t b[512];
	struct ar_dns_query q;
	size_t n = ar_dns_build_query(0x0102, "Api.Example.test", AR_DNS_T_AAAA, b, sizeof(b));
	uint8_t want[512];
	assert_int_equal(n, make_query(want, 0x0102, "Api.Example.test", AR_DNS_T_AAAA, 1, false));
	assert_memory_equal(b, want, n);
	assert_int_equal(ar_dns_parse_query(b, n, &q), AR_DNS_PARSE_OK);
	assert_string_equal(q.name, "api.example.test");
	assert_int_equal(ar_dns_build_query(1, "", AR_DNS_T_NS, b, sizeof(b)), 17);
	assert_int_equal(ar_dns_build_query(1, "a..b", AR_DNS_T_A, b, sizeof(b)), 0);
	assert_int_equal(ar_dns_build_query(1, "a.b.", AR_DNS_T_A, b, sizeof(b)), 0);
	assert_int_equal(ar_dns_build_query(1, "a.test", AR_DNS_T_A, b, 16), 0);
}

static void test_tcp_framing(void **state)
{
	const uint8_t *msg = NULL;
	size_t len = 0;
	uint8_t buf[8] = {0, 3, 'a', 'b', 'c', 0, 0, 0};
	assert_int_equal(ar_dns_tcp_frame(buf, 0, 512, &msg, &len), 0);
	assert_int_equal(ar_dns_tcp_frame(buf, 1, 512, &msg, &len), 0);
	assert_int_equal(ar_dns_tcp_frame(buf, 4, 512, &msg, &len), 0);
	assert_int_equal(ar_dns_tcp_frame(buf, 5, 512, &msg, &len), 1);
	assert_ptr_equal(msg, buf + 2);
	assert_int_equal(len, 3);
	assert_int_equal(ar_dns_tcp_frame(buf, 8, 512, &msg, &len), 1);
	assert_int_equal(ar_dns_tcp_frame(buf + 5, 3, 512, &msg, &len), -1); /* length 0 */
	uint8_t big[2];
	ar_dns_tcp_prefix(600, big);
	assert_int_equal(big[0], 2);
	assert_int_equal(big[1], 88);
	assert_int_equal(ar_dns_tcp_frame(big, 2, 512, &msg, &len), -1);
	assert_int_equal(ar_dns_tcp_frame(big, 2, 4096, &msg, &len), 0);
}

static void test_type_names(void **state)
{
	char buf[16];
	assert_string_equal(ar_dns_type_name(AR_DNS_T_TXT, buf, sizeof(buf)), "TXT");
	assert_string_equal(ar_dns_type_name(999, buf, sizeof(buf)), "TYPE999");
	assert_string_equal(ar_dns_rcode_name(3), "NXDOMAIN");
	assert_string_equal(ar_dns_rcode_name(-1), "DROPPED");
}

static void test_pool(void **state)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autodnspool struct ar_dns_pool *p = NULL;
	struct in_addr a, b, c;
	char s[INET_ADDRSTRLEN];
	assert_int_equal(ar_dns_pool_create(NULL, 0, &p, &err), 0);
	assert_string_equal(ar_dns_pool_range(p), "198.18.0.0/15");
	assert_int_equal(ar_dns_pool_get(p, "a.test", &a), 0);
	assert_string_equal(inet_ntop(AF_INET, &a, s, sizeof(s)), "198.18.0.1");
	assert_int_equal(ar_dns_pool_get(p, "b.test", &b), 0);
	assert_string_equal(inet_ntop(AF_INET, &b, s, sizeof(s)), "198.18.0.2");
	assert_int_equal(ar_dns_pool_get(p, "a.test", &c), 0);
	assert_int_equal(c.s_addr, a.s_addr); /* stable */
	assert_string_equal(ar_dns_pool_name(p, a), "a.test");
	assert_string_equal(ar_dns_pool_name(p, b), "b.test");
	inet_pton(AF_INET, "198.18.0.3", &c);
	assert_null(ar_dns_pool_name(p, c)); /* in range, not handed out */
	assert_true(ar_dns_pool_contains(p, c));
	inet_pton(AF_INET, "198.19.255.255", &c);
	assert_true(ar_dns_pool_contains(p, c));
	inet_pton(AF_INET, "198.20.0.1", &c);
	assert_false(ar_dns_pool_contains(p, c));
	assert_null(ar_dns_pool_name(p, c));
	inet_pton(AF_INET, "198.18.0.0", &c);
	assert_null(ar_dns_pool_name(p, c));
	assert_int_equal(ar_dns_pool_get(p, "", &c), -1);
	assert_int_equal(ar_dns_pool_size(p), 2);

	/* many names: the table grows and every mapping survives */
	char name[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "n%d.test", i);
		assert_int_equal(ar_dns_pool_get(p, name, &c), 0);
		assert_string_equal(ar_dns_pool_name(p, c), name);
	}
	for (int i = 0; i < 5000; i += 97) {
		snprintf(name, sizeof(name), "n%d.test", i);
		assert_int_equal(ar_dns_pool_get(p, name, &c), 0);
		assert_int_equal(ntohl(c.s_addr), ntohl(b.s_addr) + 1 + (uint32_t)i);
	}
	assert_int_equal(ar_dns_pool_size(p), 5002);
}

static void test_pool_bounds_and_errors(void **state)
{
	struct in_addr a;
	struct ar_dns_pool *p = NULL;
	ar_error_t err = NULL;
	/* a /30 has two usable addresses */
	assert_int_equal(ar_dns_pool_create("10.9.9.0/30", 0, &p, &err), 0);
	assert_int_equal(ar_dns_pool_get(p, "a", &a), 0);
	assert_int_equal(ar_dns_pool_get(p, "b", &a), 0);
	assert_int_equal(ar_dns_pool_get(p, "c", &a), -1);
	assert_int_equal(ar_dns_pool_get(p, "a", &a), 0); /* known names still resolve */
	ar_dns_pool_free(p);
	/* an explicit bound */
	assert_int_equal(ar_dns_pool_create(NULL, 1, &p, &err), 0);
	assert_int_equal(ar_dns_pool_get(p, "a", &a), 0);
	assert_int_equal(ar_dns_pool_get(p, "b", &a), -1);
	ar_dns_pool_free(p);

	static const char *const bad[] = {"nonsense", "fd00::/8", "198.18.0.1/15", "10.0.0.0/31",
					  "10.0.0.0/4"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(bad); i++) {
		assert_int_equal(ar_dns_pool_create(bad[i], 0, &p, &err), -1);
		assert_non_null(err);
		assert_non_null(strstr(err->msg, "synthetic address pool"));
		assert_non_null(strstr(err->msg, bad[i]));
		ar_error_release(&err);
	}
}

static void test_rule_ports(void **state)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autorules struct ar_rules *r = NULL;
	char *rules[] = {"a.test", "b.test:6443", "[::1]:22", "::1", "*.c.test:443", "d.test:22"};
	assert_int_equal(ar_rules_compile(rules, AR_ARRAY_SIZE(rules), "t", &r, &err), 0);
	uint16_t *ports;
	size_t n;
	ar_dns_rule_ports(r, &ports, &n);
	assert_int_equal(n, 4);
	assert_int_equal(ports[0], 22);
	assert_int_equal(ports[1], 80);
	assert_int_equal(ports[2], 443);
	assert_int_equal(ports[3], 6443);
	free(ports);
	ar_dns_rule_ports(NULL, &ports, &n);
	assert_int_equal(n, 2);
	free(ports);
}

struct stub_fixture {
	struct ar_rules *rules;
	struct ar_dns_pool *pool;
	struct ar_dns_stub *stub;
};

static int stub_setup(void **state)
{
	static char *rules[] = {"allowed.example.test", "*.wild.test", "api.example.test:6443",
				"10.1.2.3"};
	struct stub_fixture *f = calloc(1, sizeof(*f));
	ar_error_t err = NULL;
	if (ar_rules_compile(rules, AR_ARRAY_SIZE(rules), "t", &f->rules, &err) == -1 ||
	    ar_dns_pool_create(NULL, 3, &f->pool, &err) == -1)
		return -1;
	f->stub = ar_dns_stub_new(f->rules, f->pool);
	*state = f;
	return 0;
}

static int stub_teardown(void **state)
{
	struct stub_fixture *f = *state;
	ar_dns_stub_free(f->stub);
	ar_dns_pool_free(f->pool);
	ar_rules_free(f->rules);
	free(f);
	return 0;
}

/* Ask the stub; returns the reply length and leaves the reply in r. */
static size_t ask(struct stub_fixture *f, const char *name, uint16_t qtype, uint8_t *r,
		  struct ar_dns_event *ev)
{
	uint8_t b[512];
	size_t n = make_query(b, 0x4242, name, qtype, 1, false);
	size_t m = ar_dns_stub_answer(f->stub, b, n, r, AR_DNS_MAX_REPLY, ev);
	if (m > 0) {
		assert_int_equal(r[0], 0x42);
		assert_int_equal(rcode_of(r), (unsigned)ev->rcode);
	}
	return m;
}

static void test_stub_allowed(void **state)
{
	struct stub_fixture *f = *state;
	uint8_t r[AR_DNS_MAX_REPLY];
	struct ar_dns_event ev;
	size_t m = ask(f, "Allowed.Example.Test.", AR_DNS_T_A, r, &ev);
	assert_true(m > 0);
	assert_int_equal(ev.rcode, AR_DNS_NOERROR);
	assert_int_equal(ancount_of(r), 1);
	assert_memory_equal(r + m - 4, "\xc6\x12\x00\x01", 4);
	assert_true(ev.allowed);
	assert_string_equal(ev.addr, "198.18.0.1");
	assert_string_equal(ev.name, "allowed.example.test");
	assert_string_equal(ev.rule, "allowed.example.test");
	assert_string_equal(ev.reason, "A: matches rule allowed.example.test");
	/* the same name again: the same address */
	m = ask(f, "allowed.example.test", AR_DNS_T_A, r, &ev);
	assert_memory_equal(r + m - 4, "\xc6\x12\x00\x01", 4);
	/* a subdomain under a wildcard; a rule with a port of its own */
	ask(f, "x.y.wild.test", AR_DNS_T_A, r, &ev);
	assert_string_equal(ev.addr, "198.18.0.2");
	assert_string_equal(ev.rule, "*.wild.test");
	ask(f, "api.example.test", AR_DNS_T_A, r, &ev);
	assert_string_equal(ev.addr, "198.18.0.3");
	/* AAAA of an allowed name: the name exists, no address */
	ask(f, "allowed.example.test", AR_DNS_T_AAAA, r, &ev);
	assert_int_equal(ev.rcode, AR_DNS_NOERROR);
	assert_int_equal(ancount_of(r), 0);
	assert_true(ev.allowed);
	/* PTR of a handed-out address */
	m = ask(f, "1.0.18.198.in-addr.arpa", AR_DNS_T_PTR, r, &ev);
	assert_int_equal(ev.rcode, AR_DNS_NOERROR);
	assert_int_equal(ancount_of(r), 1);
	assert_memory_equal(r + m - 22,
			    "\x07"
			    "allowed\x07"
			    "example\x04"
			    "test",
			    21);
	/* the pool (bounded to 3 here) is full: SERVFAIL, not someone else's address */
	ask(f, "z.wild.test", AR_DNS_T_A, r, &ev);
	assert_int_equal(ev.rcode, AR_DNS_SERVFAIL);
	assert_false(ev.allowed);
	assert_non_null(strstr(ev.reason, "is full"));
}

static void test_stub_denied(void **state)
{
	struct stub_fixture *f = *state;
	uint8_t r[AR_DNS_MAX_REPLY];
	struct ar_dns_event ev;
	static const struct {
		const char *name;
		uint16_t qtype;
		int rcode;
		const char *reason;
	} cases[] = {
	    {"denied.example.test", AR_DNS_T_A, AR_DNS_NXDOMAIN,
	     "A: denied.example.test is not in the allow-list"},
	    {"denied.example.test", AR_DNS_T_TXT, AR_DNS_NXDOMAIN, NULL},
	    {"denied.example.test", AR_DNS_T_ANY, AR_DNS_NXDOMAIN, NULL},
	    {"wild.test", AR_DNS_T_A, AR_DNS_NXDOMAIN, NULL}, /* the apex is not under *. */
	    {"example.test", AR_DNS_T_A, AR_DNS_NXDOMAIN, NULL},
	    {"aGVsbG8gd29ybGQgc2VjcmV0.x9f2k1.attacker.test", AR_DNS_T_A, AR_DNS_NXDOMAIN, NULL},
	    {"allowed.example.test", AR_DNS_T_TXT, AR_DNS_REFUSED,
	     "TXT: only A and AAAA queries are answered"},
	    {"allowed.example.test", AR_DNS_T_MX, AR_DNS_REFUSED, NULL},
	    {"allowed.example.test", AR_DNS_T_ANY, AR_DNS_REFUSED, NULL},
	    {"10.1.2.3", AR_DNS_T_A, AR_DNS_NXDOMAIN, NULL}, /* an address is not a name */
	    {"2130706433", AR_DNS_T_A, AR_DNS_NXDOMAIN, NULL},
	    {"9.9.18.198.in-addr.arpa", AR_DNS_T_PTR, AR_DNS_NXDOMAIN, NULL},
	    {"1.0.0.10.in-addr.arpa", AR_DNS_T_PTR, AR_DNS_NXDOMAIN, NULL},
	    {"256.0.18.198.in-addr.arpa", AR_DNS_T_PTR, AR_DNS_NXDOMAIN, NULL},
	    {"", AR_DNS_T_NS, AR_DNS_NXDOMAIN, NULL},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		size_t m = ask(f, cases[i].name, cases[i].qtype, r, &ev);
		assert_true(m > 0);
		if (ev.rcode != cases[i].rcode)
			fail_msg("%s: rcode %d, expected %d (%s)", cases[i].name, ev.rcode,
				 cases[i].rcode, ev.reason);
		assert_int_equal(ancount_of(r), 0);
		assert_false(ev.allowed);
		assert_string_equal(ev.addr, "");
		if (cases[i].reason != NULL)
			assert_string_equal(ev.reason, cases[i].reason);
	}
	/* nothing was handed out */
	assert_int_equal(ar_dns_pool_size(f->pool), 0);
}

static void test_stub_malformed(void **state)
{
	struct stub_fixture *f = *state;
	uint8_t b[512], r[AR_DNS_MAX_REPLY];
	struct ar_dns_event ev;
	size_t n = make_query(b, 0x0102, "allowed.example.test", AR_DNS_T_A, 3 /* CH */, false);
	assert_true(ar_dns_stub_answer(f->stub, b, n, r, sizeof(r), &ev) > 0);
	assert_int_equal(ev.rcode, AR_DNS_REFUSED);
	n = make_query(b, 0x0102, "allowed.example.test", AR_DNS_T_A, 1, false);
	b[12] = 0xc0;
	assert_int_equal(ar_dns_stub_answer(f->stub, b, n, r, sizeof(r), &ev), 12);
	assert_int_equal(ev.rcode, AR_DNS_FORMERR);
	assert_int_equal(r[1], 0x02);
	assert_string_equal(ev.reason, "malformed query: compression pointer in the question");
	b[2] = 0x80;
	assert_int_equal(ar_dns_stub_answer(f->stub, b, n, r, sizeof(r), &ev), 0);
	assert_int_equal(ev.rcode, -1);
	assert_int_equal(ar_dns_stub_answer(f->stub, b, 5, r, sizeof(r), &ev), 0);
	/* a name with a byte no host name has */
	n = make_query(b, 1, "al\x01owed.example.test", AR_DNS_T_A, 1, false);
	ar_dns_stub_answer(f->stub, b, n, r, sizeof(r), &ev);
	assert_int_equal(ev.rcode, AR_DNS_NXDOMAIN);
	assert_string_equal(ev.name, "al\\001owed.example.test");
}

static void test_stub_reload_and_audit(void **state)
{
	struct stub_fixture *f = *state;
	uint8_t r[AR_DNS_MAX_REPLY];
	struct ar_dns_event ev;
	ask(f, "allowed.example.test", AR_DNS_T_A, r, &ev);
	assert_int_equal(ev.rcode, AR_DNS_NOERROR);

	struct ar_audit_rec rec;
	ar_dns_event_audit(&ev, &rec);
	assert_string_equal(rec.method, "DNS");
	assert_string_equal(rec.host, "allowed.example.test");
	assert_int_equal(rec.port, 53);
	assert_string_equal(rec.addr, "198.18.0.1");
	assert_true(rec.allowed);
	assert_int_equal(rec.status, 0);

	ar_error_t err = NULL;
	struct ar_rules *other = NULL;
	char *rules[] = {"other.test:22"};
	assert_int_equal(ar_rules_compile(rules, 1, "t", &other, &err), 0);
	ar_dns_stub_set_rules(f->stub, other);
	ask(f, "allowed.example.test", AR_DNS_T_A, r, &ev);
	assert_int_equal(ev.rcode, AR_DNS_NXDOMAIN);
	ar_dns_event_audit(&ev, &rec);
	assert_false(rec.allowed);
	assert_int_equal(rec.status, AR_DNS_NXDOMAIN);
	assert_null(rec.addr);
	/* a name covered only on port 22 is answerable */
	ask(f, "other.test", AR_DNS_T_A, r, &ev);
	assert_int_equal(ev.rcode, AR_DNS_NOERROR);
	assert_string_equal(ev.addr, "198.18.0.2");
	ar_dns_stub_set_rules(f->stub, f->rules);
	ar_rules_free(other);
}

/* Learn mode: a well-formed name no rule covers is answered and marked learned; an
 * address, an over-long label and a flood of random-looking names under one parent
 * are not, and the reason says which. */
static void test_stub_learn(void **state)
{
	struct stub_fixture *f = *state;
	uint8_t r[AR_DNS_MAX_REPLY];
	struct ar_dns_event ev;
	struct ar_audit_rec rec;
	struct ar_dns_shape *shape = ar_dns_shape_new();
	ask(f, "unlisted.example.test", AR_DNS_T_A, r, &ev);
	assert_int_equal(ev.rcode, AR_DNS_NXDOMAIN); /* enforce: as before */
	ar_dns_stub_set_learn(f->stub, shape);
	ask(f, "Unlisted.Example.Test", AR_DNS_T_A, r, &ev);
	assert_int_equal(ev.rcode, AR_DNS_NOERROR);
	assert_int_equal(ancount_of(r), 1);
	assert_true(ev.allowed && ev.learned);
	assert_string_equal(ev.rule, "unlisted.example.test");
	assert_string_equal(ev.reason,
			    "A: learned: unlisted.example.test is not in the allow-list");
	ar_dns_event_audit(&ev, &rec);
	assert_true(rec.learned);
	/* a name the rules cover is not learned */
	ask(f, "allowed.example.test", AR_DNS_T_A, r, &ev);
	assert_true(ev.allowed);
	assert_false(ev.learned);
	ar_dns_event_audit(&ev, &rec);
	assert_false(rec.learned);
	/* never an address, never a label over the limit */
	ask(f, "10.9.8.7", AR_DNS_T_A, r, &ev);
	assert_int_equal(ev.rcode, AR_DNS_NXDOMAIN);
	assert_false(ev.learned);
	ask(f, "aaaaaaaaaabbbbbbbbbbccccccccccddddddddddeeeee.example.test", AR_DNS_T_A, r, &ev);
	assert_int_equal(ev.rcode, AR_DNS_NXDOMAIN);
	assert_non_null(strstr(ev.reason, "learn mode refuses"));
	assert_non_null(strstr(ev.reason, "a label of 45 characters"));
	ar_dns_stub_set_learn(f->stub, NULL);
	ar_dns_shape_free(shape);
}

static void test_shape(void **state)
{
	char why[256], name[128];
	struct ar_dns_shape *s = ar_dns_shape_new();
	assert_false(ar_dns_label_random("api", 3));
	assert_false(ar_dns_label_random("storagestorage", 14));
	assert_true(ar_dns_label_random("k3j9x0q7w2m5", 12));
	assert_true(ar_dns_label_entropy("abcd", 4) > 1.99 &&
		    ar_dns_label_entropy("abcd", 4) < 2.01);
	/* the entropy without libm is libm's, to 1e-12, on labels of every shape */
	const char *labels[] = {"a",
				"ab",
				"aab",
				"k3j9x0q7w2m5",
				"storagestorage",
				"0123456789abcdefghijklmnopqrstuvwxyz-0123456789abcdefghijklm"};
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		size_t len = strlen(labels[i]);
		unsigned counts[256] = {0};
		double want = 0;
		for (size_t j = 0; j < len; j++)
			counts[(unsigned char)labels[i][j]]++;
		for (size_t c = 0; c < 256; c++)
			if (counts[c])
				want -= (double)counts[c] / len * log2((double)counts[c] / len);
		assert_true(fabs(ar_dns_label_entropy(labels[i], len) - want) < 1e-12);
	}
	/* 40 characters pass, 41 do not */
	assert_int_equal(ar_dns_shape_check(s, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.t.test",
					    why, sizeof(why)),
			 0);
	assert_int_equal(ar_dns_shape_check(s, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.t.test",
					    why, sizeof(why)),
			 -1);
	/* AR_DNS_LEARN_FLOOD random-looking names under one parent, then no more; the
	 * same name again still passes; other parents and plain names are not counted */
	for (int i = 0; i < AR_DNS_LEARN_FLOOD; i++) {
		snprintf(name, sizeof(name), "q%02dz7k1x9m4w.tunnel.test", i);
		assert_int_equal(ar_dns_shape_check(s, name, why, sizeof(why)), 0);
	}
	assert_int_equal(ar_dns_shape_check(s, "q99z7k1x9m4w.tunnel.test", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "under tunnel.test"));
	assert_int_equal(ar_dns_shape_check(s, "q00z7k1x9m4w.tunnel.test", why, sizeof(why)), 0);
	assert_int_equal(ar_dns_shape_check(s, "q99z7k1x9m4w.other.test", why, sizeof(why)), 0);
	for (int i = 0; i < 3 * AR_DNS_LEARN_FLOOD; i++) {
		snprintf(name, sizeof(name), "api%d.tunnel.test", i);
		assert_int_equal(ar_dns_shape_check(s, name, why, sizeof(why)), 0);
	}
	ar_dns_shape_free(s);
}

static void test_target(void **state)
{
	struct stub_fixture *f = *state;
	uint8_t r[AR_DNS_MAX_REPLY];
	struct ar_dns_event ev;
	struct ar_dns_target t;
	struct in_addr a;
	ask(f, "allowed.example.test", AR_DNS_T_A, r, &ev);
	inet_pton(AF_INET, ev.addr, &a);
	ar_dns_target(f->pool, f->rules, a, 443, &t);
	assert_int_equal(t.kind, AR_DNS_TARGET_NAME);
	assert_string_equal(t.name, "allowed.example.test");
	assert_true(t.decision.allowed);
	assert_string_equal(t.decision.rule, "allowed.example.test");
	/* the name, but a port no rule gives it */
	ar_dns_target(f->pool, f->rules, a, 6443, &t);
	assert_int_equal(t.kind, AR_DNS_TARGET_NAME);
	assert_false(t.decision.allowed);
	assert_string_equal(t.decision.reason,
			    "allowed.example.test:6443 is not in the allow-list");
	/* in the pool, never handed out */
	inet_pton(AF_INET, "198.19.0.53", &a);
	ar_dns_target(f->pool, f->rules, a, 443, &t);
	assert_int_equal(t.kind, AR_DNS_TARGET_UNKNOWN);
	assert_null(t.name);
	assert_false(t.decision.allowed);
	assert_string_equal(t.decision.reason,
			    "198.19.0.53:443 is a synthetic address that was never handed out");
	/* a literal address, even one a rule names: the proxy decides on what it carries */
	inet_pton(AF_INET, "10.1.2.3", &a);
	ar_dns_target(f->pool, f->rules, a, 443, &t);
	assert_int_equal(t.kind, AR_DNS_TARGET_LITERAL);
	assert_false(t.decision.allowed);

	assert_true(ar_dns_same_name("Allowed.Example.Test.", "allowed.example.test"));
	assert_false(ar_dns_same_name("evil.test", "allowed.example.test"));
	assert_false(ar_dns_same_name("allowed.example.test.evil", "allowed.example.test"));
	assert_false(ar_dns_same_name("", "allowed.example.test"));
	assert_false(ar_dns_same_name(NULL, "allowed.example.test"));
	assert_false(ar_dns_same_name("10.1.2.3", "10.1.2.3"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_ok),
	    cmocka_unit_test(test_parse_drop_and_notimp),
	    cmocka_unit_test(test_parse_formerr),
	    cmocka_unit_test(test_parse_long_and_odd_names),
	    cmocka_unit_test(test_build_reply),
	    cmocka_unit_test(test_build_query),
	    cmocka_unit_test(test_tcp_framing),
	    cmocka_unit_test(test_type_names),
	    cmocka_unit_test(test_pool),
	    cmocka_unit_test(test_pool_bounds_and_errors),
	    cmocka_unit_test(test_rule_ports),
	    cmocka_unit_test_setup_teardown(test_stub_allowed, stub_setup, stub_teardown),
	    cmocka_unit_test_setup_teardown(test_stub_denied, stub_setup, stub_teardown),
	    cmocka_unit_test_setup_teardown(test_stub_malformed, stub_setup, stub_teardown),
	    cmocka_unit_test_setup_teardown(test_stub_reload_and_audit, stub_setup, stub_teardown),
	    cmocka_unit_test_setup_teardown(test_target, stub_setup, stub_teardown),
	    cmocka_unit_test_setup_teardown(test_stub_learn, stub_setup, stub_teardown),
	    cmocka_unit_test(test_shape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

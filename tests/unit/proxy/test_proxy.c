/* Unit tests for the proxy's pure pieces: the address-range classifier, CIDR lists
 * and the audit and log line formats. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "agentrun/proxy.h"

static enum ar_addr_class classify(const char *text)
{
	uint8_t a[16];
	if (inet_pton(AF_INET, text, a) == 1)
		return ar_proxy_addr_classify(AF_INET, a);
	if (inet_pton(AF_INET6, text, a) == 1)
		return ar_proxy_addr_classify(AF_INET6, a);
	fail_msg("bad address %s", text);
	return AR_ADDR_PUBLIC;
}

static void test_classify(void **state)
{
	static const struct {
		const char *addr;
		enum ar_addr_class cls;
	} cases[] = {
	    /* the refused-range table, row by row (docs/proxy.md), with both edges */
	    {"8.8.8.8", AR_ADDR_PUBLIC},
	    {"169.254.169.254", AR_ADDR_METADATA},
	    {"100.100.100.200", AR_ADDR_METADATA},
	    {"255.255.255.255", AR_ADDR_BROADCAST},
	    {"127.0.0.1", AR_ADDR_LOOPBACK},
	    {"127.255.0.9", AR_ADDR_LOOPBACK},
	    {"128.0.0.1", AR_ADDR_PUBLIC},
	    {"10.1.2.3", AR_ADDR_PRIVATE},
	    {"11.0.0.1", AR_ADDR_PUBLIC},
	    {"172.16.0.1", AR_ADDR_PRIVATE},
	    {"172.31.255.255", AR_ADDR_PRIVATE},
	    {"172.32.0.1", AR_ADDR_PUBLIC},
	    {"192.168.1.1", AR_ADDR_PRIVATE},
	    {"192.169.0.1", AR_ADDR_PUBLIC},
	    {"169.254.1.1", AR_ADDR_LINK_LOCAL},
	    {"169.255.0.1", AR_ADDR_PUBLIC},
	    {"100.64.0.1", AR_ADDR_CGNAT},
	    {"100.127.255.255", AR_ADDR_CGNAT},
	    {"100.128.0.1", AR_ADDR_PUBLIC},
	    {"224.0.0.1", AR_ADDR_MULTICAST},
	    {"239.255.255.250", AR_ADDR_MULTICAST},
	    {"0.0.0.0", AR_ADDR_THIS_NETWORK},
	    {"0.1.2.3", AR_ADDR_THIS_NETWORK},
	    {"240.0.0.1", AR_ADDR_RESERVED},
	    {"255.255.255.254", AR_ADDR_RESERVED},
	    {"192.0.0.8", AR_ADDR_RESERVED},
	    {"192.0.1.1", AR_ADDR_PUBLIC},
	    {"192.0.2.1", AR_ADDR_DOCUMENTATION},
	    {"198.51.100.7", AR_ADDR_DOCUMENTATION},
	    {"203.0.113.255", AR_ADDR_DOCUMENTATION},
	    {"203.0.114.1", AR_ADDR_PUBLIC},
	    {"198.18.0.1", AR_ADDR_BENCHMARK},
	    {"198.19.255.255", AR_ADDR_BENCHMARK},
	    {"198.20.0.1", AR_ADDR_PUBLIC},
	    {"fd00:ec2::254", AR_ADDR_METADATA},
	    {"::1", AR_ADDR_LOOPBACK},
	    {"::", AR_ADDR_THIS_NETWORK},
	    {"fc00::1", AR_ADDR_ULA},
	    {"fdff::1", AR_ADDR_ULA},
	    {"fec0::1", AR_ADDR_SITE_LOCAL},
	    {"feff::1", AR_ADDR_SITE_LOCAL},
	    {"fe80::1", AR_ADDR_LINK_LOCAL},
	    {"febf::1", AR_ADDR_LINK_LOCAL},
	    {"ff02::1", AR_ADDR_MULTICAST},
	    {"2001:db8::1", AR_ADDR_DOCUMENTATION},
	    {"2001:db9::1", AR_ADDR_PUBLIC},
	    {"2001:2::1", AR_ADDR_BENCHMARK},
	    {"2001:2:1::1", AR_ADDR_PUBLIC},
	    {"100::1", AR_ADDR_RESERVED},
	    {"100:0:0:1::1", AR_ADDR_PUBLIC},
	    {"2606:4700::1111", AR_ADDR_PUBLIC},
	    /* every IPv6 form that embeds an IPv4 address, judged by that address */
	    {"::ffff:127.0.0.1", AR_ADDR_LOOPBACK},
	    {"::ffff:169.254.169.254", AR_ADDR_METADATA},
	    {"::ffff:8.8.8.8", AR_ADDR_PUBLIC},
	    {"::ffff:0:10.0.0.1", AR_ADDR_PRIVATE},
	    {"::a00:1", AR_ADDR_PRIVATE},
	    {"::127.0.0.1", AR_ADDR_LOOPBACK},
	    {"::8.8.8.8", AR_ADDR_PUBLIC},
	    {"64:ff9b::10.0.0.1", AR_ADDR_PRIVATE},
	    {"64:ff9b::8.8.8.8", AR_ADDR_PUBLIC},
	    {"64:ff9b:1:a9fe:a9:fe00::", AR_ADDR_METADATA}, /* /48: 169.254.169.254 */
	    {"64:ff9b:1:808:a:101:100::", AR_ADDR_PRIVATE}, /* /64: 10.1.1.1 */
	    {"64:ff9b:1::a00:1", AR_ADDR_PRIVATE},	    /* /96 */
	    {"64:ff9b:1::808:808", AR_ADDR_PUBLIC},	    /* zero padding is no verdict */
	    {"2002:a9fe:a9fe::1", AR_ADDR_METADATA},
	    {"2002:7f00:1::1", AR_ADDR_LOOPBACK},
	    {"2002:808:808::1", AR_ADDR_PUBLIC},
	    {"2001:0:a00:1::1", AR_ADDR_PRIVATE},	     /* Teredo server 10.0.0.1 */
	    {"2001:0:808:808::80ff:fffe", AR_ADDR_LOOPBACK}, /* Teredo client ~127.0.0.1 */
	    {"2001:0:808:808::f7f7:f7f7", AR_ADDR_PUBLIC},   /* client 8.8.8.8 */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum ar_addr_class got = classify(cases[i].addr);
		if (got != cases[i].cls)
			fail_msg("%s: got %s, want %s", cases[i].addr,
				 ar_proxy_addr_class_name(got),
				 ar_proxy_addr_class_name(cases[i].cls));
	}
	assert_string_equal(ar_proxy_addr_class_name(AR_ADDR_METADATA), "metadata");
}

static bool contains(const char *cidr, const char *addr)
{
	struct ar_cidr c;
	uint8_t a[16];
	assert_int_equal(ar_cidr_parse(cidr, &c), 0);
	if (inet_pton(AF_INET, addr, a) == 1)
		return ar_cidr_contains(&c, AF_INET, a);
	assert_int_equal(inet_pton(AF_INET6, addr, a), 1);
	return ar_cidr_contains(&c, AF_INET6, a);
}

static void test_cidr(void **state)
{
	assert_true(contains("127.0.0.0/8", "127.0.0.1"));
	assert_true(contains("127.0.0.0/8", "127.255.255.255"));
	assert_false(contains("127.0.0.0/8", "128.0.0.1"));
	assert_true(contains("10.1.2.3", "10.1.2.3"));
	assert_false(contains("10.1.2.3", "10.1.2.4"));
	assert_true(contains("172.16.0.0/12", "172.31.0.1"));
	assert_false(contains("172.16.0.0/12", "172.32.0.1"));
	assert_true(contains("0.0.0.0/0", "8.8.8.8"));
	assert_true(contains("fd00::/8", "fd12::1"));
	assert_false(contains("fd00::/8", "fc00::1"));
	assert_false(contains("::1/128", "127.0.0.1")); /* families never mix */
	struct ar_cidr c;
	static const char *const bad[] = {"",	      "/8",	   "10.0.0.0/33",
					  "::/129",   "10.0.0.0/", "10.0.0.0/8x",
					  "10.0.0/8", "host/8",	   "10.0.0.0/-1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (ar_cidr_parse(bad[i], &c) != -1)
			fail_msg("`%s` accepted", bad[i]);
}

static void test_audit_line(void **state)
{
	struct ar_audit_rec r = {
	    .at_ms = 1767225600123, /* 2026-01-01T00:00:00.123Z */
	    .id = 7,
	    .method = "CONNECT",
	    .host = "api.github.com",
	    .port = 443,
	    .addr = "140.82.112.6",
	    .allowed = true,
	    .status = 200,
	    .reason = "matches rule *.github.com:443",
	    .rule = "*.github.com:443",
	    .bytes_out = 590,
	    .bytes_in = 6911,
	    .duration_ms = 80,
	};
	struct ar_buf b = {0};
	ar_proxy_audit_format(&r, &b);
	assert_string_equal(b.data,
			    "{\"at\":\"2026-01-01T00:00:00.123Z\",\"id\":7,\"method\":\"CONNECT\","
			    "\"host\":\"api.github.com\",\"port\":443,\"addr\":\"140.82.112.6\","
			    "\"allowed\":true,\"status\":200,\"reason\":\"matches rule "
			    "*.github.com:443\",\"rule\":\"*.github.com:443\",\"bytes_out\":590,"
			    "\"bytes_in\":6911,\"duration_ms\":80}\n");
	ar_buf_reset(&b);
	ar_proxy_log_format(&r, &b);
	assert_string_equal(b.data, "CONNECT api.github.com:443 ALLOW 200 out=590 in=6911 80ms "
				    "matches rule *.github.com:443\n");

	/* learn mode's entry: learned, and the body a plain HTTP request sent */
	r.learned = true;
	r.has_body = true;
	r.body_bytes = 11;
	r.method = "POST";
	ar_buf_reset(&b);
	ar_proxy_audit_format(&r, &b);
	assert_non_null(strstr(b.data, "\"duration_ms\":80,\"learned\":true,\"body_bytes\":11}\n"));
	ar_buf_reset(&b);
	ar_proxy_log_format(&r, &b);
	assert_string_equal(b.data, "POST api.github.com:443 LEARN 200 out=590 in=6911 80ms "
				    "matches rule *.github.com:443\n");

	/* an unreadable request: nulls, and hostile bytes escaped */
	struct ar_audit_rec d = {
	    .at_ms = 0,
	    .id = 8,
	    .status = 400,
	    .reason = "bad \"x\"\n\x01",
	};
	ar_buf_reset(&b);
	ar_proxy_audit_format(&d, &b);
	assert_string_equal(b.data,
			    "{\"at\":\"1970-01-01T00:00:00.000Z\",\"id\":8,\"method\":null,"
			    "\"host\":null,\"port\":null,\"addr\":null,\"allowed\":false,"
			    "\"status\":400,\"reason\":\"bad \\\"x\\\"\\n\\u0001\","
			    "\"rule\":null,\"bytes_out\":0,\"bytes_in\":0,\"duration_ms\":0}\n");
	ar_buf_reset(&b);
	ar_proxy_log_format(&d, &b);
	assert_string_equal(b.data, "- - DENY 400 out=0 in=0 0ms bad \"x\"??\n");

	/* the time's text is kept per second: the same second again, then the next one,
	 * then an earlier one, each with its own milliseconds */
	const struct {
		int64_t at;
		const char *text;
	} times[] = {
	    {1767225600999, "{\"at\":\"2026-01-01T00:00:00.999Z\""},
	    {1767225601005, "{\"at\":\"2026-01-01T00:00:01.005Z\""},
	    {1767225601050, "{\"at\":\"2026-01-01T00:00:01.050Z\""},
	    {86399999, "{\"at\":\"1970-01-01T23:59:59.999Z\""},
	};
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		d.at_ms = times[i].at;
		ar_buf_reset(&b);
		ar_proxy_audit_format(&d, &b);
		assert_memory_equal(b.data, times[i].text, strlen(times[i].text));
	}

	struct ar_audit_rec v6 = {.method = "GET",
				  .host = "::1",
				  .host_is_v6 = true,
				  .port = 8080,
				  .status = 403,
				  .reason = "r"};
	ar_buf_reset(&b);
	ar_proxy_log_format(&v6, &b);
	assert_string_equal(b.data, "GET [::1]:8080 DENY 403 out=0 in=0 0ms r\n");
	ar_buf_free(&b);
}

/* A ClientHello: record(s) of `rec_split` bytes each (0: one record). */
static size_t build_hello(uint8_t *out, const char *sni, size_t rec_split)
{
	uint8_t hs[512], ext[300];
	size_t e = 0, h = 0;
	/* an unrelated extension first (supported_versions) */
	memcpy(ext + e, "\x00\x2b\x00\x03\x02\x03\x04", 7);
	e += 7;
	if (sni) {
		size_t n = strlen(sni);
		uint8_t x[] = {0,
			       0,
			       (uint8_t)((n + 5) >> 8),
			       (uint8_t)(n + 5),
			       (uint8_t)((n + 3) >> 8),
			       (uint8_t)(n + 3),
			       0,
			       (uint8_t)(n >> 8),
			       (uint8_t)n};
		memcpy(ext + e, x, sizeof(x));
		memcpy(ext + e + sizeof(x), sni, n);
		e += sizeof(x) + n;
	}
	hs[h++] = 1; /* client_hello */
	h += 3;	     /* length, below */
	hs[h++] = 3;
	hs[h++] = 3;
	memset(hs + h, 0xab, 32);
	h += 32;
	hs[h++] = 0;			       /* session id */
	memcpy(hs + h, "\x00\x02\x13\x01", 4); /* one cipher suite */
	h += 4;
	memcpy(hs + h, "\x01\x00", 2); /* null compression */
	h += 2;
	hs[h++] = (uint8_t)(e >> 8);
	hs[h++] = (uint8_t)e;
	memcpy(hs + h, ext, e);
	h += e;
	hs[1] = 0;
	hs[2] = (uint8_t)((h - 4) >> 8);
	hs[3] = (uint8_t)(h - 4);
	size_t o = 0, done = 0, step = rec_split ? rec_split : h;
	while (done < h) {
		size_t n = h - done < step ? h - done : step;
		out[o++] = 22;
		out[o++] = 3;
		out[o++] = 1;
		out[o++] = (uint8_t)(n >> 8);
		out[o++] = (uint8_t)n;
		memcpy(out + o, hs + done, n);
		o += n;
		done += n;
	}
	return o;
}

static void test_client_hello_sni(void **state)
{
	uint8_t b[1024];
	char name[256];
	size_t n = build_hello(b, "api.github.com", 0);
	assert_int_equal(ar_proxy_client_hello_sni(b, n, name, sizeof(name)), AR_SNI_FOUND);
	assert_string_equal(name, "api.github.com");
	/* every prefix is "more", never a wrong answer */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(ar_proxy_client_hello_sni(b, i, name, sizeof(name)), AR_SNI_MORE);
	/* split over records of 20 bytes */
	n = build_hello(b, "Split.Example.", 20);
	assert_int_equal(ar_proxy_client_hello_sni(b, n, name, sizeof(name)), AR_SNI_FOUND);
	assert_string_equal(name, "Split.Example.");
	n = build_hello(b, NULL, 0);
	assert_int_equal(ar_proxy_client_hello_sni(b, n, name, sizeof(name)), AR_SNI_NONE);
	static const char get[] = "GET / HTTP/1.1\r\n\r\n";
	assert_int_equal(
	    ar_proxy_client_hello_sni((const uint8_t *)get, sizeof(get) - 1, name, sizeof(name)),
	    AR_SNI_NOT_TLS);
	/* a name longer than the output, and a corrupted extension length */
	n = build_hello(b, "api.github.com", 0);
	assert_int_equal(ar_proxy_client_hello_sni(b, n, name, 8), AR_SNI_MALFORMED);
	b[n - 14 - 9 + 3] ^= 0x40;
	assert_int_equal(ar_proxy_client_hello_sni(b, n, name, sizeof(name)), AR_SNI_MALFORMED);
}

/* The shapes that once slipped through `check`: each is parsed or refused. */
static void test_client_hello_shapes(void **state)
{
	uint8_t b[8192], e[8192];
	char name[256];
	const char *why = NULL;
	/* one-byte records: reassembled */
	size_t n = build_hello(b, "api.github.com", 1);
	assert_true(n > 6 * 60);
	assert_int_equal(ar_proxy_client_hello_parse(b, n, name, sizeof(name), &why), AR_SNI_FOUND);
	assert_string_equal(name, "api.github.com");
	/* a zero-length handshake record first: refused, not skipped */
	memcpy(e, "\x16\x03\x01\x00\x00", 5);
	n = build_hello(e + 5, "evil.test", 0);
	assert_int_equal(ar_proxy_client_hello_parse(e, n + 5, name, sizeof(name), &why),
			 AR_SNI_MALFORMED);
	assert_string_equal(why, "empty handshake record");
	/* a handshake message over 64 KiB: refused as soon as its length is read */
	static const uint8_t big[] = {22, 3, 1, 0, 4, 1, 0x01, 0x10, 0x00};
	assert_int_equal(ar_proxy_client_hello_parse(big, sizeof(big), name, sizeof(name), &why),
			 AR_SNI_MALFORMED);
	assert_string_equal(why, "ClientHello larger than 64 KiB");
	/* just under the limit is still "more", the caller bounds the wait */
	static const uint8_t under[] = {22, 3, 1, 0, 4, 1, 0x00, 0xff, 0x00};
	assert_int_equal(ar_proxy_client_hello_sni(under, sizeof(under), name, sizeof(name)),
			 AR_SNI_MORE);
	/* another record type after a handshake record, a record past 16 KiB, a bad version */
	n = build_hello(b, "a.test", 20);
	b[25] = 23;
	assert_int_equal(ar_proxy_client_hello_sni(b, n, name, sizeof(name)), AR_SNI_MALFORMED);
	static const uint8_t huge_rec[] = {22, 3, 1, 0x40, 0x01};
	assert_int_equal(ar_proxy_client_hello_sni(huge_rec, 5, name, sizeof(name)),
			 AR_SNI_MALFORMED);
	static const uint8_t v2[] = {22, 2, 0};
	assert_int_equal(ar_proxy_client_hello_sni(v2, 3, name, sizeof(name)), AR_SNI_MALFORMED);
	/* only a first byte that is not a handshake record is "not TLS" */
	static const uint8_t ccs[] = {20, 3, 3, 0, 1, 1};
	assert_int_equal(ar_proxy_client_hello_parse(ccs, sizeof(ccs), name, sizeof(name), &why),
			 AR_SNI_NOT_TLS);
	static const uint8_t one[] = {22};
	assert_int_equal(ar_proxy_client_hello_sni(one, 1, name, sizeof(name)), AR_SNI_MORE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_classify),
	    cmocka_unit_test(test_cidr),
	    cmocka_unit_test(test_audit_line),
	    cmocka_unit_test(test_client_hello_sni),
	    cmocka_unit_test(test_client_hello_shapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

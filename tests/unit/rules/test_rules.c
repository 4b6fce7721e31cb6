/* Unit tests for host canonicalisation, rule compilation and the decision (DESIGN §4). */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/error.h"
#include "agentrun/rules.h"
#include "agentrun/util.h"

static void test_canonicalize_ok(void **state)
{
	static const struct {
		const char *in, *out;
		int family;
	} cases[] = {
	    {"example.com", "example.com", 0},
	    {"Example.COM", "example.com", 0},
	    {"example.com.", "example.com", 0},
	    {"API.GitHub.com.", "api.github.com", 0},
	    {"a_b.example.com", "a_b.example.com", 0},
	    {"x-y.example.com", "x-y.example.com", 0},
	    {"localhost", "localhost", 0},
	    {"0x7f.example", "0x7f.example", 0},
	    {"1e100.net", "1e100.net", 0},
	    /* every inet_aton spelling */
	    {"127.0.0.1", "127.0.0.1", AF_INET},
	    {"2130706433", "127.0.0.1", AF_INET},
	    {"0x7f.1", "127.0.0.1", AF_INET},
	    {"017700000001", "127.0.0.1", AF_INET},
	    {"127.1", "127.0.0.1", AF_INET},
	    {"127.0.1", "127.0.0.1", AF_INET},
	    {"0x7F000001", "127.0.0.1", AF_INET},
	    {"0X7f.0.0.1", "127.0.0.1", AF_INET},
	    {"0177.0.0.1", "127.0.0.1", AF_INET},
	    {"0177.0.0.01", "127.0.0.1", AF_INET},
	    {"127.0.0.1.", "127.0.0.1", AF_INET},
	    {"0", "0.0.0.0", AF_INET},
	    {"0x0", "0.0.0.0", AF_INET},
	    {"255.255.255.255", "255.255.255.255", AF_INET},
	    {"4294967295", "255.255.255.255", AF_INET},
	    {"1.16777215", "1.255.255.255", AF_INET},
	    {"1.2.65535", "1.2.255.255", AF_INET},
	    {"0xa9.0xfe.0xa9.0xfe", "169.254.169.254", AF_INET},
	    {"0251.0376.0251.0376", "169.254.169.254", AF_INET},
	    {"2852039166", "169.254.169.254", AF_INET},
	    /* IPv6, RFC 5952 output */
	    {"::1", "::1", AF_INET6},
	    {"[::1]", "::1", AF_INET6},
	    {"::", "::", AF_INET6},
	    {"[2001:DB8:0:0:0:0:0:1]", "2001:db8::1", AF_INET6},
	    {"2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1", AF_INET6},
	    {"2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1", AF_INET6},
	    {"2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1", AF_INET6},
	    {"1:0:0:2:0:0:0:3", "1:0:0:2::3", AF_INET6},
	    {"::1:2", "::1:2", AF_INET6},
	    {"1::", "1::", AF_INET6},
	    {"FE80::1", "fe80::1", AF_INET6},
	    {"::1.2.3.4", "::102:304", AF_INET6},
	    {"fd00:ec2::254", "fd00:ec2::254", AF_INET6},
	    /* IPv4-mapped IPv6 is the IPv4 address */
	    {"::ffff:127.0.0.1", "127.0.0.1", AF_INET},
	    {"[::ffff:127.0.0.1]", "127.0.0.1", AF_INET},
	    {"::FFFF:169.254.169.254", "169.254.169.254", AF_INET},
	    {"[::ffff:7f00:1]", "127.0.0.1", AF_INET},
	    {"0:0:0:0:0:ffff:a00:1", "10.0.0.1", AF_INET},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		struct ar_host h;
		ar_error_t err = NULL;
		if (ar_host_canonicalize(cases[i].in, &h, &err) != 0)
			fail_msg("%s: %s", cases[i].in, err->msg);
		assert_string_equal(h.name, cases[i].out);
		assert_int_equal(h.family, cases[i].family);
		if (h.family != 0) {
			/* the address agrees with the text */
			unsigned char a[16];
			assert_int_equal(inet_pton(h.family, h.name, a), 1);
			assert_memory_equal(a, &h.addr, h.family == AF_INET ? 4 : 16);
		}
	}
}

static void test_canonicalize_lengths(void **state)
{
	char label[80], name[300];
	struct ar_host h;
	ar_error_t err = NULL;

	memset(label, 'a', 63);
	label[63] = '\0';
	snprintf(name, sizeof(name), "%s.com", label);
	assert_int_equal(ar_host_canonicalize(name, &h, &err), 0);
	assert_string_equal(h.name, name);

	memset(label, 'a', 64);
	label[64] = '\0';
	snprintf(name, sizeof(name), "%s.com", label);
	assert_int_equal(ar_host_canonicalize(name, &h, &err), -1);
	assert_non_null(strstr(err->msg, ": host name label longer than 63 characters"));
	ar_error_release(&err);

	/* 253 characters: 63.63.63.61, then the same plus a trailing dot */
	memset(name, 'b', 253);
	name[63] = name[127] = name[191] = '.';
	name[253] = '\0';
	assert_int_equal(ar_host_canonicalize(name, &h, &err), 0);
	assert_int_equal(strlen(h.name), 253);
	name[253] = '.';
	name[254] = '\0';
	assert_int_equal(ar_host_canonicalize(name, &h, &err), 0);
	assert_int_equal(strlen(h.name), 253);
	name[253] = 'b';
	assert_int_equal(ar_host_canonicalize(name, &h, &err), -1);
	assert_non_null(strstr(err->msg, ": host name longer than 253 characters"));
	ar_error_release(&err);

	memset(name, 'c', 299);
	name[299] = '\0';
	assert_int_equal(ar_host_canonicalize(name, &h, &err), -1);
	assert_true(strncmp(err->msg, "invalid host \"ccc", 17) == 0);
	assert_non_null(strstr(err->msg, "...\": host longer than 255 characters"));
	ar_error_release(&err);
}

static void test_canonicalize_errors(void **state)
{
	static const struct {
		const char *in, *msg;
	} cases[] = {
	    {"", "invalid host \"\": empty host"},
	    {".", "invalid host \".\": empty host"},
	    {"example.com..", "invalid host \"example.com..\": empty label in host name"},
	    {"a..b", "invalid host \"a..b\": empty label in host name"},
	    {".a", "invalid host \".a\": empty label in host name"},
	    {"exa mple.com",
	     "invalid host \"exa mple.com\": whitespace or a control character in host"},
	    {"a\tb", "invalid host \"a\\x09b\": whitespace or a control character in host"},
	    {"a\r\nb", "invalid host \"a\\x0d\\x0ab\": whitespace or a control character in host"},
	    {"a\x7f", "invalid host \"a\\x7f\": whitespace or a control character in host"},
	    {"example.com:443", "invalid host \"example.com:443\": a port is not allowed here"},
	    {"[::1]:443", "invalid host \"[::1]:443\": a port is not allowed here"},
	    {"[::1", "invalid host \"[::1\": unterminated '[' in host"},
	    {"fe80::1%eth0", "invalid host \"fe80::1%eth0\": an IPv6 zone id is not allowed"},
	    {"[fe80::1%25eth0]",
	     "invalid host \"[fe80::1%25eth0]\": an IPv6 zone id is not allowed"},
	    {"[1.2.3.4]", "invalid host \"[1.2.3.4]\": invalid IPv6 address"},
	    {"[]", "invalid host \"[]\": invalid IPv6 address"},
	    {"1:2:3:4:5:6:7:8:9", "invalid host \"1:2:3:4:5:6:7:8:9\": invalid IPv6 address"},
	    {":::1", "invalid host \":::1\": invalid IPv6 address"},
	    {"1.2.3.256", "invalid host \"1.2.3.256\": invalid IPv4 address"},
	    {"1.2.3.4.5", "invalid host \"1.2.3.4.5\": invalid IPv4 address"},
	    {"1.2.3.4..", "invalid host \"1.2.3.4..\": empty label in host name"},
	    {"08.1.1.1", "invalid host \"08.1.1.1\": invalid IPv4 address"},
	    {"0x", "invalid host \"0x\": invalid IPv4 address"},
	    {"0xg.1", "invalid host \"0xg.1\": invalid IPv4 address"},
	    {"4294967296", "invalid host \"4294967296\": invalid IPv4 address"},
	    {"99999999999999999999999",
	     "invalid host \"99999999999999999999999\": invalid IPv4 address"},
	    {"1.16777216", "invalid host \"1.16777216\": invalid IPv4 address"},
	    {"256.1", "invalid host \"256.1\": invalid IPv4 address"},
	    {"example.123", "invalid host \"example.123\": invalid IPv4 address"},
	    {"example.0x1", "invalid host \"example.0x1\": invalid IPv4 address"},
	    {"ex*ample.com", "invalid host \"ex*ample.com\": invalid character in host name "
			     "(letters, digits, '-', '_' and '.')"},
	    {"*.example.com", "invalid host \"*.example.com\": invalid character in host name "
			      "(letters, digits, '-', '_' and '.')"},
	    {"ex\xc3\xa4mple.com",
	     "invalid host \"ex\\xc3\\xa4mple.com\": invalid character in host name "
	     "(letters, digits, '-', '_' and '.')"},
	    {"a\"b", "invalid host \"a\\\"b\": invalid character in host name "
		     "(letters, digits, '-', '_' and '.')"},
	    {"a\\b", "invalid host \"a\\\\b\": invalid character in host name "
		     "(letters, digits, '-', '_' and '.')"},
	    {"user@host", "invalid host \"user@host\": invalid character in host name "
			  "(letters, digits, '-', '_' and '.')"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		struct ar_host h;
		ar_error_t err = NULL;
		if (ar_host_canonicalize(cases[i].in, &h, &err) != -1)
			fail_msg("%s: accepted as %s", cases[i].in, h.name);
		assert_non_null(err);
		assert_string_equal(err->msg, cases[i].msg);
		ar_error_release(&err);
	}
}

static void test_canonicalize_n(void **state)
{
	struct ar_host h;
	ar_error_t err = NULL;
	/* a NUL inside a header value is not the end of the host */
	assert_int_equal(ar_host_canonicalize_n("a\0b.com", 7, &h, &err), -1);
	assert_string_equal(
	    err->msg, "invalid host \"a\\x00b.com\": whitespace or a control character in host");
	ar_error_release(&err);
	/* only len bytes are read */
	assert_int_equal(ar_host_canonicalize_n("Example.com:443", 11, &h, &err), 0);
	assert_string_equal(h.name, "example.com");
	assert_int_equal(ar_host_canonicalize_n("[::1]:443", 5, &h, &err), 0);
	assert_string_equal(h.name, "::1");
	assert_int_equal(ar_host_canonicalize(NULL, &h, &err), -1);
	ar_error_release(&err);
}

static void test_compile_errors(void **state)
{
	static const struct {
		const char *rule, *why;
	} cases[] = {
	    {"", "empty rule"},
	    {"api*.example.com",
	     "a wildcard must be a whole leading label (\"*.example.com\") or \"*\" alone"},
	    {"*example.com",
	     "a wildcard must be a whole leading label (\"*.example.com\") or \"*\" alone"},
	    {"a.*.example.com",
	     "a wildcard must be a whole leading label (\"*.example.com\") or \"*\" alone"},
	    {"**.x.com",
	     "a wildcard must be a whole leading label (\"*.example.com\") or \"*\" alone"},
	    {"*.*.example.com",
	     "a wildcard must be a whole leading label (\"*.example.com\") or \"*\" alone"},
	    {"example.*",
	     "a wildcard must be a whole leading label (\"*.example.com\") or \"*\" alone"},
	    {"**", "a wildcard must be a whole leading label (\"*.example.com\") or \"*\" alone"},
	    {"*.com", "a wildcard over a single label (a top-level domain) is too broad"},
	    {"*.internal", "a wildcard over a single label (a top-level domain) is too broad"},
	    {"*.COM.", "a wildcard over a single label (a top-level domain) is too broad"},
	    {"*.com:443", "a wildcard over a single label (a top-level domain) is too broad"},
	    {"*.co.uk", "a wildcard over a public suffix is too broad"},
	    {"*.CO.UK.", "a wildcard over a public suffix is too broad"},
	    {"*.org.uk", "a wildcard over a public suffix is too broad"},
	    {"*.com.au", "a wildcard over a public suffix is too broad"},
	    {"*.co.jp", "a wildcard over a public suffix is too broad"},
	    {"*.github.io", "a wildcard over a public suffix is too broad"},
	    {"*.herokuapp.com", "a wildcard over a public suffix is too broad"},
	    {"*.amazonaws.com:443", "a wildcard over a public suffix is too broad"},
	    {"*.s3.amazonaws.com", "a wildcard over a public suffix is too broad"},
	    {"*.cloudfront.net", "a wildcard over a public suffix is too broad"},
	    {"*.1.2.3", "a wildcard cannot cover IP addresses"},
	    {"*.127.0.0.1", "a wildcard cannot cover IP addresses"},
	    {"*.1.2.3.4.5", "a wildcard cannot cover IP addresses"},
	    {"*.0x7f", "a wildcard cannot cover IP addresses"},
	    {"*.", "empty host"},
	    {"*..com", "empty label in host name"},
	    {"host:0", "bad port (expected a number from 1 to 65535)"},
	    {"host:65536", "bad port (expected a number from 1 to 65535)"},
	    {"host:100000", "bad port (expected a number from 1 to 65535)"},
	    {"host:http", "bad port (expected a number from 1 to 65535)"},
	    {"host:", "bad port (expected a number from 1 to 65535)"},
	    {"host:+443", "bad port (expected a number from 1 to 65535)"},
	    {"host:-1", "bad port (expected a number from 1 to 65535)"},
	    {"host:443x", "bad port (expected a number from 1 to 65535)"},
	    {"host:0x1bb", "bad port (expected a number from 1 to 65535)"},
	    {"*:0", "bad port (expected a number from 1 to 65535)"},
	    {":443", "empty host"},
	    {"host: 443", "whitespace or a control character in rule"},
	    {" host", "whitespace or a control character in rule"},
	    {"host ", "whitespace or a control character in rule"},
	    {"a.com b.com", "whitespace or a control character in rule"},
	    {"2001:db8:0:0:0:0:0:1:443",
	     "an IPv6 address with a port must be written in brackets, as [ADDR]:PORT"},
	    {"1:2:3:4:5:6:7:8:9",
	     "an IPv6 address with a port must be written in brackets, as [ADDR]:PORT"},
	    {"1:2:3:4:5:6:7:8:9:10", "invalid IPv6 address"},
	    {"12345::1", "invalid IPv6 address"},
	    {"fe80::1%eth0", "an IPv6 zone id is not allowed"},
	    {"[fe80::1%eth0]:443", "an IPv6 zone id is not allowed"},
	    {"[::1]443", "unexpected text after ']'"},
	    {"[::1", "unterminated '['"},
	    {"[::1]:0", "bad port (expected a number from 1 to 65535)"},
	    {"[::1]:", "bad port (expected a number from 1 to 65535)"},
	    {"[example.com]:443", "invalid IPv6 address"},
	    {"[1.2.3.4]", "invalid IPv6 address"},
	    {"a..b.com", "empty label in host name"},
	    {"example.com..", "empty label in host name"},
	    {"1.2.3.256", "invalid IPv4 address"},
	    {"user@example.com",
	     "invalid character in host name (letters, digits, '-', '_' and '.')"},
	    {"http://example.com", "a rule is a host with an optional :port, not a URL"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		char *list[] = {"ok.example.com", (char *)cases[i].rule};
		struct ar_rules *r = NULL;
		ar_error_t err = NULL;
		char want[512];
		if (ar_rules_compile(list, 2, "--allow", &r, &err) != -1)
			fail_msg("rule %s accepted", cases[i].rule);
		assert_null(r);
		snprintf(want, sizeof(want), "--allow: rule \"%s\": %s", cases[i].rule,
			 cases[i].why);
		assert_string_equal(err->msg, want);
		ar_error_release(&err);
	}
}

static void test_compile_error_escapes(void **state)
{
	char *list[] = {"bad\nrule\"x"};
	struct ar_rules *r = NULL;
	ar_error_t err = NULL;
	assert_int_equal(ar_rules_compile(list, 1, "p.json: allowed_hosts", &r, &err), -1);
	assert_string_equal(err->msg, "p.json: allowed_hosts: rule \"bad\\x0arule\\\"x\": "
				      "whitespace or a control character in rule");
	ar_error_release(&err);
}

static void test_compile_ok(void **state)
{
	char *list[] = {"*",
			"*:22",
			"Example.COM.",
			"*.GitHub.com:443",
			"2130706433",
			"[::1]",
			"[2001:db8::1]:8443",
			"2001:db8::2",
			"::ffff:10.0.0.1",
			"*.example.co.uk",
			"*.my.github.io",
			"host:65535",
			"a_b.example.com:1",
			"*.example.com."};
	static const bool literal[] = {false, false, false, false, true,  true,	 true,
				       true,  true,  false, false, false, false, false};
	ar_autorules struct ar_rules *r = NULL;
	ar_error_t err = NULL;
	if (ar_rules_compile(list, AR_ARRAY_SIZE(list), "--allow", &r, &err) != 0)
		fail_msg("%s", err->msg);
	assert_int_equal(ar_rules_count(r), AR_ARRAY_SIZE(list));
	for (size_t i = 0; i < AR_ARRAY_SIZE(list); i++) {
		assert_string_equal(ar_rules_text(r, i), list[i]);
		assert_int_equal(ar_rules_is_literal(r, i), literal[i]);
	}
	assert_null(ar_rules_text(r, AR_ARRAY_SIZE(list)));
	assert_false(ar_rules_is_literal(r, AR_ARRAY_SIZE(list)));
	assert_int_equal(ar_rules_count(NULL), 0);
}

struct decide_case {
	const char *host;
	int port;
	const char *rule; /* NULL: denied */
	const char *reason;
};

static void run_decide(char **list, size_t n, const struct decide_case *cases, size_t ncases)
{
	ar_autorules struct ar_rules *r = NULL;
	ar_error_t err = NULL;
	if (ar_rules_compile(list, n, "--allow", &r, &err) != 0)
		fail_msg("%s", err->msg);
	for (size_t i = 0; i < ncases; i++) {
		struct ar_decision d;
		memset(&d, 0x55, sizeof(d));
		ar_rules_decide_str(r, cases[i].host, cases[i].port, &d);
		if (d.allowed != (cases[i].rule != NULL) || strcmp(d.reason, cases[i].reason) != 0)
			fail_msg("%s:%d: got %s \"%s\"", cases[i].host, cases[i].port,
				 d.allowed ? "allowed" : "denied", d.reason);
		if (cases[i].rule != NULL)
			assert_string_equal(d.rule, cases[i].rule);
		else
			assert_null(d.rule);
	}
}

static void test_decide(void **state)
{
	char *list[] = {"api.anthropic.com",  "*.github.com:443", "cc-lab-control-plane:6443",
			"*.Example.org",      "10.0.0.1",	  "[2001:db8::1]:8443",
			"::ffff:192.168.1.1", "localhost",	  "*.sub.example.net:8080",
			"*.sub.example.net"};
	static const struct decide_case cases[] = {
	    {"api.anthropic.com", 443, "api.anthropic.com", "matches rule api.anthropic.com"},
	    {"api.anthropic.com", 80, "api.anthropic.com", "matches rule api.anthropic.com"},
	    {"API.Anthropic.COM.", 443, "api.anthropic.com", "matches rule api.anthropic.com"},
	    {"api.anthropic.com", 8443, NULL, "api.anthropic.com:8443 is not in the allow-list"},
	    {"api.anthropic.com", 22, NULL, "api.anthropic.com:22 is not in the allow-list"},
	    {"anthropic.com", 443, NULL, "anthropic.com:443 is not in the allow-list"},
	    {"x.api.anthropic.com", 443, NULL, "x.api.anthropic.com:443 is not in the allow-list"},
	    {"api.anthropic.com.evil.io", 443, NULL,
	     "api.anthropic.com.evil.io:443 is not in the allow-list"},
	    /* wildcard: subdomains on label boundaries, never the apex */
	    {"api.github.com", 443, "*.github.com:443", "matches rule *.github.com:443"},
	    {"a.b.github.com", 443, "*.github.com:443", "matches rule *.github.com:443"},
	    {"API.GITHUB.COM.", 443, "*.github.com:443", "matches rule *.github.com:443"},
	    {"api.github.com", 80, NULL, "api.github.com:80 is not in the allow-list"},
	    {"github.com", 443, NULL, "github.com:443 is not in the allow-list"},
	    {"evilgithub.com", 443, NULL, "evilgithub.com:443 is not in the allow-list"},
	    {"github.com.evil.io", 443, NULL, "github.com.evil.io:443 is not in the allow-list"},
	    {"api.github.com.evil.io", 443, NULL,
	     "api.github.com.evil.io:443 is not in the allow-list"},
	    {"xgithub.com", 443, NULL, "xgithub.com:443 is not in the allow-list"},
	    {".github.com", 443, NULL, "invalid host \".github.com\""},
	    {"www.example.org", 80, "*.Example.org", "matches rule *.Example.org"},
	    {"example.org", 80, NULL, "example.org:80 is not in the allow-list"},
	    {"cc-lab-control-plane", 6443, "cc-lab-control-plane:6443",
	     "matches rule cc-lab-control-plane:6443"},
	    {"cc-lab-control-plane", 443, NULL,
	     "cc-lab-control-plane:443 is not in the allow-list"},
	    {"a.sub.example.net", 8080, "*.sub.example.net:8080",
	     "matches rule *.sub.example.net:8080"},
	    {"a.sub.example.net", 443, "*.sub.example.net", "matches rule *.sub.example.net"},
	    {"a.sub.example.net", 8443, NULL, "a.sub.example.net:8443 is not in the allow-list"},
	    /* addresses compare as addresses, whatever the spelling */
	    {"10.0.0.1", 443, "10.0.0.1", "matches rule 10.0.0.1"},
	    {"012.0.0.1", 443, "10.0.0.1", "matches rule 10.0.0.1"},
	    {"167772161", 80, "10.0.0.1", "matches rule 10.0.0.1"},
	    {"10.1", 80, "10.0.0.1", "matches rule 10.0.0.1"},
	    {"0xa000001", 80, "10.0.0.1", "matches rule 10.0.0.1"},
	    {"::ffff:10.0.0.1", 443, "10.0.0.1", "matches rule 10.0.0.1"},
	    {"[::ffff:a00:1]", 443, "10.0.0.1", "matches rule 10.0.0.1"},
	    {"10.0.0.1", 22, NULL, "10.0.0.1:22 is not in the allow-list"},
	    {"10.0.0.2", 443, NULL, "10.0.0.2:443 is not in the allow-list"},
	    {"0xa000002", 443, NULL, "10.0.0.2:443 is not in the allow-list"},
	    {"192.168.1.1", 443, "::ffff:192.168.1.1", "matches rule ::ffff:192.168.1.1"},
	    {"2001:db8::1", 8443, "[2001:db8::1]:8443", "matches rule [2001:db8::1]:8443"},
	    {"[2001:DB8:0::0:1]", 8443, "[2001:db8::1]:8443", "matches rule [2001:db8::1]:8443"},
	    {"2001:db8::1", 443, NULL, "[2001:db8::1]:443 is not in the allow-list"},
	    {"[2001:db8::2]", 8443, NULL, "[2001:db8::2]:8443 is not in the allow-list"},
	    /* a name never matches an IP rule, an address never a name rule */
	    {"10.0.0.1.nip.io", 443, NULL, "10.0.0.1.nip.io:443 is not in the allow-list"},
	    {"127.0.0.1", 443, NULL, "127.0.0.1:443 is not in the allow-list"},
	    {"::1", 443, NULL, "[::1]:443 is not in the allow-list"},
	    {"localhost", 443, "localhost", "matches rule localhost"},
	    /* hosts that cannot be canonicalised, reason safe to log */
	    {"exa mple.com", 443, NULL, "invalid host \"exa mple.com\""},
	    {"a\"b\n", 443, NULL, "invalid host \"a\\\"b\\x0a\""},
	    {"api.github.com:443", 443, NULL, "invalid host \"api.github.com:443\""},
	    {"", 443, NULL, "invalid host \"\""},
	    {"fe80::1%eth0", 443, NULL, "invalid host \"fe80::1%eth0\""},
	};
	run_decide(list, AR_ARRAY_SIZE(list), cases, AR_ARRAY_SIZE(cases));
}

static void test_decide_any(void **state)
{
	char *any[] = {"*"};
	static const struct decide_case any_cases[] = {
	    {"anything.example", 443, "*", "matches rule *"},
	    {"x", 80, "*", "matches rule *"},
	    {"1.2.3.4", 80, "*", "matches rule *"},
	    {"[::1]", 443, "*", "matches rule *"},
	    {"1.2.3.4", 22, NULL, "1.2.3.4:22 is not in the allow-list"},
	    {"x.example", 8080, NULL, "x.example:8080 is not in the allow-list"},
	    {"bad host", 443, NULL, "invalid host \"bad host\""},
	};
	run_decide(any, AR_ARRAY_SIZE(any), any_cases, AR_ARRAY_SIZE(any_cases));

	char *anyport[] = {"*:22"};
	static const struct decide_case anyport_cases[] = {
	    {"git.example", 22, "*:22", "matches rule *:22"},
	    {"::1", 22, "*:22", "matches rule *:22"},
	    {"git.example", 443, NULL, "git.example:443 is not in the allow-list"},
	};
	run_decide(anyport, AR_ARRAY_SIZE(anyport), anyport_cases, AR_ARRAY_SIZE(anyport_cases));

	/* the first matching rule, in the order written, is the one reported */
	char *order[] = {"*.github.com", "api.github.com", "*"};
	static const struct decide_case order_cases[] = {
	    {"api.github.com", 443, "*.github.com", "matches rule *.github.com"},
	    {"github.com", 443, "*", "matches rule *"},
	};
	run_decide(order, AR_ARRAY_SIZE(order), order_cases, AR_ARRAY_SIZE(order_cases));
}

static void test_decide_empty(void **state)
{
	ar_autorules struct ar_rules *r = NULL;
	ar_error_t err = NULL;
	struct ar_decision d;
	assert_int_equal(ar_rules_compile(NULL, 0, "--allow", &r, &err), 0);
	assert_int_equal(ar_rules_count(r), 0);
	ar_rules_decide_str(r, "example.com", 443, &d);
	assert_false(d.allowed);
	assert_null(d.rule);
	assert_string_equal(d.reason, "example.com:443 is not in the allow-list");
	/* no rules object at all denies as well */
	ar_rules_decide_str(NULL, "example.com", 80, &d);
	assert_false(d.allowed);
	assert_string_equal(d.reason, "example.com:80 is not in the allow-list");
}

static void test_decide_canonical(void **state)
{
	char *list[] = {"*.github.com:443"};
	ar_autorules struct ar_rules *r = NULL;
	ar_error_t err = NULL;
	struct ar_host h;
	struct ar_decision d;
	assert_int_equal(ar_rules_compile(list, 1, "--allow", &r, &err), 0);
	assert_int_equal(ar_host_canonicalize("Api.GitHub.com", &h, &err), 0);
	ar_rules_decide(r, &h, 443, &d);
	assert_true(d.allowed);
	assert_string_equal(d.rule, "*.github.com:443");
	assert_string_equal(d.reason, "matches rule *.github.com:443");
	ar_rules_decide(r, &h, 444, &d);
	assert_false(d.allowed);
	assert_string_equal(d.reason, "api.github.com:444 is not in the allow-list");
}

static void test_split_port(void **state)
{
	static const struct {
		const char *in;
		int def;
		const char *host;
		int port;
	} ok[] = {
	    {"example.com:443", -1, "example.com", 443},
	    {"example.com", 80, "example.com", 80},
	    {"Example.com:8080", 80, "Example.com", 8080},
	    {"1.2.3.4:80", 0, "1.2.3.4", 80},
	    {"[::1]:8080", -1, "[::1]", 8080},
	    {"[::1]", 443, "[::1]", 443},
	    {"h:65535", -1, "h", 65535},
	    {"h:1", -1, "h", 1},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(ok); i++) {
		char host[AR_HOST_MAX];
		int port = -7;
		ar_error_t err = NULL;
		if (ar_host_split_port(ok[i].in, host, sizeof(host), &port, ok[i].def, &err) != 0)
			fail_msg("%s: %s", ok[i].in, err->msg);
		assert_string_equal(host, ok[i].host);
		assert_int_equal(port, ok[i].port);
	}

	static const struct {
		const char *in;
		int def;
		const char *msg;
	} bad[] = {
	    {"example.com", -1, "invalid authority \"example.com\": missing port"},
	    {"example.com", 0, "invalid authority \"example.com\": missing port"},
	    {"::1", 443,
	     "invalid authority \"::1\": an IPv6 address must be in brackets, as [ADDR]:PORT"},
	    {"::1:443", -1,
	     "invalid authority \"::1:443\": an IPv6 address must be in brackets, as "
	     "[ADDR]:PORT"},
	    {"host:", 80, "invalid authority \"host:\": bad port (expected 1-65535)"},
	    {"host:0", 80, "invalid authority \"host:0\": bad port (expected 1-65535)"},
	    {"host:65536", 80, "invalid authority \"host:65536\": bad port (expected 1-65535)"},
	    {"host:http", 80, "invalid authority \"host:http\": bad port (expected 1-65535)"},
	    {"host:+1", 80, "invalid authority \"host:+1\": bad port (expected 1-65535)"},
	    {"host: 1", 80, "invalid authority \"host: 1\": whitespace or a control character"},
	    {":443", 80, "invalid authority \":443\": empty host"},
	    {"", 80, "invalid authority \"\": empty"},
	    {"[::1]x", 80, "invalid authority \"[::1]x\": unexpected text after ']'"},
	    {"[::1", 80, "invalid authority \"[::1\": unterminated '['"},
	    {"[::1]:", 80, "invalid authority \"[::1]:\": bad port (expected 1-65535)"},
	    {"abcdefgh:1", 80, "invalid authority \"abcdefgh:1\": host too long"},
	    {"a\r\n:80", 80,
	     "invalid authority \"a\\x0d\\x0a:80\": whitespace or a control character"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(bad); i++) {
		char host[8];
		int port = -7;
		ar_error_t err = NULL;
		if (ar_host_split_port(bad[i].in, host, sizeof(host), &port, bad[i].def, &err) !=
		    -1)
			fail_msg("%s: accepted", bad[i].in);
		assert_string_equal(err->msg, bad[i].msg);
		assert_int_equal(port, -7);
		ar_error_release(&err);
	}
}

static void test_host_format(void **state)
{
	struct ar_host h;
	ar_error_t err = NULL;
	char buf[64];
	assert_int_equal(ar_host_canonicalize("[::1]", &h, &err), 0);
	ar_host_format(&h, 443, buf, sizeof(buf));
	assert_string_equal(buf, "[::1]:443");
	assert_int_equal(ar_host_canonicalize("127.1", &h, &err), 0);
	ar_host_format(&h, 80, buf, sizeof(buf));
	assert_string_equal(buf, "127.0.0.1:80");
}

/* Differential check against glibc's inet_aton over random numeric-looking strings:
 * whatever a resolver would read as an address must come out as the same address,
 * never as a name; and every address we accept (without a trailing dot) inet_aton
 * reads the same way. */
static void test_inet_aton_agreement(void **state)
{
	static const char alphabet[] = "0123456789xXaAfF.....";
	uint32_t seed = 12345;
	unsigned addresses = 0;
	for (int iter = 0; iter < 200000; iter++) {
		char s[16];
		size_t len = 1 + iter % 14;
		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			s[i] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
		}
		s[len] = '\0';
		struct in_addr a;
		struct ar_host h;
		ar_error_t err = NULL;
		int aton = inet_aton(s, &a);
		int rc = ar_host_canonicalize(s, &h, &err);
		ar_error_release(&err);
		if (aton == 1) {
			if (rc != 0 || h.family != AF_INET || h.addr.v4.s_addr != a.s_addr)
				fail_msg("%s: inet_aton reads an address, we do not", s);
			addresses++;
		} else if (rc == 0 && s[len - 1] != '.') {
			if (h.family == AF_INET)
				fail_msg("%s: we read %s, inet_aton fails", s, h.name);
			/* a name: inet_aton must not see a number in it */
			assert_int_equal(h.family, 0);
		}
	}
	/* the generator must actually produce addresses for this to mean anything */
	assert_true(addresses > 1000);
}

/* Random IPv6 addresses with runs of zero groups: the text we print parses back to
 * the same address and canonicalises to itself. */
static void test_ipv6_roundtrip(void **state)
{
	uint32_t seed = 777;
	for (int iter = 0; iter < 20000; iter++) {
		struct in6_addr a;
		char text[64];
		for (int g = 0; g < 8; g++) {
			seed = seed * 1103515245u + 12345u;
			unsigned v = (seed >> 8) % 4 == 0 ? (seed >> 12) & 0xffff : 0;
			a.s6_addr[2 * g] = (unsigned char)(v >> 8);
			a.s6_addr[2 * g + 1] = (unsigned char)v;
		}
		if (IN6_IS_ADDR_V4MAPPED(&a))
			continue;
		inet_ntop(AF_INET6, &a, text, sizeof(text));
		struct ar_host h, h2;
		ar_error_t err = NULL;
		assert_int_equal(ar_host_canonicalize(text, &h, &err), 0);
		assert_int_equal(h.family, AF_INET6);
		assert_memory_equal(&h.addr.v6, &a, sizeof(a));
		struct in6_addr back;
		assert_int_equal(inet_pton(AF_INET6, h.name, &back), 1);
		assert_memory_equal(&back, &a, sizeof(a));
		assert_int_equal(ar_host_canonicalize(h.name, &h2, &err), 0);
		assert_string_equal(h2.name, h.name);
		assert_null(strstr(h.name, ":::"));
		assert_null(strchr(h.name, '.'));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_canonicalize_ok),
	    cmocka_unit_test(test_canonicalize_lengths),
	    cmocka_unit_test(test_canonicalize_errors),
	    cmocka_unit_test(test_canonicalize_n),
	    cmocka_unit_test(test_compile_errors),
	    cmocka_unit_test(test_compile_error_escapes),
	    cmocka_unit_test(test_compile_ok),
	    cmocka_unit_test(test_decide),
	    cmocka_unit_test(test_decide_any),
	    cmocka_unit_test(test_decide_empty),
	    cmocka_unit_test(test_decide_canonical),
	    cmocka_unit_test(test_split_port),
	    cmocka_unit_test(test_host_format),
	    cmocka_unit_test(test_inet_aton_agreement),
	    cmocka_unit_test(test_ipv6_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The target table, the mode switch and the helpers every target shares. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/util.h"
#include "agentrun/spec.h"
#include "fuzz.h"

const struct ar_fuzz_target ar_fuzz_targets[] = {
    {"policy", ar_fuzz_policy, "policy JSON (ar_policy_parse)"},
    {"rules", ar_fuzz_rules, "allow-list rules, one per line (ar_rules_compile, decide)"},
    {"host", ar_fuzz_host, "hosts and authorities (ar_host_canonicalize_n, ar_host_split_port)"},
    {"audit", ar_fuzz_audit, "proxy audit log, JSON Lines (ar_audit_summarize)"},
    {"seccomp", ar_fuzz_seccomp, "seccomp profile JSON (ar_seccomp_parse_kernel)"},
    {"inspect", ar_fuzz_inspect, "docker inspect JSON (ar_check_inspect_parse, check)"},
    {"k8s", ar_fuzz_k8s, "Kubernetes manifests, YAML or JSON (ar_manifest_read, check)"},
    {"procfs", ar_fuzz_procfs,
     "/proc and cgroup file text (src/check/procparse.c, cgroup_parse.c)"},
    {"util", ar_fuzz_util, "sizes, CPU counts, integers, JSON and shell quoting (src/util)"},
    {"ocistate", ar_fuzz_ocistate, "OCI state JSON on a hook's stdin (ar_oci_state_parse)"},
    {"bundle", ar_fuzz_bundle, "OCI config.json (ar_check_bundle, check --bundle)"},
#ifdef AR_FUZZ_HAVE_PROXY
    {"tls", ar_fuzz_tls, "TLS ClientHello server_name (ar_proxy_client_hello_sni)"},
    {"http1", ar_fuzz_http1, "HTTP/1 heads and chunked bodies (ar_h1_*)"},
#endif
    {"dns", ar_fuzz_dns, "DNS queries over UDP and TCP (ar_dns_stub_answer, src/dns)"},
    {"secrets", ar_fuzz_secrets, "request heads and bodies with placeholders (src/secrets)"},
    {"kubeconfig", ar_fuzz_kubeconfig,
     "a kubeconfig and its tokens, as review reads them (ar_review_kubeconfig, ar_jwt_payload)"},
    {NULL, NULL, NULL},
};

const struct ar_fuzz_target *ar_fuzz_find(const char *name)
{
	for (const struct ar_fuzz_target *t = ar_fuzz_targets; name != NULL && t->name; t++)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

const struct ar_fuzz_target *ar_fuzz_select(const char *argv0)
{
	const char *env = getenv("AR_FUZZ_TARGET");
	if (env != NULL && *env != '\0')
		return ar_fuzz_find(env);
	if (argv0 == NULL)
		return NULL;
	const char *base = strrchr(argv0, '/');
	base = base != NULL ? base + 1 : argv0;
	if (strncmp(base, "ar-fuzz-", 8) != 0)
		return NULL;
	return ar_fuzz_find(base + 8);
}

void ar_fuzz_list(void)
{
	for (const struct ar_fuzz_target *t = ar_fuzz_targets; t->name; t++)
		fprintf(stderr, "  %-8s %s\n", t->name, t->what);
}

void ar_fuzz_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "ar-fuzz: invariant broken at %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	abort();
}

char *ar_fuzz_dup(const uint8_t *data, size_t size)
{
	char *p = ar_xmalloc(size > 0 ? size : 1);
	if (size > 0)
		memcpy(p, data, size);
	return p;
}

char *ar_fuzz_strndup(const uint8_t *data, size_t size)
{
	char *p = ar_xmalloc(size + 1);
	if (size > 0)
		memcpy(p, data, size);
	p[size] = '\0';
	return p;
}

char **ar_fuzz_lines(const uint8_t *data, size_t size, size_t max, size_t *n)
{
	char **v = ar_xcalloc(max + 1, sizeof(char *));
	size_t k = 0;
	for (size_t pos = 0; pos < size && k < max;) {
		const uint8_t *nl = memchr(data + pos, '\n', size - pos);
		size_t end = nl != NULL ? (size_t)(nl - data) : size;
		v[k++] = ar_fuzz_strndup(data + pos, end - pos);
		pos = end + 1;
	}
	*n = k;
	return v;
}

bool ar_fuzz_is_one_line(const char *s)
{
	/* AR_FUZZ_LAX_TEXT=1 looks past this class of finding while one is open */
	static int lax = -1;
	if (lax == -1)
		lax = getenv("AR_FUZZ_LAX_TEXT") != NULL &&
		      strcmp(getenv("AR_FUZZ_LAX_TEXT"), "1") == 0;
	if (lax)
		return true;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return false;
	return true;
}

void ar_fuzz_check_error(ar_error_t *err, const char *prefix)
{
	AR_FUZZ_CHECK(*err != NULL, "a failure without an error (prefix %s)", prefix);
	const char *msg = (*err)->msg;
	AR_FUZZ_CHECK(msg != NULL && *msg != '\0', "an error without a message");
	AR_FUZZ_CHECK(strncmp(msg, prefix, strlen(prefix)) == 0,
		      "error message does not start with \"%s\": %s", prefix, msg);
	AR_FUZZ_CHECK(ar_fuzz_is_one_line(msg), "error message is not one printable line: %s", msg);
	ar_error_release(err);
}

const struct ar_spec *ar_fuzz_container_spec(const struct ar_policy *p, struct ar_spec **cache)
{
	ar_auto_error ar_error_t err = NULL;
	if (*cache == NULL)
		AR_FUZZ_CHECK(ar_spec_build_container(p, cache, &err) == 0,
			      "the spec of a fixed policy: %s", err ? err->msg : "?");
	return *cache;
}

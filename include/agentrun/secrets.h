/* Secrets the agent never holds (docs/secrets.md, DESIGN §11): the sandbox sees a
 * placeholder per run and secret, `agentrun-secret-NAME-<128 random bits as hex>`,
 * and the proxy puts the real value in only on the way to the secret's hosts.
 *
 * The set (struct ar_secrets) is made by agentrun before the proxy is forked, with
 * the placeholders and the compiled host rules but no value; the proxy process reads
 * the values itself (ar_secrets_load) into memory that is locked, left out of core
 * dumps and wiped when the set is freed. The functions that look at requests are pure,
 * over caller buffers (unit-tested and fuzzed: tests/fuzz/fuzz_secrets.c). */
#ifndef AGENTRUN_SECRETS_H
#define AGENTRUN_SECRETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentrun/error.h"
#include "agentrun/policy.h"
#include "agentrun/rules.h"
#include "agentrun/util.h"

#define AR_SECRET_PREFIX     "agentrun-secret-"
#define AR_SECRET_PREFIX_LEN 16
#define AR_SECRET_HEX	     32 /* 128 random bits */
#define AR_SECRET_PLACEHOLDER_MAX                                                                  \
	(AR_SECRET_PREFIX_LEN + AR_POLICY_SECRET_NAME_MAX + 1 + AR_SECRET_HEX + 1)
#define AR_SECRET_VALUE_MAX (64 * 1024)

struct ar_secret {
	char *name;
	char *from; /* env:NAME or file:PATH */
	char placeholder[AR_SECRET_PLACEHOLDER_MAX];
	size_t plen;
	struct ar_rules *hosts;
	const char *value; /* in the vault; NULL until ar_secrets_load */
	size_t vlen;
	bool in_env; /* the sandbox's environment carries the placeholder (not the kubeconfig's) */
};

struct ar_kubeconfig;

struct ar_secrets {
	char *origin; /* the policy file, for messages */
	size_t n;
	struct ar_secret *s;
	char *vault; /* the values: mmap'd, MADV_DONTDUMP, mlock'd when allowed */
	size_t vault_len;
	char *upstream_ca_pem; /* after load: the kubeconfig cluster's CA, or NULL */
};

/* The policy's secrets with fresh placeholders; NULL (and 0) when it has none. */
int ar_secrets_new(const struct ar_policy *p, struct ar_secrets **out, ar_error_t *err);
/* The same from secrets given another way (agentrun proxy's --secret flags); origin
 * names them in messages. */
int ar_secrets_new_specs(const struct ar_secret_spec *specs, size_t n, const char *origin,
			 struct ar_secrets **out, ar_error_t *err);
/* The kubeconfig's token as one more secret (AR_KUBECONFIG_SECRET, from
 * "kubeconfig:PATH", for k->rule only); *s may be NULL (a set is made). */
int ar_secrets_add_kubeconfig(struct ar_secrets **s, const struct ar_policy *p,
			      const struct ar_kubeconfig *k, ar_error_t *err);
/* With network proxy, the policy's kubeconfig (read into *k, its token wiped there: the
 * proxy reads it again) becomes that secret; its server must be allowed (an error
 * naming the rule to add). 0 and nothing done otherwise. */
int ar_secrets_kubeconfig(struct ar_secrets **s, const struct ar_policy *p, struct ar_kubeconfig *k,
			  ar_error_t *err);
/* The placeholders of a sandbox made elsewhere (an OCI bundle's process.env, "K=V"
 * entries): each secret's variable there must hold a placeholder of its name, which the
 * set takes instead of its own. Errors name the secret and `origin`. */
int ar_secrets_adopt(struct ar_secrets *s, char *const *env, const char *origin, ar_error_t *err);
/* Every source exists and is not empty (run checks before anything is made; the value
 * is not kept). Errors name the secret and its source. */
int ar_secrets_check_sources(struct ar_secrets *s, ar_error_t *err);
/* Read the values (the proxy process, before it drops its privileges). A file's one
 * trailing newline is not part of the value; control characters are refused (a value
 * goes into header lines). */
int ar_secrets_load(struct ar_secrets *s, ar_error_t *err);
/* Wipe the values, free the set. */
void ar_secrets_free(struct ar_secrets *s);
void ar_cleanup_secretsp(struct ar_secrets **s);
#define ar_autosecrets __attribute__((cleanup(ar_cleanup_secretsp)))

/* Bit i set: secret i may go to host:port. */
uint64_t ar_secrets_bound(const struct ar_secrets *s, const struct ar_host *host, int port);
/* Secrets whose placeholder appears in buf (ASCII case ignored, and percent-encoding
 * decoded: detection errs on the side of refusing). */
uint64_t ar_secrets_find(const struct ar_secrets *s, const char *buf, size_t len);
/* The same for a DNS name or a host: dots ignored too (a placeholder split across
 * labels). */
uint64_t ar_secrets_find_name(const struct ar_secrets *s, const char *name);
/* Names of the secrets in mask, comma-separated, into out (for reasons and the audit). */
void ar_secrets_names(const struct ar_secrets *s, uint64_t mask, char *out, size_t size);

/* Rewrite a complete request head (request line to the empty line) for an upstream
 * that may receive the secrets in `bound`: every placeholder of a bound secret in the
 * request line (path and query) and the header values is replaced by its value, also
 * inside `Authorization: Basic` (decoded, replaced, encoded again). Returns the
 * secrets whose placeholders appear but are not bound (the caller refuses the request
 * when it is not 0; out is then unspecified); *used gets the ones put in. Pure. */
uint64_t ar_secrets_rewrite_head(const struct ar_secrets *s, uint64_t bound, const char *head,
				 size_t len, struct ar_buf *out, uint64_t *used);
/* Replace real values by their placeholders (a response head echoing one back).
 * Returns whether anything was replaced (out is then the masked text). */
bool ar_secrets_mask(const struct ar_secrets *s, const char *in, size_t len, struct ar_buf *out);

/* A body looked at as it streams: placeholders split across reads are found. Zero it
 * before the body. */
struct ar_secrets_scan {
	uint64_t scanned;
	size_t carry;
	char tail[AR_SECRET_PLACEHOLDER_MAX * 3];
};
/* Feed the next bytes; returns the secrets seen so far. */
uint64_t ar_secrets_scan_feed(const struct ar_secrets *s, struct ar_secrets_scan *st,
			      const char *buf, size_t len);

/* ---- the kubeconfig (src/secrets/kubeconfig.c) ---- */

/* What agentrun takes from a kubeconfig's current context. */
struct ar_kubeconfig {
	char *name;   /* the context's name */
	char *server; /* https://host:port as written */
	char host[AR_HOST_MAX];
	int port;
	char *rule;   /* "host:port": the token's only host */
	char *token;  /* the real bearer token */
	char *ca_pem; /* the cluster's CA (the proxy verifies the server with it), or NULL */
	char *ns;     /* the context's namespace, or NULL */
};
/* The secret the kubeconfig's token becomes (not in the environment: in the sandbox's
 * kubeconfig). */
#define AR_KUBECONFIG_SECRET "KUBECONFIG_TOKEN"
/* Pure: a kubeconfig's text (YAML or JSON); relative certificate-authority paths are
 * read below dir. Errors name origin: no current context, no server, no token (client
 * certificates and exec plugins are not supported), insecure-skip-tls-verify, a server
 * that is not https://. */
int ar_kubeconfig_parse(const char *text, size_t len, const char *origin, const char *dir,
			struct ar_kubeconfig *k, ar_error_t *err);
int ar_kubeconfig_load(const char *path, struct ar_kubeconfig *k, ar_error_t *err);
void ar_kubeconfig_free(struct ar_kubeconfig *k);
/* The sandbox's kubeconfig: the same server and context, the token's placeholder, and
 * the sandbox CA (PEM) as the cluster's certificate-authority-data. */
void ar_kubeconfig_render(const struct ar_kubeconfig *k, const char *placeholder,
			  const char *ca_pem, struct ar_buf *out);

/* Standard base64 (RFC 4648, padded), for Basic credentials. decode: -1 on bad input. */
void ar_base64_encode(const unsigned char *in, size_t len, struct ar_buf *out);
int ar_base64_decode(const char *in, size_t len, struct ar_buf *out);

#endif

/* The policy model: one typed struct, read from JSON once (src/policy/policy.c is the
 * only place that knows JSON), with defaults, validation and derived names.
 * CLI overrides write into the same struct. Everything else takes
 * `const struct ar_policy *`. See docs/policy.md. */
#ifndef AGENTRUN_POLICY_H
#define AGENTRUN_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentrun/error.h"

#define AR_POLICY_NAME_MAX	     31
#define AR_DEFAULT_PROXY_PORT	     3128
#define AR_DEFAULT_KUBECONFIG_TARGET "/home/agent/.kube/config"
/* A policy file's limits when it sets none (docs/policy.md; review compares with them). */
#define AR_POLICY_DEFAULT_PIDS	     64
#define AR_POLICY_DEFAULT_MEMORY     (256LL << 20)
#define AR_POLICY_DEFAULT_MEMORY_STR "256m"
#define AR_POLICY_DEFAULT_CPUS_MILLI 1000
#define AR_POLICY_DEFAULT_CPUS_STR   "1"
/* The range `run` takes a sandbox's uid/gid from when the policy names no `user`
 * (systemd's DynamicUser range, never a host account). */
#define AR_DYNAMIC_UID_MIN 61184
#define AR_DYNAMIC_UID_MAX 65519

enum ar_network {
	AR_NETWORK_PROXY,
	AR_NETWORK_NONE,
};

/* "mode": enforce (the default) or learn (docs/learn.md): the proxy lets a name
 * outside the list through and audits it as learned. */
enum ar_mode {
	AR_MODE_ENFORCE,
	AR_MODE_LEARN,
};

enum ar_sni_mode {
	AR_SNI_OFF,	/* no ClientHello inspection */
	AR_SNI_CHECK,	/* when a ClientHello has SNI it must match the CONNECT host */
	AR_SNI_REQUIRE, /* a ClientHello with matching SNI is required */
};

struct ar_mount {
	char *source; /* absolute host path */
	char *target; /* absolute path inside the sandbox */
	bool readonly;
	char *flag; /* "--mount SRC:DST" when a CLI override added it, else NULL */
};

struct ar_env {
	char *key;
	char *value;
};

struct ar_byte_budget {
	char *host; /* canonical (lowercase, no trailing dot) */
	int64_t max_bytes_out;
};

struct ar_limits {
	int64_t pids;	    /* > 0 */
	int64_t memory;	    /* bytes, > 0 */
	int64_t cpus_milli; /* 1000 = one CPU, > 0 */
	char *memory_str;   /* as written ("256m"), for messages */
	char *cpus_str;	    /* as written ("1"), for messages */
	/* Without root too, run fails (125) rather than run without a limit the host
	 * cannot enforce (root always does: docs/cgroups.md#without-root). */
	bool required;
};

/* A secret the agent never holds (docs/secrets.md): the sandbox sees a placeholder,
 * the proxy adds the real value only on the way to `hosts`. */
#define AR_POLICY_SECRETS_MAX	  32
#define AR_POLICY_SECRET_NAME_MAX 64
/* SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, NODE_EXTRA_CA_CERTS, GIT_SSL_CAINFO:
 * the sandbox's CA bundle, set by agentrun when the policy has secrets. */
#define AR_POLICY_CA_ENV_N 5
extern const char *const ar_policy_ca_env_vars[AR_POLICY_CA_ENV_N];
struct ar_secret_spec {
	char *name;   /* an environment variable name */
	char *from;   /* "env:NAME" or "file:/abs/path", as written */
	char **hosts; /* rules in the allow-list's syntax, each also in allowed_hosts */
	size_t n_hosts;
};

struct ar_proxy_settings {
	int port; /* listen port, default 3128 */
	struct ar_byte_budget *budgets;
	size_t n_budgets;
	enum ar_sni_mode sni;
	/* Ranges a name rule may resolve into (a container host, a kind control plane):
	 * "172.16.0.0/12", validated with ar_cidr_parse, as written. */
	char **allow_private;
	size_t n_allow_private;
	bool transparent; /* capture proxy-unaware clients and DNS (default true) */
	/* The synthetic range of the capture's DNS stub, an IPv4 CIDR as written; NULL:
	 * AR_DNS_POOL_DEFAULT (198.18.0.0/15). */
	char *dns_pool;
	/* A PEM file of CAs the proxy also trusts for the upstream leg of a terminated
	 * connection (tests, private clusters); NULL: the host's trust store only. */
	char *upstream_ca;
};

struct ar_policy {
	char *origin; /* file path it was read from, or "<embedded default>" */
	char *path;   /* that file, absolute (what state records); NULL: not a file */

	char *name;
	char *image;  /* may be NULL: render then needs one */
	char *rootfs; /* NULL: read-only view of the host root */
	char **allowed_hosts;
	size_t n_allowed_hosts;
	char *kubeconfig;	 /* host path, NULL when absent */
	char *kubeconfig_target; /* default AR_DEFAULT_KUBECONFIG_TARGET */
	struct ar_mount *mounts;
	size_t n_mounts;
	char **tmpfs; /* absolute paths */
	size_t n_tmpfs;
	struct ar_limits limits;
	char *user; /* as written: "1000", "1000:1000" */
	uid_t uid;
	gid_t gid; /* = uid when the user field has no ":GID" */
	/* `user` was given (policy file or --user): run honours it. Else run picks a
	 * dynamic uid/gid per sandbox (docs/sandbox.md) and uid/gid above are only what
	 * render and a user namespace use. */
	bool user_set;
	struct ar_env *env; /* sorted by key, keys unique */
	size_t n_env;
	char *seccomp; /* "default", "unconfined" or a path to a profile */
	enum ar_network network;
	struct ar_proxy_settings proxy;
	struct ar_secret_spec *secrets; /* sorted by name, names unique */
	size_t n_secrets;
	enum ar_mode mode;

	/* Derived from name. */
	char net_name[AR_POLICY_NAME_MAX + 16];	   /* NAME-net */
	char egress_name[AR_POLICY_NAME_MAX + 16]; /* NAME-egress */
	char proxy_name[AR_POLICY_NAME_MAX + 16];  /* NAME-proxy */
	char agent_name[AR_POLICY_NAME_MAX + 16];  /* NAME-agent */
	char proxy_url[AR_POLICY_NAME_MAX + 48];   /* http://NAME-proxy:PORT (docker view) */
};

/* Parse a policy document. `origin` names the source in messages
 * ("p.json: limits.memory: ..."). Returns 0 or -1 with *err set. */
int ar_policy_parse(const char *json, size_t len, const char *origin, struct ar_policy **out,
		    ar_error_t *err);
/* Read and parse a file; the messages name the path. */
int ar_policy_load(const char *path, struct ar_policy **out, ar_error_t *err);
/* The embedded default used by `run` without --policy (DESIGN §2): no network,
 * pids 256, memory 512m, a dynamic uid (65534 in a user namespace), tmpfs /tmp,
 * default seccomp. */
int ar_policy_default(struct ar_policy **out, ar_error_t *err);
/* Recompute the derived names after `name` or `proxy.port` changed. */
void ar_policy_derive(struct ar_policy *p);
/* Check cross-field rules again after CLI overrides. */
int ar_policy_validate(const struct ar_policy *p, ar_error_t *err);
void ar_policy_free(struct ar_policy *p);
void ar_cleanup_policyp(struct ar_policy **p);
#define ar_autopolicy __attribute__((cleanup(ar_cleanup_policyp)))

/* When the policy names a `user` that is a host account with a login shell (a person,
 * not a service): a warning for run and check to print (malloc'd), else NULL. */
char *ar_policy_user_warning(const struct ar_policy *p);

/* Where mounts[i] came from, for messages: "p.json: mounts[1]" or "--mount /a:/b"
 * (the caller frees it). */
char *ar_policy_mount_origin(const struct ar_policy *p, size_t i);
/* "off", "check" or "require": proxy.sni as the policy and `agentrun proxy --sni` spell it. */
const char *ar_policy_sni_word(enum ar_sni_mode mode);
/* Lookup helper: the env value for KEY or NULL. */
const char *ar_policy_getenv(const struct ar_policy *p, const char *key);
/* Set or replace an env entry keeping the array sorted. */
void ar_policy_setenv(struct ar_policy *p, const char *key, const char *value);

/* The proxy variables of a sandbox with `network: proxy` (src/policy/proxy_env.c), the
 * one definition run, render and check use: HTTP_PROXY, HTTPS_PROXY, http_proxy,
 * https_proxy = the proxy URL, then NO_PROXY, no_proxy = localhost,127.0.0.1; the
 * policy env comes after them. */
#define AR_PROXY_ENV_N_URL	4
#define AR_PROXY_ENV_N_NO_PROXY 2
#define AR_PROXY_ENV_NO_PROXY	"localhost,127.0.0.1"
extern const char *const ar_proxy_env_url_vars[AR_PROXY_ENV_N_URL];
extern const char *const ar_proxy_env_no_proxy_vars[AR_PROXY_ENV_N_NO_PROXY];
/* Call fn for each of the six, in that order. */
void ar_proxy_env_foreach(const char *proxy_url,
			  void (*fn)(const char *key, const char *value, void *data), void *data);
/* Is key one of the six? */
bool ar_proxy_env_is_proxy_var(const char *key);

#endif

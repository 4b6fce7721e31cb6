/* The agent spec: one derivation, from a policy after its overrides, of what the agent
 * gets — user, environment, mounts, masked and read-only system paths, namespaces,
 * limits, seccomp profile, network plan. `render` (oci) and `check` (bundle) read it,
 * and `run`'s mount plan reads its system-path table, so the sandbox is spelled once.
 * Pure apart from reading a seccomp profile file. See docs/oci.md. */
#ifndef AGENTRUN_SPEC_H
#define AGENTRUN_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentrun/error.h"
#include "agentrun/policy.h"

struct ar_run_opts;

/* ---- masked and read-only system paths (one table for run, render and check) ---- */

enum ar_spec_path_kind {
	AR_SPEC_MASKED,	  /* hidden: an empty read-only tmpfs, or /dev/null over a file */
	AR_SPEC_READONLY, /* bound onto itself read-only */
};

struct ar_spec_path {
	const char *path;
	enum ar_spec_path_kind kind;
};

/* runc's maskedPaths and readonlyPaths, plus /proc/sysrq-trigger masked (not merely
 * read-only) and /sys/kernel/security, /sys/kernel/debug masked. /proc entries first,
 * then /sys: run mounts sysfs between the two groups. */
extern const struct ar_spec_path ar_spec_system_paths[];
extern const size_t ar_spec_n_system_paths;

/* ---- namespaces ---- */

struct ar_spec_namespace {
	const char *oci;  /* runtime-spec linux.namespaces[].type: "pid", "network", ... */
	const char *proc; /* /proc/PID/ns/ name: "pid", "net", ... */
	int clone_flag;	  /* CLONE_NEWPID, ... */
};

/* Every namespace the agent gets a fresh one of (the user namespace is run's own
 * business: only when agentrun is not root). */
extern const struct ar_spec_namespace ar_spec_namespaces[];
extern const size_t ar_spec_n_namespaces;

/* ---- proxy environment ---- */

/* The proxy variables are the policy's one definition (include/agentrun/policy.h). */
#define AR_SPEC_N_PROXY_VARS	AR_PROXY_ENV_N_URL
#define ar_spec_proxy_vars	ar_proxy_env_url_vars
#define AR_SPEC_N_NO_PROXY_VARS AR_PROXY_ENV_N_NO_PROXY
#define ar_spec_no_proxy_vars	ar_proxy_env_no_proxy_vars
#define AR_SPEC_NO_PROXY	AR_PROXY_ENV_NO_PROXY
/* The proxy URL an OCI container sees until the network code fills the real one: the
 * proxy end of the container's own veth (each container has a private link, so the
 * address is the same for all). */
#define AR_SPEC_PROXY_ADDR "10.254.0.1"
/* Secrets in an OCI bundle (docs/secrets.md): the CA bundle is the bundle's file
 * AR_SPEC_CA_BUNDLE_FILE (render --bundle writes the host's roots into it, the hook
 * appends the sandbox CA), bound read-only at AR_SPEC_CA_BUNDLE in the container. */
#define AR_SPEC_CA_BUNDLE_FILE "agentrun-ca-bundle.pem"
#define AR_SPEC_CA_BUNDLE      "/etc/agentrun/ca-bundle.pem"

/* ---- the spec ---- */

enum ar_spec_mount_kind {
	AR_SPEC_MNT_TMPFS, /* writable scratch, nosuid, nodev */
	AR_SPEC_MNT_BIND,  /* recursive bind, nosuid, nodev */
};

struct ar_spec_mount {
	enum ar_spec_mount_kind kind;
	const char *source; /* host path (bind), NULL (tmpfs) */
	const char *target;
	bool readonly;
	/* where it comes from, as run's mount plan names it: "p.json: tmpfs[0]", "p.json:
	 * mounts[1]" or the override's flag ("--mount SRC:DST"), "p.json: kubeconfig" */
	char *field;
};

struct ar_spec_limits {
	int64_t pids;
	int64_t memory;	     /* bytes */
	int64_t memory_swap; /* memory + swap, bytes: = memory, i.e. no swap */
	int64_t cpus_milli;
	int64_t cpu_period; /* µs */
	int64_t cpu_quota;  /* µs per period */
};

struct ar_spec_net {
	enum ar_network mode;
	/* network proxy: the URL in the proxy variables; NULL for none. A placeholder
	 * (http://AR_SPEC_PROXY_ADDR:PORT) unless the caller passed the real one. */
	char *proxy_url;
};

struct ar_spec {
	const struct ar_policy *p; /* borrowed: outlives the spec */
	uid_t uid;
	gid_t gid;
	char **env;		      /* "K=V", NULL-terminated, in order */
	const char *rootfs;	      /* NULL: read-only view of the host root */
	bool readonly_root;	      /* always true */
	bool no_new_privs;	      /* always true */
	bool no_capabilities;	      /* every set empty, always true */
	struct ar_spec_mount *mounts; /* tmpfs, then policy mounts, then the kubeconfig */
	size_t n_mounts;
	struct ar_spec_limits limits;
	const char *seccomp; /* "default", "unconfined" or a profile path */
	struct ar_spec_net net;
};

struct ar_spec_opts {
	const struct ar_run_opts *run; /* run's own settings (TERM); NULL for render/check */
	const char *proxy_url;	       /* NULL: the placeholder */
};

/* Derive the spec of p. Errors name the policy field. */
int ar_spec_build(const struct ar_policy *p, const struct ar_spec_opts *o, struct ar_spec **out,
		  ar_error_t *err);
void ar_spec_free(struct ar_spec *s);
void ar_cleanup_specp(struct ar_spec **s);
#define ar_autospec __attribute__((cleanup(ar_cleanup_specp)))

/* The value of KEY in the spec's environment, or NULL. */
const char *ar_spec_getenv(const struct ar_spec *s, const char *key);

/* The seccomp profile text: the embedded default, NULL for "unconfined", or the
 * policy's file (read into *owned). *origin names it in messages. */
int ar_spec_seccomp_text(const struct ar_spec *s, char **owned, const char **text,
			 const char **origin, ar_error_t *err);

#endif

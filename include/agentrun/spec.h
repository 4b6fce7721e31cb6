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

/* When `run` makes each one: in the clone, or unshared by the sandbox's init itself. */
enum ar_spec_ns_start {
	AR_SPEC_NS_AT_CLONE,
	/* network: first thing in the init, on its own CPU time, while agentrun goes on (the
	 * proxy's netns, the cgroups) instead of waiting for it in the clone */
	AR_SPEC_NS_BY_INIT,
	/* cgroup: once the init is in its cgroup, so that cgroup is the namespace's root */
	AR_SPEC_NS_IN_CGROUP,
};

struct ar_spec_namespace {
	const char *oci;  /* runtime-spec linux.namespaces[].type: "pid", "network", ... */
	const char *proc; /* /proc/PID/ns/ name: "pid", "net", ... */
	int clone_flag;	  /* CLONE_NEWPID, ... */
	const char *what; /* for messages: "PID namespaces" */
	enum ar_spec_ns_start start;
};

/* Every namespace the agent gets a fresh one of, the one list run's clone and preflight,
 * the OCI render and the checks (bundle, /proc) read. The user namespace is not one of
 * them: run makes one only when agentrun is not root (docs/rootless.md). */
enum {
	AR_SPEC_NS_PID,
	AR_SPEC_NS_NET,
	AR_SPEC_NS_IPC,
	AR_SPEC_NS_UTS,
	AR_SPEC_NS_MNT,
	AR_SPEC_NS_CGROUP,
	AR_SPEC_N_NAMESPACES
};
extern const struct ar_spec_namespace ar_spec_namespaces[AR_SPEC_N_NAMESPACES];
extern const size_t ar_spec_n_namespaces;
/* The CLONE_NEW* flags of the namespaces run's clone makes (AR_SPEC_NS_AT_CLONE). */
int ar_spec_clone_flags(void);

/* ---- proxy environment ---- */

/* The proxy variables are the policy's one definition (ar_proxy_env_url_vars and
 * ar_proxy_env_no_proxy_vars, include/agentrun/policy.h). */
/* The proxy URL an OCI container sees until the network code fills the real one: the
 * proxy end of the container's own veth (each container has a private link, so the
 * address is the same for all). */
#define AR_SPEC_PROXY_ADDR "10.254.0.1"
/* Secrets in an OCI bundle (docs/secrets.md): the CA bundle is the bundle's file
 * AR_SPEC_CA_BUNDLE_FILE (render --bundle writes the host's roots into it, the hook
 * appends the sandbox CA), bound read-only at AR_SPEC_CA_BUNDLE in the container. */
#define AR_SPEC_CA_BUNDLE_FILE "agentrun-ca-bundle.pem"
#define AR_SPEC_CA_BUNDLE      "/etc/agentrun/ca-bundle.pem"
/* With network proxy and a kubeconfig, the bundle's own kubeconfig file, bound at the
 * kubeconfig target: render --bundle makes it, the hook writes it (the server and context,
 * the token's placeholder, the sandbox CA) before the container runs. */
#define AR_SPEC_KUBECONFIG_FILE "agentrun-kubeconfig"
/* With network proxy the kubeconfig's token is a secret too (docs/secrets.md). */
bool ar_spec_kubeconfig_secret(const struct ar_policy *p);

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
	/* a file the sandbox's uid may not be able to read where it is (the policy's
	 * kubeconfig, mode 600 and its owner's): run binds a private copy of it */
	bool copy;
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
	/* the same limits as run's cgroup managers take them (agentrun/cgroup.h), with the
	 * policy's words for messages ("256m") and whether they are required */
	struct ar_limits cgroup;
};

struct ar_spec_net {
	enum ar_network mode;
	/* network proxy: the URL in the proxy variables; NULL for none. A placeholder
	 * (http://AR_SPEC_PROXY_ADDR:PORT) unless the caller passed the real one. */
	char *proxy_url;
};

/* The ids as a user namespace maps them: without root, run maps the one id the agent
 * runs as (uid, gid) onto the caller's own (docs/rootless.md). */
struct ar_spec_idmap {
	bool userns; /* false: no user namespace (agentrun is root, or a runtime's config) */
	uid_t outer_uid;
	gid_t outer_gid;
};

struct ar_spec {
	const struct ar_policy *p; /* borrowed: outlives the spec */
	uid_t uid;
	gid_t gid;
	struct ar_spec_idmap idmap;
	char **env; /* "K=V", NULL-terminated, in order: run's, from scratch */
	/* what a container back end (docker, k8s) adds to its image's: the same without
	 * PATH, HOME and TERM */
	char **container_env;
	const char *rootfs;   /* NULL: read-only view of the host root */
	bool readonly_root;   /* always true */
	bool no_new_privs;    /* always true */
	bool no_capabilities; /* every set empty, always true */
	/* hidden in the host root view (rootfs NULL): ar_spec_hidden_paths and the caller's
	 * own places; none in a rootfs, which shows nothing of the host's */
	char **hidden;
	size_t n_hidden;
	/* tmpfs, policy mounts, the kubeconfig (with secrets, the sandbox's own: a
	 * placeholder token), the CA bundle (secrets) */
	struct ar_spec_mount *mounts;
	size_t n_mounts;
	int kubeconfig_mount; /* its index in mounts, -1 without a kubeconfig */
	int ca_bundle_mount;  /* the CA bundle's (secrets), -1 without */
	const char *hostname; /* the policy's name */
	char *hosts;	      /* the sandbox's own /etc/hosts: its network is never the host's */
	struct ar_spec_limits limits;
	const char *seccomp; /* "default", "unconfined" or a profile path */
	struct ar_spec_net net;
};

/* What the back end knows that the policy does not. Render and check pass NULL: the
 * placeholders then stand in (a proxy URL on AR_SPEC_PROXY_ADDR, fresh secret
 * placeholders, the bundle's CA file at AR_SPEC_CA_BUNDLE, the policy's ids). */
struct ar_spec_opts {
	const char *term;		   /* run: the caller's $TERM, passed through */
	const char *const *caller_private; /* run: AR_SPEC_CALLER_PRIVATE_MAX paths (or
					      NULL entries) hidden too in the host root view */
	const char *proxy_url;		   /* the proxy's real URL */
	const struct ar_secrets *secrets;  /* the placeholders the proxy holds */
	const char *ca_bundle;		   /* the CA bundle (host file) ... */
	const char *ca_bundle_target;	   /* ... and where the sandbox sees it */
	const char *kubeconfig;		   /* the sandbox's own kubeconfig (secrets) */
	bool ids_set;			   /* run: the ids leased for it (below) */
	uid_t uid;
	gid_t gid;
	struct ar_spec_idmap idmap;
};
#define AR_SPEC_CALLER_PRIVATE_MAX 3

/* Hidden inside the host root view (DESIGN §6 credentials; src/spec/paths.c). */
extern const char *const ar_spec_hidden_paths[];
extern const size_t ar_spec_n_hidden_paths;
/* Directories the view's programs need (paths.c): a caller's place that is one of them,
 * lies below one marked `below`, or holds one is never hidden (run warns instead). */
struct ar_spec_needed_dir {
	const char *path;
	bool below;
};
extern const struct ar_spec_needed_dir ar_spec_needed_dirs[];
extern const size_t ar_spec_n_needed_dirs;
bool ar_spec_needed_dir(const char *path);

/* The environment (src/spec/env.c), pure. NULL-terminated "K=V" strings, free with
 * ar_strv_free. What a container runtime adds to its image's environment: the proxy
 * variables (ar_proxy_env_foreach) when proxy_url is set, the policy env, KUBECONFIG when
 * a kubeconfig is mounted (a later key replaces an earlier one in place). */
char **ar_spec_container_env(const struct ar_policy *p, const char *proxy_url);
/* What run's command gets, built from scratch: PATH, HOME (the first tmpfs, else /),
 * TERM when set, then the container environment (which may replace PATH or HOME). */
#define AR_SPEC_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
char **ar_spec_env_full(const struct ar_policy *p, const char *term, char *const *container);
/* ar_spec_env_full of ar_spec_container_env. */
char **ar_spec_env(const struct ar_policy *p, const char *term, const char *proxy_url);
/* Add the placeholders of s (those the agent sees in its environment) and, with
 * bundle, the CA variables pointing at it. */
struct ar_secrets;
void ar_spec_env_secrets(char ***env, const struct ar_secrets *s, const char *bundle);
/* Is KEY one the policy's secrets put in the environment (a placeholder, fresh per
 * sandbox, or a CA variable)? The checks compare those by shape, not by value. */
bool ar_spec_env_from_secrets(const struct ar_policy *p, const char *key);

/* Derive the spec of p. Errors name the policy field. */
int ar_spec_build(const struct ar_policy *p, const struct ar_spec_opts *o, struct ar_spec **out,
		  ar_error_t *err);
/* The spec a container back end (render's docker and k8s, their checks) runs the agent
 * with: the proxy reached by its container or Service name (p->proxy_url). */
int ar_spec_build_container(const struct ar_policy *p, struct ar_spec **out, ar_error_t *err);
void ar_spec_free(struct ar_spec *s);
void ar_cleanup_specp(struct ar_spec **s);
#define ar_autospec __attribute__((cleanup(ar_cleanup_specp)))

/* Is mounts[i] one of the policy's own binds (`mounts`), not the kubeconfig's or the CA
 * bundle's? The container back ends spell those apart. */
bool ar_spec_policy_bind(const struct ar_spec *s, size_t i);

/* The value of KEY in the spec's environment, or NULL. */
const char *ar_spec_getenv(const struct ar_spec *s, const char *key);

/* The profile the spec of p names ("default", "unconfined" or a path): run compiles it
 * before anything exists, ahead of the spec itself, so a bad profile fails first. */
const char *ar_spec_seccomp_of(const struct ar_policy *p);
/* The seccomp profile text: the embedded default, NULL for "unconfined", or the
 * policy's file (read into *owned). *origin names it in messages. */
int ar_spec_seccomp_text(const struct ar_spec *s, char **owned, const char **text,
			 const char **origin, ar_error_t *err);

#endif

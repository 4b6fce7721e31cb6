/* agentrun check: drift of a docker container (from `docker inspect`) or of a running
 * process (from /proc) against a policy (DESIGN §8).
 *
 * The design is "facts vs expectations": a reader turns its input into a facts struct
 * (the inspect reader is pure over a buffer, the /proc reader does the I/O and hands the
 * text to pure parsers), then a pure function walks a table of expectations, compares
 * the facts with the policy and appends findings {what, expected, actual, fix}.
 * Secret values are never copied into findings. See docs/check.md. */
#ifndef AGENTRUN_CHECK_H
#define AGENTRUN_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentrun/error.h"
#include "agentrun/policy.h"
#include "agentrun/util.h"

/* ---- findings ---- */

struct ar_finding {
	char *what;	/* "read-only rootfs", "secret in environment AWS_SECRET_ACCESS_KEY" */
	char *expected; /* "true" */
	char *actual;	/* "false" */
	char *fix;	/* "--read-only" */
};

struct ar_findings {
	struct ar_finding *v;
	size_t n;
	size_t cap;
	char **notes; /* not drift: what could not be judged ("container is not running") */
	size_t n_notes;
};

void ar_findings_add(struct ar_findings *f, const char *what, const char *expected,
		     const char *actual, const char *fix);
/* A note: printed as "NOTE TEXT" (text) or in "notes" (JSON); not counted as drift. */
void ar_findings_note(struct ar_findings *f, const char *text);
void ar_findings_free(struct ar_findings *f);
/* A copy of s with control characters (and DEL) written as \xNN: one printable line. */
char *ar_check_printable(const char *s);
#define ar_autofindings __attribute__((cleanup(ar_findings_free)))

/* "NOTE TEXT\n" per note, "DRIFT WHAT expected E actual A\n  fix: FIX\n" per finding,
 * then "SUBJECT vs policy P: N drift finding(s)\n". */
void ar_check_format_text(struct ar_buf *out, const struct ar_findings *f, const char *subject,
			  const char *policy_name);
/* {"subject": ..., "policy": ..., "drift": N, "findings": [{what, expected, actual, fix}],
 *  "notes": [...]} */
void ar_check_format_json(struct ar_buf *out, const struct ar_findings *f, const char *subject,
			  const char *policy_name);

/* ---- shared classification (pure) ---- */

/* A variable name that looks like a secret: ends in _KEY, _TOKEN, _SECRET, _PAT,
 * _CREDENTIAL(S) or _AUTH, or contains PASSWORD (case-insensitive). */
bool ar_check_is_secret_name(const char *name);
/* A value that is a secret whatever its name: a URL with user:password@, or a
 * well-known token shape (ghp_..., github_pat_..., sk-..., xoxb-/xoxp-..., AKIA...). */
bool ar_check_is_secret_value(const char *v);
/* A URL in v carries userinfo (user@ or user:password@). */
bool ar_check_value_has_credentials(const char *v);
/* How a finding may show the value of KEY: "(set, with credentials)" for a URL with
 * userinfo, "(hidden)" for a secret name or value, else v itself. */
const char *ar_check_shown_value(const char *key, const char *v);
/* One "secret in environment NAME" finding per variable of env with a secret name or
 * value ("KEY=VALUE" entries, NULL-terminated; NULL is none), and one "secret NAME" per
 * variable that is one of p's `secrets` (p may be NULL) holding anything but its
 * placeholder. Names only, never values. fix_fmt gets the name as its first (and, if it
 * has two %s, second) argument. */
void ar_findings_add_secrets(struct ar_findings *f, const struct ar_policy *p, char *const *env,
			     const char *fix_fmt) __attribute__((format(printf, 4, 0)));
/* v is the placeholder shape of secret NAME: agentrun-secret-NAME-<32 hex digits>. */
bool ar_check_is_placeholder(const char *name, const char *v);
/* A path that must not be mounted into a sandbox: docker.sock, /proc, /sys, /etc, /root,
 * / (and below the four directories), or a path with a .aws, .kube, .ssh, .docker,
 * .azure or .config/gcloud component. */
bool ar_check_is_sensitive_path(const char *path);
/* The narrower test for a process's own mount table, where /proc, /sys and / are
 * normal: docker.sock or a credential directory component. */
bool ar_check_is_credential_path(const char *path);
/* HTTP_PROXY, HTTPS_PROXY, http_proxy, https_proxy: what a sandbox must carry. */
#define AR_CHECK_N_PROXY_VARS AR_PROXY_ENV_N_URL /* the one definition: policy.h */
#define ar_check_proxy_vars   ar_proxy_env_url_vars
/* The value of KEY in a "KEY=VALUE" strv, or NULL. */
const char *ar_check_env_get(char *const *env, const char *key);
/* 1000 -> "1", 500 -> "0.5", 1250 -> "1.25" (into buf of at least 32 bytes). */
const char *ar_check_format_cpus(int64_t milli, char *buf, size_t size);

/* ---- docker ---- */

struct ar_docker_mount {
	char *type; /* "bind", "volume", "tmpfs", ... ("bind" when absent) */
	char *source;
	char *target;
	char *name; /* a volume's name, "" otherwise */
	bool readonly;
};

/* A network from `docker network inspect` (or a network object in an inspect array). */
struct ar_docker_network {
	char *name;
	char *driver;	   /* "bridge", ... ("" when absent) */
	char *gateway;	   /* the first IPAM gateway, "" when none is recorded */
	bool internal;	   /* --internal: no outbound NAT */
	bool inhibit_ipv4; /* bridge option inhibit_ipv4: the host has no address on it */
};

struct ar_docker_facts {
	char *name;	    /* without docker's leading '/' */
	char *state_status; /* State.Status: "running", "created", "exited", "" when absent */
	char *started_at;   /* State.StartedAt, "" when absent */
	bool readonly_rootfs;
	bool privileged;
	char **cap_drop; /* NULL-terminated, never NULL; uppercase, without CAP_ */
	char **cap_add;	 /* same */
	char **security_opt;
	char *apparmor_profile; /* "" when unset */
	char *pid_mode;		/* "" when unset */
	char *ipc_mode;
	char *userns_mode;
	char *uts_mode;
	char *network_mode;
	int64_t pids_limit;  /* 0 = unlimited (docker's null, 0 and -1) */
	int64_t memory;	     /* bytes, 0 = unlimited */
	int64_t memory_swap; /* memory + swap, bytes; 0 = unset, -1 = unlimited swap */
	int64_t cpus_milli;  /* from NanoCpus, else CpuQuota/CpuPeriod; 0 = unlimited */
	char **networks;     /* NetworkSettings.Networks keys, sorted */
	char *user;	     /* Config.User, "" when unset */
	char **env;	     /* Config.Env, "KEY=VALUE" */
	char **tmpfs;	     /* HostConfig.Tmpfs keys (targets) */
	/* Host access; each list empty for docker's null, [] and {} alike. */
	char **devices;		    /* HostConfig.Devices as --device: "/dev/sda", "A:B:PERMS" */
	char **device_cgroup_rules; /* "b *:* rwm" */
	char **group_add;	    /* HostConfig.GroupAdd: "disk", "0" */
	char **sysctls;		    /* HostConfig.Sysctls as "KEY=VALUE", sorted */
	char *cgroupns_mode;	    /* "host", "private", "" when unset (older docker) */
	bool oom_kill_disable;
	int masked_paths;   /* HostConfig.MaskedPaths entries; -1 absent or null (default) */
	int readonly_paths; /* same for ReadonlyPaths; [] (0) is systempaths=unconfined */
	struct ar_docker_mount *mounts;
	size_t n_mounts;
	struct ar_docker_network *nets; /* what is known of the networks it is on */
	size_t n_nets;
};

/* Parse `docker inspect` output: an array (element 0 is the container; empty is an
 * error; network objects after it, as `docker inspect CONTAINER NETWORK` prints them,
 * are read too) or a single object. Pure; `origin` names the input in messages. */
int ar_check_inspect_parse(const char *json, size_t len, const char *origin,
			   struct ar_docker_facts **out, ar_error_t *err);
/* Add the network objects of `docker inspect --type network N...` output to d. */
int ar_check_inspect_add_networks(const char *json, size_t len, const char *origin,
				  struct ar_docker_facts *d, ar_error_t *err);
/* The facts of network `name`, or NULL when it was not inspected. */
const struct ar_docker_network *ar_check_docker_network(const struct ar_docker_facts *d,
							const char *name);
void ar_docker_facts_free(struct ar_docker_facts *d);
void ar_cleanup_docker_factsp(struct ar_docker_facts **d);
#define ar_autodocker_facts __attribute__((cleanup(ar_cleanup_docker_factsp)))

/* Compare (pure): append one finding per broken expectation, in table order, and
 * notes (not drift) for what could not be judged or deserves a word. */
void ar_check_docker(const struct ar_policy *p, const struct ar_docker_facts *d,
		     struct ar_findings *out);

/* Run `DOCKER inspect --type TYPE NAME` (TYPE "container" or "network"; DOCKER looked
 * up in PATH) and capture its stdout. Fails naming the object when docker is missing or
 * exits non-zero, with the first line of its stderr. */
int ar_check_docker_inspect(const char *docker, const char *type, const char *name, char **out,
			    size_t *len, ar_error_t *err);

/* ---- processes (/proc) ---- */

#define AR_LIMIT_UNLIMITED (-1)
#define AR_LIMIT_UNKNOWN   (-2) /* no controller/file found for the process */

struct ar_proc_status {
	uid_t uid[4]; /* real, effective, saved, filesystem */
	gid_t gid[4];
	uint64_t cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb;
	int no_new_privs; /* -1 when the kernel does not say */
	int seccomp;	  /* 0 disabled, 1 strict, 2 filter, -1 unknown */
};

/* Parse /proc/PID/status text. Uid, Gid and the five Cap* lines are required. */
int ar_check_parse_status(const char *text, struct ar_proc_status *out, ar_error_t *err);

struct ar_mountinfo {
	char *root;   /* path inside the mounted filesystem (field 4), unescaped */
	char *target; /* mount point (field 5), unescaped */
	char *fstype;
	char *source;
	char *super_opts;
	bool readonly; /* per-mount or superblock ro */
};

/* Parse /proc/PID/mountinfo text into *out (n entries, in file order). */
int ar_check_parse_mountinfo(const char *text, struct ar_mountinfo **out, size_t *n,
			     ar_error_t *err);
void ar_mountinfo_free(struct ar_mountinfo *m, size_t n);
/* The entry visible at `target` (the last one mounted there), or NULL. */
const struct ar_mountinfo *ar_check_mount_at(const struct ar_mountinfo *m, size_t n,
					     const char *target);

/* In /proc/PID/cgroup text, the path of the v1 hierarchy carrying `controller`
 * ("memory"), or with controller "" the v2 path ("0::/x"). Returns a malloc'd path or
 * NULL when absent. */
char *ar_check_cgroup_path(const char *text, const char *controller);
/* In mountinfo entries, where to find `controller`'s v1 hierarchy (controller "" =
 * cgroup2): the mount point and the mount's root. NULL when not mounted. */
const struct ar_mountinfo *ar_check_cgroup_mount(const struct ar_mountinfo *m, size_t n,
						 const char *controller);

/* Cgroup limit files, all pure over the file text. Unlimited is AR_LIMIT_UNLIMITED. */
int ar_check_parse_cg_max(const char *text, int64_t *out);	 /* "max" | N (v2) */
int ar_check_parse_cg_v1_memory(const char *text, int64_t *out); /* huge = unlimited */
int ar_check_parse_cg_cpu_max(const char *text, int64_t *milli); /* "max 100000" | "Q P" */
int ar_check_parse_cg_v1_cpu(const char *quota, const char *period, int64_t *milli);

/* /proc/PID/net/dev: interface names (NULL-terminated, never NULL). */
char **ar_check_parse_netdev(const char *text);
/* /proc/PID/net/route and ipv6_route: the device of a default route that is not on lo,
 * or NULL. Either text may be NULL. */
char *ar_check_parse_default_route(const char *route4, const char *route6);
/* NUL-separated environ into a strv of "KEY=VALUE" (never NULL). */
char **ar_check_parse_environ(const char *buf, size_t len);

enum ar_ns_kind { AR_NS_PID, AR_NS_MNT, AR_NS_NET, AR_NS_UTS, AR_NS_IPC, AR_NS_CGROUP, AR_NS_N };

struct ar_proc_facts {
	pid_t pid;
	struct ar_proc_status status;
	struct ar_mountinfo *mounts;
	size_t n_mounts;
	char **visible_sensitive; /* sensitive host paths reachable through /proc/PID/root */
	int ns_shared[AR_NS_N];	  /* 1 shared with /proc/1, 0 private, -1 unknown */
	int64_t pids_max;	  /* AR_LIMIT_* or the limit */
	int64_t memory_max;
	int64_t cpus_milli;
	char **env; /* NULL when environ could not be read */
	char **netdevs;
	char *default_route; /* device of a non-lo default route, NULL when none */
	/* its uid and gid are mapped to themselves, one id each (so in a user namespace
	 * not the host's): agentrun run by that user (keep-id, docs/rootless.md) */
	bool keep_id;
	/* network: proxy facts (src/check/netcheck.c), set and freed by the caller;
	 * NULL: not read */
	const struct ar_check_net_facts *net;
};

/* Read every fact about pid from /proc (and the cgroup filesystems). */
int ar_check_proc_read(pid_t pid, struct ar_proc_facts **out, ar_error_t *err);
void ar_proc_facts_free(struct ar_proc_facts *f);
void ar_cleanup_proc_factsp(struct ar_proc_facts **f);
#define ar_autoproc_facts __attribute__((cleanup(ar_cleanup_proc_factsp)))
/* The namespace name in /proc/PID/ns/ ("pid", "mnt", ...). */
const char *ar_check_ns_name(enum ar_ns_kind k);

/* ---- the network of an agentrun sandbox (src/check/netcheck.c) ---- */

struct ar_check_net_facts {
	char eth0_ip[16]; /* "" when eth0 has no IPv4 address */
	int eth0_prefix;
	char **routes;		/* IPv4 and IPv6 routes other than lo's and default ("D/P dev I") */
	char proxy_url[48];	/* http://FIRST:PORT of eth0's /30 (the address plan), or "" */
	bool peer_read;		/* the proxy netns was reached through the proxy's listener */
	char **peer_links;	/* interfaces of the proxy netns */
	char **peer_sockets;	/* its sockets: "tcp listen 10.254.0.1:3128", "udp 0.0.0.0:53" */
	char peer_expected[32]; /* "tcp listen 10.254.0.1:3128" */
	int capture;		/* transparent capture's rule and routes: 1 in place, 0 not,
				 * -1 unknown (the proxy netns was not reached) */
	const char *capture_missing; /* static text: which piece, when capture is 0 */
};

/* Read the sandbox netns of pid (through /proc/PID/ns/net) and, when proxy_pid > 0,
 * the proxy netns its listener lives in (pidfd_getfd + SIOCGSKNS). Needs root. */
/* Not root, a process in a user namespace of the caller's own (a user's sandbox): enter
 * it (for good: the reads see uids as the sandbox does, and may enter its netns),
 * holding the listeners of its proxy (proxy > 0) first. */
int ar_check_enter_userns(pid_t pid, pid_t proxy, ar_error_t *err);
int ar_check_net_read(pid_t pid, pid_t proxy_pid, int port, struct ar_check_net_facts **out,
		      ar_error_t *err);
void ar_check_net_facts_free(struct ar_check_net_facts *f);
/* Is v the proxy URL of this sandbox (f known), else of some /30 of the range? */
bool ar_check_net_is_proxy_url(const struct ar_check_net_facts *f, const char *v, int port);
/* Compare (pure), for `network: proxy`: only lo and eth0, eth0 on a /30 of the range,
 * no route beyond it, a proxy netns holding only its veth and the listener. */
void ar_check_net(const struct ar_policy *p, char *const *netdevs,
		  const struct ar_check_net_facts *f, struct ar_findings *out);

/* Compare (pure): one finding per broken expectation, in table order. */
void ar_check_proc(const struct ar_policy *p, const struct ar_proc_facts *f,
		   struct ar_findings *out);

/* ---- OCI bundles (src/check/bundle.c) ---- */

struct ar_spec;
struct ar_check_bundle_opts {
	const char *origin;	    /* "DIR/config.json", for messages */
	const char *policy_path;    /* absolute: the hooks' --policy; NULL expects no hooks */
	const char *seccomp_json;   /* the spec's profile text (ar_spec_seccomp_text) */
	const char *seccomp_origin; /* names it in messages */
};
/* Compare a config.json with what `render --format oci` writes for the spec (pure):
 * user, capabilities, no_new_privs, read-only root, limits, seccomp, env (and secrets
 * in it), mounts (missing, different, extra, sensitive), masked and read-only paths,
 * namespaces (a prepared netns under /run/agentrun/netns is fine), hooks. One finding
 * per drifted field. Fails only on input that is not an OCI config. */
int ar_check_bundle(const struct ar_spec *sp, const char *json, size_t len,
		    const struct ar_check_bundle_opts *o, struct ar_findings *out, ar_error_t *err);

#endif

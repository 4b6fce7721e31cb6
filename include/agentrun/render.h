/* `agentrun render` (DESIGN §8): the policy as a docker plan (a list of labelled argv
 * vectors) and the printers for it (shell text, JSON, a POSIX sh script), plus the
 * policy as an OCI runtime-spec config.json. The plan is data first so that every
 * printer shows exactly the same commands. See docs/render.md. */
#ifndef AGENTRUN_RENDER_H
#define AGENTRUN_RENDER_H

#include <stddef.h>

#include "agentrun/error.h"
#include "agentrun/policy.h"
#include "agentrun/util.h"

#define AR_RENDER_AUDIT_DIR  "/var/log/agentrun"
#define AR_RENDER_AUDIT_FILE AR_RENDER_AUDIT_DIR "/audit.jsonl"
/* Secrets in the docker and Kubernetes proxies (docs/secrets.md): file sources (docker)
 * or the Secret's keys (Kubernetes) under AR_RENDER_SECRETS_DIR, proxy.upstream_ca at
 * AR_RENDER_UPSTREAM_CA, and the CA bundle the proxy writes into AR_RENDER_PROXY_CA_DIR,
 * a volume the agent mounts read-only at AR_RENDER_AGENT_CA_DIR (the directory of
 * AR_SPEC_CA_BUNDLE, which the CA variables name). */
#define AR_RENDER_SECRETS_DIR  "/run/agentrun/secrets"
#define AR_RENDER_UPSTREAM_CA  "/run/agentrun/upstream-ca.pem"
#define AR_RENDER_PROXY_CA_DIR "/run/agentrun/ca"
#define AR_RENDER_AGENT_CA_DIR "/etc/agentrun"
/* The bridge option that leaves the host without an address on a network: with it an
 * --internal network has no path to the host's services (moby/libnetwork#1151). */
#define AR_DOCKER_INHIBIT_IPV4 "com.docker.network.bridge.inhibit_ipv4"
/* How the agent's network is created (render prints it, check's fixes name it). */
#define AR_DOCKER_NET_CREATE_OPTS "--internal -o " AR_DOCKER_INHIBIT_IPV4 "=true"

enum ar_render_format {
	AR_RENDER_TEXT,
	AR_RENDER_JSON,
	AR_RENDER_SH,
	AR_RENDER_OCI,
	AR_RENDER_K8S, /* include/agentrun/k8s.h */
	AR_RENDER_K8S_JSON,
};

/* Which part of the lifecycle a step belongs to (the sh script's functions). */
enum ar_render_phase {
	AR_RENDER_UP,	 /* networks and the proxy */
	AR_RENDER_RUN,	 /* the agent container */
	AR_RENDER_DOWN,	 /* teardown, tolerant of missing objects */
	AR_RENDER_AUDIT, /* read the proxy's audit log */
};

struct ar_render_step {
	enum ar_render_phase phase;
	const char *label; /* static text: "internal network", "proxy", "agent", ... */
	char **argv;	   /* NULL-terminated, argv[0] = "docker" */
	size_t argc;
	/* Index of the first argument before which the text printer never breaks a line
	 * (the image: the command after it stays on one line). argc when unset. */
	size_t nowrap_from;
};

struct ar_render_plan {
	struct ar_render_step *steps; /* UP steps, then RUN, then DOWN, then AUDIT */
	size_t n_steps;
	/* What the rendering cannot carry over from `agentrun run` (static text, lines
	 * ending in \n, NULL when nothing): printed as comments (text, sh), "note" (json). */
	const char *note;
};

/* The note of a policy whose proxy.transparent capture docker cannot reproduce. */
#define AR_RENDER_NOTE_CAPTURE                                                                     \
	"No equivalent here of agentrun run's transparent capture (proxy.transparent):\n"          \
	"on docker's --internal network only clients that honour HTTP(S)_PROXY reach\n"            \
	"the proxy; the others get no route, and no DNS stub answers by the allow-list.\n"

struct ar_render_options {
	const char *image;	 /* overrides the policy's `image`; NULL = use the policy's */
	const char *proxy_image; /* NULL = AR_RENDER_DEFAULT_IMAGE */
	char *const *cmd;	 /* the command after `--`; n_cmd 0 = the image's default */
	size_t n_cmd;
	/* --format oci */
	const char *rootfs;	 /* root.path (default: the policy's rootfs, else "rootfs") */
	const char *netns;	 /* a prepared netns path for linux.namespaces (no hooks then) */
	const char *hook_path;	 /* absolute path of agentrun for hooks; NULL: no hooks */
	const char *policy_path; /* absolute policy path for the hooks and the annotation */
};

/* The default proxy image: what scripts/docker-image.sh builds. */
#define AR_RENDER_DEFAULT_IMAGE "agentrun:" AGENTRUN_VERSION

/* Refuse what docker's reference grammar would not take as an image (NAME[:TAG][@DIGEST]),
 * naming `what` ("--image", "p.json: image") in the message. Pure. */
int ar_render_image_check(const char *ref, const char *what, ar_error_t *err);

/* Parse "text", "json", "sh" or "oci". Returns 0 or -1 (the caller names the flag). */
int ar_render_format_parse(const char *s, enum ar_render_format *out);

/* Build the docker plan for the spec sp (ar_spec_build_container): the agent container
 * is the spec's, the proxy container and networks sp->p's. Fails (naming the field or
 * flag) when no agent image is known or an image is not a docker image reference. */
struct ar_spec;
int ar_render_plan_build(const struct ar_spec *sp, const struct ar_render_options *o,
			 struct ar_render_plan **out, ar_error_t *err);
void ar_render_plan_free(struct ar_render_plan *plan);
void ar_cleanup_render_planp(struct ar_render_plan **plan);
#define ar_autoplan __attribute__((cleanup(ar_cleanup_render_planp)))

/* The UP and RUN steps, one shell-quoted command per line (long lines continued with
 * ` \`), ready to paste. */
void ar_render_print_text(const struct ar_render_plan *plan, struct ar_buf *out);
/* {"steps": [{"label": ..., "phase": ..., "argv": [...]}, ...]} for UP and RUN, then
 * "down" and "audit" lists of the same shape. */
void ar_render_print_json(const struct ar_render_plan *plan, struct ar_buf *out);
/* A POSIX sh script: set -eu, functions up/run/down/audit that echo each command
 * (prefixed `+ `, on stderr) before running it, dispatch on $1. */
void ar_render_print_sh(const struct ar_policy *p, const struct ar_render_plan *plan,
			struct ar_buf *out);

/* The annotation naming the policy in a rendered config.json; podman's hooks.d JSON
 * (hooks/agentrun.json) matches on it. */
#define AR_OCI_POLICY_ANNOTATION "io.agentrun.policy"

struct ar_spec;
/* An OCI runtime-spec config.json of the agent spec. seccomp_json is the spec's
 * seccomp profile text (runtime-spec or docker format; NULL for "unconfined"),
 * seccomp_origin names it in messages. A command is required (a bundle has no image
 * default). The rootfs is o->rootfs, else the policy's `rootfs`, else "rootfs" in the
 * bundle. */
int ar_render_oci(const struct ar_spec *sp, const struct ar_render_options *o,
		  const char *seccomp_json, const char *seccomp_origin, struct ar_buf *out,
		  ar_error_t *err);

#endif

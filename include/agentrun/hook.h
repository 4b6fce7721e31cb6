/* `agentrun hook create-runtime|poststop`: the OCI hook (DESIGN §9). The runtime
 * (runc, crun, podman through hooks.d) runs it with the container's state JSON on
 * stdin. create-runtime checks the container's fresh netns, records the container
 * under AR_HOOK_DIR/ID and wires the network (hook_wire_network, src/hook/wire.c);
 * poststop removes what create-runtime made. The state reader is pure. See docs/oci.md. */
#ifndef AGENTRUN_HOOK_H
#define AGENTRUN_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "agentrun/error.h"
#include "agentrun/policy.h"

#define AR_HOOK_DIR	  "/run/agentrun/hooks"
#define AR_HOOK_STATE_MAX (1024 * 1024) /* bytes of state JSON read from stdin */
#define AR_HOOK_ID_MAX	  1024

/* The runtime-spec state (runtime-spec/runtime.md "State"). */
struct ar_oci_state {
	char *oci_version;
	char *id;	    /* checked: [A-Za-z0-9_.+-], not "." or "..", at most AR_HOOK_ID_MAX */
	char *status;	    /* "creating", "created", "running", "stopped" */
	pid_t pid;	    /* 0 when absent, 0 or -1 (poststop: the process is gone) */
	char *bundle;	    /* absolute path */
	char **annotations; /* key, value, key, value, ..., NULL */
	size_t n_annotations;
};

/* Parse state JSON (pure). ociVersion, id, status and bundle are required, pid must be
 * an integer from -1 or 0 (no process: runsc, runc) to the kernel's pid limit,
 * annotations an object of strings. Errors name the field: "state: id: missing". */
int ar_oci_state_parse(const char *json, size_t len, struct ar_oci_state **out, ar_error_t *err);
void ar_oci_state_free(struct ar_oci_state *s);
void ar_cleanup_oci_statep(struct ar_oci_state **s);
#define ar_autooci_state __attribute__((cleanup(ar_cleanup_oci_statep)))
/* The value of annotation KEY, or NULL. */
const char *ar_oci_state_annotation(const struct ar_oci_state *s, const char *key);

/* Is `id` usable as a file name under the record directory? */
bool ar_hook_id_valid(const char *id);

/* ---- the steps (src/hook/hook.c), dir = AR_HOOK_DIR except in tests ---- */

/* The netns of pid has no interface but lo. Errors name the interfaces. */
int ar_hook_check_netns(pid_t pid, ar_error_t *err);
/* Create dir/ID with the record, exclusively: a second create for the same id fails
 * and leaves the first record alone. */
int ar_hook_record_create(const char *dir, const struct ar_oci_state *s, const char *policy_path,
			  const struct ar_policy *p, ar_error_t *err);
/* Remove dir/ID. *existed says whether there was one. */
int ar_hook_record_remove(const char *dir, const char *id, bool *existed, ar_error_t *err);

/* create-runtime and poststop as a whole (the CLI reads stdin and the policy). */
int ar_hook_create_runtime(const char *dir, const struct ar_oci_state *s, const char *policy_path,
			   const struct ar_policy *p, ar_error_t *err);
int ar_hook_poststop(const char *dir, const struct ar_oci_state *s, ar_error_t *err);

/* The network step (src/hook/wire.c): wire the container's netns (pid's) for the agent
 * spec sp, the one render --format oci wrote the bundle's config.json from. network
 * none: nothing to do. network proxy: a fresh proxy netns, the veth (eth0 in the
 * container, AR_SPEC_PROXY_ADDR's /30), a detached confined proxy holding the
 * placeholders config.json carries and the CA for the spec's CA bundle file, and the net
 * state NAME-PID; on failure nothing of it is left. */
struct ar_spec;
int hook_wire_network(const struct ar_spec *sp, const struct ar_oci_state *s,
		      const char *policy_path, ar_error_t *err);
/* poststop: stop the proxy of the container recorded as policy_name and pid, remove
 * its state (the netns and the veth went with the container). Nothing there: nothing
 * to do. */
void hook_unwire_network(const char *policy_name, pid_t pid);
/* The fixed plan of hook-wired containers (AR_SPEC_PROXY_ADDR, port) and their state
 * name NAME-PID. */
struct ar_net_plan;
void ar_hook_plan(int port, struct ar_net_plan *out);
void ar_hook_state_name(const char *policy_name, pid_t pid, char *buf, size_t size);
/* gc: remove the records whose container process is gone (their poststop never ran);
 * returns how many. */
int ar_hook_gc(const char *dir);

#endif

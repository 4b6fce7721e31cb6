/* agentrun hook create-runtime|poststop [--policy FILE]: the OCI hook. The runtime
 * writes the container's state JSON on stdin; without --policy the policy is the one
 * the state's `io.agentrun.policy` annotation names (podman's hooks.d entries cannot
 * carry per-container arguments). Exit 0 ok, 1 refused (the runtime then fails the
 * container), 2 bad input. The work is in src/hook/. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentrun/cli.h"
#include "agentrun/hook.h"
#include "agentrun/policy.h"
#include "agentrun/render.h"
#include "agentrun/util.h"

#define CMD	     "hook"
#define EXIT_REFUSED 1

enum stage { STAGE_CREATE_RUNTIME, STAGE_POSTSTOP };

static const struct {
	const char *name;
	enum stage stage;
} stages[] = {
    {"create-runtime", STAGE_CREATE_RUNTIME},
    {"poststop", STAGE_POSTSTOP},
};

struct hook_args {
	const char *policy;
};

static const struct ar_opt opts[] = {
    {"--policy", 'p', "FILE",
     "the policy (default: the state's " AR_OCI_POLICY_ANNOTATION "\nannotation)", ar_opt_str,
     offsetof(struct hook_args, policy)},
    {NULL},
};

const struct ar_cli_cmd ar_cli_hook = {
    .name = "hook",
    .fn = ar_cmd_hook,
    .summary = "the OCI hook (create-runtime, poststop) for runc, crun, podman",
    .synopsis = "hook create-runtime|poststop [--policy FILE] < STATE",
    .about = "The OCI hook: runc, crun or podman runs it with the container's state JSON on\n"
	     "stdin. create-runtime checks that the container's network namespace has only\n"
	     "lo, records the container under " AR_HOOK_DIR "/ID and wires its network for\n"
	     "the policy (network: proxy: eth0 10.254.0.2/30 and a detached confined proxy\n"
	     "behind 10.254.0.1); poststop stops the proxy and removes the record.\n"
	     "See docs/oci.md.",
    .opts = opts,
    .operand = "the stage: create-runtime or poststop",
    .exit_status = "0 ok, 1 refused (the runtime fails the container), 2 bad input.",
    .usage_exit = AR_EXIT_USAGE,
};

static int find_stage(const char *name, enum stage *stage)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(stages); i++)
		if (strcmp(name, stages[i].name) == 0) {
			*stage = stages[i].stage;
			return 0;
		}
	return ar_cli_usage_error(CMD, -1, "unknown stage `%s` (create-runtime, poststop)", name);
}

/* fd 0 itself, not /dev/stdin: a runtime may run the hook where /dev has no such link
 * (crun in a minimal VM does). */
static int read_state(struct ar_oci_state **st, ar_error_t *err)
{
	ar_autobuf struct ar_buf b = {0};
	char chunk[4096];
	for (;;) {
		ssize_t n = TEMP_FAILURE_RETRY(read(STDIN_FILENO, chunk, sizeof(chunk)));
		if (n == -1)
			return ar_error_make(err, errno, "state (stdin): read");
		if (n == 0)
			break;
		if (b.len + (size_t)n > AR_HOOK_STATE_MAX)
			return ar_error_make(err, 0, "state (stdin): larger than %d bytes",
					     AR_HOOK_STATE_MAX);
		ar_buf_append(&b, chunk, (size_t)n);
	}
	return ar_oci_state_parse(b.data ? b.data : "", b.len, st, err);
}

/* --policy, else the annotation; loaded, with its path made absolute for the record. */
static int load_policy(const char *flag, const struct ar_oci_state *st, struct ar_policy **p,
		       char **abs, ar_error_t *err)
{
	const char *path = flag ? flag : ar_oci_state_annotation(st, AR_OCI_POLICY_ANNOTATION);
	if (path == NULL)
		return ar_error_make(err, 0,
				     "no policy: pass --policy FILE or set the container's "
				     "annotation " AR_OCI_POLICY_ANNOTATION);
	if (ar_policy_load(path, p, err) < 0)
		return -1;
	*abs = (*p)->path ? ar_xstrdup((*p)->path) : NULL;
	if (*abs == NULL)
		return ar_error_make(err, errno, "resolve `%s`", path);
	return 0;
}

int ar_cmd_hook(int argc, char **argv)
{
	enum stage stage = STAGE_CREATE_RUNTIME;
	struct hook_args a = {0};
	ar_autoopts struct ar_opt_result res = {0};
	int r;
	if (ar_cli_parse(&ar_cli_hook, argc, argv, &a, &res, &r) != 0)
		return r;
	if (find_stage(res.operands[0], &stage) < 0)
		return AR_EXIT_USAGE;
	const char *policy_flag = a.policy;

	ar_auto_error ar_error_t err = NULL;
	ar_autooci_state struct ar_oci_state *st = NULL;
	ar_autopolicy struct ar_policy *p = NULL;
	ar_autofree char *policy_path = NULL;
	const char *dir = getenv("AGENTRUN_HOOK_DIR"); /* tests only */
	if (dir == NULL || dir[0] != '/')
		dir = AR_HOOK_DIR;
	if (read_state(&st, &err) < 0 || load_policy(policy_flag, st, &p, &policy_path, &err) < 0) {
		ar_error_wrap(&err, CMD);
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
	r = stage == STAGE_CREATE_RUNTIME ? ar_hook_create_runtime(dir, st, policy_path, p, &err)
					  : ar_hook_poststop(dir, st, &err);
	if (r < 0) {
		ar_error_wrap(&err, CMD);
		ar_error_print(&err);
		return EXIT_REFUSED;
	}
	return AR_EXIT_OK;
}

/* agentrun gc: remove what sandboxes whose agentrun died (SIGKILL, a crash) left
 * behind: their state, /30, proxy and cgroups. `run` does the same at every start.
 * Live sandboxes, and anything not agentrun's, are never touched. Root's gc sees
 * root's state (/run/agentrun, the hooks' records, named netns); a user's, the user's
 * own (ar_net_state_root), never another's. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentrun/cgroup.h"
#include "agentrun/cli.h"
#include "agentrun/hook.h"
#include "agentrun/net.h"
#include "agentrun/util.h"

static const struct ar_opt opts[] = {{NULL}};

const struct ar_cli_cmd ar_cli_gc = {
    .name = "gc",
    .fn = ar_cmd_gc,
    .summary = "remove what dead sandboxes left behind",
    .synopsis = "gc",
    .about = "Remove what the caller's dead sandboxes left (state, address, proxy, cgroups)\n"
	     "under " AR_NET_STATE_ROOT_SYSTEM " for root, $XDG_RUNTIME_DIR/agentrun for a user,\n"
	     "and say what was removed. Live sandboxes and other users' are not touched;\n"
	     "audits stay in the state directory's audit/. `run` does the same at every start.",
    .opts = opts,
    .exit_status = "0 ok, 2 usage.",
    .usage_exit = AR_EXIT_USAGE,
};

/* The dead sandboxes' names before the sweep, to say which of them it removed. */
struct dead {
	char (*names)[AR_POLICY_NAME_MAX + 16];
	size_t n;
};

static int collect(const struct ar_net_state *s, void *data)
{
	struct dead *d = data;
	if (ar_net_proc_alive(s->owner, s->owner_start))
		return 0;
	d->names = ar_xrealloc(d->names, (d->n + 1) * sizeof(*d->names));
	snprintf(d->names[d->n++], sizeof(*d->names), "%s", s->name);
	return 0;
}

static void say_removed(const struct dead *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (access(ar_net_state_dir(d->names[i]), F_OK) == -1)
			printf("removed %s: its state, address, proxy and cgroups\n", d->names[i]);
}

int ar_cmd_gc(int argc, char **argv)
{
	ar_autoopts struct ar_opt_result r = {0};
	struct dead dead = {0};
	int status;
	if (ar_cli_parse(&ar_cli_gc, argc, argv, NULL, &r, &status) != 0)
		return status;
	ar_net_state_foreach(collect, &dead);
	/* the hook's records first: they say where their proxy's cgroups are (root's only:
	 * hooks and named netns need root) */
	int hooks = geteuid() == 0 ? ar_hook_gc(AR_HOOK_DIR) : 0;
	int n = hooks + ar_net_gc();
	if (geteuid() == 0)
		n += ar_netns_gc(); /* after: a dead proxy's state is gone by now */
	/* run's cgroup manager sweeps at every start; an explicit gc does it too */
	int cgroups = ar_cgroup_sweep();
	say_removed(&dead);
	free(dead.names);
	if (hooks > 0)
		printf("removed %d OCI hook record(s) of stopped containers\n", hooks);
	if (cgroups > 0)
		printf("removed %d empty cgroup(s) of dead sandboxes\n", cgroups);
	printf("removed %d dead sandbox(es)\n", n);
	return AR_EXIT_OK;
}

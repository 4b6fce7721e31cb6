/* agentrun gc: remove what sandboxes whose agentrun died (SIGKILL, a crash) left
 * behind: their state, /30, proxy and cgroups. `run` does the same at every start.
 * Live sandboxes, and anything not agentrun's, are never touched. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agentrun/cgroup.h"
#include "agentrun/cli.h"
#include "agentrun/hook.h"
#include "agentrun/net.h"

static const struct ar_opt opts[] = {{NULL}};

const struct ar_cli_cmd ar_cli_gc = {
    .name = "gc",
    .fn = ar_cmd_gc,
    .summary = "remove what dead sandboxes left behind",
    .synopsis = "gc",
    .about = "Remove what dead sandboxes left under " AR_NET_STATE_ROOT " (state, address,\n"
	     "proxy, cgroups) and say what was removed. Live sandboxes are not touched;\n"
	     "audits stay in " AR_NET_STATE_ROOT "/audit. `run` does the same at every start.",
    .opts = opts,
    .exit_status = "0 ok, 2 usage or not root.",
    .usage_exit = AR_EXIT_USAGE,
};

int ar_cmd_gc(int argc, char **argv)
{
	ar_autoopts struct ar_opt_result r = {0};
	int status;
	if (ar_cli_parse(&ar_cli_gc, argc, argv, NULL, &r, &status) != 0)
		return status;
	if (geteuid() != 0) {
		fprintf(stderr, "agentrun: gc: needs root (the state under %s is root's)\n",
			AR_NET_STATE_ROOT);
		return AR_EXIT_USAGE;
	}
	/* the hook's records first: they say where their proxy's cgroups are */
	int n = ar_hook_gc(AR_HOOK_DIR);
	n += ar_net_gc();
	n += ar_netns_gc(); /* after: a dead proxy's state is gone by now */
	/* run's cgroup manager sweeps at every start; an explicit gc does it too */
	ar_cgroup_sweep();
	printf("removed %d dead sandbox(es)\n", n);
	return AR_EXIT_OK;
}

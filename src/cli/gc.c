/* agentrun gc: remove what sandboxes whose agentrun died (SIGKILL, a crash) left
 * behind: their state, /30, proxy and cgroups. `run` does the same at every start.
 * Live sandboxes, and anything not agentrun's, are never touched. Root's gc sees
 * root's state (/run/agentrun, the hooks' records, named netns); a user's, the user's
 * own (ar_net_state_root), never another's. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agentrun/cgroup.h"
#include "agentrun/cli.h"
#include "agentrun/hook.h"
#include "agentrun/net.h"

int ar_cmd_gc(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: agentrun gc\n\n"
		       "Remove what the caller's dead sandboxes left under %s (state,\n"
		       "address, proxy, cgroups). Live sandboxes are not touched; audits stay\n"
		       "in %s/audit.\n",
		       AR_NET_STATE_ROOT, AR_NET_STATE_ROOT);
		return AR_EXIT_OK;
	}
	if (argc > 1)
		return ar_cli_usage_error("gc", AR_EXIT_USAGE, "unexpected argument `%s`", argv[1]);
	/* the hook's records first: they say where their proxy's cgroups are (root's only:
	 * hooks and named netns need root) */
	int n = geteuid() == 0 ? ar_hook_gc(AR_HOOK_DIR) : 0;
	n += ar_net_gc();
	if (geteuid() == 0)
		n += ar_netns_gc(); /* after: a dead proxy's state is gone by now */
	/* run's cgroup manager sweeps at every start; an explicit gc does it too */
	ar_cgroup_sweep();
	printf("removed %d dead sandbox(es)\n", n);
	return AR_EXIT_OK;
}

/* agentrun render: placeholder until its issue lands; owned by the helper that builds it. */
#define _GNU_SOURCE
#include <stdio.h>

#include "agentrun/cli.h"

int ar_cmd_render(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "agentrun: render: not implemented yet\n");
	return AR_EXIT_USAGE;
}

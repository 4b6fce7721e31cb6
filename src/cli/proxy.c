/* agentrun proxy: placeholder until its issue lands; owned by the helper that builds it. */
#define _GNU_SOURCE
#include <stdio.h>

#include "agentrun/cli.h"

int ar_cmd_proxy(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "agentrun: proxy: not implemented yet\n");
	return AR_EXIT_USAGE;
}

/* agentrun version */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "agentrun/cli.h"

int ar_cmd_version(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: agentrun version\n\nPrint the version of agentrun.\n");
		return AR_EXIT_OK;
	}
	if (argc > 1)
		return ar_cli_usage_error("version", AR_EXIT_USAGE, "unexpected argument `%s`",
					  argv[1]);
	printf("agentrun %s\n", AGENTRUN_VERSION);
	return AR_EXIT_OK;
}

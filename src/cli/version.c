/* agentrun version (also -V, --version) */
#define _GNU_SOURCE
#include <stdio.h>

#include "agentrun/cli.h"

static const struct ar_opt opts[] = {{NULL}};

const struct ar_cli_cmd ar_cli_version = {
    .name = "version",
    .fn = ar_cmd_version,
    .summary = "print the version (also -V, --version)",
    .synopsis = "version",
    .about = "Print the version of agentrun.",
    .opts = opts,
    .exit_status = "0 ok, 2 usage.",
    .usage_exit = AR_EXIT_USAGE,
};

int ar_cmd_version(int argc, char **argv)
{
	ar_autoopts struct ar_opt_result r = {0};
	int status;
	if (ar_cli_parse(&ar_cli_version, argc, argv, NULL, &r, &status) != 0)
		return status;
	printf("agentrun %s\n", AGENTRUN_VERSION);
	return AR_EXIT_OK;
}

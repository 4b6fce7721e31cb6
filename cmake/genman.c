/* Writes agentrun(1) from the option tables at build time (src/cli/man.c). */
#include <stdio.h>

#include "agentrun/cli.h"

int main(void)
{
	ar_cli_man(stdout);
	return fflush(stdout) == 0 ? 0 : 1;
}

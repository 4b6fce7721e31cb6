/* ar-fuzz: the libFuzzer binary. One binary, every target; the target is chosen by
 * AR_FUZZ_TARGET=NAME or by invoking it as ar-fuzz-NAME (crun's single fuzzer with a
 * mode switch). Built only with -DAR_FUZZ=ON and clang; see tests/fuzz/run.sh. */
#include <stdio.h>
#include <stdlib.h>

#include "agentrun/log.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct ar_fuzz_target *target;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	target = ar_fuzz_select(*argc > 0 ? (*argv)[0] : NULL);
	if (target == NULL) {
		fprintf(stderr, "ar-fuzz: set AR_FUZZ_TARGET to one of:\n");
		ar_fuzz_list();
		exit(2);
	}
	/* warnings (shadowed seccomp rules, ...) would flood the log at thousands of
	 * inputs a second; the replay keeps them, so their formatting still runs */
	ar_log_set_level(AR_LOG_ERROR);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	target->fn(data, size);
	return 0;
}

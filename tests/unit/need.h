/* "Needs root / a kernel feature" for the cmocka tests: the C twin of `skip` in
 * tests/lib.sh. Where the need is not met the test is skipped, unless
 * AGENTRUN_MUST_WORK=1 (CI), where a skip would hide a lane that never ran: then the
 * test fails, saying what it needed. Header-only so any module's tests can include it
 * ("../need.h"). */
#ifndef AGENTRUN_TEST_NEED_H
#define AGENTRUN_TEST_NEED_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static inline bool ar_test_must_work(void)
{
	const char *v = getenv("AGENTRUN_MUST_WORK");
	return v != NULL && strcmp(v, "1") == 0;
}

/* AR_NEED(condition, "what is needed"): inside a test function (cmocka's skip and
 * fail_msg return from it). */
#define AR_NEED(cond, what)                                                                        \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			if (ar_test_must_work())                                                   \
				fail_msg("needs %s (AGENTRUN_MUST_WORK=1: a skip is a failure)",   \
					 (what));                                                  \
			print_message("SKIP: needs %s\n", (what));                                 \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

#endif

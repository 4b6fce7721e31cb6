/* Private to src/review: the table of finding kinds and the checks' entry points. */
#ifndef AGENTRUN_REVIEW_INTERNAL_H
#define AGENTRUN_REVIEW_INTERNAL_H

#include "agentrun/review.h"

struct review_kind {
	const char *id;
	enum ar_severity severity;
	const char *title;
};
extern const struct review_kind review_kinds[];
extern const size_t review_n_kinds;
const struct review_kind *review_kind(const char *id);

void review_hosts(const struct ar_review_input *in, struct ar_review *out);   /* hosts.c */
void review_rules(const struct ar_review_input *in, struct ar_review *out);   /* hosts.c */
void review_secrets(const struct ar_review_input *in, struct ar_review *out); /* policy.c */
void review_mounts(const struct ar_review_input *in, struct ar_review *out);  /* policy.c */
void review_limits(const struct ar_review_input *in, struct ar_review *out);  /* policy.c */

#endif

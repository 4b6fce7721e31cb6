/* "did you mean": the nearest of a few candidates by edit distance, for a misspelt
 * option, command or policy key. */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "agentrun/util.h"

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return SIZE_MAX;
	size_t row[65];
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

void ar_suggest_init(struct ar_suggest *s, const char *word)
{
	*s = (struct ar_suggest){.word = word, .dist = SIZE_MAX};
}

void ar_suggest_add(struct ar_suggest *s, const char *candidate)
{
	size_t d = edit_distance(s->word, candidate);
	if (d < s->dist) {
		s->dist = d;
		s->best = candidate;
	}
}

const char *ar_suggest_best(const struct ar_suggest *s)
{
	size_t len = strlen(s->word);
	/* a third of the word, at least one edit: "memroy" is memory, "x" is nothing */
	size_t limit = len / 3 > 0 ? len / 3 : 1;
	return s->best != NULL && s->dist > 0 && s->dist <= limit ? s->best : NULL;
}

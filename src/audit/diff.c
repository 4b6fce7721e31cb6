/* A unified diff (the GNU diff -u format, 3 lines of context) of two small texts, for
 * `audit --propose --policy`. Longest common subsequence over lines: a policy file is
 * a few hundred lines at most; past MAX_CELLS the whole file is one hunk. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "agentrun/propose.h"

#define CONTEXT	  3
#define MAX_CELLS (4u << 20)

struct lines {
	const char **p; /* start of each line */
	size_t *len;	/* with its newline, when it has one */
	size_t n;
};

static void split(const char *s, size_t len, struct lines *l)
{
	memset(l, 0, sizeof(*l));
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - s) + 1 : len;
		l->p = ar_xrealloc(l->p, (l->n + 1) * sizeof(*l->p));
		l->len = ar_xrealloc(l->len, (l->n + 1) * sizeof(*l->len));
		l->p[l->n] = s + i;
		l->len[l->n++] = e - i;
		i = e;
	}
}

static bool same(const struct lines *a, size_t i, const struct lines *b, size_t j)
{
	return a->len[i] == b->len[j] && memcmp(a->p[i], b->p[j], a->len[i]) == 0;
}

/* ops: ' ' kept, '-' only in a, '+' only in b, in order. */
static char *script(const struct lines *a, const struct lines *b, size_t *nops)
{
	size_t n = a->n, m = b->n, k = 0;
	char *ops = ar_xcalloc(n + m + 1, 1);
	if ((n + 1) * (m + 1) > MAX_CELLS) {
		memset(ops, '-', n);
		memset(ops + n, '+', m);
		*nops = n + m;
		return ops;
	}
	ar_autofree uint32_t *t = ar_xcalloc((n + 1) * (m + 1), sizeof(uint32_t));
#define T(i, j) t[(i) * (m + 1) + (j)]
	for (size_t i = n; i-- > 0;)
		for (size_t j = m; j-- > 0;)
			T(i, j) = same(a, i, b, j)
				      ? T(i + 1, j + 1) + 1
				      : (T(i + 1, j) > T(i, j + 1) ? T(i + 1, j) : T(i, j + 1));
	size_t i = 0, j = 0;
	while (i < n || j < m) {
		if (i < n && j < m && same(a, i, b, j)) {
			ops[k++] = ' ';
			i++, j++;
		} else if (i < n && (j == m || T(i + 1, j) >= T(i, j + 1))) {
			ops[k++] = '-'; /* removals first, as diff -u prints them */
			i++;
		} else {
			ops[k++] = '+';
			j++;
		}
	}
#undef T
	*nops = k;
	return ops;
}

static void put_line(struct ar_buf *out, char op, const char *p, size_t len)
{
	ar_buf_putc(out, op);
	ar_buf_append(out, p, len);
	if (len == 0 || p[len - 1] != '\n')
		ar_buf_puts(out, "\n\\ No newline at end of file\n");
}

/* One hunk: ops[from, to), starting at line ai of a and bj of b. */
static void hunk(const struct lines *a, const struct lines *b, const char *ops, size_t from,
		 size_t to, size_t ai, size_t bj, struct ar_buf *out)
{
	size_t na = 0, nb = 0;
	for (size_t k = from; k < to; k++) {
		na += ops[k] != '+';
		nb += ops[k] != '-';
	}
	ar_buf_printf(out, "@@ -%zu,%zu +%zu,%zu @@\n", na ? ai + 1 : ai, na, nb ? bj + 1 : bj, nb);
	for (size_t k = from; k < to; k++) {
		if (ops[k] == '+')
			put_line(out, '+', b->p[bj], b->len[bj]), bj++;
		else if (ops[k] == '-')
			put_line(out, '-', a->p[ai], a->len[ai]), ai++;
		else
			put_line(out, ' ', a->p[ai], a->len[ai]), ai++, bj++;
	}
}

void ar_unified_diff(const char *a, size_t alen, const char *b, size_t blen, const char *label_a,
		     const char *label_b, struct ar_buf *out)
{
	struct lines la, lb;
	size_t n = 0;
	split(a, alen, &la);
	split(b, blen, &lb);
	ar_autofree char *ops = script(&la, &lb, &n);
	bool header = false;
	size_t ai = 0, bj = 0, k = 0;
	while (k < n) {
		if (ops[k] == ' ') {
			ai++, bj++, k++;
			continue;
		}
		/* a change at k: the hunk starts CONTEXT kept lines before it and runs until
		 * more than 2 * CONTEXT kept lines follow the last change */
		size_t back = 0;
		while (back < CONTEXT && back < k && ops[k - back - 1] == ' ')
			back++;
		size_t end = k, last = k;
		while (end < n && (ops[end] != ' ' || end - last <= 2 * CONTEXT)) {
			if (ops[end] != ' ')
				last = end;
			end++;
		}
		end = last + 1 + CONTEXT < end ? last + 1 + CONTEXT : end;
		if (!header)
			ar_buf_printf(out, "--- %s\n+++ %s\n", label_a, label_b);
		header = true;
		hunk(&la, &lb, ops, k - back, end, ai - back, bj - back, out);
		for (size_t q = k; q < end; q++) {
			ai += ops[q] != '+';
			bj += ops[q] != '-';
		}
		k = end;
	}
	free(la.p), free(la.len), free(lb.p), free(lb.len);
}

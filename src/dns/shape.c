/* Learn mode's limits on the shape of a name (docs/learn.md): a run that learns its
 * allow-list lets unlisted names through, so a name must not be able to carry data
 * by itself. Refused whatever the rules say: a label longer than
 * AR_DNS_LEARN_LABEL_MAX characters, and past AR_DNS_LEARN_FLOOD distinct names whose
 * first label looks random (at least 12 characters, at least 3 bits of entropy per
 * character) under one parent: the shapes of data smuggled in names (DNS tunnels,
 * exfiltration through subdomains). The state is the distinct names seen and a count
 * per parent, both bounded. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/dns.h"
#include "agentrun/util.h"

#define MIN_RANDOM_LABEL 12
#define MIN_RANDOM_BITS	 3.0

struct parent_count {
	char *parent;
	unsigned n;
};

struct ar_dns_shape {
	char **names; /* open addressing, nslots a power of two; NULL = empty */
	size_t nslots, n;
	struct parent_count *parents;
	size_t n_parents;
};

struct ar_dns_shape *ar_dns_shape_new(void)
{
	struct ar_dns_shape *s = ar_xcalloc(1, sizeof(*s));
	s->nslots = 64;
	s->names = ar_xcalloc(s->nslots, sizeof(char *));
	return s;
}

void ar_dns_shape_free(struct ar_dns_shape *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->nslots; i++)
		free(s->names[i]);
	for (size_t i = 0; i < s->n_parents; i++)
		free(s->parents[i].parent);
	free(s->parents);
	free(s->names);
	free(s);
}

static size_t find_slot(char *const *names, size_t nslots, const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	size_t i = h & (nslots - 1);
	while (names[i] != NULL && strcmp(names[i], name) != 0)
		i = (i + 1) & (nslots - 1);
	return i;
}

static void remember(struct ar_dns_shape *s, const char *name)
{
	if (2 * (s->n + 1) > s->nslots) {
		size_t ns = s->nslots * 2;
		char **t = ar_xcalloc(ns, sizeof(char *));
		for (size_t i = 0; i < s->nslots; i++)
			if (s->names[i] != NULL)
				t[find_slot(t, ns, s->names[i])] = s->names[i];
		free(s->names);
		s->names = t;
		s->nslots = ns;
	}
	s->names[find_slot(s->names, s->nslots, name)] = ar_xstrdup(name);
	s->n++;
}

/* log2 of x > 0 without libm (the only use of it in agentrun: a start that never
 * computes an entropy must not load it): x = m * 2^e with m in [1, 2), and
 * ln m = 2 atanh z, z = (m - 1) / (m + 1) <= 1/3, whose series converges well past a
 * double's precision in 20 terms. */
static double log2_pos(double x)
{
	int e = 0;
	while (x < 1.0) {
		x *= 2.0;
		e--;
	}
	while (x >= 2.0) {
		x /= 2.0;
		e++;
	}
	double z = (x - 1.0) / (x + 1.0), z2 = z * z, term = z, sum = 0;
	for (int k = 1; k < 40; k += 2) {
		sum += term / k;
		term *= z2;
	}
	return e + 2.0 * sum / 0.693147180559945309417232121458176568;
}

double ar_dns_label_entropy(const char *label, size_t len)
{
	unsigned counts[256] = {0};
	double h = 0;
	for (size_t i = 0; i < len; i++)
		counts[(unsigned char)label[i]]++;
	for (size_t i = 0; i < 256 && len > 0; i++) {
		if (counts[i] == 0)
			continue;
		double p = (double)counts[i] / (double)len;
		h -= p * log2_pos(p);
	}
	return h;
}

bool ar_dns_label_random(const char *label, size_t len)
{
	return len >= MIN_RANDOM_LABEL && ar_dns_label_entropy(label, len) >= MIN_RANDOM_BITS;
}

static struct parent_count *parent_slot(struct ar_dns_shape *s, const char *parent)
{
	for (size_t i = 0; i < s->n_parents; i++)
		if (strcmp(s->parents[i].parent, parent) == 0)
			return &s->parents[i];
	if (s->n_parents >= AR_DNS_LEARN_MAX_PARENTS)
		return NULL;
	s->parents = ar_xrealloc(s->parents, (s->n_parents + 1) * sizeof(*s->parents));
	s->parents[s->n_parents] = (struct parent_count){.parent = ar_xstrdup(parent)};
	return &s->parents[s->n_parents++];
}

/* The longest label, for the over-long check: its length, and where it starts. */
static size_t longest_label(const char *name, const char **at)
{
	size_t best = 0;
	for (const char *p = name; *p;) {
		size_t n = strcspn(p, ".");
		if (n > best) {
			best = n;
			*at = p;
		}
		p += n + (p[n] == '.');
	}
	return best;
}

/* A new name whose first label looks random: count it under its parent. */
static int count_random(struct ar_dns_shape *s, const char *name, char *why, size_t size)
{
	const char *dot = strchr(name, '.');
	if (dot == NULL || !ar_dns_label_random(name, (size_t)(dot - name)))
		return 0;
	struct parent_count *pc = parent_slot(s, dot + 1);
	if (pc == NULL) {
		snprintf(why, size, "random-looking names under more than %d parents",
			 AR_DNS_LEARN_MAX_PARENTS);
		return -1;
	}
	if (pc->n >= AR_DNS_LEARN_FLOOD) {
		snprintf(why, size,
			 "more than %d distinct random-looking names under %.200s (the shape of "
			 "data carried in names)",
			 AR_DNS_LEARN_FLOOD, dot + 1);
		return -1;
	}
	pc->n++;
	return 0;
}

int ar_dns_shape_check(struct ar_dns_shape *s, const char *name, char *why, size_t size)
{
	const char *at = name;
	size_t longest = longest_label(name, &at);
	if (longest > AR_DNS_LEARN_LABEL_MAX) {
		snprintf(why, size,
			 "a label of %zu characters (over %d: the shape of data carried in names)",
			 longest, AR_DNS_LEARN_LABEL_MAX);
		return -1;
	}
	if (s->names[find_slot(s->names, s->nslots, name)] != NULL)
		return 0; /* seen already: counted once */
	if (s->n >= AR_DNS_LEARN_MAX_NAMES) {
		snprintf(why, size, "more than %d distinct names learned", AR_DNS_LEARN_MAX_NAMES);
		return -1;
	}
	if (count_random(s, name, why, size) == -1)
		return -1;
	remember(s, name);
	return 0;
}

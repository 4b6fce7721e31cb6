/* Pure parsers and formatters for cgroup files (no I/O): /proc/PID/cgroup,
 * /proc/self/mountinfo, flat keyed files, controller lists, cgroup.procs, cpu.max,
 * and the names of our own cgroup directories. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/cgroup.h"
#include "agentrun/util.h"

int64_t ar_cgroup_cpu_quota(int64_t millicpus)
{
	int64_t q;

	if (millicpus <= 0)
		return -1;
	if (millicpus > INT64_MAX / AR_CGROUP_CPU_PERIOD)
		return INT64_MAX / 1000;
	q = millicpus * AR_CGROUP_CPU_PERIOD / 1000;
	return q < 1000 ? 1000 : q;
}

void ar_cgroup_format_cpu_max(int64_t millicpus, char *buf, size_t len)
{
	if (millicpus <= 0)
		snprintf(buf, len, "max %d", AR_CGROUP_CPU_PERIOD);
	else
		snprintf(buf, len, "%" PRId64 " %d", ar_cgroup_cpu_quota(millicpus),
			 AR_CGROUP_CPU_PERIOD);
}

/* Next line of text: [*line, *line + *n); returns false at the end. */
static bool next_line(const char **cursor, const char **line, size_t *n)
{
	const char *s = *cursor, *nl;

	if (*s == '\0')
		return false;
	nl = strchr(s, '\n');
	*line = s;
	*n = nl ? (size_t)(nl - s) : strlen(s);
	*cursor = nl ? nl + 1 : s + *n;
	return true;
}

/* Is `word` one of the `sep`-separated words of [s, s+n)? */
static bool words_have(const char *s, size_t n, char sep, const char *word)
{
	size_t wl = strlen(word);
	const char *end = s + n;

	while (s < end) {
		const char *e = memchr(s, sep, (size_t)(end - s));
		size_t l = e ? (size_t)(e - s) : (size_t)(end - s);
		if (l == wl && memcmp(s, word, wl) == 0)
			return true;
		s += l + 1;
	}
	return false;
}

int ar_cgroup_parse_proc(const char *text, const char *controller, char **path)
{
	const char *cur = text, *line;
	size_t n;

	while (next_line(&cur, &line, &n)) {
		const char *c1 = memchr(line, ':', n);
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(line + n - c1 - 1)) : NULL;
		if (!c2)
			continue;
		size_t cl = (size_t)(c2 - c1 - 1);
		bool match = controller ? words_have(c1 + 1, cl, ',', controller)
					: (cl == 0 && c1 - line == 1 && line[0] == '0');
		if (!match || c2[1] != '/')
			continue;
		*path = ar_xstrndup(c2 + 1, (size_t)(line + n - c2 - 1));
		return 0;
	}
	return -1;
}

/* Split a mountinfo line into space-separated fields (at most `max`). */
static size_t split_fields(const char *line, size_t n, const char **f, size_t *fl, size_t max)
{
	size_t k = 0, i = 0;

	while (i < n && k < max) {
		while (i < n && line[i] == ' ')
			i++;
		if (i >= n)
			break;
		size_t start = i;
		while (i < n && line[i] != ' ')
			i++;
		f[k] = line + start;
		fl[k++] = i - start;
	}
	return k;
}

/* The path of cgpath below a mount whose root is `root`: NULL when outside it. */
static char *join_mount(const char *mnt, const char *root, const char *cgpath)
{
	size_t rl = strlen(root);

	if (strcmp(root, "/") == 0)
		rl = 0;
	else if (strncmp(cgpath, root, rl) != 0 || (cgpath[rl] != '\0' && cgpath[rl] != '/'))
		return NULL;
	const char *rest = cgpath + rl;
	if (strcmp(rest, "/") == 0 || *rest == '\0')
		return ar_xstrdup(mnt);
	return ar_xasprintf("%s%s", strcmp(mnt, "/") == 0 ? "" : mnt, rest);
}

int ar_cgroup_find_dir(const char *mountinfo, const char *controller, const char *cgpath,
		       char **dir)
{
	const char *cur = mountinfo, *line;
	size_t n;

	while (next_line(&cur, &line, &n)) {
		const char *f[64];
		size_t fl[64], k = split_fields(line, n, f, fl, 64), sep;
		for (sep = 6; sep < k; sep++)
			if (fl[sep] == 1 && f[sep][0] == '-')
				break;
		if (sep + 3 >= k)
			continue;
		const char *fstype = controller ? "cgroup" : "cgroup2";
		if (fl[sep + 1] != strlen(fstype) || memcmp(f[sep + 1], fstype, fl[sep + 1]) != 0)
			continue;
		if (controller && !words_have(f[sep + 3], fl[sep + 3], ',', controller))
			continue;
		ar_autofree char *root = ar_mountinfo_unescape(f[3], fl[3]);
		ar_autofree char *mnt = ar_mountinfo_unescape(f[4], fl[4]);
		char *d = join_mount(mnt, root, cgpath);
		if (d) {
			*dir = d;
			return 0;
		}
	}
	return -1;
}

int ar_cgroup_parse_keyed(const char *text, const char *key, int64_t *value)
{
	const char *cur = text, *line;
	size_t n, kl = strlen(key);

	while (next_line(&cur, &line, &n)) {
		if (n <= kl || memcmp(line, key, kl) != 0 || line[kl] != ' ')
			continue;
		char num[32];
		size_t vl = n - kl - 1;
		if (vl == 0 || vl >= sizeof(num))
			return -1;
		memcpy(num, line + kl + 1, vl);
		num[vl] = '\0';
		return ar_parse_int(num, 0, INT64_MAX, value);
	}
	return -1;
}

bool ar_cgroup_list_has(const char *list, const char *name)
{
	size_t n = strcspn(list, "\n");
	return words_have(list, n, ' ', name);
}

int ar_cgroup_parse_pids(const char *text, pid_t **pids, size_t *n)
{
	const char *cur = text, *line;
	size_t ln, count = 0, cap = 0;
	pid_t *v = NULL;

	while (next_line(&cur, &line, &ln)) {
		char num[16];
		int64_t x;
		if (ln == 0)
			continue;
		if (ln >= sizeof(num))
			goto bad;
		memcpy(num, line, ln);
		num[ln] = '\0';
		if (ar_parse_int(num, 1, INT32_MAX, &x) == -1)
			goto bad;
		if (count == cap) {
			cap = cap ? cap * 2 : 16;
			v = ar_xrealloc(v, cap * sizeof(*v));
		}
		v[count++] = (pid_t)x;
	}
	*pids = v;
	*n = count;
	return 0;
bad:
	free(v);
	return -1;
}

pid_t ar_cgroup_name_owner(const char *name)
{
	static const char *const prefixes[] = {"agentrun-", "agentrun_supervisor-"};
	bool ours = false;
	int64_t pid;

	for (size_t i = 0; i < AR_ARRAY_SIZE(prefixes); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			ours = true;
	const char *dash = strrchr(name, '-');
	if (!ours || !dash || ar_parse_int(dash + 1, 1, INT32_MAX, &pid) == -1)
		return -1;
	return (pid_t)pid;
}

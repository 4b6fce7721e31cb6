/* Pure parsers for the /proc and cgroup text the process check reads: status,
 * mountinfo, cgroup membership, cgroup limit files, net/dev, routes, environ. No I/O:
 * src/check/proc.c reads the files and hands the text here. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/check.h"

/* ---- /proc/PID/status ---- */

enum status_kind { S_IDS, S_HEX, S_INT };

static const struct status_field {
	const char *key;
	enum status_kind kind;
	size_t off;
	bool required;
} status_fields[] = {
/* clang-format off */
#define S(key, kind, member, req) {key, kind, offsetof(struct ar_proc_status, member), req}
	S("Uid", S_IDS, uid, true),
	S("Gid", S_IDS, gid, true),
	S("CapInh", S_HEX, cap_inh, true),
	S("CapPrm", S_HEX, cap_prm, true),
	S("CapEff", S_HEX, cap_eff, true),
	S("CapBnd", S_HEX, cap_bnd, true),
	S("CapAmb", S_HEX, cap_amb, true),
	S("NoNewPrivs", S_INT, no_new_privs, false),
	S("Seccomp", S_INT, seccomp, false),
/* clang-format on */
#undef S
};

static bool rest_blank(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return *s == '\0' || *s == '\n';
}

static int status_value(const struct status_field *f, const char *v, struct ar_proc_status *st)
{
	void *dst = (char *)st + f->off;
	char *end = (char *)v;
	errno = 0;
	switch (f->kind) {
	case S_IDS:
		for (int i = 0; i < 4; i++) {
			unsigned long x = strtoul(v, &end, 10);
			if (end == v || errno || x > UINT32_MAX)
				return -1;
			((unsigned int *)dst)[i] = (unsigned int)x; /* uid_t, gid_t: 32 bits */
			v = end;
		}
		return rest_blank(v) ? 0 : -1;
	case S_HEX:
		*(uint64_t *)dst = strtoull(v, &end, 16);
		break;
	case S_INT:
		*(int *)dst = (int)strtol(v, &end, 10);
		break;
	}
	return end != v && errno == 0 && rest_blank(end) ? 0 : -1;
}

int ar_check_parse_status(const char *text, struct ar_proc_status *out, ar_error_t *err)
{
	bool seen[AR_ARRAY_SIZE(status_fields)] = {false};
	*out = (struct ar_proc_status){.no_new_privs = -1, .seccomp = -1};
	for (const char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		const char *colon = strchr(line, ':');
		nl = strchr(line, '\n');
		if (colon == NULL || (nl && colon > nl))
			continue;
		for (size_t i = 0; i < AR_ARRAY_SIZE(status_fields); i++) {
			const struct status_field *f = &status_fields[i];
			size_t n = strlen(f->key);
			if ((size_t)(colon - line) != n || strncmp(line, f->key, n) != 0)
				continue;
			if (status_value(f, colon + 1, out) < 0)
				return ar_error_make(err, 0, "%s: unparsable value", f->key);
			seen[i] = true;
		}
	}
	for (size_t i = 0; i < AR_ARRAY_SIZE(status_fields); i++)
		if (status_fields[i].required && !seen[i])
			return ar_error_make(err, 0, "%s: missing", status_fields[i].key);
	return 0;
}

/* ---- /proc/PID/mountinfo ---- */

static bool opts_has(const char *opts, const char *opt)
{
	size_t n = strlen(opt);
	for (const char *p = opts; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (strncmp(p, opt, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
	}
	return false;
}

/* Split one line into space-separated fields (at most max); returns the count. */
static size_t split_fields(const char *line, size_t len, const char **f, size_t *flen, size_t max)
{
	size_t n = 0, i = 0;
	while (i < len && n < max) {
		while (i < len && line[i] == ' ')
			i++;
		if (i == len)
			break;
		f[n] = line + i;
		while (i < len && line[i] != ' ')
			i++;
		flen[n] = (size_t)(line + i - f[n]);
		n++;
	}
	return n;
}

static int mountinfo_line(const char *line, size_t len, struct ar_mountinfo *m)
{
	const char *f[64];
	size_t fl[64], n = split_fields(line, len, f, fl, AR_ARRAY_SIZE(f)), sep;
	for (sep = 6; sep < n; sep++)
		if (fl[sep] == 1 && f[sep][0] == '-')
			break;
	if (sep + 2 >= n)
		return -1;
	ar_autofree char *mopts = ar_xstrndup(f[5], fl[5]);
	m->root = ar_mountinfo_unescape(f[3], fl[3]);
	m->target = ar_mountinfo_unescape(f[4], fl[4]);
	m->fstype = ar_xstrndup(f[sep + 1], fl[sep + 1]);
	m->source = ar_mountinfo_unescape(f[sep + 2], fl[sep + 2]);
	m->super_opts = sep + 3 < n ? ar_xstrndup(f[sep + 3], fl[sep + 3]) : ar_xstrdup("");
	m->readonly = opts_has(mopts, "ro") || opts_has(m->super_opts, "ro");
	return 0;
}

int ar_check_parse_mountinfo(const char *text, struct ar_mountinfo **out, size_t *n,
			     ar_error_t *err)
{
	struct ar_mountinfo *v = NULL;
	size_t count = 0, cap = 0, lineno = 0;
	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		lineno++;
		if (len > 0) {
			if (count == cap) {
				cap = cap ? cap * 2 : 32;
				v = ar_xrealloc(v, cap * sizeof(*v));
			}
			v[count] = (struct ar_mountinfo){0};
			if (mountinfo_line(line, len, &v[count]) < 0) {
				ar_mountinfo_free(v, count + 1);
				return ar_error_make(err, 0, "line %zu: unparsable", lineno);
			}
			count++;
		}
		line += len + (nl ? 1 : 0);
	}
	*out = v;
	*n = count;
	return 0;
}

void ar_mountinfo_free(struct ar_mountinfo *m, size_t n)
{
	for (size_t i = 0; m && i < n; i++) {
		free(m[i].root);
		free(m[i].target);
		free(m[i].fstype);
		free(m[i].source);
		free(m[i].super_opts);
	}
	free(m);
}

const struct ar_mountinfo *ar_check_mount_at(const struct ar_mountinfo *m, size_t n,
					     const char *target)
{
	for (size_t i = n; i-- > 0;)
		if (strcmp(m[i].target, target) == 0)
			return &m[i];
	return NULL;
}

/* ---- cgroups ---- */

char *ar_check_cgroup_path(const char *text, const char *controller)
{
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		ar_autofree char *l = ar_xstrndup(line, len);
		char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		line = nl ? nl + 1 : NULL;
		if (c2 == NULL)
			continue;
		*c1 = *c2 = '\0';
		bool v2 = strcmp(l, "0") == 0 && c1[1] == '\0';
		if (controller[0] == '\0' ? v2 : (!v2 && opts_has(c1 + 1, controller)))
			return ar_xstrdup(c2 + 1);
	}
	return NULL;
}

const struct ar_mountinfo *ar_check_cgroup_mount(const struct ar_mountinfo *m, size_t n,
						 const char *controller)
{
	const struct ar_mountinfo *found = NULL;
	for (size_t i = 0; i < n; i++) {
		bool ok = controller[0] == '\0' ? strcmp(m[i].fstype, "cgroup2") == 0
						: strcmp(m[i].fstype, "cgroup") == 0 &&
						      opts_has(m[i].super_opts, controller);
		if (ok && (found == NULL || strcmp(m[i].root, "/") == 0))
			found = &m[i];
		if (ok && strcmp(m[i].root, "/") == 0)
			break;
	}
	return found;
}

static int parse_i64(const char *s, const char **end, int64_t *out)
{
	char *e;
	errno = 0;
	long long v = strtoll(s, &e, 10);
	if (e == s || errno)
		return -1;
	*out = v;
	*end = e;
	return 0;
}

static bool only_space(const char *s)
{
	while (*s == ' ' || *s == '\n' || *s == '\t')
		s++;
	return *s == '\0';
}

int ar_check_parse_cg_max(const char *text, int64_t *out)
{
	const char *end;
	if (strncmp(text, "max", 3) == 0 && only_space(text + 3)) {
		*out = AR_LIMIT_UNLIMITED;
		return 0;
	}
	if (parse_i64(text, &end, out) < 0 || !only_space(end) || *out < 0)
		return -1;
	return 0;
}

int ar_check_parse_cg_v1_memory(const char *text, int64_t *out)
{
	const char *end;
	if (parse_i64(text, &end, out) < 0 || !only_space(end) || *out < 0)
		return -1;
	/* v1 reports "no limit" as PAGE_COUNTER_MAX pages, just under 2^63 */
	if (*out >= (INT64_C(1) << 62))
		*out = AR_LIMIT_UNLIMITED;
	return 0;
}

static int quota_to_milli(int64_t quota, int64_t period, int64_t *milli)
{
	if (quota < 0) {
		*milli = AR_LIMIT_UNLIMITED;
		return 0;
	}
	if (period <= 0)
		return -1;
	int64_t scaled;
	/* the text comes from a file anyone may have written huge numbers into */
	*milli =
	    __builtin_mul_overflow(quota, 1000, &scaled) ? INT64_MAX / period : scaled / period;
	return 0;
}

int ar_check_parse_cg_cpu_max(const char *text, int64_t *milli)
{
	const char *end;
	int64_t quota = -1, period;
	if (strncmp(text, "max ", 4) == 0)
		end = text + 3;
	else if (parse_i64(text, &end, &quota) < 0 || quota <= 0)
		return -1;
	if (parse_i64(end, &end, &period) < 0 || !only_space(end))
		return -1;
	return quota_to_milli(quota, period, milli);
}

int ar_check_parse_cg_v1_cpu(const char *quota_text, const char *period_text, int64_t *milli)
{
	const char *end;
	int64_t quota, period;
	if (parse_i64(quota_text, &end, &quota) < 0 || !only_space(end))
		return -1;
	if (parse_i64(period_text, &end, &period) < 0 || !only_space(end))
		return -1;
	return quota_to_milli(quota, period, milli);
}

/* ---- network and environment ---- */

static void strv_push(char ***sv, size_t *n, char *s)
{
	*sv = ar_xrealloc(*sv, (*n + 2) * sizeof(char *));
	(*sv)[(*n)++] = s;
	(*sv)[*n] = NULL;
}

char **ar_check_parse_netdev(const char *text)
{
	char **sv = ar_xcalloc(1, sizeof(char *));
	size_t n = 0;
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		ar_autofree char *l = ar_xstrndup(line, nl ? (size_t)(nl - line) : strlen(line));
		char *colon = strchr(l, ':'), *s = l;
		line = nl ? nl + 1 : NULL;
		if (colon == NULL || strchr(l, '|')) /* the two header lines have bars */
			continue;
		while (*s == ' ')
			s++;
		strv_push(&sv, &n, ar_xstrndup(s, (size_t)(colon - s)));
	}
	return sv;
}

static char *route4_default(const char *text)
{
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		ar_autofree char *l = ar_xstrndup(line, nl ? (size_t)(nl - line) : strlen(line));
		char iface[64], dest[16], gw[16], mask[16];
		unsigned flags;
		line = nl ? nl + 1 : NULL;
		if (sscanf(l, "%63s %15s %15s %x %*s %*s %*s %15s", iface, dest, gw, &flags,
			   mask) != 5)
			continue;
		if (strcmp(dest, "00000000") == 0 && strcmp(mask, "00000000") == 0 &&
		    (flags & 0x1) && strcmp(iface, "lo") != 0)
			return ar_xstrdup(iface);
	}
	return NULL;
}

static char *route6_default(const char *text)
{
	static const char zero[] = "00000000000000000000000000000000";
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		ar_autofree char *l = ar_xstrndup(line, nl ? (size_t)(nl - line) : strlen(line));
		char dest[40], plen[4], iface[64];
		unsigned flags;
		line = nl ? nl + 1 : NULL;
		if (sscanf(l, "%39s %3s %*s %*s %*s %*s %*s %*s %x %63s", dest, plen, &flags,
			   iface) != 4)
			continue;
		/* RTF_UP set, RTF_REJECT (0x200) clear: a usable default route */
		if (strcmp(dest, zero) == 0 && strcmp(plen, "00") == 0 && (flags & 0x1) &&
		    !(flags & 0x200) && strcmp(iface, "lo") != 0)
			return ar_xstrdup(iface);
	}
	return NULL;
}

char *ar_check_parse_default_route(const char *route4, const char *route6)
{
	char *dev = route4 ? route4_default(route4) : NULL;
	if (dev == NULL && route6)
		dev = route6_default(route6);
	return dev;
}

char **ar_check_parse_environ(const char *buf, size_t len)
{
	char **sv = ar_xcalloc(1, sizeof(char *));
	size_t n = 0;
	for (size_t i = 0; i < len;) {
		size_t l = strnlen(buf + i, len - i);
		if (l > 0)
			strv_push(&sv, &n, ar_xstrndup(buf + i, l));
		i += l + 1;
	}
	return sv;
}

/* CLI overrides of `run`: one table of flags, each writing into the same policy
 * struct a file fills (nsjail's one schema for file and flags). The caller runs
 * ar_policy_validate afterwards, so a flag can never produce what a file could not. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/rules.h"
#include "agentrun/sandbox.h"
#include "agentrun/util.h"

typedef int (*override_fn)(struct ar_policy *p, struct ar_run_opts *o, const char *flag,
			   const char *v, ar_error_t *err);

struct override_entry {
	struct ar_override doc;
	override_fn apply;
};

static int bad(ar_error_t *err, const char *flag, const char *v, const char *expect)
{
	return ar_error_make(err, 0, "%s: cannot parse \"%s\" as %s", flag, v, expect);
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = ar_xstrdup(v);
}

/* Collapse "//" and drop a trailing "/"; the policy check rejects what is still wrong. */
static char *tidy_path(const char *in)
{
	char *out = ar_xstrdup(in);
	size_t j = 0;
	for (size_t i = 0; in[i]; i++)
		if (!(in[i] == '/' && j > 0 && out[j - 1] == '/'))
			out[j++] = in[i];
	if (j > 1 && out[j - 1] == '/')
		j--;
	out[j] = '\0';
	return out;
}

static int set_memory(struct ar_policy *p, struct ar_run_opts *o, const char *flag, const char *v,
		      ar_error_t *err)
{
	int64_t bytes;
	if (ar_parse_bytes(v, &bytes) == -1)
		return bad(err, flag, v, "a size (e.g. 256m, 1g, 1048576)");
	p->limits.memory = bytes;
	set_str(&p->limits.memory_str, v);
	return 0;
}

static int set_pids(struct ar_policy *p, struct ar_run_opts *o, const char *flag, const char *v,
		    ar_error_t *err)
{
	int64_t n;
	if (ar_parse_int(v, 1, INT32_MAX, &n) == -1)
		return bad(err, flag, v, "a number of processes (e.g. 64)");
	p->limits.pids = n;
	return 0;
}

static int set_cpus(struct ar_policy *p, struct ar_run_opts *o, const char *flag, const char *v,
		    ar_error_t *err)
{
	int64_t milli;
	if (ar_parse_cpus(v, &milli) == -1)
		return bad(err, flag, v, "a number of CPUs (e.g. 0.5, 2)");
	p->limits.cpus_milli = milli;
	set_str(&p->limits.cpus_str, v);
	return 0;
}

int ar_parse_user(const char *s, uid_t *uid, gid_t *gid)
{
	int64_t u, g;
	const char *colon = strchr(s, ':');
	ar_autofree char *head = ar_xstrndup(s, colon ? (size_t)(colon - s) : strlen(s));

	if (ar_parse_int(head, 0, UINT32_MAX - 1, &u) == -1 || head[0] == '-')
		return -1;
	g = u;
	if (colon && (ar_parse_int(colon + 1, 0, UINT32_MAX - 1, &g) == -1 || colon[1] == '-'))
		return -1;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

static int set_user(struct ar_policy *p, struct ar_run_opts *o, const char *flag, const char *v,
		    ar_error_t *err)
{
	if (ar_parse_user(v, &p->uid, &p->gid) == -1)
		return bad(err, flag, v, "a numeric UID or UID:GID (e.g. 1000, 1000:1000)");
	set_str(&p->user, v);
	p->user_set = true;
	return 0;
}

static int set_env(struct ar_policy *p, struct ar_run_opts *o, const char *flag, const char *v,
		   ar_error_t *err)
{
	const char *eq = strchr(v, '=');
	if (eq == NULL || eq == v)
		return bad(err, flag, v, "KEY=VALUE");
	ar_autofree char *key = ar_xstrndup(v, (size_t)(eq - v));
	ar_policy_setenv(p, key, eq + 1);
	return 0;
}

static int add_tmpfs(struct ar_policy *p, struct ar_run_opts *o, const char *flag, const char *v,
		     ar_error_t *err)
{
	if (v[0] != '/')
		return bad(err, flag, v, "an absolute path");
	p->tmpfs = ar_xrealloc(p->tmpfs, (p->n_tmpfs + 2) * sizeof(char *));
	p->tmpfs[p->n_tmpfs++] = tidy_path(v);
	p->tmpfs[p->n_tmpfs] = NULL;
	return 0;
}

/* SRC:DST[:ro|rw] */
static int add_mount(struct ar_policy *p, struct ar_run_opts *o, const char *flag, const char *v,
		     ar_error_t *err)
{
	ar_autofree char *copy = ar_xstrdup(v);
	char *src = copy, *dst = strchr(copy, ':'), *mode = NULL;
	bool readonly = true;

	if (dst == NULL)
		return bad(err, flag, v, "SRC:DST[:rw]");
	*dst++ = '\0';
	mode = strchr(dst, ':');
	if (mode != NULL) {
		*mode++ = '\0';
		if (strcmp(mode, "rw") == 0)
			readonly = false;
		else if (strcmp(mode, "ro") != 0)
			return bad(err, flag, v, "SRC:DST[:rw] (the mode is ro or rw)");
	}
	if (src[0] != '/' || dst[0] != '/')
		return bad(err, flag, v, "SRC:DST[:rw] with absolute paths");
	p->mounts = ar_xrealloc(p->mounts, (p->n_mounts + 1) * sizeof(*p->mounts));
	p->mounts[p->n_mounts++] = (struct ar_mount){.source = tidy_path(src),
						     .target = tidy_path(dst),
						     .readonly = readonly,
						     .flag = ar_xasprintf("%s %s", flag, v)};
	return 0;
}

static int set_rootfs(struct ar_policy *p, struct ar_run_opts *o, const char *flag, const char *v,
		      ar_error_t *err)
{
	if (v[0] != '/')
		return bad(err, flag, v, "an absolute directory path");
	free(p->rootfs);
	p->rootfs = tidy_path(v);
	return 0;
}

static int set_seccomp(struct ar_policy *p, struct ar_run_opts *o, const char *flag, const char *v,
		       ar_error_t *err)
{
	if (v[0] == '\0')
		return bad(err, flag, v, "FILE, default or unconfined");
	set_str(&p->seccomp, v);
	return 0;
}

static int set_no_cgroups(struct ar_policy *p, struct ar_run_opts *o, const char *flag,
			  const char *v, ar_error_t *err)
{
	o->no_cgroups = true;
	return 0;
}

/* Network overrides (docs/network.md): the same field the policy's proxy.allow_private
 * fills, validated as the file's is. */
static int add_allow_private(struct ar_policy *p, struct ar_run_opts *o, const char *flag,
			     const char *v, ar_error_t *err)
{
	struct ar_cidr c;
	if (ar_cidr_parse(v, &c) == -1)
		return bad(err, flag, v, "a CIDR (127.0.0.1, 10.0.0.0/8, fd00::/8)");
	p->proxy.allow_private =
	    ar_xrealloc(p->proxy.allow_private, (p->proxy.n_allow_private + 2) * sizeof(char *));
	p->proxy.allow_private[p->proxy.n_allow_private++] = ar_xstrdup(v);
	p->proxy.allow_private[p->proxy.n_allow_private] = NULL; /* ar_strv_free */
	return 0;
}

/* Learn mode (docs/learn.md) observes the proxy's traffic: it needs network: proxy. */
static int set_learn(struct ar_policy *p, struct ar_run_opts *o, const char *flag, const char *v,
		     ar_error_t *err)
{
	p->mode = AR_MODE_LEARN;
	p->network = AR_NETWORK_PROXY;
	return 0;
}

static int set_audit(struct ar_policy *p, struct ar_run_opts *o, const char *flag, const char *v,
		     ar_error_t *err)
{
	if (v[0] == '\0')
		return bad(err, flag, v, "a file path");
	o->audit_path = v;
	return 0;
}

static int set_proxy_log(struct ar_policy *p, struct ar_run_opts *o, const char *flag,
			 const char *v, ar_error_t *err)
{
	if (v[0] == '\0')
		return bad(err, flag, v, "a file path");
	o->proxy_log = v;
	return 0;
}

static int set_no_tty(struct ar_policy *p, struct ar_run_opts *o, const char *flag, const char *v,
		      ar_error_t *err)
{
	o->no_tty = true;
	return 0;
}

static const struct override_entry table[] = {
    {{"--memory", "SIZE", "memory limit (256m, 1g)"}, set_memory},
    {{"--pids", "N", "maximum number of processes"}, set_pids},
    {{"--cpus", "N", "CPU quota (0.5, 2)"}, set_cpus},
    {{"--user", "UID[:GID]", "numeric user (and group) to run as"}, set_user},
    {{"--env", "K=V", "set an environment variable (repeatable)"}, set_env},
    {{"--tmpfs", "PATH", "a writable tmpfs (nosuid, nodev) at PATH (repeatable)"}, add_tmpfs},
    {{"--mount", "SRC:DST[:rw]", "bind SRC at DST, read-only unless :rw (repeatable)"}, add_mount},
    {{"--rootfs", "DIR", "use DIR as the root instead of a view of the host root"}, set_rootfs},
    {{"--seccomp", "FILE|default|unconfined", "seccomp profile"}, set_seccomp},
    {{"--no-cgroups", NULL, "run without resource limits instead of failing closed"},
     set_no_cgroups},
    {{"--allow-private", "CIDR", "let the proxy dial this private range (repeatable)"},
     add_allow_private},
    {{"--learn", NULL, "learn mode: let names outside the allow-list through, audited as learned"},
     set_learn},
    {{"--audit", "FILE", "the proxy's audit log (default /run/agentrun/audit/NAME.jsonl)"},
     set_audit},
    {{"--proxy-log", "FILE", "the proxy's log lines (default: stderr)"}, set_proxy_log},
    {{"--no-tty", NULL, "pass a terminal on stdin straight through (no pty of its own)"},
     set_no_tty},
};

const struct ar_override *ar_override_at(size_t i)
{
	return i < AR_ARRAY_SIZE(table) ? &table[i].doc : NULL;
}

static const struct override_entry *find(const char *flag)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(table); i++)
		if (strcmp(table[i].doc.flag, flag) == 0)
			return &table[i];
	return NULL;
}

int ar_override_lookup(const char *flag, bool *takes_value)
{
	const struct override_entry *e = find(flag);
	if (e == NULL)
		return -1;
	*takes_value = e->doc.value != NULL;
	return 0;
}

int ar_override_apply(struct ar_policy *p, struct ar_run_opts *o, const char *flag,
		      const char *value, ar_error_t *err)
{
	const struct override_entry *e = find(flag);
	if (e == NULL)
		return ar_error_make(err, 0, "unknown option `%s`", flag);
	if (e->doc.value != NULL && value == NULL)
		return ar_error_make(err, 0, "%s: needs a value (%s %s)", flag, flag, e->doc.value);
	return e->apply(p, o, flag, value, err);
}

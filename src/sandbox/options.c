/* CLI overrides of `run`: one table of flags, each writing into the same policy
 * struct a file fills (nsjail's one schema for file and flags). Each flag is
 * validated as it applies, so a flag can never produce what a file could not, and
 * its error names the flag. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/proxy.h"
#include "agentrun/rules.h"
#include "agentrun/sandbox.h"
#include "agentrun/util.h"

/* What a setter writes into: the policy and run's own options. */
struct ctx {
	struct ar_policy *p;
	struct ar_run_opts *o;
};

/* "--pids x: expected ...": the flag and its value, as the user typed them. */
static int bad(ar_error_t *err, const struct ar_opt *opt, const char *v, const char *expect)
{
	return ar_error_make(err, 0, "%s %s: expected %s", opt->flag, v[0] ? v : "\"\"", expect);
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

static int set_memory(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_policy *p = ((struct ctx *)ctx)->p;
	int64_t bytes;
	if (ar_parse_bytes(v, &bytes) == -1)
		return bad(err, opt, v, "a size of at least 6m (e.g. 256m, 1g, 1048576)");
	p->limits.memory = bytes;
	set_str(&p->limits.memory_str, v);
	return 0;
}

static int set_pids(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_policy *p = ((struct ctx *)ctx)->p;
	int64_t n;
	/* any integer: the range is the policy's, and its check names it */
	if (ar_parse_int(v, INT32_MIN, INT32_MAX, &n) == -1)
		return bad(err, opt, v, "a number of processes (e.g. 64)");
	p->limits.pids = n;
	return 0;
}

static int set_cpus(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_policy *p = ((struct ctx *)ctx)->p;
	int64_t milli;
	if (ar_parse_cpus(v, &milli) == -1)
		return bad(err, opt, v,
			   "a number of CPUs from 0.001 to 1024 with at most 3 decimals (e.g. "
			   "0.5, 2)");
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

static int set_user(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_policy *p = ((struct ctx *)ctx)->p;
	if (ar_parse_user(v, &p->uid, &p->gid) == -1)
		return bad(err, opt, v, "a numeric UID or UID:GID (e.g. 1000, 1000:1000)");
	set_str(&p->user, v);
	p->user_set = true;
	return 0;
}

static int set_env(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_policy *p = ((struct ctx *)ctx)->p;
	const char *eq = strchr(v, '=');
	if (eq == NULL || eq == v)
		return bad(err, opt, v, "KEY=VALUE");
	ar_autofree char *key = ar_xstrndup(v, (size_t)(eq - v));
	ar_policy_setenv(p, key, eq + 1);
	return 0;
}

static int add_tmpfs(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_policy *p = ((struct ctx *)ctx)->p;
	if (v[0] != '/')
		return bad(err, opt, v, "an absolute path");
	p->tmpfs = ar_xrealloc(p->tmpfs, (p->n_tmpfs + 2) * sizeof(char *));
	p->tmpfs[p->n_tmpfs++] = tidy_path(v);
	p->tmpfs[p->n_tmpfs] = NULL;
	return 0;
}

/* SRC:DST[:ro|rw] */
static int add_mount(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_policy *p = ((struct ctx *)ctx)->p;
	ar_autofree char *copy = ar_xstrdup(v);
	char *src = copy, *dst = strchr(copy, ':'), *mode = NULL;
	bool readonly = true;

	if (dst == NULL)
		return bad(err, opt, v, "SRC:DST[:rw]");
	*dst++ = '\0';
	mode = strchr(dst, ':');
	if (mode != NULL) {
		*mode++ = '\0';
		if (strcmp(mode, "rw") == 0)
			readonly = false;
		else if (strcmp(mode, "ro") != 0)
			return bad(err, opt, v, "SRC:DST[:rw] (the mode is ro or rw)");
	}
	if (src[0] != '/' || dst[0] != '/')
		return bad(err, opt, v, "SRC:DST[:rw] with absolute paths");
	p->mounts = ar_xrealloc(p->mounts, (p->n_mounts + 1) * sizeof(*p->mounts));
	p->mounts[p->n_mounts++] = (struct ar_mount){.source = tidy_path(src),
						     .target = tidy_path(dst),
						     .readonly = readonly,
						     .flag = ar_xasprintf("%s %s", opt->flag, v)};
	return 0;
}

static int set_rootfs(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_policy *p = ((struct ctx *)ctx)->p;
	if (v[0] != '/')
		return bad(err, opt, v, "an absolute directory path");
	free(p->rootfs);
	p->rootfs = tidy_path(v);
	return 0;
}

static int set_seccomp(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_policy *p = ((struct ctx *)ctx)->p;
	if (v[0] == '\0')
		return bad(err, opt, v, "FILE, default or unconfined");
	set_str(&p->seccomp, v);
	return 0;
}

static int set_no_cgroups(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_run_opts *o = ((struct ctx *)ctx)->o;
	o->no_cgroups = true;
	return 0;
}

/* The policy's limits.required (docs/cgroups.md#without-root). */
static int set_require_limits(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	((struct ctx *)ctx)->p->limits.required = true;
	return 0;
}

/* Network overrides (docs/network.md): the same field the policy's proxy.allow_private
 * fills, validated as the file's is. */
static int add_allow_private(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_policy *p = ((struct ctx *)ctx)->p;
	struct ar_cidr c;
	if (ar_cidr_parse(v, &c) == -1)
		return bad(err, opt, v, "a CIDR (127.0.0.1, 10.0.0.0/8, fd00::/8)");
	p->proxy.allow_private =
	    ar_xrealloc(p->proxy.allow_private, (p->proxy.n_allow_private + 2) * sizeof(char *));
	p->proxy.allow_private[p->proxy.n_allow_private++] = ar_xstrdup(v);
	p->proxy.allow_private[p->proxy.n_allow_private] = NULL; /* ar_strv_free */
	return 0;
}

/* Learn mode (docs/learn.md) observes the proxy's traffic: it needs network: proxy. */
static int set_learn(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_policy *p = ((struct ctx *)ctx)->p;
	p->mode = AR_MODE_LEARN;
	p->network = AR_NETWORK_PROXY;
	return 0;
}

static int set_audit(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_run_opts *o = ((struct ctx *)ctx)->o;
	if (v[0] == '\0')
		return bad(err, opt, v, "a file path");
	o->audit_path = v;
	return 0;
}

static int set_proxy_log(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_run_opts *o = ((struct ctx *)ctx)->o;
	if (v[0] == '\0')
		return bad(err, opt, v, "a file path");
	o->proxy_log = v;
	return 0;
}

static int set_proxy_busy_poll(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	if (ar_proxy_busy_poll_arg(v, &((struct ctx *)ctx)->o->proxy_busy_poll_us) == -1)
		return bad(err, opt, v, "0 (never) to 10000 microseconds");
	return 0;
}

static int set_no_tty(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct ar_run_opts *o = ((struct ctx *)ctx)->o;
	o->no_tty = true;
	return 0;
}

/* run's options (plus -h, --help): the help, the man page and the parser read this;
 * --policy is read by the CLI before the others apply. */
const struct ar_opt ar_run_options[] = {
    {"--policy", 'p', "FILE|NAME",
     "the policy (JSON), or a shipped profile's name; the\noptions below override it", NULL, 0},
    {"--memory", 0, "SIZE", "memory limit (256m, 1g; at least 6m)", set_memory, 0},
    {"--pids", 0, "N", "maximum number of processes", set_pids, 0},
    {"--cpus", 0, "N", "CPU quota (0.5, 2)", set_cpus, 0},
    {"--user", 0, "UID[:GID]", "numeric user (and group) to run as", set_user, 0},
    {"--env", 0, "K=V", "set an environment variable (repeatable)", set_env, 0},
    {"--tmpfs", 0, "PATH", "a writable tmpfs (nosuid, nodev) at PATH (repeatable)", add_tmpfs, 0},
    {"--mount", 0, "SRC:DST[:rw]",
     "bind SRC at DST, read-only unless :rw (repeatable;\nrw as root: idmapped onto the owner of "
     "SRC)",
     add_mount, 0},
    {"--rootfs", 0, "DIR", "use DIR as the root instead of a view of the host root", set_rootfs, 0},
    {"--seccomp", 0, "FILE|default|unconfined", "seccomp profile", set_seccomp, 0},
    {"--no-cgroups", 0, NULL, "run without resource limits (no cgroup, no warning)", set_no_cgroups,
     0},
    {"--require-limits", 0, NULL, "without root too, fail rather than run without limits",
     set_require_limits, 0},
    {"--allow-private", 0, "CIDR", "let the proxy dial this private range (repeatable)",
     add_allow_private, 0},
    {"--learn", 0, NULL,
     "learn mode: let names outside the allow-list through,\naudited as learned (docs/learn.md)",
     set_learn, 0},
    {"--audit", 0, "FILE", "the proxy's audit log (default /run/agentrun/audit/NAME.jsonl)",
     set_audit, 0},
    {"--proxy-log", 0, "FILE", "the proxy's log lines (default: stderr)", set_proxy_log, 0},
    {"--proxy-busy-poll", 0, "USEC",
     "the proxy may poll this long before it sleeps\n(default 100, adaptive; 0: never; "
     "docs/proxy.md)",
     set_proxy_busy_poll, 0},
    {"--no-tty", 0, NULL, "pass a terminal on stdin straight through (no pty of its own)",
     set_no_tty, 0},
    {NULL},
};

static const struct ar_opt *find(const char *flag)
{
	for (const struct ar_opt *e = ar_run_options; e->flag != NULL; e++)
		if (strcmp(e->flag, flag) == 0)
			return e;
	return NULL;
}

/* The setters of the run's own options (they write the run options, not the policy). */
static ar_opt_set_fn const run_setters[] = {set_no_cgroups, set_audit, set_proxy_log,
					    set_proxy_busy_poll, set_no_tty};

bool ar_override_changes_policy(const char *flag)
{
	const struct ar_opt *e = find(flag);
	if (e == NULL || e->set == NULL) /* --policy: the file itself */
		return false;
	for (size_t i = 0; i < AR_ARRAY_SIZE(run_setters); i++)
		if (e->set == run_setters[i])
			return false;
	return true;
}

/* The policy as this flag leaves it is checked at once, with the flag as its origin:
 * "--memory 5m: limits.memory: ... below the minimum", not the file the flag
 * overrides (the file was checked when it was read). */
int ar_override_apply(struct ar_policy *p, struct ar_run_opts *o, const char *flag,
		      const char *value, ar_error_t *err)
{
	const struct ar_opt *e = find(flag);
	if (e == NULL || e->set == NULL)
		return ar_error_make(err, 0, "unknown option `%s`", flag);
	if (e->value != NULL && value == NULL)
		return ar_error_make(err, 0, "option `%s` needs a value (%s %s)", flag, flag,
				     e->value);
	struct ctx c = {p, o};
	if (e->set(&c, e, value, err) == -1)
		return -1;
	char *file_origin = p->origin;
	ar_autofree char *origin = value ? ar_xasprintf("%s %s", flag, value) : ar_xstrdup(flag);
	p->origin = origin;
	int r = ar_policy_validate(p, err);
	p->origin = file_origin;
	return r;
}

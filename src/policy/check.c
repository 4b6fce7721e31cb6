/* Cross-field and range checks on a typed policy. They run at the end of parsing
 * and again (ar_policy_validate) after CLI overrides wrote into the struct, so a
 * flag can never produce a policy a file could not. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/policy.h"
#include "agentrun/rules.h"
#include "agentrun/util.h"
#include "policy-private.h"

/* "ORIGIN: KEY: message": the origin is the file, or the flag that set the key. */
static int oerr(ar_error_t *err, const char *origin, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int oerr(ar_error_t *err, const char *origin, const char *key, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	policy_verror(err, origin ? origin : "<policy>", key, fmt, ap);
	va_end(ap);
	return -1;
}

#define cerr(err, p, ...) oerr(err, (p)->origin, __VA_ARGS__)

static int check_path(ar_error_t *err, const char *origin, const char *key, const char *path,
		      enum path_use use)
{
	const char *why;
	ar_autofree char *norm = NULL;

	if (path == NULL)
		return 0;
	norm = policy_path_normalize(path, use, &why);
	if (norm == NULL)
		return oerr(err, origin, key, "%s, got \"%s\"", why, path);
	return 0;
}

static int check_limits(const struct ar_policy *p, ar_error_t *err)
{
	const struct ar_limits *l = &p->limits;

	if (l->pids < 1 || l->pids > AR_POLICY_PIDS_MAX)
		return cerr(err, p, "limits.pids", "must be an integer from 1 to %d, got %lld",
			    AR_POLICY_PIDS_MAX, (long long)l->pids);
	int64_t as_written = 0; /* the text, when it is still what the number says */
	if (l->memory_str != NULL)
		ar_parse_bytes(l->memory_str, &as_written);
	if (l->memory < AR_POLICY_MEMORY_MIN && as_written == l->memory)
		return cerr(err, p, "limits.memory", "\"%s\" is below the minimum of 6m",
			    l->memory_str);
	if (l->memory < AR_POLICY_MEMORY_MIN)
		return cerr(err, p, "limits.memory", "%lld bytes is below the minimum of 6m",
			    (long long)l->memory);
	if (l->cpus_milli <= 0)
		return cerr(err, p, "limits.cpus", "must be above 0");
	return 0;
}

static int check_network(const struct ar_policy *p, ar_error_t *err)
{
	if (p->network == AR_NETWORK_NONE && p->n_allowed_hosts > 0)
		return cerr(err, p, "network",
			    "\"none\" conflicts with allowed_hosts (%zu host(s)); remove "
			    "allowed_hosts or use \"proxy\"",
			    p->n_allowed_hosts);
	if (p->network == AR_NETWORK_NONE && p->mode == AR_MODE_LEARN)
		return cerr(err, p, "network",
			    "\"none\" conflicts with mode \"learn\" (learn mode observes the "
			    "proxy's traffic); use \"proxy\"");
	if (p->proxy.port < 1 || p->proxy.port > 65535)
		return cerr(err, p, "proxy.port", "must be an integer from 1 to 65535, got %d",
			    p->proxy.port);
	/* the stub listens on every address of the proxy netns, the listener on one of them */
	if (p->network == AR_NETWORK_PROXY && p->proxy.transparent && p->proxy.port == 53)
		return cerr(err, p, "proxy.port",
			    "53 is the DNS stub's port under transparent capture; choose "
			    "another port or set proxy.transparent to false");
	/* one rule at a time, so the message can name its index */
	for (size_t i = 0; i < p->n_allowed_hosts; i++) {
		ar_autorules struct ar_rules *rules = NULL;
		ar_autofree char *what =
		    ar_xasprintf("%s: allowed_hosts[%zu]", p->origin ? p->origin : "<policy>", i);
		if (ar_rules_compile(&p->allowed_hosts[i], 1, what, &rules, err) == -1)
			return -1;
	}
	return 0;
}

/* A mount a --mount flag added is named by the flag, a file's by its index. */
static int check_mounts(const struct ar_policy *p, ar_error_t *err)
{
	for (size_t i = 0; i < p->n_mounts; i++) {
		const struct ar_mount *m = &p->mounts[i];
		const char *origin = m->flag ? m->flag : p->origin;
		ar_autofree char *src =
		    m->flag ? ar_xstrdup("source") : ar_xasprintf("mounts[%zu].source", i);
		ar_autofree char *dst =
		    m->flag ? ar_xstrdup("target") : ar_xasprintf("mounts[%zu].target", i);
		if (m->source == NULL || m->target == NULL)
			return oerr(err, origin, m->source ? dst : src, "missing");
		if (check_path(err, origin, src, m->source, PATH_PLAIN) == -1 ||
		    check_path(err, origin, dst, m->target, PATH_MOUNT_TARGET) == -1)
			return -1;
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->mounts[j].target, m->target) == 0)
				return oerr(err, origin, dst,
					    "\"%s\" is already the target of mounts[%zu]",
					    m->target, j);
		if (p->kubeconfig != NULL && p->kubeconfig_target != NULL &&
		    strcmp(p->kubeconfig_target, m->target) == 0)
			return oerr(err, origin, dst, "\"%s\" is where kubeconfig is mounted",
				    m->target);
		for (size_t j = 0; j < p->n_tmpfs; j++)
			if (strcmp(p->tmpfs[j], m->target) == 0)
				return oerr(err, origin, dst, "\"%s\" is also tmpfs[%zu]",
					    m->target, j);
	}
	return 0;
}

static int check_paths(const struct ar_policy *p, ar_error_t *err)
{
	if (check_path(err, p->origin, "rootfs", p->rootfs, PATH_NOT_ROOT) == -1 ||
	    check_path(err, p->origin, "kubeconfig", p->kubeconfig, PATH_NOT_ROOT) == -1 ||
	    check_path(err, p->origin, "kubeconfig target", p->kubeconfig_target,
		       PATH_MOUNT_TARGET) == -1)
		return -1;
	for (size_t i = 0; i < p->n_tmpfs; i++) {
		ar_autofree char *key = ar_xasprintf("tmpfs[%zu]", i);
		if (check_path(err, p->origin, key, p->tmpfs[i], PATH_TMPFS) == -1)
			return -1;
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->tmpfs[j], p->tmpfs[i]) == 0)
				return cerr(err, p, key, "\"%s\" is already tmpfs[%zu]",
					    p->tmpfs[i], j);
	}
	return check_mounts(p, err);
}

static int check_identity(const struct ar_policy *p, ar_error_t *err)
{
	uid_t uid;
	gid_t gid;

	if (p->name == NULL || !policy_name_valid(p->name))
		return cerr(err, p, "name", "must match %s", AR_POLICY_NAME_RE);
	if (p->image != NULL && !policy_image_valid(p->image))
		return cerr(err, p, "image",
			    "must be a non-empty image reference without spaces, not starting "
			    "with '-'");
	if (p->user == NULL || policy_parse_user(p->user, &uid, &gid) == -1)
		return cerr(err, p, "user", "must be a numeric \"UID\" or \"UID:GID\", got \"%s\"",
			    p->user ? p->user : "");
	if (uid != p->uid || gid != p->gid)
		return cerr(err, p, "user", "\"%s\" disagrees with uid %u gid %u", p->user,
			    (unsigned)p->uid, (unsigned)p->gid);
	/* Without a user namespace the policy's ids are host ids: uid 0 reads every
	 * root-owned 0600 file in the view and owns what it creates on rw mounts. */
	if (uid == 0)
		return cerr(err, p, "user", "uid 0 is root on the host; use a non-root uid");
	if (gid == 0)
		return cerr(err, p, "user",
			    "gid 0 is root's group on the host; use a non-root gid");
	if (p->seccomp == NULL)
		return cerr(err, p, "seccomp", "missing");
	return 0;
}

static int check_env(const struct ar_policy *p, ar_error_t *err)
{
	for (size_t i = 0; i < p->n_env; i++) {
		if (!policy_env_key_valid(p->env[i].key))
			return cerr(err, p, "env", "key \"%s\" must match %s", p->env[i].key,
				    AR_ENV_KEY_RE);
		const char *why = policy_env_reserved(p, p->env[i].key);
		if (why != NULL) {
			ar_autofree char *key = ar_xasprintf("env.%s", p->env[i].key);
			return cerr(err, p, key, "%s", why);
		}
		if (i > 0 && strcmp(p->env[i - 1].key, p->env[i].key) >= 0)
			return cerr(err, p, "env", "keys are not sorted and unique at \"%s\"",
				    p->env[i].key);
	}
	return 0;
}

int policy_check(const struct ar_policy *p, ar_error_t *err)
{
	if (check_identity(p, err) == -1 || check_limits(p, err) == -1 ||
	    check_paths(p, err) == -1 || check_env(p, err) == -1 || check_network(p, err) == -1 ||
	    policy_check_dns_pool(p, err) == -1 || policy_check_secrets(p, err) == -1)
		return -1;
	if (strcmp(p->seccomp, "default") != 0 && strcmp(p->seccomp, "unconfined") != 0)
		return check_path(err, p->origin, "seccomp", p->seccomp, PATH_NOT_ROOT);
	return 0;
}

/* Helpers shared by the files of the policy module (never included elsewhere):
 * the pure value validators and the cross-field checks. */
#ifndef AGENTRUN_POLICY_PRIVATE_H
#define AGENTRUN_POLICY_PRIVATE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "agentrun/error.h"
#include "agentrun/policy.h"

#define AR_POLICY_NAME_RE      "^[a-z0-9][a-z0-9-]{0,30}$"
#define AR_ENV_KEY_RE	       "^[A-Za-z_][A-Za-z0-9_]*$"
#define AR_POLICY_PIDS_MAX     4194304	   /* the kernel's PID_MAX_LIMIT */
#define AR_POLICY_MEMORY_MIN   (6LL << 20) /* docker's minimum, so render stays valid */
#define AR_POLICY_INT_MAX      (1LL << 53) /* exact in a JSON (double) number */
#define AR_POLICY_FILE_MAX     (1u << 20)
#define AR_POLICY_ETC_PROFILES "/etc/agentrun/profiles" /* --policy NAME, first */
#define AR_POLICY_HOST_MAX     256			/* as AR_HOST_MAX in rules.h */

/* Where a path is used: mount targets and tmpfs paths may not cover places the
 * sandbox manages itself. */
enum path_use {
	PATH_PLAIN,	   /* any normalised absolute path, "/" allowed */
	PATH_NOT_ROOT,	   /* anything but "/" */
	PATH_MOUNT_TARGET, /* not "/", not in /proc, /sys, /dev */
	PATH_TMPFS,	   /* not "/", not in /proc, /sys, not /dev itself */
};

bool policy_name_valid(const char *name);
bool policy_env_key_valid(const char *key);
/* Normalise an absolute path (collapse "//", drop "." and a trailing "/"); reject
 * relative paths, ".." components and control characters. On failure returns NULL
 * and sets *why to a static explanation. */
char *policy_path_normalize(const char *in, enum path_use use, const char **why);
/* "UID" or "UID:GID", numeric only. */
int policy_parse_user(const char *s, uid_t *uid, gid_t *gid);
/* Lowercase, one trailing dot removed; NULL when nothing is left or the name has
 * characters a host cannot have. */
char *policy_host_canonical(const char *in);
/* A value fit for an argv word of docker: non-empty, no whitespace or control
 * characters, not starting with '-'. */
bool policy_image_valid(const char *s);

/* Why KEY may not be set in the policy env (agentrun sets it), or NULL. */
const char *policy_env_reserved(const struct ar_policy *p, const char *key);
/* The same, but for agentrun's own variables only (not the secrets' names). */
const char *policy_env_agentrun_var(const struct ar_policy *p, const char *key);
#define AR_POLICY_MSG_MAX 1024
/* "ORIGIN: KEY: message" as an error, bounded to AR_POLICY_MSG_MAX. Returns -1. */
int policy_verror(ar_error_t *err, const char *origin, const char *key, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

void policy_free_secrets(struct ar_secret_spec *s, size_t n);
/* secrets (src/policy/secrets.c): names, sources, hosts in allowed_hosts. */
int policy_check_secrets(const struct ar_policy *p, ar_error_t *err);

/* A policy holding the defaults for a policy file (DESIGN §3). */
struct ar_policy *policy_new(const char *origin);

/* The cross-field checks run at the end of parsing and again by ar_policy_validate. */
int policy_check(const struct ar_policy *p, ar_error_t *err);
/* proxy.dns_pool (src/policy/dns_pool.c): an IPv4 range that overlaps nothing a
 * sandbox could reach or mean otherwise. */
struct ar_cidr;
int policy_check_dns_pool(const struct ar_policy *p, ar_error_t *err);
/* Do two IPv4 ranges share an address? (false for IPv6) */
bool policy_ranges_overlap(const struct ar_cidr *a, const struct ar_cidr *b);

#endif

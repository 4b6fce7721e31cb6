/* Pure validators for single policy values: names, paths, users, hosts. No JSON
 * here, so the CLI overrides can reach the same rules through ar_policy_validate. */
#define _GNU_SOURCE
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/util.h"
#include "policy-private.h"

bool policy_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > AR_POLICY_NAME_MAX || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
	}
	return true;
}

bool policy_env_key_valid(const char *key)
{
	if (!(isalpha((unsigned char)key[0]) || key[0] == '_'))
		return false;
	for (const char *p = key; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_') || (unsigned char)*p > 127)
			return false;
	return true;
}

/* Places the sandbox builds itself. `subtree` says whether paths below it are
 * refused too (a tmpfs on /dev/shm is fine, a bind mount of /dev/kvm is not). */
static const struct {
	const char *dir;
	bool mount_subtree;
	bool tmpfs_subtree;
} reserved[] = {
    {"/proc", true, true},
    {"/sys", true, true},
    {"/dev", true, false},
};

static const char *reserved_why(const char *path, enum path_use use)
{
	if (use == PATH_PLAIN)
		return NULL;
	if (strcmp(path, "/") == 0)
		return "must not be \"/\"";
	if (use == PATH_NOT_ROOT)
		return NULL;
	for (size_t i = 0; i < AR_ARRAY_SIZE(reserved); i++) {
		size_t n = strlen(reserved[i].dir);
		bool subtree = use == PATH_MOUNT_TARGET ? reserved[i].mount_subtree
							: reserved[i].tmpfs_subtree;
		if (strncmp(path, reserved[i].dir, n) != 0)
			continue;
		if (path[n] == '\0' || (subtree && path[n] == '/'))
			return "is managed by the sandbox (/proc, /sys and /dev are built by "
			       "agentrun)";
	}
	return NULL;
}

char *policy_path_normalize(const char *in, enum path_use use, const char **why)
{
	struct ar_buf b = {0};
	const char *p = in;

	if (in[0] != '/') {
		*why = "must be an absolute path";
		return NULL;
	}
	if (strlen(in) >= PATH_MAX) {
		*why = "is longer than PATH_MAX";
		return NULL;
	}
	for (const char *q = in; *q; q++) {
		if (iscntrl((unsigned char)*q)) {
			*why = "must not contain control characters";
			return NULL;
		}
	}
	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			ar_buf_free(&b);
			*why = "must not contain \"..\" components";
			return NULL;
		}
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			ar_buf_putc(&b, '/');
			ar_buf_append(&b, p, n);
		}
		p += n;
	}
	if (b.len == 0)
		ar_buf_putc(&b, '/');
	*why = reserved_why(b.data, use);
	if (*why != NULL) {
		ar_buf_free(&b);
		return NULL;
	}
	return ar_buf_steal(&b);
}

/* One numeric id: decimal digits only, no sign, below (uid_t)-1 which means "none". */
static int parse_id(const char *s, size_t n, uint32_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 10)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v >= UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int policy_parse_user(const char *s, uid_t *uid, gid_t *gid)
{
	const char *colon = strchr(s, ':');
	uint32_t u, g;

	if (parse_id(s, colon ? (size_t)(colon - s) : strlen(s), &u) == -1)
		return -1;
	g = u;
	if (colon && parse_id(colon + 1, strlen(colon + 1), &g) == -1)
		return -1;
	*uid = u;
	*gid = g;
	return 0;
}

char *policy_host_canonical(const char *in)
{
	size_t n = strlen(in);

	if (n > 0 && in[n - 1] == '.')
		n--;
	if (n == 0 || n >= AR_POLICY_HOST_MAX)
		return NULL;
	char *out = ar_xstrndup(in, n);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)out[i];
		if (c <= ' ' || c >= 127 || c == '/' || c == '"' || c == '\\') {
			free(out);
			return NULL;
		}
		out[i] = (char)tolower(c);
	}
	return out;
}

bool policy_image_valid(const char *s)
{
	if (s[0] == '\0' || s[0] == '-')
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p == 127)
			return false;
	return true;
}

const char *policy_env_agentrun_var(const struct ar_policy *p, const char *key)
{
	if (p->network == AR_NETWORK_PROXY && ar_proxy_env_is_proxy_var(key))
		return "is set by agentrun to the proxy's address when network is "
		       "\"proxy\"";
	if (p->kubeconfig != NULL && strcmp(key, "KUBECONFIG") == 0)
		return "is set by agentrun to the kubeconfig target when kubeconfig is given";
	for (size_t i = 0; p->n_secrets > 0 && i < AR_POLICY_CA_ENV_N; i++)
		if (strcmp(key, ar_policy_ca_env_vars[i]) == 0)
			return "is set by agentrun to the sandbox's CA bundle when the policy has "
			       "secrets";
	return NULL;
}

const char *policy_env_reserved(const struct ar_policy *p, const char *key)
{
	for (size_t i = 0; i < p->n_secrets; i++)
		if (strcmp(key, p->secrets[i].name) == 0)
			return "is a secret's name: the sandbox gets its placeholder there";
	return policy_env_agentrun_var(p, key);
}

int policy_verror(ar_error_t *err, const char *origin, const char *key, const char *fmt, va_list ap)
{
	ar_autofree char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	ar_autofree char *full = ar_xasprintf("%s: %s: %s", origin, key, msg);
	ar_autofree char *shown = ar_printable(full, AR_POLICY_MSG_MAX);
	return ar_error_make(err, 0, "%s", shown);
}

/* docker's seccomp profile format on top of the runtime-spec one: `archMap`
 * instead of `architectures`, and `includes`/`excludes` conditions on syscall
 * entries. agentrun flattens them for what its sandbox is: an empty capability
 * set on x86_64 under the running kernel. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <seccomp.h>

#include "agentrun/util.h"
#include "internal.h"

/* docker matches `arches` against Go's GOARCH; accept the kernel's name too. */
static const char *const host_arches[] = {"amd64", "x86_64"};

static int check_strings(const cJSON *list, const char *field, const char *origin, ar_error_t *err)
{
	const cJSON *it;
	size_t i = 0;

	if (!cJSON_IsArray(list))
		return ar_error_make(err, 0, "%s: %s: expected an array of strings", origin, field);
	cJSON_ArrayForEach(it, list)
	{
		if (!cJSON_IsString(it))
			return ar_error_make(err, 0, "%s: %s[%zu]: expected a string", origin,
					     field, i);
		i++;
	}
	return 0;
}

static bool host_arch_in(const cJSON *list)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, list)
	{
		for (size_t i = 0; i < AR_ARRAY_SIZE(host_arches); i++) {
			if (strcmp(it->valuestring, host_arches[i]) == 0)
				return true;
		}
	}
	return false;
}

struct cond {
	bool has_caps, has_arches, has_kernel;
	bool host_arch; /* the host's arch is listed */
	bool kernel_ok; /* the running kernel is at least minKernel */
};

/* Parse one includes/excludes object of syscalls[i]. */
static int parse_cond(const cJSON *entry, const char *key, const char *path, const char *origin,
		      unsigned int kernel, struct cond *c, ar_error_t *err)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(entry, key);
	const cJSON *caps, *arches, *mk;
	ar_autofree char *field = NULL;
	unsigned int min;

	memset(c, 0, sizeof(*c));
	if (obj == NULL || cJSON_IsNull(obj))
		return 0;
	if (!cJSON_IsObject(obj))
		return ar_error_make(err, 0, "%s: %s.%s: expected an object", origin, path, key);
	caps = cJSON_GetObjectItemCaseSensitive(obj, "caps");
	arches = cJSON_GetObjectItemCaseSensitive(obj, "arches");
	mk = cJSON_GetObjectItemCaseSensitive(obj, "minKernel");
	if (caps != NULL && !cJSON_IsNull(caps)) {
		field = ar_xasprintf("%s.%s.caps", path, key);
		if (check_strings(caps, field, origin, err) < 0)
			return -1;
		c->has_caps = cJSON_GetArraySize(caps) > 0;
	}
	if (arches != NULL && !cJSON_IsNull(arches)) {
		free(field);
		field = ar_xasprintf("%s.%s.arches", path, key);
		if (check_strings(arches, field, origin, err) < 0)
			return -1;
		c->has_arches = cJSON_GetArraySize(arches) > 0;
		c->host_arch = host_arch_in(arches);
	}
	if (mk != NULL && !cJSON_IsNull(mk)) {
		if (!cJSON_IsString(mk) || ar_seccomp_kernel_parse(mk->valuestring, &min) < 0)
			return ar_error_make(err, 0,
					     "%s: %s.%s.minKernel: expected a version like "
					     "\"5.6\"",
					     origin, path, key);
		c->has_kernel = true;
		/* an unknown running kernel (0) satisfies no minimum */
		c->kernel_ok = kernel != 0 && kernel >= min;
	}
	return 0;
}

int ar_seccomp_docker_applies(const cJSON *entry, const char *path, const char *origin,
			      unsigned int kernel, bool *applies, ar_error_t *err)
{
	struct cond inc, exc;

	*applies = false;
	if (parse_cond(entry, "includes", path, origin, kernel, &inc, err) < 0 ||
	    parse_cond(entry, "excludes", path, origin, kernel, &exc, err) < 0)
		return -1;
	/* includes: every condition must hold; we hold no capability at all */
	if (inc.has_caps || (inc.has_arches && !inc.host_arch) ||
	    (inc.has_kernel && !inc.kernel_ok))
		return 0;
	/* excludes: excluded capabilities are irrelevant to an empty set */
	if ((exc.has_arches && exc.host_arch) || (exc.has_kernel && exc.kernel_ok))
		return 0;
	*applies = true;
	return 0;
}

static int add_arch(const cJSON *name, const char *field, const char *origin,
		    struct ar_seccomp_profile *p, ar_error_t *err)
{
	uint32_t arch;

	if (!cJSON_IsString(name) || ar_seccomp_arch_lookup(name->valuestring, &arch) < 0)
		return ar_error_make(err, 0, "%s: %s: unknown architecture", origin, field);
	for (size_t k = 0; k < p->n_arches; k++) {
		if (p->arches[k] == arch)
			return 0;
	}
	if (p->n_arches == AR_ARRAY_SIZE(p->arches))
		return ar_error_make(err, 0, "%s: %s: too many architectures", origin, field);
	p->arches[p->n_arches++] = arch;
	return 0;
}

/* Only the entry for the native x86_64 matters: its subArchitectures (x86, x32
 * in docker's own profile) are the foreign ABIs the profile chose to permit. */
int ar_seccomp_docker_arches(const cJSON *archmap, const char *origin, struct ar_seccomp_profile *p,
			     ar_error_t *err)
{
	const cJSON *m;
	size_t i = 0;

	if (!cJSON_IsArray(archmap))
		return ar_error_make(err, 0, "%s: archMap: expected an array", origin);
	cJSON_ArrayForEach(m, archmap)
	{
		const cJSON *arch = cJSON_GetObjectItemCaseSensitive(m, "architecture");
		const cJSON *subs = cJSON_GetObjectItemCaseSensitive(m, "subArchitectures");
		const cJSON *s;
		size_t j = 0;

		if (!cJSON_IsObject(m) || !cJSON_IsString(arch))
			return ar_error_make(
			    err, 0, "%s: archMap[%zu].architecture: expected a string", origin, i);
		if (strcmp(arch->valuestring, "SCMP_ARCH_X86_64") != 0) {
			i++;
			continue;
		}
		if (subs != NULL && !cJSON_IsNull(subs) && !cJSON_IsArray(subs))
			return ar_error_make(err, 0,
					     "%s: archMap[%zu].subArchitectures: expected an array",
					     origin, i);
		cJSON_ArrayForEach(s, subs)
		{
			ar_autofree char *field =
			    ar_xasprintf("archMap[%zu].subArchitectures[%zu]", i, j++);
			if (add_arch(s, field, origin, p, err) < 0)
				return -1;
		}
		i++;
	}
	return 0;
}

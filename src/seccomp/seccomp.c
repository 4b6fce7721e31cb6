/* seccomp profiles: parse runtime-spec JSON (and docker's format, flattened in
 * seccomp_docker.c) into a typed model, compile it with libseccomp into BPF in
 * the parent, and install that BPF with one seccomp(2) call in the child. The
 * child does no allocation and no libseccomp work between clone and exec. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <seccomp.h>

#include "agentrun/log.h"
#include "agentrun/seccomp.h"
#include "agentrun/util.h"
#include "internal.h"

struct ar_seccomp {
	struct ar_seccomp_profile profile;
	struct sock_filter *insns;
	unsigned short n_insns;
};

/* One cleanup helper per owned type (STYLE). */
static void cleanup_scmp_ctxp(scmp_filter_ctx *ctx)
{
	if (*ctx != NULL)
		seccomp_release(*ctx);
}
#define ar_autoscmp __attribute__((cleanup(cleanup_scmp_ctxp)))

static void cleanup_cjsonp(cJSON **j)
{
	cJSON_Delete(*j);
}
#define ar_autocjson __attribute__((cleanup(cleanup_cjsonp)))

enum act_arg { ACT_NO_RET, ACT_ERRNO_RET, ACT_TRACE_RET, ACT_REJECT };

static const struct {
	const char *name;
	uint32_t action;
	enum act_arg arg;
} actions[] = {
    {"SCMP_ACT_ALLOW", SCMP_ACT_ALLOW, ACT_NO_RET},
    {"SCMP_ACT_ERRNO", SCMP_ACT_ERRNO(0), ACT_ERRNO_RET},
    {"SCMP_ACT_KILL", SCMP_ACT_KILL_THREAD, ACT_NO_RET},
    {"SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD, ACT_NO_RET},
    {"SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS, ACT_NO_RET},
    {"SCMP_ACT_TRAP", SCMP_ACT_TRAP, ACT_NO_RET},
    {"SCMP_ACT_TRACE", SCMP_ACT_TRACE(0), ACT_TRACE_RET},
    {"SCMP_ACT_LOG", SCMP_ACT_LOG, ACT_NO_RET},
    {"SCMP_ACT_NOTIFY", SCMP_ACT_NOTIFY, ACT_REJECT},
};

static const struct {
	const char *name;
	int op;
} ops[] = {
    {"SCMP_CMP_NE", SCMP_CMP_NE},
    {"SCMP_CMP_LT", SCMP_CMP_LT},
    {"SCMP_CMP_LE", SCMP_CMP_LE},
    {"SCMP_CMP_EQ", SCMP_CMP_EQ},
    {"SCMP_CMP_GE", SCMP_CMP_GE},
    {"SCMP_CMP_GT", SCMP_CMP_GT},
    {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
};

static const struct {
	const char *name;
	uint32_t arch;
} arches[] = {
    {"SCMP_ARCH_X86_64", SCMP_ARCH_X86_64},
    {"SCMP_ARCH_X86", SCMP_ARCH_X86},
    {"SCMP_ARCH_X32", SCMP_ARCH_X32},
    {"SCMP_ARCH_ARM", SCMP_ARCH_ARM},
    {"SCMP_ARCH_AARCH64", SCMP_ARCH_AARCH64},
    {"SCMP_ARCH_MIPS", SCMP_ARCH_MIPS},
    {"SCMP_ARCH_MIPS64", SCMP_ARCH_MIPS64},
    {"SCMP_ARCH_MIPS64N32", SCMP_ARCH_MIPS64N32},
    {"SCMP_ARCH_MIPSEL", SCMP_ARCH_MIPSEL},
    {"SCMP_ARCH_MIPSEL64", SCMP_ARCH_MIPSEL64},
    {"SCMP_ARCH_MIPSEL64N32", SCMP_ARCH_MIPSEL64N32},
    {"SCMP_ARCH_PPC", SCMP_ARCH_PPC},
    {"SCMP_ARCH_PPC64", SCMP_ARCH_PPC64},
    {"SCMP_ARCH_PPC64LE", SCMP_ARCH_PPC64LE},
    {"SCMP_ARCH_S390", SCMP_ARCH_S390},
    {"SCMP_ARCH_S390X", SCMP_ARCH_S390X},
    {"SCMP_ARCH_PARISC", SCMP_ARCH_PARISC},
    {"SCMP_ARCH_PARISC64", SCMP_ARCH_PARISC64},
    {"SCMP_ARCH_RISCV64", SCMP_ARCH_RISCV64},
};

static const struct {
	const char *name;
	unsigned int flag;
} filter_flags[] = {
    {"SECCOMP_FILTER_FLAG_TSYNC", SECCOMP_FILTER_FLAG_TSYNC},
    {"SECCOMP_FILTER_FLAG_LOG", SECCOMP_FILTER_FLAG_LOG},
    {"SECCOMP_FILTER_FLAG_SPEC_ALLOW", SECCOMP_FILTER_FLAG_SPEC_ALLOW},
};

int ar_seccomp_arch_lookup(const char *name, uint32_t *out)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(arches); i++) {
		if (strcmp(arches[i].name, name) == 0) {
			*out = arches[i].arch;
			return 0;
		}
	}
	return -1;
}

int ar_seccomp_kernel_parse(const char *s, unsigned int *out)
{
	unsigned int major, minor;
	int n = 0;

	if (sscanf(s, "%u.%u%n", &major, &minor, &n) != 2 || minor >= 1000 || major > 10000)
		return -1;
	if (s[n] != '\0' && s[n] != '.' && s[n] != '-' && s[n] != '+')
		return -1;
	*out = major * 1000 + minor;
	return 0;
}

static unsigned int running_kernel(void)
{
	struct utsname u;
	unsigned int v = 0;

	if (uname(&u) == -1 || ar_seccomp_kernel_parse(u.release, &v) < 0)
		return 0;
	return v;
}

/* A string field: NULL when absent; error when present but not a string. */
static int get_string(const cJSON *obj, const char *key, const char *path, const char *origin,
		      const char **out, ar_error_t *err)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	*out = NULL;
	if (it == NULL || cJSON_IsNull(it))
		return 0;
	if (!cJSON_IsString(it))
		return ar_error_make(err, 0, "%s: %s%s%s: expected a string", origin, path,
				     *path ? "." : "", key);
	*out = it->valuestring;
	return 0;
}

/* JSON numbers are doubles: accept integers exactly representable (<= 2^53);
 * larger 64-bit values may be given as a decimal or 0x-hex string. */
static int get_u64(const cJSON *it, const char *field, const char *origin, uint64_t max,
		   uint64_t *out, ar_error_t *err)
{
	if (cJSON_IsNumber(it)) {
		double d = it->valuedouble;
		if (d < 0 || !ar_double_is_int(d) || (uint64_t)d > max)
			return ar_error_make(err, 0, "%s: %s: %.17g is not an integer in [0, %llu]",
					     origin, field, d, (unsigned long long)max);
		*out = (uint64_t)d;
		return 0;
	}
	if (cJSON_IsString(it) && it->valuestring[0] >= '0' && it->valuestring[0] <= '9') {
		char *end = NULL;
		errno = 0;
		unsigned long long v = strtoull(it->valuestring, &end, 0);
		if (errno == 0 && *end == '\0' && v <= max) {
			*out = v;
			return 0;
		}
	}
	return ar_error_make(err, 0, "%s: %s: expected an integer in [0, %llu]", origin, field,
			     (unsigned long long)max);
}

static int get_optional_u64(const cJSON *obj, const char *key, const char *path, const char *origin,
			    uint64_t max, bool *present, uint64_t *out, ar_error_t *err)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	ar_autofree char *field = NULL;

	*present = it != NULL && !cJSON_IsNull(it);
	if (!*present)
		return 0;
	field = ar_xasprintf("%s%s%s", path, *path ? "." : "", key);
	return get_u64(it, field, origin, max, out, err);
}

/* `errno_ret` is the entry's errnoRet if given, else defaultErrnoRet, else EPERM. */
static int parse_action(const char *name, const char *field, const char *origin, uint32_t errno_ret,
			uint32_t *out, ar_error_t *err)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(actions); i++) {
		if (strcmp(actions[i].name, name) != 0)
			continue;
		switch (actions[i].arg) {
		case ACT_REJECT:
			return ar_error_make(err, 0,
					     "%s: %s: `%s` is not supported (agentrun runs no "
					     "seccomp notification agent)",
					     origin, field, name);
		case ACT_ERRNO_RET:
			*out = SCMP_ACT_ERRNO(errno_ret);
			return 0;
		case ACT_TRACE_RET:
			*out = SCMP_ACT_TRACE(errno_ret);
			return 0;
		case ACT_NO_RET:
			*out = actions[i].action;
			return 0;
		}
	}
	return ar_error_make(err, 0, "%s: %s: unknown action `%s`", origin, field, name);
}

static int parse_arg(const cJSON *a, const char *path, const char *origin,
		     struct ar_seccomp_arg *out, ar_error_t *err)
{
	const char *op = NULL;
	uint64_t v = 0;
	bool present;

	if (!cJSON_IsObject(a))
		return ar_error_make(err, 0, "%s: %s: expected an object", origin, path);
	if (get_optional_u64(a, "index", path, origin, 5, &present, &v, err) < 0)
		return -1;
	if (!present)
		return ar_error_make(err, 0, "%s: %s.index: missing", origin, path);
	out->index = (unsigned int)v;
	if (get_optional_u64(a, "value", path, origin, UINT64_MAX, &present, &out->value, err) < 0)
		return -1;
	if (!present)
		return ar_error_make(err, 0, "%s: %s.value: missing", origin, path);
	out->value_two = 0;
	if (get_optional_u64(a, "valueTwo", path, origin, UINT64_MAX, &present, &out->value_two,
			     err) < 0)
		return -1;
	if (get_string(a, "op", path, origin, &op, err) < 0)
		return -1;
	if (op == NULL)
		return ar_error_make(err, 0, "%s: %s.op: missing", origin, path);
	for (size_t i = 0; i < AR_ARRAY_SIZE(ops); i++) {
		if (strcmp(ops[i].name, op) == 0) {
			out->op = ops[i].op;
			return 0;
		}
	}
	return ar_error_make(err, 0, "%s: %s.op: unknown operator `%s`", origin, path, op);
}

static int parse_args(const cJSON *entry, const char *path, const char *origin,
		      struct ar_seccomp_rule *tmpl, ar_error_t *err)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(entry, "args");
	const cJSON *a;

	tmpl->n_args = 0;
	if (args == NULL || cJSON_IsNull(args))
		return 0;
	if (!cJSON_IsArray(args))
		return ar_error_make(err, 0, "%s: %s.args: expected an array", origin, path);
	if (cJSON_GetArraySize(args) > AR_SECCOMP_MAX_ARGS)
		return ar_error_make(err, 0, "%s: %s.args: more than %d conditions", origin, path,
				     AR_SECCOMP_MAX_ARGS);
	cJSON_ArrayForEach(a, args)
	{
		ar_autofree char *apath = ar_xasprintf("%s.args[%u]", path, tmpl->n_args);
		if (parse_arg(a, apath, origin, &tmpl->args[tmpl->n_args], err) < 0)
			return -1;
		tmpl->n_args++;
	}
	return 0;
}

/* A name is usable if it exists on one of the filter's architectures; the rule
 * carries the native (possibly pseudo, negative) number libseccomp translates. */
static bool resolve_name(const struct ar_seccomp_profile *p, const char *name, int *nr)
{
	for (size_t i = 0; i < p->n_arches; i++) {
		if (seccomp_syscall_resolve_name_arch(p->arches[i], name) >= 0) {
			*nr = seccomp_syscall_resolve_name(name);
			return *nr != __NR_SCMP_ERROR;
		}
	}
	return false;
}

static void add_rule(struct ar_seccomp_profile *p, const struct ar_seccomp_rule *tmpl,
		     const char *name, int nr)
{
	if (p->n_rules % 64 == 0)
		p->rules = ar_xrealloc(p->rules, (p->n_rules + 64) * sizeof(*p->rules));
	p->rules[p->n_rules] = *tmpl;
	p->rules[p->n_rules].name = ar_xstrdup(name);
	p->rules[p->n_rules].nr = nr;
	p->n_rules++;
}

static int parse_names(const cJSON *entry, const char *path, const char *origin,
		       struct ar_seccomp_profile *p, const struct ar_seccomp_rule *tmpl,
		       ar_error_t *err)
{
	const cJSON *names = cJSON_GetObjectItemCaseSensitive(entry, "names");
	const cJSON *single = cJSON_GetObjectItemCaseSensitive(entry, "name");
	const cJSON *n;
	size_t j = 0;

	if (names == NULL && cJSON_IsString(single)) /* docker's old single "name" */
		names = single;
	if (!cJSON_IsArray(names) && !cJSON_IsString(names))
		return ar_error_make(err, 0, "%s: %s.names: expected an array of syscall names",
				     origin, path);
	for (n = cJSON_IsArray(names) ? names->child : names; n != NULL;
	     n = cJSON_IsArray(names) ? n->next : NULL, j++) {
		int nr;
		if (!cJSON_IsString(n) || n->valuestring[0] == '\0')
			return ar_error_make(err, 0, "%s: %s.names[%zu]: expected a syscall name",
					     origin, path, j);
		if (!resolve_name(p, n->valuestring, &nr)) {
			/* profiles list syscalls of newer and older kernels */
			ar_debug("%s: %s.names[%zu]: syscall `%s` unknown on this architecture, "
				 "skipped",
				 origin, path, j, n->valuestring);
			p->n_unknown++;
			continue;
		}
		add_rule(p, tmpl, n->valuestring, nr);
	}
	return 0;
}

static int parse_entry(const cJSON *entry, size_t i, const char *origin, unsigned int kernel,
		       uint32_t default_errno, struct ar_seccomp_profile *p, ar_error_t *err)
{
	ar_autofree char *path = ar_xasprintf("syscalls[%zu]", i);
	ar_autofree char *afield = NULL;
	struct ar_seccomp_rule tmpl = {.entry = i};
	const char *action = NULL;
	uint64_t ret = default_errno;
	bool applies, present;

	if (!cJSON_IsObject(entry))
		return ar_error_make(err, 0, "%s: %s: expected an object", origin, path);
	if (ar_seccomp_docker_applies(entry, path, origin, kernel, &applies, err) < 0)
		return -1;
	if (!applies)
		return 0;
	if (get_string(entry, "action", path, origin, &action, err) < 0)
		return -1;
	if (action == NULL)
		return ar_error_make(err, 0, "%s: %s.action: missing", origin, path);
	if (get_optional_u64(entry, "errnoRet", path, origin, 4095, &present, &ret, err) < 0)
		return -1;
	afield = ar_xasprintf("%s.action", path);
	if (parse_action(action, afield, origin, (uint32_t)ret, &tmpl.action, err) < 0)
		return -1;
	if (parse_args(entry, path, origin, &tmpl, err) < 0)
		return -1;
	return parse_names(entry, path, origin, p, &tmpl, err);
}

static int parse_arches(const cJSON *root, const char *origin, struct ar_seccomp_profile *p,
			ar_error_t *err)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "architectures");
	const cJSON *archmap = cJSON_GetObjectItemCaseSensitive(root, "archMap");
	const cJSON *a;
	size_t i = 0;

	p->arches[0] = SCMP_ARCH_X86_64; /* the native arch is always in the filter */
	p->n_arches = 1;
	if (cJSON_GetArraySize(list) > 0 && cJSON_GetArraySize(archmap) > 0)
		return ar_error_make(err, 0,
				     "%s: architectures: give either architectures or "
				     "archMap, not both",
				     origin);
	if (archmap != NULL && !cJSON_IsNull(archmap))
		return ar_seccomp_docker_arches(archmap, origin, p, err);
	if (list == NULL || cJSON_IsNull(list))
		return 0;
	if (!cJSON_IsArray(list))
		return ar_error_make(err, 0, "%s: architectures: expected an array", origin);
	cJSON_ArrayForEach(a, list)
	{
		uint32_t arch;
		if (!cJSON_IsString(a) || ar_seccomp_arch_lookup(a->valuestring, &arch) < 0)
			return ar_error_make(
			    err, 0, "%s: architectures[%zu]: unknown architecture%s%s%s", origin, i,
			    cJSON_IsString(a) ? " `" : "", cJSON_IsString(a) ? a->valuestring : "",
			    cJSON_IsString(a) ? "`" : "");
		bool dup = false;
		for (size_t k = 0; k < p->n_arches; k++)
			dup = dup || p->arches[k] == arch;
		if (!dup && p->n_arches == AR_ARRAY_SIZE(p->arches))
			return ar_error_make(
			    err, 0, "%s: architectures[%zu]: too many architectures", origin, i);
		if (!dup)
			p->arches[p->n_arches++] = arch;
		i++;
	}
	return 0;
}

static int parse_flags(const cJSON *root, const char *origin, struct ar_seccomp_profile *p,
		       ar_error_t *err)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "flags");
	const cJSON *f;
	size_t i = 0;

	if (list == NULL || cJSON_IsNull(list))
		return 0;
	if (!cJSON_IsArray(list))
		return ar_error_make(err, 0, "%s: flags: expected an array", origin);
	cJSON_ArrayForEach(f, list)
	{
		size_t k = 0;
		while (k < AR_ARRAY_SIZE(filter_flags) &&
		       !(cJSON_IsString(f) && strcmp(filter_flags[k].name, f->valuestring) == 0))
			k++;
		if (k == AR_ARRAY_SIZE(filter_flags))
			return ar_error_make(err, 0, "%s: flags[%zu]: unknown seccomp filter flag",
					     origin, i);
		p->flags |= filter_flags[k].flag;
		i++;
	}
	return 0;
}

/* A foreign ABI must never get through: deny it like an unlisted syscall, or
 * kill when the default would allow it. */
static uint32_t bad_arch_action(uint32_t def)
{
	if (def == SCMP_ACT_ALLOW || def == SCMP_ACT_LOG ||
	    (def & 0xffff0000U) == SCMP_ACT_TRACE(0))
		return SCMP_ACT_KILL_PROCESS;
	return def;
}

static int parse_defaults(const cJSON *root, const char *origin, struct ar_seccomp_profile *p,
			  uint32_t *default_errno, ar_error_t *err)
{
	const char *def = NULL;
	uint64_t v = EPERM;
	bool present;

	if (get_string(root, "defaultAction", "", origin, &def, err) < 0)
		return -1;
	if (def == NULL)
		return ar_error_make(err, 0, "%s: defaultAction: missing", origin);
	if (get_optional_u64(root, "defaultErrnoRet", "", origin, 4095, &present, &v, err) < 0)
		return -1;
	*default_errno = (uint32_t)v;
	if (parse_action(def, "defaultAction", origin, *default_errno, &p->default_action, err) < 0)
		return -1;
	p->bad_arch_action = bad_arch_action(p->default_action);
	return 0;
}

static void profile_clear(struct ar_seccomp_profile *p)
{
	for (size_t i = 0; i < p->n_rules; i++)
		free(p->rules[i].name);
	free(p->rules);
	memset(p, 0, sizeof(*p));
}

static int parse_profile(const cJSON *root, const char *origin, unsigned int kernel,
			 struct ar_seccomp_profile *p, ar_error_t *err)
{
	const cJSON *syscalls;
	const cJSON *entry;
	uint32_t default_errno = EPERM;
	size_t i = 0;

	if (!cJSON_IsObject(root))
		return ar_error_make(err, 0, "%s: expected a JSON object", origin);
	if (parse_defaults(root, origin, p, &default_errno, err) < 0)
		return -1;
	if (parse_arches(root, origin, p, err) < 0 || parse_flags(root, origin, p, err) < 0)
		return -1;
	syscalls = cJSON_GetObjectItemCaseSensitive(root, "syscalls");
	if (syscalls == NULL || cJSON_IsNull(syscalls))
		return 0;
	if (!cJSON_IsArray(syscalls))
		return ar_error_make(err, 0, "%s: syscalls: expected an array", origin);
	cJSON_ArrayForEach(entry, syscalls)
	{
		if (parse_entry(entry, i++, origin, kernel, default_errno, p, err) < 0)
			return -1;
	}
	return 0;
}

/* runc's convention: several conditions all on one argument are alternatives
 * (one rule each); conditions on different arguments must all hold. */
static int compile_rule(scmp_filter_ctx ctx, const struct ar_seccomp_rule *r)
{
	struct scmp_arg_cmp cmp[AR_SECCOMP_MAX_ARGS];
	bool same_index = r->n_args > 1;

	for (unsigned int k = 0; k < r->n_args; k++) {
		cmp[k] = (struct scmp_arg_cmp){.arg = r->args[k].index,
					       .op = (enum scmp_compare)r->args[k].op,
					       .datum_a = r->args[k].value,
					       .datum_b = r->args[k].value_two};
		same_index = same_index && r->args[k].index == r->args[0].index;
	}
	if (!same_index)
		return seccomp_rule_add_array(ctx, r->action, r->nr, r->n_args, cmp);
	for (unsigned int k = 0; k < r->n_args; k++) {
		int rc = seccomp_rule_add_array(ctx, r->action, r->nr, 1, &cmp[k]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int export_bpf(scmp_filter_ctx ctx, const char *origin, struct ar_seccomp *s,
		      ar_error_t *err)
{
	ar_autoclose int fd = memfd_create("agentrun-seccomp", MFD_CLOEXEC);
	struct stat st;
	int rc;

	if (fd == -1)
		return ar_error_make(err, errno, "%s: memfd_create", origin);
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0)
		return ar_error_make(err, -rc, "%s: export the compiled filter", origin);
	if (fstat(fd, &st) == -1)
		return ar_error_make(err, errno, "%s: stat the compiled filter", origin);
	if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 ||
	    st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return ar_error_make(err, 0, "%s: compiled filter has %lld bytes (limit %d insns)",
				     origin, (long long)st.st_size, BPF_MAXINSNS);
	s->insns = ar_xmalloc((size_t)st.st_size);
	if (TEMP_FAILURE_RETRY(pread(fd, s->insns, (size_t)st.st_size, 0)) != st.st_size)
		return ar_error_make(err, errno, "%s: read the compiled filter", origin);
	s->n_insns = (unsigned short)(st.st_size / sizeof(struct sock_filter));
	return 0;
}

static int compile_attrs(scmp_filter_ctx ctx, const struct ar_seccomp_profile *p,
			 const char *origin, ar_error_t *err)
{
	int rc;

	/* real errnos from libseccomp; no_new_privs is the sandbox's explicit step */
	seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, p->bad_arch_action);
	if (rc < 0)
		return ar_error_make(err, -rc, "%s: set filter attributes", origin);
	/* a binary tree over syscall numbers: ~300 allowed calls stay cheap */
	seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	for (size_t i = 0; i < p->n_arches; i++) {
		rc = seccomp_arch_add(ctx, p->arches[i]);
		if (rc < 0 && rc != -EEXIST)
			return ar_error_make(err, -rc, "%s: add architecture %#x", origin,
					     p->arches[i]);
	}
	return 0;
}

/* libseccomp lets an unconditional rule for a syscall override every conditional
 * rule for it, whatever the actions: a profile that allows ioctl and "denies"
 * ioctl(TIOCSTI) allows TIOCSTI. Say so instead of failing open in silence. */
static void warn_shadowed(const struct ar_seccomp_profile *p, const char *origin)
{
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct ar_seccomp_rule *c = &p->rules[i];
		if (c->n_args == 0)
			continue;
		for (size_t k = 0; k < p->n_rules; k++) {
			const struct ar_seccomp_rule *u = &p->rules[k];
			if (u->n_args == 0 && u->nr == c->nr && u->action != c->action &&
			    u->action != p->default_action) {
				ar_warn("%s: syscalls[%zu]: the conditions on `%s` have no effect: "
					"syscalls[%zu] matches it unconditionally",
					origin, c->entry, c->name, u->entry);
				break;
			}
		}
	}
}

static int compile(const struct ar_seccomp_profile *p, const char *origin, struct ar_seccomp *s,
		   ar_error_t *err)
{
	ar_autoscmp scmp_filter_ctx ctx = seccomp_init(p->default_action);

	if (ctx == NULL)
		return ar_error_make(err, EINVAL, "%s: defaultAction: libseccomp rejected it",
				     origin);
	if (compile_attrs(ctx, p, origin, err) < 0)
		return -1;
	warn_shadowed(p, origin);
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct ar_seccomp_rule *r = &p->rules[i];
		int rc;
		if (r->action == p->default_action) {
			/* libseccomp refuses rules that repeat the default; they change nothing */
			continue;
		}
		rc = compile_rule(ctx, r);
		if (rc < 0)
			return ar_error_make(
			    err, -rc,
			    "%s: syscalls[%zu]: syscall `%s`: libseccomp rejected the rule", origin,
			    r->entry, r->name);
	}
	return export_bpf(ctx, origin, s, err);
}

static int json_error(const char *json, size_t len, const char *origin, const char *at,
		      ar_error_t *err)
{
	unsigned int line = 1, col = 1;

	if (at == NULL || at < json || at > json + len)
		at = json + len;
	for (const char *c = json; c < at; c++) {
		col++;
		if (*c == '\n') {
			line++;
			col = 1;
		}
	}
	return ar_error_make(err, 0, "%s:%u:%u: invalid JSON", origin, line, col);
}

/* A NUL inside a string, raw or as \u0000: cJSON keeps the bytes before it only, so
 * "read\u0000x" would silently mean "read". The first one, or NULL. */
static const char *find_nul(const char *json, size_t len)
{
	bool in_string = false;
	for (size_t i = 0; i < len; i++) {
		if (json[i] == '\0')
			return json + i;
		if (json[i] == '"')
			in_string = !in_string;
		else if (in_string && json[i] == '\\' && i + 1 < len) {
			if (json[i + 1] == 'u' && i + 6 <= len &&
			    memcmp(json + i + 2, "0000", 4) == 0)
				return json + i;
			i++;
		}
	}
	return NULL;
}

/* The member the NUL at `at` belongs to: the last `"KEY" :` before it. */
static void nul_field(const char *json, const char *at, char *field, size_t size)
{
	snprintf(field, size, "?");
	for (const char *c = at; c > json; c--) {
		const char *q = c - 1;
		if (*c != ':')
			continue;
		while (q > json && strchr(" \t\r\n", *q) != NULL)
			q--;
		if (*q != '"' || q == json)
			continue; /* inside a string, or no room for the key's opening quote */
		const char *open = q - 1;
		while (open > json && *open != '"')
			open--;
		if (*open == '"') {
			ar_autofree char *key = ar_xasprintf("%.*s", (int)(q - open - 1), open + 1);
			ar_autofree char *shown = ar_printable(key, 48); /* a key is any bytes */
			snprintf(field, size, "%s", shown);
		}
		return;
	}
}

static int nul_error(const char *json, size_t len, const char *origin, const char *at,
		     ar_error_t *err)
{
	char field[64];
	nul_field(json, at, field, sizeof(field));
	json_error(json, len, origin, at, err);
	char *msg = ar_xasprintf("%s: a NUL byte (raw or \\u0000) in a string of `%s` is not "
				 "allowed",
				 (*err)->msg, field);
	free((*err)->msg);
	(*err)->msg = msg;
	return -1;
}

int ar_seccomp_parse_kernel(const char *json, size_t len, const char *origin, unsigned int kernel,
			    struct ar_seccomp **out, ar_error_t *err)
{
	ar_autoseccomp struct ar_seccomp *s = ar_xcalloc(1, sizeof(*s));
	ar_autocjson cJSON *root = NULL;
	const char *end = NULL;

	*out = NULL;
	root = cJSON_ParseWithLengthOpts(json, len, &end, false);
	if (root == NULL)
		return json_error(json, len, origin, end != NULL ? end : cJSON_GetErrorPtr(), err);
	while (end != NULL && end < json + len && strchr(" \t\r\n", *end) != NULL && *end != '\0')
		end++;
	if (end != NULL && end < json + len) /* trailing bytes: a second document, a NUL */
		return json_error(json, len, origin, end, err);
	const char *nul = find_nul(json, len);
	if (nul != NULL)
		return nul_error(json, len, origin, nul, err);
	if (parse_profile(root, origin, kernel, &s->profile, err) < 0)
		return -1;
	if (compile(&s->profile, origin, s, err) < 0)
		return -1;
	*out = steal_pointer(&s);
	return 0;
}

int ar_seccomp_parse(const char *json, size_t len, const char *origin, struct ar_seccomp **out,
		     ar_error_t *err)
{
	return ar_seccomp_parse_kernel(json, len, origin, running_kernel(), out, err);
}

int ar_seccomp_prepare(const char *spec, struct ar_seccomp **out, ar_error_t *err)
{
	ar_autofree char *data = NULL;
	size_t len = 0;

	*out = NULL;
	if (spec == NULL || strcmp(spec, "default") == 0)
		return ar_seccomp_parse(ar_seccomp_default_json, ar_seccomp_default_json_len,
					"seccomp profile `default`", out, err);
	if (strcmp(spec, "unconfined") == 0)
		return 0;
	if (ar_read_file(spec, 1 << 20, &data, &len, err) < 0)
		return ar_error_wrap(err, "seccomp profile");
	return ar_seccomp_parse(data, len, spec, out, err);
}

#ifndef AR_SECCOMP_NO_PRECOMPILED
/* `default` from the program generated at build time. It is what a fresh compile
 * gives only with the same libseccomp (the embedded profile is part of the binary;
 * a libseccomp upgrade after the build is not), so otherwise compile. */
static bool precompiled_default(struct ar_seccomp **out)
{
	const struct scmp_version *v = seccomp_version();
	const size_t n = ar_seccomp_default_bpf_len;
	struct ar_seccomp *s;

	if (n == 0 || n > BPF_MAXINSNS || v == NULL ||
	    v->major != ar_seccomp_default_bpf_libseccomp[0] ||
	    v->minor != ar_seccomp_default_bpf_libseccomp[1] ||
	    v->micro != ar_seccomp_default_bpf_libseccomp[2])
		return false;
	s = ar_xcalloc(1, sizeof(*s));
	s->insns = ar_xmalloc(n * sizeof(struct sock_filter));
	memcpy(s->insns, ar_seccomp_default_bpf, n * sizeof(struct sock_filter));
	s->n_insns = (unsigned short)n;
	s->profile.flags = ar_seccomp_default_bpf_flags;
	*out = s;
	return true;
}
#else
/* the generator itself (cmake/seccomp_bpfgen.c): no program generated yet */
static bool precompiled_default(struct ar_seccomp **out)
{
	return false;
}
#endif

int ar_seccomp_prepare_program(const char *spec, struct ar_seccomp **out, ar_error_t *err)
{
	*out = NULL;
	if ((spec == NULL || strcmp(spec, "default") == 0) && precompiled_default(out))
		return 0;
	return ar_seccomp_prepare(spec, out, err);
}

const struct sock_filter *ar_seccomp_program(const struct ar_seccomp *s, size_t *n_insns)
{
	*n_insns = s != NULL ? s->n_insns : 0;
	return s != NULL ? s->insns : NULL;
}

int ar_seccomp_install(const struct ar_seccomp *s, ar_error_t *err)
{
	struct sock_fprog prog;

	if (s == NULL)
		return 0;
	prog = (struct sock_fprog){.len = s->n_insns, .filter = s->insns};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, s->profile.flags, &prog) == 0)
		return 0;
	if (errno == ENOSYS && s->profile.flags == 0 &&
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0)
		return 0;
	if (errno == EACCES)
		return ar_error_make(err, errno,
				     "install seccomp filter: no_new_privs is not set and "
				     "CAP_SYS_ADMIN is missing");
	return ar_error_make(err, errno, "install seccomp filter");
}

const struct ar_seccomp_profile *ar_seccomp_profile(const struct ar_seccomp *s)
{
	return s != NULL ? &s->profile : NULL;
}

void ar_seccomp_free(struct ar_seccomp *s)
{
	if (s == NULL)
		return;
	profile_clear(&s->profile);
	free(s->insns);
	free(s);
}

void ar_cleanup_seccompp(struct ar_seccomp **s)
{
	ar_seccomp_free(*s);
	*s = NULL;
}

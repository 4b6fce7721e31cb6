/* Target "procfs": the pure parsers over /proc and cgroup file text, as `agentrun
 * check --pid` (src/check/procparse.c) and the cgroup managers (src/sandbox/
 * cgroup_parse.c) read them. A sandboxed process chooses much of that text (its
 * mount points, its environment, its cgroup names), so every parser runs on every
 * input. Results stay within the documented ranges and everything is freed. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "agentrun/cgroup.h"
#include "agentrun/check.h"
#include "agentrun/util.h"
#include "fuzz.h"

static void check_limit(int rc, int64_t v, const char *what)
{
	AR_FUZZ_CHECK(rc == -1 || v == AR_LIMIT_UNLIMITED || v >= 0, "%s parsed to %lld", what,
		      (long long)v);
}

static void fuzz_mountinfo(const char *text)
{
	struct ar_mountinfo *m = NULL;
	size_t n = 0;
	ar_auto_error ar_error_t err = NULL;

	if (ar_check_parse_mountinfo(text, &m, &n, &err) == -1) {
		ar_fuzz_check_error(&err, "line ");
		return;
	}
	for (size_t i = 0; i < n; i++)
		AR_FUZZ_CHECK(m[i].root && m[i].target && m[i].fstype && m[i].source &&
				  m[i].super_opts,
			      "mountinfo entry %zu has a NULL field", i);
	if (n > 0)
		AR_FUZZ_CHECK(ar_check_mount_at(m, n, m[n - 1].target) != NULL, "mount_at");
	(void)ar_check_cgroup_mount(m, n, "");
	(void)ar_check_cgroup_mount(m, n, "memory");
	ar_mountinfo_free(m, n);
}

static void fuzz_check_parsers(const char *text, const uint8_t *data, size_t size)
{
	struct ar_proc_status st;
	ar_auto_error ar_error_t err = NULL;
	int64_t v = 0;

	if (ar_check_parse_status(text, &st, &err) == -1)
		ar_fuzz_check_error(&err, "");
	fuzz_mountinfo(text);
	free(ar_check_cgroup_path(text, ""));
	free(ar_check_cgroup_path(text, "memory"));
	check_limit(ar_check_parse_cg_max(text, &v), v, "cg_max");
	check_limit(ar_check_parse_cg_v1_memory(text, &v), v, "v1 memory");
	check_limit(ar_check_parse_cg_cpu_max(text, &v), v, "cpu.max");
	check_limit(ar_check_parse_cg_v1_cpu(text, "100000", &v), v, "v1 cpu");
	ar_strv_free(ar_check_parse_netdev(text));
	free(ar_check_parse_default_route(text, text));
	free(ar_check_parse_default_route(text, NULL));
	free(ar_check_parse_default_route(NULL, text));
	/* environ is NUL-separated: the raw bytes, exact size */
	ar_autofree char *raw = ar_fuzz_dup(data, size);
	char **env = ar_check_parse_environ(raw, size);
	AR_FUZZ_CHECK(env != NULL, "environ strv is NULL");
	ar_strv_free(env);
}

static void fuzz_cgroup_parsers(const char *text)
{
	char *path = NULL, *dir = NULL;
	pid_t *pids = NULL;
	size_t n = 0;
	int64_t v = 0;

	if (ar_cgroup_parse_proc(text, NULL, &path) == 0) {
		AR_FUZZ_CHECK(path != NULL, "v2 path");
		if (ar_cgroup_find_dir(text, NULL, path, &dir) == 0)
			AR_FUZZ_CHECK(dir != NULL, "v2 dir");
		free(dir);
		dir = NULL;
	}
	free(path);
	path = NULL;
	if (ar_cgroup_parse_proc(text, "memory", &path) == 0) {
		if (ar_cgroup_find_dir(text, "memory", path, &dir) == 0)
			AR_FUZZ_CHECK(dir != NULL, "v1 dir");
		free(dir);
	}
	free(path);
	(void)ar_cgroup_parse_keyed(text, "oom_kill", &v);
	(void)ar_cgroup_list_has(text, "memory");
	if (ar_cgroup_parse_pids(text, &pids, &n) == 0)
		for (size_t i = 0; i < n; i++)
			AR_FUZZ_CHECK(pids[i] > 0, "pid %d", (int)pids[i]);
	free(pids);
	(void)ar_cgroup_name_owner(text);
}

void ar_fuzz_procfs(const uint8_t *data, size_t size)
{
	ar_autofree char *text = ar_fuzz_strndup(data, size);

	fuzz_check_parsers(text, data, size);
	fuzz_cgroup_parsers(text);
}

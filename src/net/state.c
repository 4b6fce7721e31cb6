/* The state of live sandboxes under AR_NET_STATE_ROOT/NAME/ (docs/network.md):
 * `state`, key=value lines written atomically (pids with their start times, so a
 * reused PID is never taken for the owner, addresses, audit path, policy, cgroups).
 * gc removes what is left of sandboxes whose agentrun is gone, and only those: other
 * sandboxes run beside it. Finished audits stay in AR_NET_STATE_ROOT/audit/. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agentrun/cgroup.h"
#include "agentrun/net.h"
#include "agentrun/util.h"
#include "net-internal.h"

/* The start time, and the state letter (a zombie has died: Z, X). */
static uint64_t proc_stat(pid_t pid, char *state)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	ar_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return 0;
	ssize_t n = TEMP_FAILURE_RETRY(read(fd, buf, sizeof(buf) - 1));
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* the command name may hold spaces and parentheses: count from the last ')' */
	char *p = strrchr(buf, ')');
	unsigned long long start = 0;
	if (p == NULL ||
	    sscanf(p + 2,
		   "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
		   "%*d %*d %llu",
		   state, &start) != 2)
		return 0;
	return start;
}

uint64_t ar_net_proc_start(pid_t pid)
{
	char state;
	return proc_stat(pid, &state);
}

bool ar_net_proc_alive(pid_t pid, uint64_t start)
{
	char state = 'Z';
	return pid > 0 && start != 0 && proc_stat(pid, &state) == start && state != 'Z' &&
	       state != 'X';
}

const char *ar_net_state_dir(const char *name)
{
	static char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", AR_NET_STATE_ROOT, name);
	return path;
}

char *ar_net_audit_path(const char *name)
{
	return ar_xasprintf("%s/audit/%s.jsonl", AR_NET_STATE_ROOT, name);
}

static void format_state(const struct ar_net_state *s, struct ar_buf *b);

/* tmp + rename, without ar_write_file's fsync: the state is as volatile as /run, and
 * readers see the old file or the new one. */
static int write_atomic(const char *file, const struct ar_buf *b, ar_error_t *err)
{
	ar_autofree char *tmp = ar_xasprintf("%s.tmp", file);
	ar_autoclose int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd == -1 || ar_write_all(fd, b->data, b->len) == -1) {
		int e = errno;
		unlink(tmp);
		return ar_error_make(err, e, "write `%s`", tmp);
	}
	if (rename(tmp, file) == -1) {
		int e = errno;
		unlink(tmp);
		return ar_error_make(err, e, "rename `%s`", tmp);
	}
	return 0;
}

int ar_net_state_write(const struct ar_net_state *s, ar_error_t *err)
{
	ar_autobuf struct ar_buf b = {0};
	ar_autofree char *dir = ar_xstrdup(ar_net_state_dir(s->name));
	ar_autofree char *file = ar_xasprintf("%s/state", dir);

	if (net_mkdir_root(NULL, err) == -1)
		return -1;
	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		return ar_error_make(err, errno, "mkdir `%s`", dir);
	format_state(s, &b);
	return write_atomic(file, &b, err);
}

/* The fields of the state file: a table, read and written the same way. */
enum kind { STR, PID, U64, I64, INT };
#define F(f, k)                                                                                    \
	{                                                                                          \
#f, offsetof(struct ar_net_state, f), sizeof(((struct ar_net_state *)0)->f), k     \
	}
static const struct {
	const char *key;
	size_t off, size;
	enum kind kind;
} fields[] = {
    F(name, STR),	F(owner, PID),	     F(owner_start, U64), F(pid, PID),
    F(proxy_pid, PID),	F(proxy_start, U64), F(started, I64),	  F(network, STR),
    F(sandbox_ip, STR), F(proxy_ip, STR),    F(port, INT),	  F(net_index, I64),
    F(audit, STR),	F(policy, STR),	     F(cgroup, STR),	  F(proxy_cgroup, STR),
};
#undef F

static void field(struct ar_net_state *s, const char *k, const char *v)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(fields); i++) {
		void *at = (char *)s + fields[i].off;
		if (strcmp(k, fields[i].key) != 0)
			continue;
		switch (fields[i].kind) {
		case STR:
			snprintf(at, fields[i].size, "%s", v);
			break;
		case PID:
			*(pid_t *)at = (pid_t)strtol(v, NULL, 10);
			break;
		case U64:
			*(uint64_t *)at = strtoull(v, NULL, 10);
			break;
		case I64:
			*(int64_t *)at = strtoll(v, NULL, 10);
			break;
		case INT:
			*(int *)at = (int)strtol(v, NULL, 10);
			break;
		}
		return;
	}
}

static void format_state(const struct ar_net_state *s, struct ar_buf *b)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(fields); i++) {
		const void *at = (const char *)s + fields[i].off;
		ar_buf_printf(b, "%s=", fields[i].key);
		switch (fields[i].kind) {
		case STR:
			ar_buf_puts(b, at);
			break;
		case PID:
			ar_buf_printf(b, "%d", (int)*(const pid_t *)at);
			break;
		case U64:
			ar_buf_printf(b, "%" PRIu64, *(const uint64_t *)at);
			break;
		case I64:
			ar_buf_printf(b, "%" PRId64, *(const int64_t *)at);
			break;
		case INT:
			ar_buf_printf(b, "%d", *(const int *)at);
			break;
		}
		ar_buf_putc(b, '\n');
	}
}

int ar_net_state_read(const char *name, struct ar_net_state *s, ar_error_t *err)
{
	ar_autofree char *file = ar_xasprintf("%s/state", ar_net_state_dir(name));
	ar_autofree char *text = NULL;
	char *save = NULL;

	memset(s, 0, sizeof(*s));
	s->net_index = -1;
	if (!ar_net_state_root_trusted())
		return ar_error_make(err, ENOENT, "`%s`", file);
	if (ar_read_file(file, 1 << 16, &text, NULL, err) == -1)
		return -1;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		field(s, line, eq + 1);
	}
	if (s->name[0] == '\0' || s->owner <= 0)
		return ar_error_make(err, 0, "`%s`: not an agentrun state file", file);
	return 0;
}

void ar_net_state_remove(const char *name)
{
	char *dir = ar_xstrdup(ar_net_state_dir(name));
	ar_autofree char *file = ar_xasprintf("%s/state", dir);
	ar_autofree char *bundle = ar_xasprintf("%s/" NET_CA_BUNDLE_FILE, dir);
	ar_autofree char *kube = ar_xasprintf("%s/" NET_KUBECONFIG_FILE, dir);
	unlink(file);
	unlink(bundle); /* secrets: the sandbox's CA bundle and kubeconfig */
	unlink(kube);
	rmdir(dir);
	free(dir);
}

int ar_net_state_foreach(int (*fn)(const struct ar_net_state *s, void *data), void *data)
{
	DIR *d = ar_net_state_root_trusted() ? opendir(AR_NET_STATE_ROOT) : NULL;
	struct dirent *e;
	int r = 0;

	if (d == NULL)
		return 0;
	while (r == 0 && (e = readdir(d)) != NULL) {
		ar_auto_error ar_error_t err = NULL;
		struct ar_net_state s;
		/* NAME-SUFFIX: never a dot-name (others' private state) nor net/, audit/ */
		if (e->d_name[0] == '.' || strchr(e->d_name, '-') == NULL)
			continue;
		if (ar_net_state_read(e->d_name, &s, &err) == 0)
			r = fn(&s, data);
	}
	closedir(d);
	return r;
}

static void kill_if(pid_t pid, uint64_t start)
{
	if (ar_net_proc_alive(pid, start))
		kill(pid, SIGKILL);
}

static int gc_one(const struct ar_net_state *s, void *data)
{
	int *n = data;
	if (ar_net_proc_alive(s->owner, s->owner_start))
		return 0;
	/* PDEATHSIG killed them already; a start time that matches says it is still them */
	kill_if(s->proxy_pid, s->proxy_start);
	if (s->cgroup[0])
		net_remove_cgroups(s->cgroup, 1);
	if (s->proxy_cgroup[0])
		net_remove_cgroups(s->proxy_cgroup, 1); /* run's start: no waiting */
	if (s->net_index >= 0) {
		struct ar_net_plan plan = {.index = (uint32_t)s->net_index};
		ar_net_release(&plan);
	}
	ar_net_state_remove(s->name);
	(*n)++;
	return 0;
}

static bool has_dead_entry(void)
{
	ar_autofree char *dir = ar_xasprintf("%s/net", AR_NET_STATE_ROOT);
	DIR *d = ar_net_state_root_trusted() ? opendir(dir) : NULL;
	struct dirent *e;
	bool dead = false;
	while (d && !dead && (e = readdir(d)) != NULL)
		dead = e->d_name[0] != '.' && !net_entry_live(dirfd(d), e->d_name);
	if (d)
		closedir(d);
	return dead;
}

/* Allocation entries of owners that left no state (killed between the two). The lock
 * only when there is something to remove: every run comes through here. */
static void gc_entries(void)
{
	ar_auto_error ar_error_t err = NULL;
	if (!has_dead_entry())
		return;
	int fd = net_lock_entries(&err);
	if (fd == -1)
		return;
	DIR *d = fdopendir(fd);
	struct dirent *e;
	if (d == NULL) {
		close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && !net_entry_live(fd, e->d_name))
			unlinkat(fd, e->d_name, 0);
	closedir(d);
}

/* A directory NAME-PID without a state file: secrets made its CA bundle and kubeconfig
 * before the state is written; an agentrun killed in between (kill -9) leaves them.
 * Removed once PID is gone (a live run's directory is never touched). */
static void gc_stateless(void)
{
	DIR *d = opendir(AR_NET_STATE_ROOT);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		const char *dash = strrchr(e->d_name, '-');
		char *end = NULL;
		long pid = dash ? strtol(dash + 1, &end, 10) : 0;
		if (e->d_name[0] == '.' || pid <= 0 || end == NULL || *end != '\0' ||
		    faccessat(dirfd(d), e->d_name, F_OK, 0) != 0)
			continue;
		ar_autofree char *state = ar_xasprintf("%s/state", e->d_name);
		if (faccessat(dirfd(d), state, F_OK, 0) == 0 ||
		    (kill((pid_t)pid, 0) == 0 || errno == EPERM))
			continue;
		ar_net_state_remove(e->d_name);
	}
	if (d)
		closedir(d);
}

int ar_net_gc(void)
{
	int n = 0;
	ar_net_state_foreach(gc_one, &n);
	gc_entries();
	gc_stateless();
	return n;
}

static bool is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The newest AR_NET_STATE_ROOT/audit/NAME-*.jsonl, NULL when there is none. */
static char *newest_audit(const char *name, size_t *count)
{
	ar_autofree char *dir = ar_xasprintf("%s/audit", AR_NET_STATE_ROOT);
	DIR *d = opendir(dir);
	struct dirent *e;
	char *best = NULL;
	time_t best_time = 0;
	size_t len = strlen(name);

	*count = 0;
	if (d != NULL && !ar_net_state_root_trusted()) {
		closedir(d);
		d = NULL;
	}
	if (d == NULL)
		return NULL;
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		const char *dash = e->d_name + len;
		if (strncmp(e->d_name, name, len) != 0 || *dash != '-' ||
		    strchr(dash + 1, '-') != NULL || strstr(dash, ".jsonl") == NULL)
			continue;
		char *path = ar_xasprintf("%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0 && (best == NULL || st.st_mtime >= best_time)) {
			free(best);
			best = steal_pointer(&path);
			best_time = st.st_mtime;
		}
		free(path);
		(*count)++;
	}
	closedir(d);
	return best;
}

char *ar_net_audit_resolve(const char *arg, char **note, ar_error_t *err)
{
	struct ar_net_state s;
	ar_auto_error ar_error_t ignored = NULL;
	size_t n = 0;

	*note = NULL;
	if (strchr(arg, '/') != NULL || is_file(arg))
		return ar_xstrdup(arg);
	if (strchr(arg, '.') == NULL && ar_net_state_read(arg, &s, &ignored) == 0 && s.audit[0])
		return ar_xstrdup(s.audit);
	char *path = ar_net_audit_path(arg);
	if (strchr(arg, '.') == NULL && is_file(path))
		return path;
	free(path);
	path = strchr(arg, '.') == NULL ? newest_audit(arg, &n) : NULL;
	if (path == NULL) {
		ar_error_make(
		    err, ENOENT,
		    "`%s`: no such file, and no sandbox of that name has an audit in %s/audit", arg,
		    AR_NET_STATE_ROOT);
		return NULL;
	}
	if (n > 1)
		*note = ar_xasprintf("%zu sandboxes named %s have an audit; showing the newest, %s",
				     n, arg, path);
	return path;
}

struct newest_ctx {
	const char *policy;
	struct ar_net_state *out;
	size_t n;
};

/* NAME-PID of policy NAME: the name, a dash, digits only. */
bool ar_net_state_of_policy(const char *sandbox, const char *policy)
{
	size_t len = strlen(policy);
	if (strncmp(sandbox, policy, len) != 0 || sandbox[len] != '-' || sandbox[len + 1] == '\0')
		return false;
	return strspn(sandbox + len + 1, "0123456789") == strlen(sandbox + len + 1);
}

static int newest_live(const struct ar_net_state *s, void *data)
{
	struct newest_ctx *c = data;
	if (!ar_net_state_of_policy(s->name, c->policy) ||
	    !ar_net_proc_alive(s->owner, s->owner_start) || s->pid <= 0)
		return 0;
	if (c->n++ == 0 || s->started >= c->out->started)
		*c->out = *s;
	return 0;
}

size_t ar_net_state_newest_live(const char *policy, struct ar_net_state *out)
{
	struct newest_ctx c = {.policy = policy, .out = out};
	ar_net_state_foreach(newest_live, &c);
	return c.n;
}

struct find_ctx {
	char netns[64];
	struct ar_net_state *out;
	bool found;
};

static int find_netns(const struct ar_net_state *s, void *data)
{
	struct find_ctx *c = data;
	char path[64], link[64];
	ssize_t n;
	if (!ar_net_proc_alive(s->owner, s->owner_start) || s->pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)s->pid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0) {
		/* a user's sandbox: its init is not dumpable, its command may be read */
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)ar_net_state_command_pid(s));
		n = readlink(path, link, sizeof(link) - 1);
	}
	if (n <= 0)
		return 0;
	link[n] = '\0';
	if (strcmp(link, c->netns) != 0)
		return 0;
	*c->out = *s;
	c->found = true;
	return 1;
}

int ar_net_state_find_pid(pid_t pid, struct ar_net_state *out)
{
	struct find_ctx c = {.out = out};
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	ssize_t n = readlink(path, c.netns, sizeof(c.netns) - 1);
	if (n <= 0)
		return -1;
	c.netns[n] = '\0';
	ar_net_state_foreach(find_netns, &c);
	return c.found ? 0 : -1;
}

pid_t ar_net_state_command_pid(const struct ar_net_state *s)
{
	char path[64], buf[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)s->pid, (int)s->pid);
	ar_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd == -1 ? -1 : TEMP_FAILURE_RETRY(read(fd, buf, sizeof(buf) - 1));
	if (n <= 0)
		return s->pid;
	buf[n] = '\0';
	long child = strtol(buf, NULL, 10);
	return child > 0 ? (pid_t)child : s->pid;
}

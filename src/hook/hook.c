/* The hook's steps: the container's netns check, the record under /run/agentrun/hooks,
 * and create-runtime / poststop in order. The record is what poststop (and `agentrun
 * ps`) find; it is made exclusively, so a second create for one id fails whole. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <cjson/cJSON.h>

#include "agentrun/check.h"
#include "agentrun/hook.h"
#include "agentrun/spec.h"
#include "agentrun/util.h"

static int ns_inode(const char *path, ino_t *out, ar_error_t *err)
{
	struct stat st;
	if (stat(path, &st) == -1)
		return ar_error_make(err, errno, "stat `%s`", path);
	*out = st.st_ino;
	return 0;
}

int ar_hook_check_netns(pid_t pid, ar_error_t *err)
{
	char path[64];
	ar_autofree char *text = NULL;
	snprintf(path, sizeof(path), "/proc/%d/net/dev", (int)pid);
	if (ar_read_file(path, 0, &text, NULL, err) < 0)
		return ar_error_wrap(err, "state: pid %d: not a running process", (int)pid);
	ino_t mine = 0, theirs = 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (ns_inode(path, &theirs, err) < 0 || ns_inode("/proc/self/ns/net", &mine, err) < 0)
		return -1;
	if (mine == theirs)
		return ar_error_make(err, 0,
				     "the container (pid %d) shares the host's network namespace: "
				     "the policy needs its own (linux.namespaces: network)",
				     (int)pid);
	ar_autostrv char **names = ar_check_parse_netdev(text);
	ar_autobuf struct ar_buf extra = {0};
	for (size_t i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], "lo") != 0)
			ar_buf_printf(&extra, "%s%s", extra.len ? "," : "", names[i]);
	if (extra.len > 0)
		return ar_error_make(err, 0,
				     "the container's network namespace (%s) already has "
				     "interfaces besides lo: %s; the hook only wires a fresh one",
				     path, extra.data);
	return 0;
}

/* dir and its parent, as root-only directories. */
static int make_dirs(const char *dir, ar_error_t *err)
{
	ar_autofree char *copy = ar_xstrdup(dir);
	const char *parent = dirname(copy);
	if (mkdir(parent, 0755) == -1 && errno != EEXIST)
		return ar_error_make(err, errno, "create `%s`", parent);
	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		return ar_error_make(err, errno, "create `%s`", dir);
	return 0;
}

static void record_text(struct ar_buf *b, const struct ar_oci_state *s, const char *policy_path,
			const struct ar_policy *p)
{
	ar_buf_puts(b, "{\"id\": ");
	ar_json_quote(b, s->id);
	ar_buf_printf(b, ", \"pid\": %d, \"bundle\": ", (int)s->pid);
	ar_json_quote(b, s->bundle);
	ar_buf_puts(b, ", \"policy\": ");
	ar_json_quote(b, policy_path);
	ar_buf_puts(b, ", \"name\": ");
	ar_json_quote(b, p->name);
	ar_buf_printf(b, ", \"network\": \"%s\"}\n",
		      p->network == AR_NETWORK_PROXY ? "proxy" : "none");
}

/* A record whose container process is gone: its runtime failed after create-runtime
 * and never ran poststop (podman does that when runc fails to start the process). */
static bool record_stale(const char *path)
{
	ar_autofree char *text = NULL;
	ar_auto_error ar_error_t ignored = NULL;
	int pid = 0;
	if (ar_read_file(path, 64 * 1024, &text, NULL, &ignored) < 0)
		return false;
	const char *at = strstr(text, "\"pid\": ");
	if (at == NULL || sscanf(at + 7, "%d", &pid) != 1 || pid <= 0)
		return false;
	return kill(pid, 0) == -1 && errno == ESRCH;
}

/* Without fsync: the record is as volatile as the container it names (/run is a tmpfs
 * on most hosts; where it is not, as here, an fsync cost the runtime's wait
 * milliseconds), and a reboot ends both. */
static int write_record(const char *path, const struct ar_buf *b, ar_error_t *err)
{
	ar_autoclose int fd =
	    open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1 || ar_write_all(fd, b->data, b->len) == -1) {
		int e = errno;
		unlink(path);
		return ar_error_make(err, e, "write `%s`", path);
	}
	return 0;
}

int ar_hook_record_create(const char *dir, const struct ar_oci_state *s, const char *policy_path,
			  const struct ar_policy *p, ar_error_t *err)
{
	if (make_dirs(dir, err) < 0)
		return -1;
	ar_autofree char *path = ar_xasprintf("%s/%s", dir, s->id);
	ar_autofree char *tmp = ar_xasprintf("%s/.%s.%d", dir, s->id, (int)getpid());
	ar_autobuf struct ar_buf b = {0};
	record_text(&b, s, policy_path, p);
	/* written whole under a temporary name, then link(2)ed: exclusive like O_EXCL, and
	 * no reader ever sees half a record */
	if (write_record(tmp, &b, err) < 0)
		return -1;
	int rc = link(tmp, path);
	int e = errno;
	if (rc == -1 && e == EEXIST && record_stale(path)) {
		/* replaced whole: the stale one or this one, never a mix */
		rc = rename(tmp, path);
		e = errno;
	}
	unlink(tmp);
	if (rc == -1 && e == EEXIST)
		return ar_error_make(err, 0,
				     "container `%s` is already recorded (%s) and its process "
				     "lives: a second create-runtime for the same id",
				     s->id, path);
	if (rc == -1)
		return ar_error_make(err, e, "create `%s`", path);
	return 0;
}

int ar_hook_record_remove(const char *dir, const char *id, bool *existed, ar_error_t *err)
{
	ar_autofree char *path = ar_xasprintf("%s/%s", dir, id);
	*existed = true;
	if (unlink(path) == 0)
		return 0;
	if (errno == ENOENT) {
		*existed = false;
		return 0;
	}
	return ar_error_make(err, errno, "remove `%s`", path);
}

int ar_hook_create_runtime(const char *dir, const struct ar_oci_state *s, const char *policy_path,
			   const struct ar_policy *p, ar_error_t *err)
{
	ar_autospec struct ar_spec *sp = NULL;
	if (s->pid <= 0)
		return ar_error_make(err, 0,
				     "state: pid: missing (create-runtime needs the container's "
				     "process)");
	/* what the container was rendered to get: the same spec as render --format oci */
	if (ar_spec_build(p, NULL, &sp, err) < 0)
		return -1;
	if (ar_hook_check_netns(s->pid, err) < 0 ||
	    ar_hook_record_create(dir, s, policy_path, p, err) < 0)
		return -1;
	if (hook_wire_network(sp, s, policy_path, err) < 0) {
		bool existed;
		ar_auto_error ar_error_t ignored = NULL;
		/* nothing half-built: the record goes with the failed wiring */
		ar_hook_record_remove(dir, s->id, &existed, &ignored);
		return -1;
	}
	return 0;
}

/* The record's policy name and pid, when it names a proxy network. */
static bool record_proxy(const char *path, char *name, size_t size, pid_t *pid)
{
	ar_autofree char *text = NULL;
	ar_auto_error ar_error_t ignored = NULL;
	size_t len = 0;
	if (ar_read_file(path, 64 * 1024, &text, &len, &ignored) < 0)
		return false;
	cJSON *root = cJSON_ParseWithLength(text, len);
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "name");
	const cJSON *pd = cJSON_GetObjectItemCaseSensitive(root, "pid");
	const cJSON *net = cJSON_GetObjectItemCaseSensitive(root, "network");
	bool proxy = cJSON_IsString(n) && cJSON_IsNumber(pd) && pd->valueint > 0 &&
		     cJSON_IsString(net) && strcmp(net->valuestring, "proxy") == 0;
	if (proxy) {
		snprintf(name, size, "%s", n->valuestring);
		*pid = (pid_t)pd->valueint;
	}
	cJSON_Delete(root);
	return proxy;
}

/* What create-runtime made for the record at path: the proxy and its state, then the
 * record itself. */
static int undo_record(const char *dir, const char *id, ar_error_t *err)
{
	char name[AR_POLICY_NAME_MAX + 1];
	pid_t pid = 0;
	bool existed;
	ar_autofree char *path = ar_xasprintf("%s/%s", dir, id);
	if (record_proxy(path, name, sizeof(name), &pid))
		hook_unwire_network(name, pid);
	return ar_hook_record_remove(dir, id, &existed, err);
}

int ar_hook_poststop(const char *dir, const struct ar_oci_state *s, ar_error_t *err)
{
	/* a runtime calls poststop after a failed create too: no record is fine */
	return undo_record(dir, s->id, err);
}

int ar_hook_gc(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d != NULL && (e = readdir(d)) != NULL) {
		ar_auto_error ar_error_t ignored = NULL;
		if (!ar_hook_id_valid(e->d_name) || e->d_name[0] == '.')
			continue;
		ar_autofree char *path = ar_xasprintf("%s/%s", dir, e->d_name);
		if (record_stale(path) && undo_record(dir, e->d_name, &ignored) == 0)
			n++;
	}
	if (d != NULL)
		closedir(d);
	return n;
}

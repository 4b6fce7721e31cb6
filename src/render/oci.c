/* `render --format oci`: the policy as a runtime-spec config.json for runc, crun or
 * runsc, with the limits `run` applies: non-root user, no capabilities,
 * no_new_privs, read-only root, tmpfs scratch, read-only credential binds, fresh
 * namespaces, memory/swap/pids/cpu, runc's masked and read-only paths, seccomp. */
#define _GNU_SOURCE
#include <string.h>

#include "agentrun/render.h"
#include "agentrun/util.h"

#include "json_writer.h"
#include "oci_seccomp.h"

#define OCI_VERSION  "1.0.2"
#define CPU_PERIOD   100000
#define NOFILE_LIMIT 1024
#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct oci_mount {
	const char *destination, *type, *source;
	const char *options[8];
};

/* runc's `runc spec` defaults, /dev/shm included. */
static const struct oci_mount base_mounts[] = {
    {"/proc", "proc", "proc", {"nosuid", "noexec", "nodev"}},
    {"/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}},
    {"/dev/pts",
     "devpts",
     "devpts",
     {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
    {"/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
    {"/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}},
    {"/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}},
    {"/sys/fs/cgroup", "cgroup", "cgroup", {"nosuid", "noexec", "nodev", "relatime", "ro"}},
};

static const char *const namespaces[] = {"pid", "network", "ipc", "uts", "mount", "cgroup"};

/* runc's defaults (libcontainer/specconv). */
static const char *const masked_paths[] = {
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
};
static const char *const readonly_paths[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
					     "/proc/sysrq-trigger"};

static const char *const cap_sets[] = {"bounding", "effective", "inheritable", "permitted",
				       "ambient"};

static void mount_entry(struct jw *w, const char *dst, const char *type, const char *src,
			const char *const *opts, size_t n_opts)
{
	ar_jw_open(w, NULL, '{');
	ar_jw_str(w, "destination", dst);
	ar_jw_str(w, "type", type);
	ar_jw_str(w, "source", src);
	ar_jw_strv(w, "options", opts, n_opts);
	ar_jw_close(w, '}');
}

static void mounts(const struct ar_policy *p, struct jw *w)
{
	static const char *const tmpfs_opts[] = {"nosuid", "nodev", "mode=1777"};
	static const char *const ro_bind[] = {"rbind", "ro", "nosuid", "nodev"};
	static const char *const rw_bind[] = {"rbind", "rw", "nosuid", "nodev"};

	ar_jw_open(w, "mounts", '[');
	for (size_t i = 0; i < AR_ARRAY_SIZE(base_mounts); i++) {
		const struct oci_mount *m = &base_mounts[i];
		size_t n = 0;
		while (n < AR_ARRAY_SIZE(m->options) && m->options[n] != NULL)
			n++;
		mount_entry(w, m->destination, m->type, m->source, m->options, n);
	}
	for (size_t i = 0; i < p->n_tmpfs; i++)
		mount_entry(w, p->tmpfs[i], "tmpfs", "tmpfs", tmpfs_opts,
			    AR_ARRAY_SIZE(tmpfs_opts));
	if (p->kubeconfig != NULL)
		mount_entry(w, p->kubeconfig_target, "bind", p->kubeconfig, ro_bind,
			    AR_ARRAY_SIZE(ro_bind));
	for (size_t i = 0; i < p->n_mounts; i++) {
		const struct ar_mount *m = &p->mounts[i];
		mount_entry(w, m->target, "bind", m->source, m->readonly ? ro_bind : rw_bind,
			    AR_ARRAY_SIZE(ro_bind));
	}
	ar_jw_close(w, ']');
}

static void env_str(const char *key, const char *value, void *data)
{
	ar_autofree char *v = ar_xasprintf("%s=%s", key, value);
	ar_jw_str(data, NULL, v);
}

static void env(const struct ar_policy *p, struct jw *w)
{
	ar_jw_open(w, "env", '[');
	if (ar_policy_getenv(p, "PATH") == NULL)
		ar_jw_str(w, NULL, DEFAULT_PATH);
	if (p->network == AR_NETWORK_PROXY)
		ar_proxy_env_foreach(p->proxy_url, env_str, w);
	for (size_t i = 0; i < p->n_env; i++) {
		ar_autofree char *v = ar_xasprintf("%s=%s", p->env[i].key, p->env[i].value);
		ar_jw_str(w, NULL, v);
	}
	if (p->kubeconfig != NULL) {
		ar_autofree char *v = ar_xasprintf("KUBECONFIG=%s", p->kubeconfig_target);
		ar_jw_str(w, NULL, v);
	}
	ar_jw_close(w, ']');
}

static void process(const struct ar_policy *p, const struct ar_render_options *o, struct jw *w)
{
	ar_jw_open(w, "process", '{');
	ar_jw_bool(w, "terminal", false);
	ar_jw_open(w, "user", '{');
	ar_jw_int(w, "uid", p->uid);
	ar_jw_int(w, "gid", p->gid);
	ar_jw_close(w, '}');
	ar_jw_open(w, "args", '[');
	for (size_t i = 0; i < o->n_cmd; i++)
		ar_jw_str(w, NULL, o->cmd[i]);
	ar_jw_close(w, ']');
	env(p, w);
	ar_jw_str(w, "cwd", "/");
	ar_jw_open(w, "capabilities", '{');
	for (size_t i = 0; i < AR_ARRAY_SIZE(cap_sets); i++)
		ar_jw_strv(w, cap_sets[i], NULL, 0);
	ar_jw_close(w, '}');
	ar_jw_open(w, "rlimits", '[');
	ar_jw_open(w, NULL, '{');
	ar_jw_str(w, "type", "RLIMIT_NOFILE");
	ar_jw_int(w, "hard", NOFILE_LIMIT);
	ar_jw_int(w, "soft", NOFILE_LIMIT);
	ar_jw_close(w, '}');
	ar_jw_close(w, ']');
	ar_jw_bool(w, "noNewPrivileges", true);
	ar_jw_close(w, '}');
}

static void resources(const struct ar_policy *p, struct jw *w)
{
	ar_jw_open(w, "resources", '{');
	/* deny every device node; runc adds the standard ones (null, zero, tty, ...) */
	ar_jw_open(w, "devices", '[');
	ar_jw_open(w, NULL, '{');
	ar_jw_bool(w, "allow", false);
	ar_jw_str(w, "access", "rwm");
	ar_jw_close(w, '}');
	ar_jw_close(w, ']');
	ar_jw_open(w, "memory", '{');
	ar_jw_int(w, "limit", p->limits.memory);
	/* memory+swap equal to memory: no swap, like memory.swap.max = 0 in `run` */
	ar_jw_int(w, "swap", p->limits.memory);
	ar_jw_close(w, '}');
	ar_jw_open(w, "cpu", '{');
	ar_jw_int(w, "quota", p->limits.cpus_milli * CPU_PERIOD / 1000);
	ar_jw_int(w, "period", CPU_PERIOD);
	ar_jw_close(w, '}');
	ar_jw_open(w, "pids", '{');
	ar_jw_int(w, "limit", p->limits.pids);
	ar_jw_close(w, '}');
	ar_jw_close(w, '}');
}

static int linux_section(const struct ar_policy *p, const char *seccomp_json,
			 const char *seccomp_origin, struct jw *w, ar_error_t *err)
{
	ar_jw_open(w, "linux", '{');
	resources(p, w);
	ar_jw_open(w, "namespaces", '[');
	for (size_t i = 0; i < AR_ARRAY_SIZE(namespaces); i++) {
		ar_jw_open(w, NULL, '{');
		ar_jw_str(w, "type", namespaces[i]);
		ar_jw_close(w, '}');
	}
	ar_jw_close(w, ']');
	ar_jw_strv(w, "maskedPaths", masked_paths, AR_ARRAY_SIZE(masked_paths));
	ar_jw_strv(w, "readonlyPaths", readonly_paths, AR_ARRAY_SIZE(readonly_paths));
	if (seccomp_json != NULL && ar_render_oci_seccomp(w, seccomp_json, seccomp_origin, err) < 0)
		return -1;
	ar_jw_close(w, '}');
	return 0;
}

int ar_render_oci(const struct ar_policy *p, const struct ar_render_options *o,
		  const char *seccomp_json, const char *seccomp_origin, struct ar_buf *out,
		  ar_error_t *err)
{
	if (o->n_cmd == 0)
		return ar_error_make(err, 0,
				     "--format oci needs the command after `--`: an OCI bundle "
				     "has no image default command");
	ar_autobuf struct ar_buf b = {0};
	struct jw w = {.out = &b};
	ar_jw_open(&w, NULL, '{');
	ar_jw_str(&w, "ociVersion", OCI_VERSION);
	process(p, o, &w);
	ar_jw_open(&w, "root", '{');
	ar_jw_str(&w, "path", p->rootfs != NULL ? p->rootfs : "rootfs");
	ar_jw_bool(&w, "readonly", true);
	ar_jw_close(&w, '}');
	ar_jw_str(&w, "hostname", p->name);
	mounts(p, &w);
	if (linux_section(p, seccomp_json, seccomp_origin, &w, err) < 0)
		return -1;
	ar_jw_close(&w, '}');
	ar_buf_append(out, b.data, b.len);
	return 0;
}

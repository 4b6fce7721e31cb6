/* `render --format oci`: the agent spec as a runtime-spec config.json for runc, crun
 * or runsc, with what `run` applies: non-root user, no capabilities, no_new_privs,
 * read-only root, tmpfs scratch, read-only credential binds, fresh namespaces,
 * memory/swap/pids/cpu, the spec's masked and read-only paths, seccomp, and the
 * `agentrun hook` entries that wire and record the container. Everything about the
 * sandbox comes from struct ar_spec; this file only knows the OCI spelling. */
#define _GNU_SOURCE
#include <string.h>

#include "agentrun/render.h"
#include "agentrun/spec.h"
#include "agentrun/util.h"

#include "json_writer.h"
#include "oci_seccomp.h"

#define OCI_VERSION  "1.0.2"
#define NOFILE_LIMIT 1024
#define HOOK_TIMEOUT 10 /* seconds: the runtime kills a hook that takes longer */

struct oci_mount {
	const char *destination, *type, *source;
	const char *options[8];
};

/* What run's fresh proc, minimal /dev and read-only sysfs are in OCI terms: runc's
 * `runc spec` defaults, /dev/shm included. */
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

static void mounts(const struct ar_spec *sp, struct jw *w)
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
	for (size_t i = 0; i < sp->n_mounts; i++) {
		const struct ar_spec_mount *m = &sp->mounts[i];
		if (m->kind == AR_SPEC_MNT_TMPFS)
			mount_entry(w, m->target, "tmpfs", "tmpfs", tmpfs_opts,
				    AR_ARRAY_SIZE(tmpfs_opts));
		else
			mount_entry(w, m->target, "bind", m->source,
				    m->readonly ? ro_bind : rw_bind, AR_ARRAY_SIZE(ro_bind));
	}
	ar_jw_close(w, ']');
}

static void process(const struct ar_spec *sp, const struct ar_render_options *o, struct jw *w)
{
	ar_jw_open(w, "process", '{');
	ar_jw_bool(w, "terminal", false);
	ar_jw_open(w, "user", '{');
	ar_jw_int(w, "uid", sp->uid);
	ar_jw_int(w, "gid", sp->gid);
	ar_jw_close(w, '}');
	ar_jw_open(w, "args", '[');
	for (size_t i = 0; i < o->n_cmd; i++)
		ar_jw_str(w, NULL, o->cmd[i]);
	ar_jw_close(w, ']');
	ar_jw_open(w, "env", '[');
	for (char **e = sp->env; *e != NULL; e++)
		ar_jw_str(w, NULL, *e);
	ar_jw_close(w, ']');
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
	ar_jw_bool(w, "noNewPrivileges", sp->no_new_privs);
	ar_jw_close(w, '}');
}

static void resources(const struct ar_spec_limits *l, struct jw *w)
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
	ar_jw_int(w, "limit", l->memory);
	ar_jw_int(w, "swap", l->memory_swap);
	ar_jw_close(w, '}');
	ar_jw_open(w, "cpu", '{');
	ar_jw_int(w, "quota", l->cpu_quota);
	ar_jw_int(w, "period", l->cpu_period);
	ar_jw_close(w, '}');
	ar_jw_open(w, "pids", '{');
	ar_jw_int(w, "limit", l->pids);
	ar_jw_close(w, '}');
	ar_jw_close(w, '}');
}

static void namespaces(const struct ar_render_options *o, struct jw *w)
{
	ar_jw_open(w, "namespaces", '[');
	for (size_t i = 0; i < ar_spec_n_namespaces; i++) {
		const char *type = ar_spec_namespaces[i].oci;
		ar_jw_open(w, NULL, '{');
		ar_jw_str(w, "type", type);
		/* a prepared netns (runsc adopts the one it is given) instead of a fresh one */
		if (o->netns != NULL && strcmp(type, "network") == 0)
			ar_jw_str(w, "path", o->netns);
		ar_jw_close(w, '}');
	}
	ar_jw_close(w, ']');
}

static void system_paths(struct jw *w, const char *key, enum ar_spec_path_kind kind)
{
	ar_jw_open(w, key, '[');
	for (size_t i = 0; i < ar_spec_n_system_paths; i++)
		if (ar_spec_system_paths[i].kind == kind)
			ar_jw_str(w, NULL, ar_spec_system_paths[i].path);
	ar_jw_close(w, ']');
}

static int linux_section(const struct ar_spec *sp, const struct ar_render_options *o,
			 const char *seccomp_json, const char *seccomp_origin, struct jw *w,
			 ar_error_t *err)
{
	ar_jw_open(w, "linux", '{');
	resources(&sp->limits, w);
	namespaces(o, w);
	system_paths(w, "maskedPaths", AR_SPEC_MASKED);
	system_paths(w, "readonlyPaths", AR_SPEC_READONLY);
	if (seccomp_json != NULL && ar_render_oci_seccomp(w, seccomp_json, seccomp_origin, err) < 0)
		return -1;
	ar_jw_close(w, '}');
	return 0;
}

/* `agentrun hook STAGE --policy P` at createRuntime (the namespaces exist, the command
 * has not started: the netns can be wired) and poststop (the container is gone). */
static void hook_entry(struct jw *w, const char *stage, const char *arg,
		       const struct ar_render_options *o)
{
	ar_jw_open(w, stage, '[');
	ar_jw_open(w, NULL, '{');
	ar_jw_str(w, "path", o->hook_path);
	const char *const args[] = {"agentrun", "hook", arg, "--policy", o->policy_path};
	ar_jw_strv(w, "args", args, AR_ARRAY_SIZE(args));
	ar_jw_int(w, "timeout", HOOK_TIMEOUT);
	ar_jw_close(w, '}');
	ar_jw_close(w, ']');
}

/* With a prepared netns (--netns) the network is `agentrun net`'s: no hooks. */
static void hooks(const struct ar_render_options *o, struct jw *w)
{
	if (o->hook_path == NULL || o->policy_path == NULL || o->netns != NULL)
		return;
	ar_jw_open(w, "hooks", '{');
	hook_entry(w, "createRuntime", "create-runtime", o);
	hook_entry(w, "poststop", "poststop", o);
	ar_jw_close(w, '}');
}

int ar_render_oci(const struct ar_spec *sp, const struct ar_render_options *o,
		  const char *seccomp_json, const char *seccomp_origin, struct ar_buf *out,
		  ar_error_t *err)
{
	if (o->n_cmd == 0)
		return ar_error_make(err, 0,
				     "--format oci needs the command after `--`: an OCI bundle "
				     "has no image default command");
	const char *rootfs = o->rootfs != NULL ? o->rootfs : sp->rootfs;
	ar_autobuf struct ar_buf b = {0};
	struct jw w = {.out = &b};
	ar_jw_open(&w, NULL, '{');
	ar_jw_str(&w, "ociVersion", OCI_VERSION);
	process(sp, o, &w);
	ar_jw_open(&w, "root", '{');
	ar_jw_str(&w, "path", rootfs != NULL ? rootfs : "rootfs");
	ar_jw_bool(&w, "readonly", sp->readonly_root);
	ar_jw_close(&w, '}');
	ar_jw_str(&w, "hostname", sp->hostname);
	mounts(sp, &w);
	hooks(o, &w);
	if (o->policy_path != NULL) {
		ar_jw_open(&w, "annotations", '{');
		ar_jw_str(&w, AR_OCI_POLICY_ANNOTATION, o->policy_path);
		ar_jw_close(&w, '}');
	}
	if (linux_section(sp, o, seccomp_json, seccomp_origin, &w, err) < 0)
		return -1;
	ar_jw_close(&w, '}');
	ar_buf_append(out, b.data, b.len);
	return 0;
}

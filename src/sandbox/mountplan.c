/* The mount plan: which mounts a sandbox gets, in which order, decided from the
 * policy alone (no I/O) so it is unit-testable; mount.c carries it out. Also the
 * mountinfo walker used where mount_setattr(2) is missing. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentrun/sandbox.h"
#include "agentrun/spec.h"
#include "agentrun/util.h"

/* Hidden inside the host root view (DESIGN §6 credentials). The view shows only an
 * allow-list of top-level directories (mount.c: /usr, /etc, /opt, ...): homes, /root,
 * /run, /var, /srv, /mnt are absent already. What remains is credentials inside the
 * allowed ones (plus, in mount.c, /etc/sudoers* and /etc/ssh/ *_key by pattern). */
static const char *const hidden_paths[] = {
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/kubernetes",
    "/etc/rancher",
};

bool ar_path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static void add(struct ar_mount_plan *plan, enum ar_mount_kind kind, const char *source,
		const char *target, bool readonly, char *what)
{
	plan->ops = ar_xrealloc(plan->ops, (plan->n_ops + 1) * sizeof(*plan->ops));
	plan->ops[plan->n_ops++] = (struct ar_mount_op){
	    .kind = kind,
	    .source = source ? ar_xstrdup(source) : NULL,
	    .target = ar_xstrdup(target),
	    .readonly = readonly,
	    .what = what,
	};
}

/* Masked and read-only /proc and /sys paths: the spec's table (src/spec/paths.c), the
 * one list the OCI render and `check --bundle` read too. */
static void add_system_paths(struct ar_mount_plan *plan, const char *under)
{
	for (size_t i = 0; i < ar_spec_n_system_paths; i++) {
		const struct ar_spec_path *sp = &ar_spec_system_paths[i];
		if (!ar_path_under(sp->path, under))
			continue;
		if (sp->kind == AR_SPEC_MASKED)
			add(plan, AR_MNT_MASK, NULL, sp->path, true, ar_xstrdup("masked path"));
		else
			add(plan, AR_MNT_RO_SELF, NULL, sp->path, true,
			    ar_xstrdup("read-only path"));
	}
}

static bool is_tmpfs_target(const struct ar_policy *p, const char *path)
{
	for (size_t i = 0; i < p->n_tmpfs; i++)
		if (strcmp(p->tmpfs[i], path) == 0)
			return true;
	return false;
}

static bool already_hidden(const struct ar_mount_plan *plan, const char *path)
{
	for (size_t i = 0; i < plan->n_ops; i++)
		if (plan->ops[i].kind == AR_MNT_HIDE && ar_path_under(path, plan->ops[i].target))
			return true;
	return false;
}

/* The caller's own places (its homes, its runtime directory with the SSH agent, D-Bus,
 * Wayland and keyring sockets): absent from the view already when they lie under
 * /home, /root or /run; hidden by name when they lie in a directory the view shows
 * (/opt, /etc, /usr), since an agent running as the caller's uid could read them. */
static void hide_caller_private(const struct ar_policy *p, const char *path,
				struct ar_mount_plan *plan)
{
	if (path != NULL && path[0] == '/' && path[1] != '\0' && strstr(path, "/..") == NULL &&
	    !already_hidden(plan, path) && !is_tmpfs_target(p, path))
		add(plan, AR_MNT_HIDE, NULL, path, true, ar_xasprintf("the caller's own %s", path));
}

static void add_hidden(const struct ar_policy *p, const char *const *caller_private,
		       struct ar_mount_plan *plan)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(hidden_paths); i++)
		/* a policy tmpfs replaces the place anyway: one mount, not two */
		if (!is_tmpfs_target(p, hidden_paths[i]))
			add(plan, AR_MNT_HIDE, NULL, hidden_paths[i], true,
			    ar_xstrdup("hidden path"));
	for (size_t i = 0; caller_private != NULL && i < AR_CALLER_PRIVATE_MAX; i++)
		hide_caller_private(p, caller_private[i], plan);
}

static int check_target(const char *origin, const char *field, size_t i, const char *target,
			ar_error_t *err)
{
	if (target == NULL || target[0] != '/' || strcmp(target, "/") == 0)
		return ar_error_make(err, 0, "%s: %s[%zu]: target must be an absolute path below /",
				     origin, field, i);
	return 0;
}

static int add_policy_mounts(const struct ar_policy *p, struct ar_mount_plan *plan, ar_error_t *err)
{
	const char *kt = p->kubeconfig_target ? p->kubeconfig_target : AR_DEFAULT_KUBECONFIG_TARGET;

	for (size_t i = 0; i < p->n_tmpfs; i++) {
		if (check_target(p->origin, "tmpfs", i, p->tmpfs[i], err) == -1)
			return -1;
		add(plan, AR_MNT_TMPFS, NULL, p->tmpfs[i], false,
		    ar_xasprintf("%s: tmpfs[%zu]", p->origin, i));
	}
	for (size_t i = 0; i < p->n_mounts; i++) {
		const struct ar_mount *m = &p->mounts[i];
		if (check_target(p->origin, "mounts", i, m->target, err) == -1)
			return -1;
		add(plan, AR_MNT_BIND, m->source, m->target, m->readonly,
		    ar_policy_mount_origin(p, i));
	}
	if (p->kubeconfig != NULL) {
		if (kt[0] != '/' || strcmp(kt, "/") == 0)
			return ar_error_make(err, 0, "%s: kubeconfig target must be below /",
					     p->origin);
		add(plan, AR_MNT_BIND, p->kubeconfig, kt, true,
		    ar_xasprintf("%s: kubeconfig", p->origin));
		/* mode 600 and its owner's: the sandbox's uid reads a copy */
		plan->ops[plan->n_ops - 1].copy = true;
	}
	return 0;
}

void ar_mount_plan_add_file(struct ar_mount_plan *plan, int fd, const char *target,
			    const char *what)
{
	add(plan, AR_MNT_BIND, what, target, true, ar_xstrdup(what));
	plan->ops[plan->n_ops - 1].copy = true;
	plan->ops[plan->n_ops - 1].source_fd = fd;
}

void ar_mount_plan_add_bind(struct ar_mount_plan *plan, const char *source, const char *target,
			    const char *what)
{
	add(plan, AR_MNT_BIND, source, target, true, ar_xstrdup(what));
}

void ar_mount_plan_rebind(struct ar_mount_plan *plan, const char *target, const char *source)
{
	for (size_t i = 0; i < plan->n_ops; i++) {
		struct ar_mount_op *op = &plan->ops[i];
		if (op->kind != AR_MNT_BIND || strcmp(op->target, target) != 0)
			continue;
		free(op->source);
		op->source = ar_xstrdup(source);
		op->copy = false;
		op->readonly = true;
	}
}

int ar_mount_plan_build(const struct ar_policy *p, const char *const *caller_private,
			struct ar_mount_plan *plan, ar_error_t *err)
{
	*plan = (struct ar_mount_plan){.host_root = p->rootfs == NULL, .rootfs = p->rootfs};
	if (plan->host_root)
		add_hidden(p, caller_private, plan);
	/* in a rootfs these must exist: nothing is created in a read-only root */
	const char *fresh = plan->host_root ? NULL : "rootfs";
	add(plan, AR_MNT_PROC, NULL, "/proc", false,
	    fresh ? ar_xasprintf("%s: %s", p->origin, fresh) : ar_xstrdup("/proc"));
	add_system_paths(plan, "/proc");
	add(plan, AR_MNT_SYSFS, NULL, "/sys", true,
	    fresh ? ar_xasprintf("%s: %s", p->origin, fresh) : ar_xstrdup("/sys"));
	add_system_paths(plan, "/sys");
	add(plan, AR_MNT_DEV, NULL, "/dev", false,
	    fresh ? ar_xasprintf("%s: %s", p->origin, fresh) : ar_xstrdup("/dev"));
	if (add_policy_mounts(p, plan, err) == -1) {
		ar_mount_plan_free(plan);
		return -1;
	}
	return 0;
}

void ar_mount_plan_free(struct ar_mount_plan *plan)
{
	for (size_t i = 0; i < plan->n_ops; i++) {
		free(plan->ops[i].source);
		free(plan->ops[i].target);
		free(plan->ops[i].what);
		if (plan->ops[i].idmap_tree > 0)
			close(plan->ops[i].idmap_tree);
	}
	free(plan->ops);
	plan->ops = NULL;
	plan->n_ops = 0;
}

int ar_mountinfo_foreach(const char *text, const char *prefix,
			 int (*fn)(const char *mountpoint, void *data), void *data)
{
	const char *line = text;
	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		ar_autofree char *copy = ar_xstrndup(line, len);
		char *save = NULL, *field = strtok_r(copy, " ", &save);
		/* fields: id parent major:minor root mountpoint ... */
		for (int i = 0; i < 4 && field; i++)
			field = strtok_r(NULL, " ", &save);
		if (len > 0 && (field == NULL || field[0] != '/'))
			return -1;
		if (field != NULL) {
			ar_autofree char *mountpoint = ar_mountinfo_unescape(field, strlen(field));
			if (ar_path_under(mountpoint, prefix)) {
				int r = fn(mountpoint, data);
				if (r != 0)
					return r;
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return 0;
}

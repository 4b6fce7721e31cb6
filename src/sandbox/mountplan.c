/* The mount plan: which mounts a sandbox gets, in which order, from the agent spec alone
 * (no I/O) so it is unit-testable; mount.c carries it out. The spec says what is
 * hidden, mounted and masked; the plan adds what only run makes (a fresh /proc, /sys
 * and /dev, and files it generates: resolv.conf). Also the mountinfo walker used where
 * mount_setattr(2) is missing. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentrun/sandbox.h"
#include "agentrun/spec.h"
#include "agentrun/util.h"

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

/* The spec's hidden places (the host root view only): an empty tmpfs or /dev/null. */
static void add_hidden(const struct ar_spec *s, struct ar_mount_plan *plan)
{
	for (size_t i = 0; i < s->n_hidden; i++) {
		bool listed = false;
		for (size_t j = 0; j < ar_spec_n_hidden_paths && !listed; j++)
			listed = strcmp(s->hidden[i], ar_spec_hidden_paths[j]) == 0;
		add(plan, AR_MNT_HIDE, NULL, s->hidden[i], true,
		    listed ? ar_xstrdup("hidden path")
			   : ar_xasprintf("the caller's own %s", s->hidden[i]));
	}
}

/* The spec's mounts: tmpfs, binds, the kubeconfig, the CA bundle. */
static void add_spec_mounts(const struct ar_spec *s, struct ar_mount_plan *plan)
{
	for (size_t i = 0; i < s->n_mounts; i++) {
		const struct ar_spec_mount *m = &s->mounts[i];
		add(plan, m->kind == AR_SPEC_MNT_TMPFS ? AR_MNT_TMPFS : AR_MNT_BIND, m->source,
		    m->target, m->readonly, ar_xstrdup(m->field));
		plan->ops[plan->n_ops - 1].copy = m->copy;
	}
}

void ar_mount_plan_add_file(struct ar_mount_plan *plan, int fd, const char *target,
			    const char *what)
{
	add(plan, AR_MNT_BIND, what, target, true, ar_xstrdup(what));
	plan->ops[plan->n_ops - 1].copy = true;
	plan->ops[plan->n_ops - 1].source_fd = fd;
}

void ar_mount_plan_build(const struct ar_spec *s, struct ar_mount_plan *plan)
{
	const struct ar_policy *p = s->p;
	*plan = (struct ar_mount_plan){.host_root = s->rootfs == NULL, .rootfs = s->rootfs};
	add_hidden(s, plan);
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
	add_spec_mounts(s, plan);
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

/* Preflight: before anything is created, check that the kernel has what the
 * sandbox needs (fail closed, naming what is missing) and that every host path the
 * policy names exists, so bad input leaves nothing behind. Cheap: a few access(2)
 * and stat(2) calls, no big files. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agentrun/spec.h"
#include "agentrun/util.h"
#include "internal.h"

static int need_ns(const char *ns, const char *what, ar_error_t *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	if (access(path, F_OK) == -1)
		return ar_error_make(err, 0, "preflight: this kernel lacks %s (%s is missing)",
				     what, path);
	return 0;
}

/* The settings that refuse unprivileged user namespaces (docs/rootless.md follows this
 * table): the value that refuses, and the fix. Read before anything is made, so that
 * such a host gets one line naming the setting, not a failure deep in the start (with
 * Ubuntu's AppArmor restriction the clone even succeeds, into a namespace with no
 * capabilities). */
static const struct {
	const char *name, *path;
	int off;
	bool apparmor; /* lifted for agentrun by its AppArmor profile */
	const char *fix;
} userns_knobs[] = {
    {"user.max_user_namespaces", "/proc/sys/user/max_user_namespaces", 0, false,
     "as root: sysctl -w user.max_user_namespaces=15000 (and in /etc/sysctl.d/ to keep it)"},
    /* Debian's patch, before Debian 11 */
    {"kernel.unprivileged_userns_clone", "/proc/sys/kernel/unprivileged_userns_clone", 0, false,
     "as root: sysctl -w kernel.unprivileged_userns_clone=1 (and in /etc/sysctl.d/ to keep it)"},
    /* Ubuntu 23.10+ */
    {"kernel.apparmor_restrict_unprivileged_userns",
     "/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 1, true,
     "as root: install agentrun's AppArmor profile (install -m 644 profiles/apparmor/agentrun "
     "/etc/apparmor.d/agentrun && apparmor_parser -r /etc/apparmor.d/agentrun; "
     "docs/rootless.md), or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"},
};

static int read_int(const char *path, int *value)
{
	char buf[32] = "";
	ar_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1 || read(fd, buf, sizeof(buf) - 1) <= 0)
		return -1;
	*value = atoi(buf);
	return 0;
}

/* Confined by an AppArmor profile (ours grants `userns`): the restriction then is the
 * profile's to lift, and the kernel's to enforce; unconfined, it applies. */
static bool apparmor_confined(void)
{
	char label[256] = "";
	ar_autoclose int fd = open("/proc/self/attr/apparmor/current", O_RDONLY | O_CLOEXEC);
	if (fd == -1 || read(fd, label, sizeof(label) - 1) <= 0)
		return false;
	return strncmp(label, "unconfined", 10) != 0;
}

static int need_userns(ar_error_t *err)
{
	if (need_ns("user", "user namespaces", err) == -1)
		return -1;
	for (size_t i = 0; i < AR_ARRAY_SIZE(userns_knobs); i++) {
		int v;
		if (read_int(userns_knobs[i].path, &v) == -1 || v != userns_knobs[i].off ||
		    (userns_knobs[i].apparmor && apparmor_confined()))
			continue;
		return ar_error_make(err, 0,
				     "preflight: this host refuses user namespaces to ordinary "
				     "users (%s = %d), which agentrun needs without root; fix: %s",
				     userns_knobs[i].name, v, userns_knobs[i].fix);
	}
	return 0;
}

static int need_kernel(const struct sandbox *sb, ar_error_t *err)
{
	for (size_t i = 0; i < AR_SPEC_N_NAMESPACES; i++)
		if (need_ns(ar_spec_namespaces[i].proc, ar_spec_namespaces[i].what, err) == -1)
			return -1;
	if (sb->userns && need_userns(err) == -1)
		return -1;
	if (strcmp(ar_spec_seccomp_of(sb->p), "unconfined") != 0 &&
	    (prctl(PR_GET_SECCOMP) == -1 ||
	     access("/proc/sys/kernel/seccomp/actions_avail", F_OK) == -1))
		return ar_error_make(err, 0,
				     "preflight: this kernel lacks seccomp filters "
				     "(CONFIG_SECCOMP_FILTER); use --seccomp unconfined "
				     "to run without them");
	/* implemented syscalls fail on these arguments with anything but ENOSYS */
	if (syscall(SYS_pivot_root, "", "") == -1 && errno == ENOSYS)
		return ar_error_make(err, 0, "preflight: this kernel lacks pivot_root");
	if (syscall(SYS_openat2, -1, "", NULL, 0) == -1 && errno == ENOSYS)
		return ar_error_make(err, 0, "preflight: this kernel lacks openat2 (Linux 5.6+)");
	return 0;
}

static int need_path(const char *origin, const char *field, const char *path, mode_t type,
		     ar_error_t *err)
{
	struct stat st;
	if (stat(path, &st) == -1)
		return ar_error_make(err, errno, "%s: %s: %s", origin, field, path);
	if (type == S_IFDIR && !S_ISDIR(st.st_mode))
		return ar_error_make(err, 0, "%s: %s: %s: not a directory", origin, field, path);
	if (type == S_IFREG && S_ISDIR(st.st_mode))
		return ar_error_make(err, 0, "%s: %s: %s: is a directory, expected a file", origin,
				     field, path);
	return 0;
}

static int need_paths(const struct ar_policy *p, ar_error_t *err)
{
	if (p->rootfs != NULL && need_path(p->origin, "rootfs", p->rootfs, S_IFDIR, err) == -1)
		return -1;
	for (size_t i = 0; i < p->n_mounts; i++) {
		/* a --mount override is named as the user wrote it, not as the file's */
		char field[48];
		const char *flag = p->mounts[i].flag;
		snprintf(field, sizeof(field), "mounts[%zu].source", i);
		if (need_path(flag ? flag : p->origin, flag ? "source" : field, p->mounts[i].source,
			      0, err) == -1)
			return -1;
	}
	if (p->kubeconfig != NULL &&
	    need_path(p->origin, "kubeconfig", p->kubeconfig, S_IFREG, err) == -1)
		return -1;
	return 0;
}

/* The ids the command runs as: the policy's `user`, the caller's own (in a user
 * namespace) or a dynamic uid leased for as long as the init lives (src/state/uids.c). */
static int lease_ids(struct sandbox *sb, ar_error_t *err)
{
	struct ar_uid_request rq = {.p = sb->p,
				    .userns = sb->userns,
				    .outer_uid = sb->outer_uid,
				    .outer_gid = sb->outer_gid};
	if (ar_state_uid_lease(&rq, &sb->lease, err) == -1)
		return -1;
	sb->uid = sb->lease.uid;
	sb->gid = sb->lease.gid;
	return 0;
}

int sandbox_preflight(struct sandbox *sb, ar_error_t *err)
{
	if (sandbox_check_stdio(err) == -1)
		return -1;
	if (need_paths(sb->p, err) == -1)
		return -1;
	if (need_kernel(sb, err) == -1)
		return -1;
	if (lease_ids(sb, err) == -1)
		return -1;
	return sandbox_pty_prepare(sb, err);
}

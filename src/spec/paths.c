/* The tables of the agent spec that run, render and check all read: masked and
 * read-only system paths, hidden credentials, namespaces. */
#define _GNU_SOURCE
#include <sched.h>

#include "agentrun/spec.h"
#include "agentrun/util.h"

const struct ar_spec_path ar_spec_system_paths[] = {
    {"/proc/acpi", AR_SPEC_MASKED},
    {"/proc/asound", AR_SPEC_MASKED},
    {"/proc/kcore", AR_SPEC_MASKED},
    {"/proc/keys", AR_SPEC_MASKED},
    {"/proc/latency_stats", AR_SPEC_MASKED},
    {"/proc/timer_list", AR_SPEC_MASKED},
    {"/proc/timer_stats", AR_SPEC_MASKED},
    {"/proc/sched_debug", AR_SPEC_MASKED},
    {"/proc/scsi", AR_SPEC_MASKED},
    /* masked rather than runc's read-only: even reading it is no business of an agent */
    {"/proc/sysrq-trigger", AR_SPEC_MASKED},
    {"/proc/bus", AR_SPEC_READONLY},
    {"/proc/fs", AR_SPEC_READONLY},
    {"/proc/irq", AR_SPEC_READONLY},
    {"/proc/sys", AR_SPEC_READONLY},
    {"/sys/firmware", AR_SPEC_MASKED},
    {"/sys/devices/virtual/powercap", AR_SPEC_MASKED},
    /* LSM policy and debugfs: kernel internals an agent never needs */
    {"/sys/kernel/security", AR_SPEC_MASKED},
    {"/sys/kernel/debug", AR_SPEC_MASKED},
};
const size_t ar_spec_n_system_paths = AR_ARRAY_SIZE(ar_spec_system_paths);

/* The view shows only an allow-list of top-level directories (src/sandbox/mount.c: /usr,
 * /etc, /opt, ...): homes, /root, /run, /var, /srv, /mnt are absent already. What
 * remains is credentials inside the allowed ones (plus, in mount.c, /etc/sudoers* and
 * /etc/ssh/ *_key by pattern). */
const char *const ar_spec_hidden_paths[] = {
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/kubernetes",
    "/etc/rancher",
};
const size_t ar_spec_n_hidden_paths = AR_ARRAY_SIZE(ar_spec_hidden_paths);

/* What a program in the view needs: a caller's home or runtime directory at or below a
 * `below` entry, or holding any entry (/, /usr), is left visible rather than hidden
 * (service accounts have homes like /usr/sbin, /bin or /dev; hiding them would break
 * every command). /etc only as itself: a home inside it is hidden as any other. */
const struct ar_spec_needed_dir ar_spec_needed_dirs[] = {
    {"/bin", true},	    {"/sbin", true},	  {"/lib", true},	{"/lib32", true},
    {"/lib64", true},	    {"/libx32", true},	  {"/usr/bin", true},	{"/usr/sbin", true},
    {"/usr/lib", true},	    {"/usr/lib32", true}, {"/usr/lib64", true}, {"/usr/libx32", true},
    {"/usr/libexec", true}, {"/usr/share", true}, {"/dev", true},	{"/proc", true},
    {"/sys", true},	    {"/etc", false},
};
const size_t ar_spec_n_needed_dirs = AR_ARRAY_SIZE(ar_spec_needed_dirs);

bool ar_spec_needed_dir(const char *path)
{
	for (size_t i = 0; i < ar_spec_n_needed_dirs; i++) {
		const struct ar_spec_needed_dir *d = &ar_spec_needed_dirs[i];
		if (ar_path_under(d->path, path) || (d->below && ar_path_under(path, d->path)))
			return true;
	}
	return false;
}

const struct ar_spec_namespace ar_spec_namespaces[AR_SPEC_N_NAMESPACES] = {
    [AR_SPEC_NS_PID] = {"pid", "pid", CLONE_NEWPID, "PID namespaces", AR_SPEC_NS_AT_CLONE},
    [AR_SPEC_NS_NET] = {"network", "net", CLONE_NEWNET, "network namespaces", AR_SPEC_NS_BY_INIT},
    [AR_SPEC_NS_IPC] = {"ipc", "ipc", CLONE_NEWIPC, "IPC namespaces", AR_SPEC_NS_AT_CLONE},
    [AR_SPEC_NS_UTS] = {"uts", "uts", CLONE_NEWUTS, "UTS namespaces", AR_SPEC_NS_AT_CLONE},
    [AR_SPEC_NS_MNT] = {"mount", "mnt", CLONE_NEWNS, "mount namespaces", AR_SPEC_NS_AT_CLONE},
    [AR_SPEC_NS_CGROUP] = {"cgroup", "cgroup", CLONE_NEWCGROUP, "cgroup namespaces",
			   AR_SPEC_NS_IN_CGROUP},
};
const size_t ar_spec_n_namespaces = AR_SPEC_N_NAMESPACES;

int ar_spec_clone_flags(void)
{
	int flags = 0;
	for (size_t i = 0; i < AR_SPEC_N_NAMESPACES; i++)
		if (ar_spec_namespaces[i].start == AR_SPEC_NS_AT_CLONE)
			flags |= ar_spec_namespaces[i].clone_flag;
	return flags;
}

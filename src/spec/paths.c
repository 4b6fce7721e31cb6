/* The tables of the agent spec that run, render and check all read: masked and
 * read-only system paths, namespaces, the proxy variables. */
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

const struct ar_spec_namespace ar_spec_namespaces[] = {
    {"pid", "pid", CLONE_NEWPID},  {"network", "net", CLONE_NEWNET},
    {"ipc", "ipc", CLONE_NEWIPC},  {"uts", "uts", CLONE_NEWUTS},
    {"mount", "mnt", CLONE_NEWNS}, {"cgroup", "cgroup", CLONE_NEWCGROUP},
};
const size_t ar_spec_n_namespaces = AR_ARRAY_SIZE(ar_spec_namespaces);

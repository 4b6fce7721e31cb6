#!/usr/bin/env bash
# Kernel primitives an escape starts from, each denied inside the default sandbox
# and, as the positive control, working outside (as root) on this host.
# shellcheck source=tests/escape/common.bash
. "$(dirname "$0")/common.bash"

contained aio EPERM          # host-global fs.aio-max-nr: a sandbox could take it all
contained io_uring EPERM "$(outside io_uring)" # outside: ok, or EPERM with kernel.io_uring_disabled
contained userns EPERM
contained mount_private EPERM
contained fsopen EPERM
contained ptrace_child EPERM
contained process_vm_readv EPERM
contained keyctl EPERM
contained perf_event_open EPERM
contained userfaultfd EPERM
contained af_packet EPERM
contained open_by_handle EPERM
contained x32 EPERM ENOSYS   # outside: this kernel has no x32 (or ok where it has)
# inotify is allowed: instances are per user, and the sandbox's uid is its own
contained inotify ok
finish

#!/usr/bin/env python3
"""netns_limit.py [--knob KNOB] N -- CMD...: run CMD as root of a fresh user namespace
(ids 0-65535 mapped to themselves, so root there acts as root on the host's files) in a
fresh network namespace, with that user namespace's /proc/sys/user/KNOB (default
max_net_namespaces) set to N. The fresh netns counts as one of root's: N=1 leaves root
none to make, N=2 one. Used by net_lifecycle.sh to fail a start for want of a network
namespace, and by user_refusals.sh (max_user_namespaces 0: a host that refuses user
namespaces, as seen from inside). Needs root."""
import ctypes
import os
import sys

CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def main():
    args = sys.argv[1:sys.argv.index("--")]
    knob = "max_net_namespaces"
    if args[0] == "--knob":
        knob, args = args[1], args[2:]
    limit, cmd = args[0], sys.argv[sys.argv.index("--") + 1:]
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(go_w)
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
            os.write(2, b"netns_limit: unshare: %s\n" % os.strerror(ctypes.get_errno()).encode())
            os._exit(2)
        os.write(ready_w, b"u")
        if os.read(go_r, 1) != b"m":
            os._exit(2)
        os.setresgid(0, 0, 0)
        os.setresuid(0, 0, 0)
        with open("/proc/sys/user/" + knob, "w") as f:
            f.write(limit)
        os.execvp(cmd[0], cmd)
    os.close(ready_w)
    os.close(go_r)
    if os.read(ready_r, 1) == b"u":
        for name, text in (("uid_map", "0 0 65536\n"), ("gid_map", "0 0 65536\n")):
            with open("/proc/%d/%s" % (pid, name), "w") as f:
                f.write(text)
        os.write(go_w, b"m")
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()

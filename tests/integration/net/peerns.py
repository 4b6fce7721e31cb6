#!/usr/bin/env python3
"""peerns.py PROXY_PID IP PORT -- CMD...: run CMD inside the network namespace of the
proxy's listener on IP:PORT (pidfd_getfd + SIOCGSKNS + setns), as check finds it.
Used by net_check.sh to plant drift in a sandbox's proxy netns. Needs root."""
import ctypes
import os
import socket
import sys

SYS_PIDFD_OPEN, SYS_PIDFD_GETFD, SIOCGSKNS, CLONE_NEWNET = 434, 438, 0x894C, 0x40000000
libc = ctypes.CDLL(None, use_errno=True)
libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong]


def main():
    pid, ip, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    cmd = sys.argv[sys.argv.index("--") + 1:]
    pidfd = libc.syscall(SYS_PIDFD_OPEN, pid, 0)
    for name in os.listdir("/proc/%d/fd" % pid):
        fd = libc.syscall(SYS_PIDFD_GETFD, pidfd, int(name), 0)
        if fd < 0:
            continue
        try:
            s = socket.socket(fileno=fd)
            if s.family == socket.AF_INET and s.getsockname() == (ip, port):
                ns = libc.ioctl(fd, SIOCGSKNS)
                if ns < 0 or libc.setns(ns, CLONE_NEWNET) != 0:
                    sys.exit("setns: %s" % os.strerror(ctypes.get_errno()))
                os.execvp(cmd[0], cmd)
            s.detach()
        except OSError:
            pass
        os.close(fd)
    sys.exit("no listener on %s:%d in pid %d" % (ip, port, pid))


main()

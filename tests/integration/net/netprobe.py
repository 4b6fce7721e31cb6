#!/usr/bin/env python3
"""Network probe run inside a sandbox by tests/integration/net_*.sh.

netprobe.py tcp HOST PORT    -> ok | ECONNREFUSED | ENETUNREACH | ...
netprobe.py udp HOST PORT    -> the sendto result the same way
netprobe.py abstract NAME    -> connect to the abstract unix socket @NAME
netprobe.py serve-abstract NAME -> listen on @NAME until killed (host side)
netprobe.py serve-tcp PORT   -> listen on 0.0.0.0:PORT, print "ready", then one line
                                per connection accepted ("accepted"), until killed
Every address a test passes lies on 127.0.0.1 or inside the test's own namespaces.
"""
import errno
import socket
import sys
import time


def name(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else str(e)


def tcp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, int(port)))
        return "ok"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return name(e)


def udp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.sendto(b"x", (host, int(port)))
        return "ok"
    except OSError as e:
        return name(e)


def abstract(nm):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0" + nm)
        return "ok"
    except OSError as e:
        return name(e)


def serve_abstract(nm):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0" + nm)
    s.listen(8)
    print("ready", flush=True)
    time.sleep(120)


def serve_tcp(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(port)))
    s.listen(8)
    print("ready", flush=True)
    while True:
        c, _ = s.accept()
        print("accepted", flush=True)
        c.close()


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "serve-abstract":
        serve_abstract(sys.argv[2])
    elif cmd == "serve-tcp":
        serve_tcp(sys.argv[2])
    else:
        print({"tcp": tcp, "udp": udp, "abstract": abstract}[cmd](*sys.argv[2:]))

#!/usr/bin/env python3
"""Drive the proxy's never-blocking writers.

  hold.py requests PORT N   N denied GETs on one keep-alive connection, each answered
                            within 2 s; prints "served K/N".
  hold.py fds PORT N SECS   open N idle connections (more than the proxy's descriptor
                            limit), keep them SECS seconds while a held one asks a
                            request, then close them all and ask on a fresh connection;
                            prints "held: <status>" and "fresh: <status>".
"""
import socket
import sys
import time


def ask(s, host):
    s.sendall(b"GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n" % (host, host))
    data = b""
    while b"\r\n\r\n" not in data:
        c = s.recv(65536)
        if not c:
            return "closed"
        data += c
    head, _, body = data.partition(b"\r\n\r\n")
    n = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0].split(b":")[1])
    while len(body) < n:
        c = s.recv(65536)
        if not c:
            return "closed"
        body += c
    return head.split(b" ")[1].decode()


def requests(port, n):
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    served = 0
    for i in range(n):
        # long names make long audit lines: far more than a pipe and the queue hold
        host = b"%s%d.denied.example:80" % ((b"d" * 60 + b".") * 3, i)
        try:
            if ask(s, host) == "403":
                served += 1
        except OSError:
            break
    print("served %d/%d" % (served, n))


def fds(port, n, secs):
    held = []
    for _ in range(n):
        s = socket.socket()
        s.settimeout(2)
        s.connect(("127.0.0.1", port))  # the backlog takes what accept leaves
        held.append(s)
    time.sleep(secs)
    try:
        print("held: " + ask(held[0], b"held.example:80"))
    except OSError as e:
        print("held: %s" % e)
    for s in held:
        s.close()
    time.sleep(0.3)
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        print("fresh: " + ask(s, b"fresh.example:80"))
    except OSError as e:
        print("fresh: %s" % e)


if sys.argv[1] == "requests":
    requests(int(sys.argv[2]), int(sys.argv[3]))
else:
    fds(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))

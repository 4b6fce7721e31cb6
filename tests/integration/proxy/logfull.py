#!/usr/bin/env python3
"""Run `agentrun proxy` with its stderr on a pipe that is already full and that nobody
reads, serve requests through it, then read the pipe and stop the proxy.

  logfull.py AGENTRUN PORT AUDIT ORIGIN_HOST:PORT N -- EXTRA PROXY ARGS...

Prints, one per line: "served K/N" (requests answered within 2 s each while the pipe
was full), "audited M" (audit lines by then), then "log:" and the bytes read from the
pipe after the stop (the start line, whatever fit, the dropped-lines notes, the summary).
"""
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time

agentrun, port, audit, origin, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
extra = sys.argv[7:] if len(sys.argv) > 6 and sys.argv[6] == "--" else []

r, w = os.pipe()
fl = fcntl.fcntl(w, fcntl.F_GETFL)
fcntl.fcntl(w, fcntl.F_SETFL, fl | os.O_NONBLOCK)
filled = 0
try:
    while True:
        filled += os.write(w, b"x" * 4096)
except BlockingIOError:
    pass
fcntl.fcntl(w, fcntl.F_SETFL, fl)  # the proxy inherits a blocking, full pipe

proc = subprocess.Popen(
    [agentrun, "proxy", "--listen", "127.0.0.1:%d" % port, "--dns-files-only", "--audit", audit] + extra,
    stderr=w, stdout=subprocess.DEVNULL)
os.close(w)
try:
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                sys.exit("proxy did not start")
            time.sleep(0.05)
    served = 0
    for i in range(n):
        if i - served >= 3:
            break  # a stalled proxy: no need to wait 2 s for every one
        # alternate an allowed request and a denied one; each on its own connection
        # a long denied name makes long log lines: more than the log buffer in all
        host = origin if i % 2 == 0 else ("d" * 60 + ".") * 3 + "test.example:80"
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.sendall(b"GET http://%s/hello HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                      % (host.encode(), host.encode()))
            data = b""
            while True:
                c = s.recv(65536)
                if not c:
                    break
                data += c
            s.close()
            if data.startswith(b"HTTP/1.1 200") or data.startswith(b"HTTP/1.1 403"):
                served += 1
        except OSError:
            pass
    time.sleep(0.2)
    print("served %d/%d" % (served, n))
    print("audited %d" % sum(1 for _ in open(audit)))
    # the reader comes back: the backlog, the dropped-lines note, then the stop
    got = b""
    os.set_blocking(r, False)
    end = time.monotonic() + 1
    while time.monotonic() < end:
        try:
            c = os.read(r, 65536)
            got += c
        except BlockingIOError:
            time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    os.set_blocking(r, True)
    while True:
        c = os.read(r, 65536)
        if not c:
            break
        got += c
    proc.wait(timeout=10)
    print("log:")
    sys.stdout.write(got[filled:].decode(errors="replace") if got[:filled] == b"x" * filled else got.decode(errors="replace"))
finally:
    if proc.poll() is None:
        proc.kill()

#!/usr/bin/env python3
"""Send raw bytes to the proxy and print what comes back (status line, or the whole
response with --all). Bytes come from argv[2] with \\r \\n \\t \\xNN escapes.

  raw.py PROXY_PORT REQUEST [--all] [--wait SECONDS]
"""
import socket
import sys


def main():
    port = int(sys.argv[1])
    data = sys.argv[2].encode().decode("unicode_escape").encode("latin-1")
    wait = 5.0
    if "--wait" in sys.argv:
        wait = float(sys.argv[sys.argv.index("--wait") + 1])
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(wait)
    s.sendall(data)
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
            if "--all" not in sys.argv and b"\r\n" in got:
                break
    except socket.timeout:
        pass
    if "--all" in sys.argv:
        sys.stdout.write(got.decode("latin-1"))
    else:
        sys.stdout.write(got.split(b"\r\n")[0].decode("latin-1") + "\n")


main()

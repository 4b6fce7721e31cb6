#!/usr/bin/env python3
"""TLS through a CONNECT tunnel with a chosen SNI (or none): prints "ok <bytes>" when
the handshake and an HTTP GET worked, "closed" when the proxy cut the tunnel.

  tlsclient.py PROXY_PORT TARGET SNI|-    (TARGET host:port; certificate not verified)
"""
import socket
import ssl
import sys

port, target, sni = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target.encode(), target.encode()))
head = b""
while b"\r\n\r\n" not in head:
    chunk = s.recv(1)
    if not chunk:
        break
    head += chunk
if not head.startswith(b"HTTP/1.1 200"):
    print("refused", head.split(b"\r\n")[0].decode())
    sys.exit(0)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
try:
    t = ctx.wrap_socket(s, server_hostname=None if sni == "-" else sni)
    t.sendall(b"GET / HTTP/1.0\r\n\r\n")
    data = b""
    while True:
        c = t.recv(65536)
        if not c:
            break
        data += c
    print("ok", len(data))
except (ssl.SSLError, ConnectionError, OSError):
    print("closed")

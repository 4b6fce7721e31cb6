#!/usr/bin/env python3
"""Crafted first bytes of a CONNECT tunnel to an echo origin, for proxy.sni: prints
"passed" when the bytes came back (the proxy forwarded them), "refused" when the proxy
closed the tunnel without forwarding, "stalled" when neither happened within the
deadline, followed by the seconds it took.

  sni.py PROXY_PORT TARGET SHAPE NAME [DEADLINE]

SHAPE: hello (one record), empty-first (a zero-length handshake record, then the
hello), bytewise (the hello in 1-byte records), big (a 20 KiB padding extension, the
hello over two records), big-bytewise (both), truncated (half a hello, then silence),
plain (not TLS), server-first (read the origin's banner before sending plain bytes). NAME is the server_name sent, or - for none.
"""
import socket
import struct
import sys
import time


def ext(kind, body):
    return struct.pack(">HH", kind, len(body)) + body


def hello(name, pad=0):
    exts = ext(0x2B, b"\x02\x03\x04")
    if name != "-":
        n = name.encode()
        exts += ext(0, struct.pack(">HBH", len(n) + 3, 0, len(n)) + n)
    if pad:
        exts += ext(21, b"\x00" * pad)
    body = b"\x03\x03" + b"\xab" * 32 + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
    body += struct.pack(">H", len(exts)) + exts
    return b"\x01" + struct.pack(">I", len(body))[1:] + body


def records(hs, size):
    out = b""
    for i in range(0, len(hs), size):
        part = hs[i : i + size]
        out += b"\x16\x03\x01" + struct.pack(">H", len(part)) + part
    return out


def shape_bytes(shape, name):
    if shape == "plain":
        return b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    hs = hello(name, 20000 if shape.startswith("big") else 0)
    if shape == "hello":
        return records(hs, 16384)
    if shape == "empty-first":
        return b"\x16\x03\x01\x00\x00" + records(hs, 16384)
    if shape == "bytewise":
        return records(hs, 1)
    if shape == "big":
        return records(hs, 16384)
    if shape == "big-bytewise":
        return records(hs, 1)
    if shape == "truncated":
        return records(hs, 16384)[: len(hs) // 2]
    raise SystemExit("unknown shape " + shape)


def main():
    port, target, shape, name = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    deadline = float(sys.argv[5]) if len(sys.argv) > 5 else 1.0
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target.encode(), target.encode()))
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            break
        head += c
    if not head.startswith(b"HTTP/1.1 200"):
        print("no-tunnel", head.split(b"\r\n")[0].decode())
        return
    if shape == "server-first":
        # the origin speaks first: its banner must come through before the client sends
        s.settimeout(deadline)
        try:
            banner = s.recv(100)
        except socket.timeout:
            banner = b""
        if not banner.startswith(b"220 "):
            print("stalled banner")
            return
        shape = "plain"
    data = shape_bytes(shape, name)
    start = time.monotonic()
    s.sendall(data)
    got = b""
    s.settimeout(deadline)
    verdict = "stalled"
    try:
        while len(got) < len(data):
            c = s.recv(65536)
            if not c:
                verdict = "refused" if not got else "cut"
                break
            got += c
        else:
            verdict = "passed" if got == data else "garbled"
    except socket.timeout:
        pass
    except ConnectionError:
        verdict = "refused" if not got else "cut"
    print(verdict, "%.2f" % (time.monotonic() - start))


main()

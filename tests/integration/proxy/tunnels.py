#!/usr/bin/env python3
"""Open N CONNECT tunnels at once through the proxy to an echo server, send SIZE
deterministic-random bytes on each, half-close, read the echo back and compare
sha256 both ways. Prints one line per tunnel: "<local port> <bytes sent> <bytes back>"
and exits 1 on any mismatch.

  tunnels.py PROXY_PORT TARGET N SIZE [SECONDS_TO_HOLD]
"""
import asyncio
import hashlib
import random
import sys


async def one(i, proxy_port, target, size, hold):
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy_port)
    writer.write(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target.encode(), target.encode()))
    status = await reader.readline()
    if not status.startswith(b"HTTP/1.1 200"):
        raise RuntimeError("tunnel %d: %r" % (i, status))
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    rnd = random.Random(i)
    payload = rnd.randbytes(size)
    if hold:
        await asyncio.sleep(hold)

    async def send():
        for off in range(0, size, 65536):
            writer.write(payload[off:off + 65536])
            await writer.drain()
        writer.write_eof()

    async def recv():
        h = hashlib.sha256()
        n = 0
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                return n, h.hexdigest()
            n += len(chunk)
            h.update(chunk)

    _, (n, digest) = await asyncio.gather(send(), recv())
    writer.close()
    port = writer.get_extra_info("sockname")[1]
    ok = n == size and digest == hashlib.sha256(payload).hexdigest()
    return port, size, n, ok


async def main():
    proxy_port, target, n, size = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    hold = float(sys.argv[5]) if len(sys.argv) > 5 else 0
    results = await asyncio.gather(*(one(i, proxy_port, target, size, hold) for i in range(n)),
                                   return_exceptions=True)
    bad = 0
    for r in results:
        if isinstance(r, Exception) or not r[3]:
            bad += 1
            print("FAILED", r, file=sys.stderr)
        else:
            print(r[0], r[1], r[2])
    sys.exit(1 if bad else 0)


asyncio.run(main())

#!/usr/bin/env python3
"""TCP echo server for the tunnel tests (127.0.0.1 only): echoes every byte back and
half-closes after the client half-closes, so both directions carry the payload.

  echo.py PORT [BANNER]    print "ready" once listening; with BANNER, send it (and
                           CRLF) first, as a server-first protocol (SMTP, SSH) does
"""
import asyncio
import sys


async def handle(reader, writer):
    try:
        if len(sys.argv) > 2:
            writer.write(sys.argv[2].encode() + b"\r\n")
            await writer.drain()
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        writer.write_eof()
        await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]), backlog=1024)
    print("ready", flush=True)
    async with srv:
        await srv.serve_forever()


asyncio.run(main())

#!/usr/bin/env python3
"""A tiny HTTP/1.1 origin for the proxy tests (127.0.0.1 or ::1 only).

  origin.py PORT [BIND]   serve until killed; print "ready" once listening

GET  /hello            "hello from origin\n" (Content-Length)
GET  /headers          the request head as received, as the body
GET  /chunked          a chunked body of three chunks
GET  /close            a body delimited by closing the connection
GET  /big?n=N          N bytes of a deterministic pattern
GET  /conn             "<connection id>\n": tells whether the proxy reused a connection
GET  /cookies          a response with 150 Set-Cookie lines
POST /echo             {"len": N, "sha256": "..."} of the body (Content-Length or chunked)
"""
import hashlib
import itertools
import json
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

conn_ids = itertools.count(1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.conn_id = next(conn_ids)

    def log_message(self, *args):
        pass

    def send_body(self, body, ctype="text/plain"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/hello":
            self.send_body(b"hello from origin\n")
        elif path == "/headers":
            head = self.requestline + "\r\n" + str(self.headers)
            self.send_body(head.encode())
        elif path == "/cookies":
            self.send_response(200)
            for i in range(150):
                self.send_header("Set-Cookie", "c%d=v" % i)
            self.send_header("Content-Length", "8")
            self.end_headers()
            self.wfile.write(b"cookies\n")
        elif path == "/conn":
            self.send_body(b"%d\n" % self.conn_id)
        elif path == "/big":
            n = int(query.split("=")[1])
            pattern = bytes(range(256)) * (n // 256 + 1)
            self.send_body(pattern[:n], "application/octet-stream")
        elif path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"one ", b"two ", b"three\n"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/close":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"closed body\n")
            self.close_connection = True
        else:
            self.send_error(404)

    def read_chunked(self):
        body = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0], 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b""):
                    pass
                return body
            body += self.rfile.read(size)
            self.rfile.readline()

    def do_POST(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = self.read_chunked()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        out = json.dumps({"len": len(body), "sha256": hashlib.sha256(body).hexdigest()})
        self.send_body(out.encode() + b"\n", "application/json")


class Server(ThreadingHTTPServer):
    daemon_threads = True


def main():
    port = int(sys.argv[1])
    bind = sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1"
    if ":" in bind:
        Server.address_family = socket.AF_INET6
    srv = Server((bind, port), Handler)
    print("ready", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()

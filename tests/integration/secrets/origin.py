#!/usr/bin/env python3
"""A recording origin for the secrets tests: HTTP/1.1 with keep-alive over TLS (its own
test CA) or plain, writing every request head it receives (and the body's first bytes)
as JSON lines to a record file. Paths:
  /leak          200 with a response header carrying the real value (X-Echo-Token: the
                 Authorization value the origin received): the proxy must mask it
  /sse?n=N&ms=M  text/event-stream, N events M ms apart (chunked, flushed each)
  /big?mb=N      N MiB of zeros, Content-Length
  /ws            a WebSocket echo (RFC 6455, text frames)
  /repo.git/...  git smart HTTP through `git http-backend` (GIT_PROJECT_ROOT = the
                 environment's ORIGIN_GIT_ROOT), 401 without Basic credentials
  /api/v1/namespaces  a NamespaceList (a fake Kubernetes API server for kubectl)
  anything else  200 "ok"
Usage: origin.py PORT RECORD [CERT KEY]   (with CERT/KEY: TLS)"""
import base64, hashlib, json, os, socket, ssl, struct, subprocess, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, record = int(sys.argv[1]), sys.argv[2]
lock = threading.Lock()


def log(entry):
    with lock, open(record, "a") as f:
        f.write(json.dumps(entry) + "\n")


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        head = self.requestline + "\r\n" + str(self.headers)
        log({"head": head, "body": body[:65536].decode("latin-1"), "len": len(body)})
        path = self.path.split("?")[0]
        q = dict(p.split("=", 1) for p in self.path.split("?", 1)[1].split("&")) if "?" in self.path else {}
        if path == "/sse":
            return self.sse(int(q.get("n", 3)), int(q.get("ms", 300)))
        if path == "/big":
            return self.big(int(q.get("mb", 1)))
        if path == "/ws":
            return self.ws()
        if path.startswith("/repo.git/"):
            return self.git(path, self.path.split("?", 1)[1] if "?" in self.path else "", body)
        out = b"ok\n"
        if path == "/api/v1/namespaces":
            out = json.dumps({"kind": "NamespaceList", "apiVersion": "v1",
                              "items": [{"metadata": {"name": "triage"}}]}).encode()
        self.send_response(200)
        if path == "/leak":
            self.send_header("X-Echo-Token", self.headers.get("Authorization", ""))
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def git(self, path, query, body):
        if not self.headers.get("Authorization", "").startswith("Basic "):
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        env = dict(os.environ, GIT_PROJECT_ROOT=os.environ["ORIGIN_GIT_ROOT"],
                   GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path, QUERY_STRING=query,
                   REQUEST_METHOD=self.command, REMOTE_USER="x",
                   CONTENT_TYPE=self.headers.get("Content-Type", ""),
                   CONTENT_LENGTH=str(len(body)))
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status = 200
        hdrs = []
        for line in head.decode().split("\r\n"):
            k, _, v = line.partition(": ")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                hdrs.append((k, v))
        self.send_response(status)
        for k, v in hdrs:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)

    def sse(self, n, ms):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i in range(n):
            ev = ("data: event %d at %.3f\n\n" % (i, time.time())).encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
            self.wfile.flush()
            time.sleep(ms / 1000)
        self.wfile.write(b"0\r\n\r\n")

    def big(self, mb):
        self.send_response(200)
        self.send_header("Content-Length", str(mb << 20))
        self.end_headers()
        chunk = b"\0" * (1 << 20)
        for _ in range(mb):
            self.wfile.write(chunk)

    def ws(self):
        key = self.headers.get("Sec-WebSocket-Key", "")
        acc = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", acc.decode())
        self.end_headers()
        self.wfile.flush()
        while True:
            h = self.rfile.read(2)
            if len(h) < 2:
                return
            op, ln = h[0] & 15, h[1] & 127
            if ln == 126:
                ln = struct.unpack(">H", self.rfile.read(2))[0]
            elif ln == 127:
                ln = struct.unpack(">Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if h[1] & 128 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(ln)))
            if op == 8:
                self.wfile.write(b"\x88\x00")
                return
            reply = b"echo: " + data
            self.wfile.write(bytes([0x81, len(reply)]) + reply if len(reply) < 126 else
                             bytes([0x81, 126]) + struct.pack(">H", len(reply)) + reply)
            self.wfile.flush()


srv = ThreadingHTTPServer(("127.0.0.1", port), H)
srv.daemon_threads = True
if len(sys.argv) > 4:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[3], sys.argv[4])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("ready", flush=True)
srv.serve_forever()

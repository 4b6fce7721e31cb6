"""The sandbox side of tests/integration/capture_dns.sh: run inside the sandbox netns.

Asks the DNS stub over UDP and TCP (at the proxy's address and at an arbitrary one),
dials synthetic addresses on captured and unlisted ports, and prints one line per
check ("ok: ..." or "FAIL: ..."), then "UDP_QUERIES n" and "TCP_QUERIES n".
Usage: client.py PROXY_ADDR
"""
import random
import socket
import string
import struct
import sys
import time

PROXY = sys.argv[1]
failed = 0
udp_queries = 0
tcp_queries = 0


def check(what, cond, detail=""):
    global failed
    if cond:
        print("ok: " + what)
    else:
        failed += 1
        print("FAIL: %s %s" % (what, detail))


def query(name, qtype=1, qid=None):
    qid = random.randrange(65536) if qid is None else qid
    b = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        b += bytes([len(label)]) + label.encode()
    return qid, b + b"\0" + struct.pack("!HH", qtype, 1)


def parse(r):
    """rcode, answer count, the first A address or PTR name (None)."""
    rcode, ancount = r[3] & 15, struct.unpack("!H", r[6:8])[0]
    o = 12
    while r[o] != 0:
        o += 1 + r[o]
    o += 5
    if ancount == 0:
        return rcode, 0, None
    rtype, rdlen = struct.unpack("!H", r[o + 2:o + 4])[0], struct.unpack("!H", r[o + 10:o + 12])[0]
    data = r[o + 12:o + 12 + rdlen]
    if rtype == 1:
        return rcode, ancount, socket.inet_ntoa(data)
    labels, i = [], 0
    while data[i] != 0:
        labels.append(data[i + 1:i + 1 + data[i]].decode())
        i += 1 + data[i]
    return rcode, ancount, ".".join(labels)


def udp(name, qtype=1, server=PROXY):
    global udp_queries
    qid, q = query(name, qtype)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.sendto(q, (server, 53))
    udp_queries += 1
    r, src = s.recvfrom(4096)
    assert struct.unpack("!H", r[:2])[0] == qid, "reply id"
    return src[0], parse(r)


def tcp(name, qtype=1, server=PROXY):
    global tcp_queries
    _, q = query(name, qtype)
    with socket.create_connection((server, 53), timeout=2) as s:
        s.sendall(struct.pack("!H", len(q)) + q)
        tcp_queries += 1
        buf = b""
        while len(buf) < 2 or len(buf) < 2 + struct.unpack("!H", buf[:2])[0]:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
    return parse(buf[2:])


A, AAAA, PTR, TXT, ANY = 1, 28, 12, 16, 255
NOERROR, NXDOMAIN, REFUSED = 0, 3, 5

src, (rc, n, addr) = udp("allowed.example.test")
check("UDP A allowed.example.test at the proxy address: a synthetic address",
      rc == NOERROR and n == 1 and addr is not None and addr.startswith("198.1"), (rc, n, addr))
check("the reply comes from the address asked", src == PROXY, src)
synthetic = addr

src, (rc, n, addr) = udp("Allowed.Example.Test", server="198.19.0.53")
check("UDP to any other address meets the stub too, same answer",
      rc == NOERROR and addr == synthetic, (rc, addr))
check("... answered from that address (IP_PKTINFO)", src == "198.19.0.53", src)

rc, n, addr = tcp("allowed.example.test")
check("TCP A allowed.example.test: the same synthetic address", rc == NOERROR and addr == synthetic,
      (rc, addr))
rc, n, addr = tcp("denied.example.test", server="198.19.0.53")
check("TCP A denied.example.test: NXDOMAIN", rc == NXDOMAIN and n == 0, (rc, n))

_, (rc, n, _) = udp("allowed.example.test", AAAA)
check("AAAA of an allowed name: NOERROR, no address", rc == NOERROR and n == 0, (rc, n))
_, (rc, n, _) = udp("denied.example.test")
check("A denied.example.test: NXDOMAIN", rc == NXDOMAIN and n == 0, (rc, n))
_, (rc, n, _) = udp("denied.example.test", TXT)
check("TXT denied.example.test: NXDOMAIN", rc == NXDOMAIN and n == 0, (rc, n))
_, (rc, n, _) = udp("allowed.example.test", TXT)
check("TXT allowed.example.test: REFUSED", rc == REFUSED and n == 0, (rc, n))
_, (rc, n, _) = udp("allowed.example.test", ANY)
check("ANY allowed.example.test: REFUSED", rc == REFUSED and n == 0, (rc, n))
label = "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(60))
_, (rc, n, _) = udp(label + ".exfil.denied.example.test")
check("a long random label under a denied name: NXDOMAIN", rc == NXDOMAIN and n == 0, (rc, n))
rev = ".".join(reversed(synthetic.split("."))) + ".in-addr.arpa"
_, (rc, n, name) = udp(rev, PTR)
check("PTR of the synthetic address: the name", rc == NOERROR and name == "allowed.example.test",
      (rc, name))
_, (rc, n, _) = udp("1.200.254.10.in-addr.arpa", PTR)
check("PTR outside the pool: NXDOMAIN", rc == NXDOMAIN, rc)

# captured TCP: the server sees the original destination and the name behind it
for port in (443, 80):
    with socket.create_connection((synthetic, port), timeout=2) as s:
        line = s.makefile().readline().strip()
    check("connect %s:%d is captured with its original destination, decided by name" % (synthetic, port),
          line == "ORIG %s:%d allowed.example.test ALLOW matches rule allowed.example.test"
          % (synthetic, port), line)

_, (rc, n, api) = udp("api.example.test")
with socket.create_connection((api, 6443), timeout=2) as s:
    line = s.makefile().readline().strip()
check("a port a rule names (6443) is captured",
      line == "ORIG %s:6443 api.example.test ALLOW matches rule api.example.test:6443" % api, line)
with socket.create_connection((synthetic, 6443), timeout=2) as s:
    line = s.makefile().readline().strip()
check("another name on that port is captured and denied by name:port",
      line == "ORIG %s:6443 allowed.example.test DENY allowed.example.test:6443 is not in the allow-list"
      % synthetic, line)
with socket.create_connection(("198.19.0.77", 443), timeout=2) as s:
    line = s.makefile().readline().strip()
check("a pool address never handed out is denied",
      line == "ORIG 198.19.0.77:443 - DENY 198.19.0.77:443 is a synthetic address that was never handed out",
      line)

t0 = time.monotonic()
try:
    socket.create_connection((synthetic, 8080), timeout=5).close()
    check("an unlisted port is refused", False, "connected")
except ConnectionRefusedError:
    took = time.monotonic() - t0
    check("an unlisted port is refused at once (RST), %.0f ms" % (took * 1000), took < 1.0, took)
except OSError as e:
    check("an unlisted port is refused at once", False, repr(e))

# UDP other than DNS (QUIC on 443): nothing answers it
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1)
s.connect((synthetic, 443))
s.send(b"\xc0quic-initial")
try:
    s.recv(100)
    check("UDP to 443 (QUIC) gets no answer", False, "answered")
except ConnectionRefusedError:
    check("UDP to 443 (QUIC) is refused (ICMP port unreachable): clients fall back to TCP", True)
except socket.timeout:
    check("UDP to 443 (QUIC) is dropped: clients fall back to TCP", True)

print("UDP_QUERIES %d" % udp_queries)
print("TCP_QUERIES %d" % tcp_queries)
sys.exit(1 if failed else 0)

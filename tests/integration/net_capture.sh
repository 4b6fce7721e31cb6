#!/usr/bin/env bash
# Transparent capture for `run` with network: proxy (docs/network.md): from inside a
# sandbox with no proxy variables, names resolve through the proxy's DNS stub to
# synthetic addresses, connections to them are decided by name (plain HTTP with its
# Host, TLS with its SNI, raw TCP by the name alone), denied names get NXDOMAIN, other
# query types get no answer and nothing is forwarded, unlisted ports are refused at
# once, a literal address is refused, the audit holds one entry per attempt, and
# nothing is left behind. Origins on the host's 127.0.0.1, reached by the proxy
# through proxy.allow_private.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"
need_cmd ip
need_cmd curl
need_cmd openssl
need_cmd getent

ORIG=$(free_port)
ECHO=$(free_port)
TLSP=$(free_port)
start_origin "$ORIG"
start_echo "$ECHO"
# the proxy resolves the real names from this file (its view of /etc/hosts)
echo "127.0.0.1 allowed.example.test echo.example.test tls.example.test budget.example.test" >>"$AR_TMP/hosts"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$AR_TMP/key.pem" -out "$AR_TMP/cert.pem" \
	-days 1 -subj /CN=tls.example.test >/dev/null 2>&1 || fail "openssl req"
openssl s_server -accept "127.0.0.1:$TLSP" -cert "$AR_TMP/cert.pem" -key "$AR_TMP/key.pem" \
	-www -quiet >"$AR_TMP/tls.log" 2>&1 </dev/null &
on_exit "kill $!"
for _ in $(seq 100); do
	python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $TLSP), 1)" 2>/dev/null && break
	sleep 0.05
done

NAME="netc-$$"
POLICY="$AR_TMP/policy.json"
cat >"$POLICY" <<JSON
{"name": "$NAME",
 "allowed_hosts": ["allowed.example.test:$ORIG", "echo.example.test:$ECHO", "tls.example.test:$TLSP",
                   "budget.example.test:$ECHO"],
 "proxy": {"allow_private": ["127.0.0.1"], "max_bytes_out": {"budget.example.test": 1000}}}
JSON
# the sandbox's own hosts file knows none of the names: they come from the stub
printf '127.0.0.1 localhost\n' >"$AR_TMP/sandbox-hosts"
mkdir -m 755 "$AR_TMP/bin"
cat >"$AR_TMP/bin/dnsq.py" <<'PY'
import random, socket, struct, sys
# dnsq.py SERVER NAME TYPE [tcp]: the rcode and answer count of one query, or "timeout"
server, name, qtype = sys.argv[1], sys.argv[2], int(sys.argv[3])
q = struct.pack(">HHHHHH", random.randrange(65536), 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
q += struct.pack(">HH", qtype, 1)
if sys.argv[4:] == ["tcp"]:
    s = socket.create_connection((server, 53), 3)
    s.sendall(struct.pack(">H", len(q)) + q)
    s.settimeout(3)
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.sendto(q, (server, 53))
try:
    r = s.recv(4096)
    if sys.argv[4:] == ["tcp"]:
        r = r[2:]
except socket.timeout:
    print("timeout")
    sys.exit(0)
print("rcode=%d an=%d" % (r[3] & 15, struct.unpack(">H", r[6:8])[0]))
PY
cat >"$AR_TMP/bin/tcpq.py" <<'PY'
import socket, sys
# tcpq.py HOST PORT [SEND]: what a raw TCP client gets back, or the errno's name
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), 5)
    if len(sys.argv) > 3:
        s.sendall(sys.argv[3].encode().decode("unicode_escape").encode("latin-1"))
    s.settimeout(5)
    data = s.recv(4096)
    print("got:" + data.decode(errors="replace").strip() if data else "closed")
except OSError as e:
    import errno
    print(errno.errorcode.get(e.errno, str(e)))
PY
chmod 644 "$AR_TMP/bin/"*.py

# shellcheck disable=SC2016 # expanded inside the sandbox
INSIDE='
o=$1 e=$2 t=$3
ns=$(sed -n "s/^nameserver //p" /etc/resolv.conf)
echo "resolv=$ns"
echo "routes=$(ip route | tr "\n" ";")"
echo "allowed=$(getent hosts allowed.example.test | cut -d" " -f1)"
echo "again=$(getent hosts allowed.example.test | cut -d" " -f1)"
getent hosts denied.example.test >/dev/null; echo "denied=$?"
echo "tcp53=$(python3 /ar-bin/dnsq.py 198.19.255.254 allowed.example.test 1 tcp)"
echo "txt=$(python3 /ar-bin/dnsq.py "$ns" allowed.example.test 16)"
echo "any=$(python3 /ar-bin/dnsq.py "$ns" allowed.example.test 255)"
echo "long=$(python3 /ar-bin/dnsq.py 198.19.255.254 x7f3kq9zz0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6.denied.example.test 1)"
echo "http=$(curl -sS -m 10 --noproxy "*" http://allowed.example.test:$o/hello 2>&1)"
curl -sS -m 10 --noproxy "*" -o /dev/null http://denied.example.test:$o/ 2>/dev/null; echo "http_denied=$?"
curl -sS -m 10 --noproxy "*" -o /dev/null -H "Host: denied.example.test" http://allowed.example.test:$o/ 2>/dev/null; echo "host_mismatch=$?"
echo "tls=$(curl -sSk -m 10 --noproxy "*" https://tls.example.test:$t/ 2>&1 | grep -c -m1 "s_server")"
a=$(getent hosts tls.example.test | cut -d" " -f1)
curl -sSk -m 10 --noproxy "*" -o /dev/null --resolve "evil.example.test:$t:$a" https://evil.example.test:$t/ 2>/dev/null; echo "sni_mismatch=$?"
echo "raw=$(python3 /ar-bin/tcpq.py echo.example.test "$e" ping)"
python3 /ar-bin/tcpq.py budget.example.test "$e" "$(head -c 5000 /dev/zero | tr "\\0" x)" >/dev/null
echo "unlisted=$(python3 /ar-bin/tcpq.py "$(getent hosts allowed.example.test | cut -d" " -f1)" 9)"
echo "literal=$(python3 /ar-bin/tcpq.py "$ns" 80 "GET / HTTP/1.0\\r\\n\\r\\n")"
echo "literal_raw=$(python3 /ar-bin/tcpq.py "$ns" "$e" "ping")"
echo "literal_host=$(python3 /ar-bin/tcpq.py "$ns" "$o" "GET /hello HTTP/1.0\\r\\nHost: allowed.example.test\\r\\n\\r\\n")"
curl -sSk -m 10 --noproxy "*" -o /dev/null --resolve "tls.example.test:$t:$ns" https://tls.example.test:$t/ 2>/dev/null; echo "literal_sni=$?"
'
AUD="$AR_TMP/audit.jsonl"
env -u HTTP_PROXY -u HTTPS_PROXY -u http_proxy -u https_proxy \
	"$AGENTRUN" run --policy "$POLICY" --mount "$AR_TMP/bin:/ar-bin" \
	--mount "$AR_TMP/sandbox-hosts:/etc/hosts" --audit "$AUD" --proxy-log "$AR_TMP/proxy.log" \
	-- env -u HTTP_PROXY -u HTTPS_PROXY -u http_proxy -u https_proxy \
	bash -c "$INSIDE" _ "$ORIG" "$ECHO" "$TLSP" >"$AR_TMP/out" 2>"$AR_TMP/err" ||
	fail "run exited $?: $(cat "$AR_TMP/err")"
out=$(cat "$AR_TMP/out")
val() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }

expect_match "resolv.conf names the proxy's address" '^10\.254\.[0-9]+\.[0-9]+$' "$(val resolv)"
expect_match "a default route via the proxy" "default via $(val resolv) dev eth0" "$(val routes)"
expect_match "an allowed name: a synthetic address" '^198\.1[89]\.[0-9]+\.[0-9]+$' "$(val allowed)"
expect_eq "the same address twice" "$(val allowed)" "$(val again)"
expect_eq "a denied name: NXDOMAIN (getent 2)" 2 "$(val denied)"
expect_eq "DNS over TCP, to any address: the stub answers" "rcode=0 an=1" "$(val tcp53)"
expect_eq "TXT for an allowed name: REFUSED, no records" "rcode=5 an=0" "$(val txt)"
expect_eq "ANY: REFUSED" "rcode=5 an=0" "$(val any)"
expect_eq "a long random label, asked of any address: NXDOMAIN from the stub" "rcode=3 an=0" "$(val long)"
expect_eq "plain HTTP with no proxy variables" "hello from origin" "$(val http)"
expect_eq "a denied name does not resolve (curl 6)" 6 "$(val http_denied)"
expect_eq "Host other than the name: refused (curl 52, empty reply)" 52 "$(val host_mismatch)"
expect_eq "TLS to an allowed name" 1 "$(val tls)"
expect_match "TLS whose SNI is not the name dialled: refused" "^[1-9]" "$(val sni_mismatch)"
expect_eq "raw TCP through the name mapping" "got:ping" "$(val raw)"
expect_eq "an unlisted port of a synthetic address: refused at once" ECONNREFUSED "$(val unlisted)"
expect_eq "a literal address with no name: closed unanswered" closed "$(val literal)"
expect_eq "a literal address, raw bytes: closed unanswered" closed "$(val literal_raw)"
expect_eq "a literal address whose Host resolves elsewhere: closed" closed "$(val literal_host)"
expect_match "a literal address whose SNI resolves elsewhere: refused" "^[1-9]" "$(val literal_sni)"

# the audit: one line per attempt
jq_count() { python3 -c "
import json, sys
n = 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    if all(str(r.get(k)) == v for k, v in (a.split('=', 1) for a in sys.argv[2:])):
        n += 1
print(n)" "$AUD" "$@"; }
expect_eq "DNS: allowed.example.test answered (A, getent x3 + AAAA)" 1 "$(( $(jq_count method=DNS host=allowed.example.test allowed=True status=0) >= 3 ))"
expect_eq "DNS: the TXT query, denied" 1 "$(jq_count method=DNS host=allowed.example.test status=5 allowed=False | grep -c '^[12]$')"
expect_eq "DNS: denied.example.test NXDOMAIN" 1 "$(( $(jq_count method=DNS host=denied.example.test status=3) >= 1 ))"
expect_eq "HTTP: one allowed" 1 "$(jq_count method=HTTP host=allowed.example.test allowed=True port="$ORIG" status=200)"
expect_eq "HTTP: the Host mismatch, 421" 1 "$(jq_count method=HTTP host=allowed.example.test allowed=False status=421)"
expect_eq "TLS: one allowed" 1 "$(jq_count method=TLS host=tls.example.test allowed=True status=200)"
expect_eq "TLS: the SNI mismatch, 421" 1 "$(jq_count method=TLS host=tls.example.test allowed=False status=421)"
expect_eq "... its reason names the captured name, not CONNECT" 1 "$(jq_count method=TLS host=tls.example.test status=421 reason='SNI evil.example.test does not match tls.example.test')"
expect_eq "TCP: the raw client" 1 "$(jq_count method=TCP host=echo.example.test allowed=True status=200)"
expect_eq "HTTP: the literal address with no Host, refused" 1 "$(jq_count method=HTTP host="$(val resolv)" port=80 allowed=False status=403)"
expect_eq "TCP: the literal address, raw bytes, refused" 1 "$(jq_count method=TCP host="$(val resolv)" port="$ECHO" allowed=False status=403)"
expect_eq "HTTP: a literal address is not where the Host resolves" 1 "$(jq_count method=HTTP host=allowed.example.test allowed=False status=403 addr=None)"
expect_match "... and the reason says so" "allowed.example.test does not resolve to $(val resolv), the address dialled" "$(cat "$AUD")"
expect_eq "TLS: a literal address is not where the SNI resolves" 1 "$(jq_count method=TLS host=tls.example.test allowed=False status=403)"
expect_eq "TCP: over the byte budget, 413" 1 "$(jq_count method=TCP host=budget.example.test status=413)"
expect_eq "... with no more than the budget sent" 1 "$(python3 -c '
import json, sys
print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["host"] == "budget.example.test" and json.loads(l)["method"] == "TCP" and json.loads(l)["bytes_out"] <= 1000))' "$AUD")"
# connections: http, Host mismatch, tls, SNI mismatch, raw, budget, and four literal
# ones (the denied name never connected: it did not resolve; the unlisted port was
# refused by the kernel)
expect_eq "one audit line per connection attempt" 10 "$(grep -vc '"method":"DNS"' "$AUD")"
grep -q '"addr":"127.0.0.1' "$AUD" || fail "the audit names the dialled address"
compgen -G "$AR_STATE/$NAME-*" >/dev/null && fail "state is left"
finish

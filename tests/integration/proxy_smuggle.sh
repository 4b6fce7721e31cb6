#!/usr/bin/env bash
# agentrun proxy, hostile and malformed input: each request-smuggling shape gets 400,
# oversized heads 431, slow heads 408, bad chunk syntax 400, over --max-conns 503;
# pipelined requests are answered in order; garbage and mid-request disconnects never
# disturb other connections.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"

ORIG=$(free_port)
BLACK=$(free_port)
PP=$(free_port)
start_origin "$ORIG"
start_proxy main "$PP" --allow "api.test.example:$ORIG" --allow "api.test.example:$BLACK" \
	--allow-private 127.0.0.0/8 --header-timeout 1 --connect-timeout 1 --max-conns 40
MPID=$PX_PID
H="api.test.example:$ORIG"
U="http://$H"
raw() { python3 "$PX_DIR/raw.py" "$PP" "$@" | tr -d '\r'; }

# a kept-alive connection opened before the abuse, used again after it
exec 5<>"/dev/tcp/127.0.0.1/$PP"
printf 'GET %s/hello HTTP/1.1\r\nHost: %s\r\n\r\n' "$U" "$H" >&5
read -r -t 5 first <&5 || true
expect_eq "long-lived connection: first request" "HTTP/1.1 200 OK" "$(echo "$first" | tr -d '\r')"
# drain the rest of that response (headers, then the 18-byte body)
for _ in $(seq 1 6); do read -r -t 1 _line <&5 || break; [ "$(echo "$_line" | tr -d '\r')" = "" ] && break; done
head -c 18 <&5 >/dev/null

while IFS='|' read -r name req reason; do
	[ -n "$name" ] || continue
	out=$(raw "$req" --all)
	expect_match "$name: 400" "^HTTP/1.1 400 Bad Request" "$out"
	expect_match "$name: reason" "X-Agentrun-Reason: $reason" "$out"
done <<EOF2
TE and CL|POST $U/echo HTTP/1.1\r\nHost: $H\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n|both Transfer-Encoding and Content-Length
CL and TE|POST $U/echo HTTP/1.1\r\nHost: $H\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n|both Transfer-Encoding and Content-Length
duplicate CL|POST $U/echo HTTP/1.1\r\nHost: $H\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd|duplicate Content-Length
bad CL|POST $U/echo HTTP/1.1\r\nHost: $H\r\nContent-Length: 4x\r\n\r\nabcd|invalid Content-Length
CL list|POST $U/echo HTTP/1.1\r\nHost: $H\r\nContent-Length: 4, 4\r\n\r\nabcd|invalid Content-Length
space before colon|POST $U/echo HTTP/1.1\r\nHost: $H\r\nContent-Length : 4\r\n\r\nabcd|whitespace before colon in header
obs-fold|GET $U/hello HTTP/1.1\r\nHost: $H\r\nX-A: 1\r\n  continued\r\n\r\n|obsolete line folding in header
Host disagrees|GET $U/hello HTTP/1.1\r\nHost: evil.test.example\r\n\r\n|Host header disagrees with the request URL
duplicate Host|GET $U/hello HTTP/1.1\r\nHost: $H\r\nHost: $H\r\n\r\n|duplicate Host header
underscore TE beside CL|POST $U/echo HTTP/1.1\r\nHost: $H\r\nContent-Length: 4\r\nTransfer_Encoding: chunked\r\n\r\nabcd|underscore in header name
brackets around IPv4|GET http://[127.0.0.1]:$ORIG/hello HTTP/1.1\r\n\r\n|invalid host or port in URL
brackets around a number|GET http://[2130706433]:$ORIG/hello HTTP/1.1\r\n\r\n|invalid host or port in URL
request line in the trailer|POST $U/echo HTTP/1.1\r\nHost: $H\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nGET http://evil.test.example/ HTTP/1.1\r\n\r\n|bad chunk syntax in request body
bare LF|GET $U/hello HTTP/1.1\nHost: $H\n\n|line ending without CR
bad chunk size|POST $U/echo HTTP/1.1\r\nHost: $H\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n|bad chunk syntax in request body
chunk without CRLF|POST $U/echo HTTP/1.1\r\nHost: $H\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n|bad chunk syntax in request body
relative URL|GET /hello HTTP/1.1\r\nHost: $H\r\n\r\n|relative URL
https URL|GET https://$H/ HTTP/1.1\r\n\r\n|only http:// URLs
garbage|\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n|malformed request line
EOF2

# Transfer-Encoding other than exactly chunked: 501, as squid answers
for te in identity "chunked, chunked" "identity, chunked" "gzip, chunked"; do
	out=$(raw "POST $U/echo HTTP/1.1\r\nHost: $H\r\nTransfer-Encoding: $te\r\n\r\n0\r\n\r\n" --all)
	expect_match "Transfer-Encoding: $te: 501" "^HTTP/1.1 501 Not Implemented" "$out"
done

# the origin sees Via: 1.1 agentrun and none of the client's Forwarded / X-Forwarded-For
out=$(raw "GET $U/headers HTTP/1.1\r\nHost: $H\r\nVia: 1.1 upstream-client\r\nForwarded: for=10.9.9.9\r\nX-Forwarded-For: 10.9.9.9\r\nConnection: close\r\n\r\n" --all)
expect_match "Via added after the client's" "Via: 1.1 upstream-client.*Via: 1.1 agentrun" "$(echo "$out" | tr '\n' ' ')"
expect_nomatch "client Forwarded / X-Forwarded-For removed" "10\.9\.9\.9" "$out"

# 431: too many lines, too many bytes
many=$(python3 -c "print('GET $U/hello HTTP/1.1\\\\r\\\\nHost: $H\\\\r\\\\n' + ''.join('X-%d: v\\\\r\\\\n' % i for i in range(101)) + '\\\\r\\\\n')")
expect_match "101 header lines: 431" "^HTTP/1.1 431 Request Header Fields Too Large" "$(raw "$many")"
big=$(python3 -c "print('GET $U/hello HTTP/1.1\\\\r\\\\nHost: $H\\\\r\\\\nX-Big: ' + 'a' * 70000 + '\\\\r\\\\n\\\\r\\\\n')")
out=$(raw "$big" --all)
expect_match "64 KiB head: 431" "^HTTP/1.1 431 Request Header Fields Too Large" "$out"
expect_match "431 closes" "Connection: close" "$out"
# exactly 100 lines still passes
ok100=$(python3 -c "print('GET $U/hello HTTP/1.1\\\\r\\\\nHost: $H\\\\r\\\\n' + ''.join('X-%d: v\\\\r\\\\n' % i for i in range(99)) + '\\\\r\\\\n')")
# (python's origin itself stops at 100 lines including the blank one: only check that
# the proxy let it through)
out=$(raw "$ok100" --all)
expect_match "100 header lines reach the origin" "^HTTP/1.1 [0-9]+" "$out"
expect_nomatch "100 header lines are not refused by the proxy" "X-Agentrun-Reason" "$out"

# 408: a head that never completes (--header-timeout 1)
start=$(date +%s%N)
out=$(raw "GET $U/hello HTTP/1.1\r\nHost: $H\r\n" --all --wait 5)
ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_match "slow head: 408" "^HTTP/1.1 408 Request Timeout" "$out"
if [ "$ms" -ge 900 ] && [ "$ms" -lt 3000 ]; then pass "408 after about 1 s ($ms ms)"; else fail "408 after $ms ms"; fi

# HTTP/1.0: answered, then closed
out=$(raw "GET $U/hello HTTP/1.0\r\n\r\n" --all --wait 5)
expect_match "HTTP/1.0 request forwarded" "hello from origin" "$out"

# 504: an origin whose accept queue is full never completes the handshake
python3 - "$BLACK" >"$AR_TMP/black.log" 2>&1 <<'PY' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(0)
held = []
for _ in range(4):   # fill the accept queue; never accept
    c = socket.socket()
    c.setblocking(False)
    c.connect_ex(("127.0.0.1", int(sys.argv[1])))
    held.append(c)
print("ready", flush=True)
time.sleep(60)
PY
on_exit "kill $!"
wait_file_has "$AR_TMP/black.log" ready
start=$(date +%s%N)
out=$(raw "GET http://api.test.example:$BLACK/ HTTP/1.1\r\nHost: api.test.example:$BLACK\r\n\r\n" --all --wait 8)
ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_match "connect timeout: 504" "^HTTP/1.1 504 Gateway Timeout" "$out"
expect_match "504 reason" "connecting to 127.0.0.1 timed out after 1000 ms" "$out"
if [ "$ms" -ge 900 ] && [ "$ms" -lt 3500 ]; then pass "504 after about 1 s ($ms ms)"; else fail "504 after $ms ms"; fi

# pipelining: two requests in one write, two responses in order
out=$(raw "GET $U/hello HTTP/1.1\r\nHost: $H\r\n\r\nGET $U/conn HTTP/1.1\r\nHost: $H\r\nConnection: close\r\n\r\n" --all)
expect_eq "pipelined requests both answered" 2 "$(echo "$out" | grep -c '^HTTP/1.[01] 200')"
expect_match "pipelined responses in order" "hello from origin" "$(echo "$out" | sed -n '/hello from origin/p')"

# mid-request disconnects and garbage must not disturb anyone
python3 - "$PP" "$U" "$H" <<'PY'
import socket, sys
port, u, h = int(sys.argv[1]), sys.argv[2], sys.argv[3]
for payload in [b"POST " + u.encode() + b"/echo HTTP/1.1\r\nHost: " + h.encode() + b"\r\nContent-Length: 100000\r\n\r\nonly a little",
                b"GET " + u.encode() + b"/hello HTTP/1.1\r\nHo",
                bytes(range(256)) * 40,
                b"CONNECT " + h.encode() + b" HTTP/1.1\r\n\r\n"]:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(payload)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()   # RST
PY
printf 'GET %s/hello HTTP/1.1\r\nHost: %s\r\n\r\n' "$U" "$H" >&5
read -r -t 5 again <&5 || true
expect_match "long-lived connection still served after abuse" "^HTTP/1.[01] 200" "$(echo "$again" | tr -d '\r')"
exec 5>&-
expect_eq "new requests still served" "hello from origin" "$(curl -sS --max-time 5 -x "http://127.0.0.1:$PP" "$U/hello")"
kill -0 "$MPID" && pass "proxy alive after abuse"

# 503 over --max-conns 40: hold 40 idle connections, the 41st is refused
python3 - "$PP" >"$AR_TMP/503" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
time.sleep(0.3)
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(5)
data = b""
while True:
    c = s.recv(4096)
    if not c:
        break
    data += c
print(data.split(b"\r\n")[0].decode())
PY
expect_eq "over --max-conns: 503" "HTTP/1.1 503 Service Unavailable" "$(cat "$AR_TMP/503")"
sleep 0.2
expect_eq "served again once connections closed" "hello from origin" "$(curl -sS --max-time 5 -x "http://127.0.0.1:$PP" "$U/hello")"

audit_valid "$AR_TMP/main.audit" >/dev/null && pass "audit parses line by line"
expect_eq "one 408 audited (silent connections are not requests)" 1 \
	"$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["status"] == 408))' "$AR_TMP/main.audit")"
stop_proxy "$MPID"
expect_eq "SIGTERM exits 0" 0 "$PX_STATUS"
finish

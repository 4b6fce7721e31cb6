#!/usr/bin/env bash
# A spent byte budget (issue 23): once a host's --max-bytes-out is used up, a CONNECT to
# it is answered 413 with the reason (X-Agentrun-Reason and the JSON body name
# max_bytes_out), not 200 and a close that reads as a TLS failure; nothing is dialled.
# The proxy's closing line and `agentrun audit` of its audit count the run the same
# way (allowed and served, failed, denied).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cmd python3
sink_port=$(free_port)
proxy_port=$(free_port)
python3 "$(dirname "$0")/proxy/sink.py" "$sink_port" "$AR_TMP/accepted" &
sink_pid=$!
on_exit "kill $sink_pid"
"$AGENTRUN" proxy --listen "127.0.0.1:$proxy_port" --allow "127.0.0.1:$sink_port" --allow "localhost:$sink_port" \
	--max-bytes-out 127.0.0.1=1000 --sni off --audit "$AR_TMP/audit.jsonl" 2>"$AR_TMP/proxy.err" &
proxy_pid=$!
on_exit "kill -9 $proxy_pid"
wait_port "$sink_port" && wait_port "$proxy_port" || fail "servers did not start"

# connect_once: the head of the proxy's answer to a CONNECT (and with 200, spend 2000 bytes)
connect_once() {
	python3 -c '
import socket, sys, time
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % sys.argv[2].encode())
c.settimeout(10)
resp = b""
while b"\r\n\r\n" not in resp:
    b = c.recv(1)
    if not b:
        break
    resp += b
head = resp.split(b"\r\n\r\n")[0].decode()
if head.startswith("HTTP/1.1 200"):
    try:
        for _ in range(8):
            c.sendall(b"x" * 250); time.sleep(0.02)
    except OSError:
        pass
else:
    try:
        resp += c.recv(65536)
    except OSError:
        pass
print(resp.decode(errors="replace"))' "$proxy_port" "$sink_port"
}

first=$(connect_once)
expect_match "the first CONNECT: 200" "^HTTP/1.1 200" "$first"
sleep 0.3
accepted=$(cat "$AR_TMP/accepted")
second=$(connect_once)
expect_match "a spent budget: the CONNECT itself gets 413" "^HTTP/1.1 413 " "$second"
expect_match "413: the reason names the budget" \
	"X-Agentrun-Reason: byte budget exceeded: 127.0.0.1 may receive 1000 bytes \(proxy.max_bytes_out\)" "$second"
expect_match "413: the JSON body too" '"reason": *"byte budget exceeded' "$second"
sleep 0.3
expect_eq "413: nothing was dialled" "$accepted" "$(cat "$AR_TMP/accepted")"

# the standalone proxy's 403 for a private address names its flag
python3 -c '
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"CONNECT localhost:%s HTTP/1.1\r\nHost: localhost\r\n\r\n" % sys.argv[2].encode())
print(c.recv(4096).decode())' "$proxy_port" "$sink_port" >"$AR_TMP/private"
expect_match "a private address: the reason names --allow-private" \
	"X-Agentrun-Reason: localhost resolves to (127.0.0.1|::1), a loopback address \(allow it with --allow-private\)" \
	"$(cat "$AR_TMP/private")"

# a denied one, for the counts
python3 -c '
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"CONNECT denied.example:443 HTTP/1.1\r\nHost: denied.example\r\n\r\n")
c.recv(4096)' "$proxy_port"
kill -TERM "$proxy_pid"
wait "$proxy_pid" || true
closing=$(grep '^agentrun proxy stopped:' "$AR_TMP/proxy.err")
expect_eq "the closing line" "agentrun proxy stopped: 4 request(s), 0 allowed, 2 failed, 2 denied" \
	"$(echo "$closing" | sed 's/, [0-9]* bytes out$//')"
summary=$("$AGENTRUN" audit "$AR_TMP/audit.jsonl" | tail -1)
expect_match "agentrun audit: the same counts" "^4 request\(s\) to 3 host\(s\): 0 allowed, 2 failed, 2 denied," "$summary"
finish

#!/usr/bin/env bash
# agentrun proxy --max-bytes-out / --sni: the flags render's proxy container uses act like
# the policy's proxy section (a tunnel past its budget is closed and audited 413).
. "$(dirname "$0")/../lib.sh"
need_cmd python3
sink_port=$(free_port)
proxy_port=$(free_port)
python3 "$(dirname "$0")/proxy/sink.py" "$sink_port" &
sink_pid=$!
on_exit "kill $sink_pid"
"$AGENTRUN" proxy --listen "127.0.0.1:$proxy_port" --allow "127.0.0.1:$sink_port" \
	--max-bytes-out 127.0.0.1=1000 --sni off --audit "$AR_TMP/audit.jsonl" 2>"$AR_TMP/proxy.err" &
proxy_pid=$!
on_exit "kill -9 $proxy_pid"
wait_port "$sink_port" && wait_port "$proxy_port" || fail "servers did not start"
sent=$(python3 -c '
import socket, sys, time
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % sys.argv[2].encode())
head = b""
while b"\r\n\r\n" not in head:
    head += c.recv(1)
assert head.startswith(b"HTTP/1.1 200"), head
c.settimeout(5)
sent = 0
try:
    for _ in range(50):
        c.sendall(b"x" * 500); sent += 500; time.sleep(0.02)
except OSError:
    pass
print("closed" if sent < 25000 else "open")' "$proxy_port" "$sink_port")
expect_eq "tunnel closed past the --max-bytes-out budget" "closed" "$sent"
kill -TERM "$proxy_pid"; wait "$proxy_pid" || true
expect_match "audited as 413" '"status":413' "$(cat "$AR_TMP/audit.jsonl")"
expect_status "--max-bytes-out without =" 2 "$AGENTRUN" proxy --listen 127.0.0.1:0 --allow a.example --max-bytes-out a.example
expect_match "names the flag" '^agentrun: proxy: --max-bytes-out `a.example`: expected HOST=BYTES' "$(cat "$AR_TMP/err")"
expect_status "--sni bad mode" 2 "$AGENTRUN" proxy --listen 127.0.0.1:0 --allow a.example --sni maybe
expect_match "names sni" "--sni \`maybe\`: must be off, check or require" "$(cat "$AR_TMP/err")"
finish

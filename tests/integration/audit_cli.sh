#!/usr/bin/env bash
# agentrun audit: text and --json output on a log, exit codes and messages on bad input.
. "$(dirname "$0")/../lib.sh"

log=$AR_TMP/audit.jsonl
cat >"$log" <<'JSON'
{"at":"2026-12-02T10:00:00.000Z","id":1,"method":"CONNECT","host":"api.github.com","port":443,"addr":"127.0.0.1","allowed":true,"status":200,"reason":"matches rule *.github.com:443","rule":"*.github.com:443","bytes_out":590,"bytes_in":6911,"duration_ms":80}
{"at":"2026-12-02T10:00:01.000Z","id":2,"method":"GET","host":"evil.example","port":80,"addr":null,"allowed":false,"status":403,"reason":"evil.example:80 is not in the allow-list","rule":null,"bytes_out":0,"bytes_in":0,"duration_ms":0}
JSON

out=$("$AGENTRUN" audit "$log")
expect_eq "text summary line" \
	"2 request(s) to 2 host(s): 1 allowed, 0 failed, 1 denied, 590 bytes out, 6911 bytes in" \
	"$(printf '%s\n' "$out" | tail -n 1)"
expect_match "per-host row" '^api\.github\.com +1 +0 +0 +590 +6911$' "$(printf '%s\n' "$out" | grep '^api')"

json=$("$AGENTRUN" audit "$log" --json)
got=$(printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["entries"]), d["hosts"]["evil.example"]["denied"], d["summary"]["bytes_in"])')
expect_eq "--json parses with entries, hosts, summary" "2 1 6911" "$got"

# A torn last line (as after kill -9 of a writer that did not use one write) is reported, not fatal.
printf '{"host":"x","allo' >>"$log"
expect_status "torn line still exit 0" 0 "$AGENTRUN" audit "$log"
expect_match "torn line warned" "^agentrun: warning: audit: .*1 line\(s\) are not audit entries \(first: line 3\)" "$(cat "$AR_TMP/err")"

# a file with lines but no audit entry is the wrong file: an error, not an empty table
printf '{"name": "triage"}\nnot json\n' >"$AR_TMP/policy.json"
expect_status "no audit entries" 2 "$AGENTRUN" audit "$AR_TMP/policy.json"
expect_eq "no audit entries: message" "agentrun: audit: $AR_TMP/policy.json: no audit entries (2 line(s), none a proxy audit object; first: line 1)" "$(cat "$AR_TMP/err")"
expect_eq "no audit entries: no table" "" "$(cat "$AR_TMP/out")"
: >"$AR_TMP/empty.jsonl"
expect_status "an empty log (a proxy that served nothing) is fine" 0 "$AGENTRUN" audit "$AR_TMP/empty.jsonl"
expect_match "empty log: zero requests" '^0 request\(s\) to 0 host\(s\)' "$(tail -n 1 "$AR_TMP/out")"

expect_status "missing file" 2 "$AGENTRUN" audit "$AR_TMP/nope.jsonl"
expect_eq "missing file message" "agentrun: audit: open \`$AR_TMP/nope.jsonl\`: No such file or directory" "$(cat "$AR_TMP/err")"
expect_status "no file argument" 2 "$AGENTRUN" audit
expect_match "no file message" '^agentrun: audit: missing FILE' "$(cat "$AR_TMP/err")"
expect_status "unknown flag" 2 "$AGENTRUN" audit --bogus "$log"
expect_match "unknown flag message" "^agentrun: audit: unknown option \`--bogus\`" "$(cat "$AR_TMP/err")"
expect_status "--help" 0 "$AGENTRUN" audit --help

# End to end: a real proxy's audit log, read back, agrees with the proxy's own summary line.
need_cmd curl
origin_port=$(free_port)
proxy_port=$(free_port)
dead_port=$(free_port) # allowed, but nothing listens: the proxy answers 502
mkdir -p "$AR_TMP/www" && echo hello >"$AR_TMP/www/index.html"
python3 -m http.server --bind 127.0.0.1 --directory "$AR_TMP/www" "$origin_port" >/dev/null 2>&1 &
origin_pid=$!
on_exit "kill $origin_pid"
"$AGENTRUN" proxy --listen "127.0.0.1:$proxy_port" --allow "127.0.0.1:$origin_port" --allow "127.0.0.1:$dead_port" \
	--audit "$AR_TMP/live.jsonl" --dns-files-only 2>"$AR_TMP/proxy.err" &
proxy_pid=$!
on_exit "kill -9 $proxy_pid"
wait_port "$origin_port" && wait_port "$proxy_port" || fail "servers did not start"
for _ in 1 2; do curl -s -o /dev/null -x "http://127.0.0.1:$proxy_port" "http://127.0.0.1:$origin_port/"; done
curl -s -o /dev/null -x "http://127.0.0.1:$proxy_port" "http://denied.invalid/" || true
curl -s -o /dev/null -x "http://127.0.0.1:$proxy_port" "http://127.0.0.1:$dead_port/" || true
printf 'GARBAGE\r\n\r\n' | python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); s.sendall(sys.stdin.buffer.read()); s.recv(4096)' "$proxy_port"
kill -TERM "$proxy_pid"
wait "$proxy_pid" || true
stopped=$(grep '^agentrun proxy stopped' "$AR_TMP/proxy.err" || true)
expect_match "proxy summary" '^agentrun proxy stopped: 5 request\(s\), 2 allowed, 1 failed, 2 denied' "$stopped"
out=$("$AGENTRUN" audit "$AR_TMP/live.jsonl" 2>"$AR_TMP/audit.err")
expect_match "audit agrees with the proxy" '^5 request\(s\) to 3 host\(s\): 2 allowed, 1 failed, 2 denied, ' "$(printf '%s\n' "$out" | tail -n 1)"
expect_match "the origin's row" "^127\.0\.0\.1 +2 +1 +0 " "$(printf '%s\n' "$out" | grep '^127')"
expect_match "the garbled request counted without a host" '^\(no host\) +0 +0 +1 ' "$(printf '%s\n' "$out" | grep '^(no host)')"
expect_eq "no unreadable lines" "" "$(cat "$AR_TMP/audit.err")"
finish

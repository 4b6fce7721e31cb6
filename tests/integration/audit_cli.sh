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
	"2 request(s) to 2 host(s): 1 allowed, 1 denied, 590 bytes out, 6911 bytes in" \
	"$(printf '%s\n' "$out" | tail -n 1)"
expect_match "per-host row" '^api\.github\.com +1 +0 +590 +6911$' "$(printf '%s\n' "$out" | grep '^api')"

json=$("$AGENTRUN" audit "$log" --json)
got=$(printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["entries"]), d["hosts"]["evil.example"]["denied"], d["summary"]["bytes_in"])')
expect_eq "--json parses with entries, hosts, summary" "2 1 6911" "$got"

# A torn last line (as after kill -9 of a writer that did not use one write) is reported, not fatal.
printf '{"host":"x","allo' >>"$log"
expect_status "torn line still exit 0" 0 "$AGENTRUN" audit "$log"
expect_match "torn line warned" "^agentrun: warning: audit: .*1 line\(s\) are not audit entries \(first: line 3\)" "$(cat "$AR_TMP/err")"

expect_status "missing file" 2 "$AGENTRUN" audit "$AR_TMP/nope.jsonl"
expect_eq "missing file message" "agentrun: audit: open \`$AR_TMP/nope.jsonl\`: No such file or directory" "$(cat "$AR_TMP/err")"
expect_status "no file argument" 2 "$AGENTRUN" audit
expect_match "no file message" '^agentrun: audit: missing FILE' "$(cat "$AR_TMP/err")"
expect_status "unknown flag" 2 "$AGENTRUN" audit --bogus "$log"
expect_match "unknown flag message" "^agentrun: audit: unknown option \`--bogus\`" "$(cat "$AR_TMP/err")"
expect_status "--help" 0 "$AGENTRUN" audit --help
finish

#!/usr/bin/env bash
# agentrun check --pid on a sandbox started by `agentrun run`: the sandbox follows the
# policy it was started with (no drift), and drifts from a stricter one; check --name
# expects the overrides run applied (--memory, --pids, --cpus, --tmpfs, --env), and
# only them. Needs root.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
A=$AGENTRUN
POLICY=$AR_SOURCE_DIR/profiles/offline.json

# a sandboxed `sleep 30` of the profile with run's options $@: $runner, $pid
start_sleep() {
	"$A" --policy "$POLICY" "$@" -- sleep 30 >"$AR_TMP/run.out" 2>"$AR_TMP/run.err" &
	runner=$!
	on_exit "kill -TERM $runner; wait $runner"
	if ! pid=$(descendant "$runner" sleep); then
		fail "the sandboxed sleep ($*) did not start: $(head -c 600 "$AR_TMP/run.err")"
		finish
	fi
	on_exit "kill -KILL $pid"
}
start_sleep

expect_status "agentrun sandbox vs its own policy: no drift" 0 "$A" check --policy "$POLICY" --pid "$pid"
expect_eq "agentrun sandbox: verdict" "pid $pid vs policy offline: 0 drift finding(s)" "$(cat "$AR_TMP/out")"

# The same sandbox against a policy asking for a different user and tighter limits.
cat >"$AR_TMP/strict.json" <<'JSON'
{"name": "strict", "network": "none", "tmpfs": ["/tmp", "/var/tmp"],
 "limits": {"pids": 16, "memory": "64m", "cpus": "0.5"}, "user": "2000"}
JSON
expect_status "agentrun sandbox vs a stricter policy: drift" 1 "$A" check --policy "$AR_TMP/strict.json" --pid "$pid"
uid=$(awk '/^Uid:/{print $2}' "/proc/$pid/status")
expect_match "the profile has no user: a dynamic uid" "^6[1-5][0-9]{3}$" "$uid"
expect_eq "agentrun sandbox vs a stricter policy: the findings" "DRIFT user expected 2000 actual $uid
DRIFT group expected 2000 actual $uid
DRIFT tmpfs /var/tmp expected tmpfs:rw actual absent
DRIFT pids limit expected 16 actual 64
DRIFT memory limit expected 67108864 actual 268435456
DRIFT cpu limit expected 0.5 actual 1" "$(grep '^DRIFT' "$AR_TMP/out")"

kill -KILL "$pid"
wait "$runner" 2>/dev/null || true

# run's overrides are what check --name expects; the file alone (--policy) sees them as drift
start_sleep --memory 300m --pids 77 --cpus 0.5 --tmpfs /var/tmp --env AR_OVR=1
name=$("$A" ps --json | python3 -c 'import json,sys
print(next(s["name"] for s in json.load(sys.stdin) if s["pid"] == int(sys.argv[1])))' "$(awk '/^PPid:/{print $2}' "/proc/$pid/status")")
expect_status "check --name: run's overrides are the expectation" 0 "$A" check --name "$name"
expect_eq "check --name: the verdict" "$name vs policy offline: 0 drift finding(s)" "$(cat "$AR_TMP/out")"
expect_status "check --name --policy FILE: the file alone" 1 "$A" check --name "$name" --policy "$POLICY"
expect_eq "check --name --policy FILE: the overrides are drift" "DRIFT pids limit expected 64 actual 77
DRIFT memory limit expected 268435456 actual 314572800
DRIFT cpu limit expected 1 actual 0.5" "$(grep '^DRIFT' "$AR_TMP/out")"
kill -KILL "$pid"
wait "$runner" 2>/dev/null || true
finish

#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted on purpose: the shell inside the sandbox expands them
# agentrun run: exit statuses (the command's, 128+N, 125/126/127), the messages of
# agentrun's own failures, and signal forwarding from agentrun to the command.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
A=$AGENTRUN

expect_status "true exits 0" 0 "$A" -- true
expect_status "exit 3 is passed through" 3 "$A" -- sh -c 'exit 3'
expect_status "a command killed by SIGTERM: 128+15" 143 "$A" -- sh -c 'kill -TERM $$'
expect_status "a command killed by SIGKILL: 128+9" 137 "$A" -- sh -c 'kill -KILL $$'

expect_status "not executable: 126" 126 "$A" -- /etc/passwd
expect_eq "not executable: message" "agentrun: exec \`/etc/passwd\`: Permission denied" "$(cat "$AR_TMP/err")"
expect_status "not found: 127" 127 "$A" -- agentrun-no-such-command
expect_eq "not found: message" "agentrun: exec \`agentrun-no-such-command\`: No such file or directory" "$(cat "$AR_TMP/err")"
expect_status "not found by path: 127" 127 "$A" -- /nonexistent/cmd

# Bad input is agentrun's failure: 125, one line naming the flag, file or field.
expect_status "bad --memory: 125" 125 "$A" --memory x -- true
expect_eq "bad --memory: message" 'agentrun: --memory x: expected a size of at least 6m (e.g. 256m, 1g, 1048576)' "$(cat "$AR_TMP/err")"
expect_status "bad --pids: 125" 125 "$A" --pids 0 -- true
expect_eq "bad --pids: message" 'agentrun: --pids 0: limits.pids: must be an integer from 1 to 4194304, got 0' "$(cat "$AR_TMP/err")"
expect_status "bad --user: 125" 125 "$A" --user nobody -- true
expect_eq "bad --user: message" 'agentrun: --user nobody: expected a numeric UID or UID:GID (e.g. 1000, 1000:1000)' "$(cat "$AR_TMP/err")"
expect_status "bad --mount: 125" 125 "$A" --mount /etc -- true
expect_eq "bad --mount: message" 'agentrun: --mount /etc: expected SRC:DST[:rw]' "$(cat "$AR_TMP/err")"
expect_status "unknown option: 125" 125 "$A" --frobnicate -- true
expect_eq "unknown option: message" 'agentrun: run: unknown option `--frobnicate`; see `agentrun run --help`' "$(cat "$AR_TMP/err")"
expect_status "no command: 125" 125 "$A" --memory 64m
expect_status "missing --policy file: 125" 125 "$A" --policy "$AR_TMP/none.json" -- true
expect_match "missing --policy file: names it" "none.json" "$(cat "$AR_TMP/err")"

printf '{"name": "bad", "frobnicate": 1}\n' >"$AR_TMP/bad.json"
expect_status "a bad policy: 125" 125 "$A" --policy "$AR_TMP/bad.json" -- true
expect_match "a bad policy: names the file and key" "^agentrun: .*bad.json.*frobnicate" "$(cat "$AR_TMP/err")"

printf '{"name": "rx-%s", "mounts": [{"source": "%s/absent", "target": "/logs"}]}\n' "$$" "$AR_TMP" >"$AR_TMP/m.json"
expect_status "a missing mount source: 125" 125 "$A" --policy "$AR_TMP/m.json" --no-cgroups -- true
expect_eq "a missing mount source: message" "agentrun: $AR_TMP/m.json: mounts[0].source: $AR_TMP/absent: No such file or directory" "$(cat "$AR_TMP/err")"

# a mount the command line added is named by its flag, not blamed on the policy file
expect_status "a missing --mount source: 125" 125 "$A" --policy "$AR_TMP/m.json" \
	--mount "$AR_TMP/also-absent:/x" --no-cgroups -- true
expect_eq "a missing mount source from the file comes first" "agentrun: $AR_TMP/m.json: mounts[0].source: $AR_TMP/absent: No such file or directory" "$(cat "$AR_TMP/err")"
expect_status "a missing --mount source alone: 125" 125 "$A" --mount "$AR_TMP/also-absent:/x" --no-cgroups -- true
expect_eq "a missing --mount source: names the flag" "agentrun: --mount $AR_TMP/also-absent:/x: source: $AR_TMP/also-absent: No such file or directory" "$(cat "$AR_TMP/err")"
# -p is --policy, as render and check spell it
expect_status "run -p: the policy applies" 125 "$A" -p "$AR_TMP/m.json" --no-cgroups -- true
expect_eq "run -p: the policy's own error" "agentrun: $AR_TMP/m.json: mounts[0].source: $AR_TMP/absent: No such file or directory" "$(cat "$AR_TMP/err")"

printf '{"name": "rx-%s", "allowed_hosts": ["example.com"]}\n' "$$" >"$AR_TMP/proxy.json"
expect_status "network proxy: the command's status" 3 "$A" --policy "$AR_TMP/proxy.json" -- sh -c 'exit 3'
expect_status "network proxy, a bad --audit: 125" 125 "$A" --policy "$AR_TMP/proxy.json" --audit /nonexistent-$$/a.jsonl -- true
expect_match "network proxy, a bad --audit: message" "^agentrun: audit: open \`/nonexistent-$$/a.jsonl\`: No such file or directory" "$(cat "$AR_TMP/err")"

# SIGTERM (and SIGINT, SIGHUP, SIGUSR1) to agentrun reach the command, which decides
# what to do.
mkdir -m 1777 "$AR_TMP/io"
for sig in TERM INT HUP USR1; do
	rm -f "$AR_TMP/io/ready" "$AR_TMP/io/out"
	"$A" --mount "$AR_TMP/io:/out:rw" -- sh -c "trap 'echo got-$sig >/out/out; exit 7' $sig; touch /out/ready; while :; do sleep 0.05; done" &
	pid=$!
	for _ in $(seq 1 100); do [ -e "$AR_TMP/io/ready" ] && break; sleep 0.05; done
	kill -s "$sig" "$pid"
	st=0
	wait "$pid" || st=$?
	expect_eq "SIG$sig to agentrun: the command's trap ran" "got-$sig" "$(cat "$AR_TMP/io/out" 2>/dev/null)"
	expect_eq "SIG$sig to agentrun: its exit status is returned" 7 "$st"
done

# A command that ignores nothing dies of the forwarded signal: 128+15.
rm -f "$AR_TMP/io/ready"
"$A" --mount "$AR_TMP/io:/out:rw" -- sh -c 'touch /out/ready; exec sleep 30' &
pid=$!
for _ in $(seq 1 100); do [ -e "$AR_TMP/io/ready" ] && break; sleep 0.05; done
sleep 0.1
kill -TERM "$pid"
st=0
wait "$pid" || st=$?
expect_eq "SIGTERM forwarded to sleep: 143" 143 "$st"
finish

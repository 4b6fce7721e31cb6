#!/usr/bin/env bash
# check --pid looks at a process through its own root: the credential probe resolves
# paths inside /proc/PID/root (openat2 RESOLVE_IN_ROOT), so an absolute symlink in the
# process's view is followed in that view, never in the host's; and it says that the
# environment it reads is the process's own, rewritable memory.
# shellcheck source=tests/escape/common.bash
. "$(dirname "$0")/common.bash"
A=$AGENTRUN
R="$AR_TMP/rootfs" H="$AR_TMP/hosthome"
mkdir -p "$R/proc" "$R/dev" "$R/sys" "$R/tmp" "$R/home/real/.ssh" "$H/.ssh" "$H/.aws"
# /home/link -> an absolute path that exists on the host, not in the rootfs
ln -s "$H" "$R/home/link"
need "a static sleep for the rootfs (busybox)" test -x /bin/busybox
cp /bin/busybox "$R/sleep"
printf '{"rootfs": "%s"}\n' "$R" >"$AR_TMP/p.json"
"$A" --policy "$AR_TMP/p.json" --no-cgroups -- /sleep 30 </dev/null &
apid=$!
on_exit "kill $apid"
# the command once it is sleep (its exec done), not the init's child before it
pid=$(descendant "$apid" sleep || true)
need "the sandboxed process to start" test -n "$pid"
"$A" check --policy "$AR_TMP/p.json" --pid "$pid" >"$AR_TMP/out" 2>"$AR_TMP/err" || true
expect_match "the positive control: a real credential dir in its view is found" \
	"DRIFT sensitive path /home/real/.ssh" "$(cat "$AR_TMP/out")"
expect_nomatch "an absolute symlink is followed in its view, not the host's" \
	"sensitive path /home/link" "$(cat "$AR_TMP/out")"
expect_nomatch "a policy without user: the sandbox's dynamic uid is no drift" "DRIFT user " "$(cat "$AR_TMP/out")"
"$A" check --policy "$AR_TMP/p.json" --pid $$ >"$AR_TMP/out2" 2>/dev/null || true
expect_match "control: uid 0 against a policy without user is drift" \
	"DRIFT user expected a dynamic uid = gid in 61184-65519 \(agentrun run\), the caller's own \(agentrun run by a user\) or 1000:1000 \(rendered\) actual uid 0 gid 0" "$(cat "$AR_TMP/out2")"
expect_match "environ: said to be the process's own memory" \
	"note: the environment of pid $pid is read from /proc/$pid/environ, the process's own memory" \
	"$(cat "$AR_TMP/err")"
finish

#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted on purpose: the shell inside the sandbox expands them
# A uid that belongs to no one: without `user`, each sandbox runs as a dynamic
# uid = gid (61184-65519) that is no host account, leased under /run/agentrun/.uids
# without collision, released at teardown, reclaimed from a killed owner; so per-user
# kernel quotas are per sandbox. An explicit user is honoured (with a warning when it
# is a login account), and a mode-600 kubeconfig is readable through a private copy.
# shellcheck source=tests/escape/common.bash
. "$(dirname "$0")/common.bash"
need python3 command -v python3
need flock command -v flock
A=$AGENTRUN
L=/run/agentrun/.uids

# Concurrent sandboxes get distinct dynamic uids, each no host account; while they
# run each lease is locked.
for i in 1 2 3 4 5 6; do
	"$A" -- sh -c 'id -u; id -g; sleep 1.5' >"$AR_TMP/u$i" &
done
sleep 0.7
held=0
for i in 1 2 3 4 5 6; do
	u=$(head -1 "$AR_TMP/u$i")
	[ -n "$u" ] && ! flock -n "$L/$u" true && held=$((held + 1))
done
wait
uids=$(for i in 1 2 3 4 5 6; do head -1 "$AR_TMP/u$i"; done | sort -u)
expect_eq "6 concurrent sandboxes: 6 distinct uids" 6 "$(printf '%s\n' "$uids" | grep -c .)"
bad=0
for u in $uids; do dynamic_uid "$u" || bad=$((bad + 1)); done
expect_eq "each is a dynamic uid and no host account" 0 "$bad"
expect_eq "gid = uid" "" "$(for i in 1 2 3 4 5 6; do sed -n 1,2p "$AR_TMP/u$i" | uniq | sed -n 2p; done)"
expect_eq "each lease was locked while its sandbox ran" 6 "$held"
left=0
for u in $uids; do flock -n "$L/$u" true || left=$((left + 1)); done
expect_eq "released at teardown: every lease is unlocked" 0 "$left"

# A killed agentrun: the sandbox dies with it and the lease is free to reclaim.
"$A" -- sleep 30 &
apid=$!
sleep 0.5
new=$(ps -o uid= --ppid "$(pgrep -P "$apid" | head -1)" | tr -d ' ' | head -1)
expect_match "the running sandbox has a dynamic uid" '^[0-9]+$' "$new"
if [ -n "$new" ] && ! flock -n "$L/$new" true; then pass "its lease is locked while it runs"; else
	fail "the lease $L/$new is not locked while the sandbox runs"
fi
kill -9 "$apid"
wait "$apid" 2>/dev/null || true
sleep 0.3
if [ -n "$new" ] && flock -n "$L/$new" true; then pass "kill -9: the lease is unlocked (reclaimable)"; else
	fail "kill -9: the lease $L/$new is still locked"
fi
# (the init may linger as a zombie until the host's reaper collects it)
if [ -n "$new" ] && ! ps -u "$new" -o stat= | grep -qv '^Z'; then pass "kill -9: nothing runs as $new"; else
	fail "kill -9: processes of $new remain"
fi

# Per-user quotas are per sandbox: sandbox 1 takes every inotify instance its uid may
# have (fs.inotify.max_user_instances) and holds them; sandbox 2 still gets one. The
# positive control: with the same explicit user for both, sandbox 2 gets EMFILE.
cat >"$AR_TMP/bin/inotify.py" <<'PY'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[1] == "hog":
    fds = []
    while libc.inotify_init1(0) >= 0: pass
    print("hogging", flush=True)
    time.sleep(3)
else:
    fd = libc.inotify_init1(0)
    print("ok" if fd >= 0 else os.strerror(ctypes.get_errno()))
PY
quota() { # [AGENTRUN OPTIONS]
	"$A" --mount "$AR_TMP/bin:/ar-bin" "$@" -- python3 /ar-bin/inotify.py hog >"$AR_TMP/hog" &
	local hog=$! i
	for i in $(seq 1 50); do grep -q hogging "$AR_TMP/hog" 2>/dev/null && break; sleep 0.1; done
	"$A" --mount "$AR_TMP/bin:/ar-bin" "$@" -- python3 /ar-bin/inotify.py one
	wait "$hog" || true
}
expect_eq "inotify: another sandbox's exhaustion does not reach this one" ok "$(quota)"
expect_eq "control: the same explicit user shares the quota" "Too many open files" "$(quota --user 61000)"

# An explicit user is honoured; a login account draws a warning.
expect_eq "--user 61000:61001 is honoured" "61000 61001" "$("$A" --user 61000:61001 -- sh -c 'echo "$(id -u) $(id -g)"')"
login=$(getent passwd | awk -F: '$3 >= 1000 && $3 < 60000 && $7 !~ /(nologin|false)$/ {print $3; exit}')
if [ -n "$login" ]; then
	"$A" --user "$login" -- true 2>"$AR_TMP/err" || fail "--user $login failed"
	expect_match "a login account as user: warned" "^agentrun: warning: <embedded default>: user: $login is the host account .* \(login shell " "$(cat "$AR_TMP/err")"
fi
"$A" --user 65534 -- true 2>"$AR_TMP/err"
expect_eq "a nologin account: no warning" "" "$(cat "$AR_TMP/err")"

# Files written to a rw mount are owned by the sandbox's uid.
W="$AR_TMP/w" && mkdir -p "$W" && chmod 777 "$W"
u=$("$A" --mount "$W:/w:rw" -- sh -c 'touch /w/f; id -u')
expect_eq "a file written to a rw mount is owned by the sandbox's uid" "$u:$u" "$(stat -c %u:%g "$W/f")"

# A mode-600 kubeconfig owned by someone else: readable inside through a copy, the
# host file untouched.
K="$AR_TMP/kube" && mkdir -p "$K"
printf 'apiVersion: v1\nkind: Config\n' >"$K/config"
chown 1000:1000 "$K/config" && chmod 600 "$K/config"
printf '{"kubeconfig": "%s"}\n' "$K/config" >"$AR_TMP/kube.json"
expect_eq "kubeconfig: the sandbox's uid reads it, read-only" "apiVersion: v1 ro" \
	"$("$A" --policy "$AR_TMP/kube.json" -- sh -c 'head -1 "$KUBECONFIG"; test -w "$KUBECONFIG" && echo rw || echo ro' | xargs)"
expect_eq "kubeconfig: the host file is unchanged" "600 1000:1000 2" "$(stat -c '%a %u:%g %h' "$K/config" | sed 's/ 1$/ 2/')"
expect_eq "control: a plain bind of it is unreadable for the sandbox" "denied" \
	"$("$A" --mount "$K/config:/k" -- sh -c 'cat /k >/dev/null 2>&1 && echo read || echo denied')"
finish

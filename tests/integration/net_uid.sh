#!/usr/bin/env bash
# network: proxy, the proxy's uid: each proxy runs as a dynamic uid of its own, leased
# from the sandbox allocator (61184-65519): two concurrent sandboxes' proxies and their
# sandboxes all have distinct uids, none a host account; the lease (an flock on
# /run/agentrun/.uids/UID) is held by the proxy while it lives and free once it is gone:
# after a normal exit, after kill -9 of agentrun (+ gc), and for `net up` after `net down`.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd flock

NAME="netu-$$"
POLICY="$AR_TMP/policy.json"
printf '{"name": "%s", "allowed_hosts": ["a.example"]}' "$NAME" >"$POLICY"
ROOT=/run/agentrun
on_exit "rm -rf $ROOT/$NAME-* $ROOT/audit/$NAME-*"
field() { sed -n "s/^$2=//p" "$ROOT/$1/state" 2>/dev/null; }
uid_of() { awk '/^Uid:/ {print $2 "," $3 "," $4 "," $5}' "/proc/$1/status"; }
# state_of OWNER: waits for the state of the sandbox agentrun OWNER runs; its name.
state_of() { net_state "$NAME-$1" >/dev/null && echo "$NAME-$1"; }
held() { if flock -n "$ROOT/.uids/$1" true; then echo free; else echo held; fi; }
account() { if cut -d: -f3 /etc/passwd /etc/group | grep -qx "$1"; then echo yes; else echo no; fi; }

"$AGENTRUN" run --policy "$POLICY" -- sleep 30 >/dev/null 2>"$AR_TMP/a.err" &
A=$!
on_exit "kill -9 $A"
"$AGENTRUN" run --policy "$POLICY" -- sleep 30 >/dev/null 2>"$AR_TMP/b.err" &
B=$!
on_exit "kill -9 $B"
SA=$(state_of "$A") || fail "no state for $A: $(cat "$AR_TMP/a.err")"
SB=$(state_of "$B") || fail "no state for $B: $(cat "$AR_TMP/b.err")"
PA=$(field "$SA" proxy_pid)
PB=$(field "$SB" proxy_pid)
ua=$(uid_of "$PA")
ub=$(uid_of "$PB")
u=${ua%%,*}
v=${ub%%,*}
expect_eq "proxy A: real, effective, saved and fs uid the same" "$u,$u,$u,$u" "$ua"
expect_eq "proxy B: the same" "$v,$v,$v,$v" "$ub"
expect_eq "proxy A: its gid is its uid" "$u" "$(awk '/^Gid:/ {print $2}' "/proc/$PA/status")"
expect_eq "proxy A: only its own group" "$u" "$(awk '/^Groups:/ {print $2 $3}' "/proc/$PA/status")"
expect_eq "proxy A: in the dynamic range" yes "$([ "$u" -ge 61184 ] && [ "$u" -le 65519 ] && echo yes)"
expect_eq "proxy B: in the dynamic range" yes "$([ "$v" -ge 61184 ] && [ "$v" -le 65519 ] && echo yes)"
sa=$(awk '/^Uid:/ {print $2}' "/proc/$(field "$SA" pid)/status")
sb=$(awk '/^Uid:/ {print $2}' "/proc/$(field "$SB" pid)/status")
expect_eq "four distinct uids (two proxies, two sandboxes)" 4 "$(printf '%s\n' "$u" "$v" "$sa" "$sb" | sort -u | wc -l)"
expect_eq "proxy A: no host account" no "$(account "$u")"
expect_eq "proxy B: no host account" no "$(account "$v")"
expect_eq "proxy A: the lease is held" held "$(held "$u")"
expect_eq "proxy A: the proxy itself holds the lease open" yes \
	"$(find "/proc/$PA/fd" -lname "$ROOT/.uids/$u" | grep -q . && echo yes)"
expect_eq "proxy A: no capabilities" "0000000000000000" "$(awk '/^CapEff:/ {print $2}' "/proc/$PA/status")"

# a normal exit (SIGTERM to agentrun): the proxy is stopped, its lease free
kill -TERM "$A"
{ wait "$A"; } 2>/dev/null || true
expect_eq "after exit: proxy A's lease is free" free "$(held "$u")"
# kill -9 of agentrun: the proxy dies with it (PDEATHSIG), and with it the lease
kill -9 "$B"
{ wait "$B"; } 2>/dev/null || true
for _ in $(seq 1 40); do
	if ! [ -d "/proc/$PB" ] || grep -q '^State:.*Z' "/proc/$PB/status" 2>/dev/null; then break; fi
	sleep 0.05
done
expect_eq "after kill -9: proxy B's lease is free" free "$(held "$v")"
"$AGENTRUN" gc >/dev/null
expect_eq "after gc: no state" "" "$(find "$ROOT" -maxdepth 1 -name "$NAME-*" -type d)"

# net up: the detached proxy leases its own too; net down ends it
nn="nuu$$"
on_exit "$AGENTRUN" net down --name "$nn"
"$AGENTRUN" net up --policy "$POLICY" --name "$nn" >/dev/null || fail "net up: $(cat "$AR_TMP/err" 2>/dev/null)"
st="$ROOT/netns-$nn/state"
[ -f "$st" ] || fail "net up: no state"
PN=$(sed -n 's/^proxy_pid=//p' "$st")
w=$(awk '/^Uid:/ {print $2}' "/proc/$PN/status")
expect_eq "net up: a dynamic uid" yes "$([ "$w" -ge 61184 ] && [ "$w" -le 65519 ] && echo yes)"
expect_eq "net up: the lease is held" held "$(held "$w")"
"$AGENTRUN" net down --name "$nn"
expect_eq "net down: the lease is free" free "$(held "$w")"
# --- every dynamic uid leased: the sandbox's and the proxy's own messages, exit 125 ---
# (a holder locks every lease file of the range, creating the missing ones: the
# allocator's own files, which it never removes either)
mkfifo "$AR_TMP/hold.fifo"
python3 -c '
import fcntl, os, resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (8192, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
for uid in range(61184, 65520):
    fd = os.open("/run/agentrun/.uids/%d" % uid, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.append(fd)
    except BlockingIOError:
        os.close(fd)
print("ready", flush=True)
sys.stdin.read()
' <"$AR_TMP/hold.fifo" >"$AR_TMP/hold.out" 2>&1 &
HOLDER=$!
on_exit "kill $HOLDER"
exec 7>"$AR_TMP/hold.fifo"
for _ in $(seq 1 200); do grep -q ready "$AR_TMP/hold.out" && break; sleep 0.05; done
expect_status "no dynamic uid left for the sandbox: 125" 125 "$AGENTRUN" run -- true
expect_match "... and the message says to give the policy a user" \
	"^agentrun: .*dynamic uid: all of 61184-65519 are host accounts or leased.*; give the policy a .user.$" \
	"$(cat "$AR_TMP/err")"
expect_status "a sandbox with a user, no dynamic uid left for its proxy: 125" 125 \
	"$AGENTRUN" run --user 1000:1000 --policy "$POLICY" -- true
expect_match "... and the message says the proxy needs one" \
	"proxy: dynamic uid: all of 61184-65519 .*; a proxy needs one of its own: stop some sandboxes" \
	"$(cat "$AR_TMP/err")"
exec 7>&-
wait "$HOLDER" 2>/dev/null || true
compgen -G "$ROOT/$NAME-*" >/dev/null && fail "no uid left: state is left"
finish

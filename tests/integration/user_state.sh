#!/usr/bin/env bash
# State per user: a user's sandboxes live under its own $XDG_RUNTIME_DIR/agentrun (0700),
# where `ps`, `audit NAME`, `check --name` and `gc` find them; another user (and root)
# can neither list, read nor remove them; kill -9 of agentrun followed by the user's
# `gc` leaves nothing (state, /30, proxy, sandbox). A state directory someone else made
# first (/tmp/agentrun-UID when the user has no runtime directory) is refused, never
# used. The user's proxy: the caller's uid, no capabilities, no_new_privs, seccomp, a
# view of its own, in the caller's netns, in a user namespace that is not the sandbox's.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"
user_setup
UA=$AR_USER_UID
ST=$AR_USER_RUNTIME/agentrun
AR_STATE=$ST # where net_state looks
ORIG=$(free_port)
start_origin "$ORIG"
NAME="ust-$$"
POLICY="$AR_TMP/policy.json"
cat >"$POLICY" <<JSON
{"name": "$NAME", "allowed_hosts": ["api.test.example:$ORIG"],
 "proxy": {"allow_private": ["127.0.0.1"]}}
JSON
chmod 755 "$AR_TMP"
chmod 644 "$POLICY"

# a second user of the test's own, with its runtime directory as logind makes it
U2=ar-u2-$$
useradd --no-create-home --user-group --shell /bin/sh "$U2" >/dev/null
on_exit "userdel $U2"
UB=$(id -u "$U2")
RB=/run/user/$UB
install -d -m 0700 -o "$UB" -g "$UB" "$RB"
on_exit "rm -rf $RB /tmp/agentrun-$UB"
as_b() { (cd / && setpriv --reuid "$UB" --regid "$UB" --init-groups env XDG_RUNTIME_DIR="$RB" "$@"); }

# --- A's sandbox ---
setpriv --reuid "$UA" --regid "$AR_USER_GID" --init-groups env XDG_RUNTIME_DIR="$AR_USER_RUNTIME" \
	"$UAGENTRUN" --no-cgroups --policy "$POLICY" -- \
	sh -c "curl -sS -m 10 http://api.test.example:$ORIG/hello; echo; sleep 60" \
	>"$AR_TMP/a.out" 2>"$AR_TMP/a.err" &
RUN=$!
on_exit "kill -9 $RUN"
SB="$NAME-$RUN"
on_exit "rm -f $ST/audit/$SB.jsonl" # finished audits stay by design: this test's goes
state=$(net_state "$SB") || fail "no state for $SB in $ST: $(cat "$AR_TMP/a.err")"
wait_file_has "$AR_TMP/a.out" "hello from origin" || fail "A's sandbox reached nothing"
expect_eq "the state is A's own, 0700" "$UA 700" "$(stat -c '%u %a' "$ST")"
expect_match "A's ps lists it" "^$SB " "$(as_user "$UAGENTRUN" ps)"
expect_match "A's audit NAME reads it" "api.test.example +1 +0" "$(as_user "$UAGENTRUN" audit "$SB")"
expect_status "A's check --name finds it" 1 as_user "$UAGENTRUN" check --policy "$POLICY" --name "$SB"
expect_match "A's check --name: the network facts read, no network finding" \
	"vs policy $NAME: [0-9]+ drift" "$(cat "$AR_TMP/out")"
cp "$AR_TMP/out" "$AR_TMP/check.out"
expect_nomatch "A's check --name: only the limits (no cgroup for a user here) drift" \
	"DRIFT (network|route|default route|proxy|transparent|user|capabilit|seccomp|no_new)" "$(grep DRIFT "$AR_TMP/check.out")"

# a network: none sandbox of A's: listed from its record slot, under A's state only
setpriv --reuid "$UA" --regid "$AR_USER_GID" --init-groups env XDG_RUNTIME_DIR="$AR_USER_RUNTIME" \
	"$UAGENTRUN" --no-cgroups -- sleep 60 >/dev/null 2>&1 &
NONE=$!
on_exit "kill $NONE"
for _ in $(seq 1 100); do as_user "$UAGENTRUN" ps | grep -q "^default-$NONE " && break; sleep 0.05; done
expect_match "A's ps lists its network: none sandbox" "^default-$NONE +[0-9]+ +[0-9m]+[0-9]+s +none " \
	"$(as_user "$UAGENTRUN" ps)"
expect_eq "its record is under A's state" 1 "$(grep -l " default-$NONE" "$ST"/.uids/* 2>/dev/null | wc -l)"
kill "$NONE" 2>/dev/null || true
wait "$NONE" 2>/dev/null || true

# --- the proxy of a user's sandbox ---
PX=$(sed -n 's/^proxy_pid=//p' "$state")
px() { grep "^$1:" "/proc/$PX/status" | tr -s '\t' ' ' | cut -d' ' -f2-; }
expect_eq "proxy: the caller's uid" "$UA $UA $UA $UA" "$(px Uid)"
expect_eq "proxy: no capabilities (effective)" 0000000000000000 "$(px CapEff)"
expect_eq "proxy: no capabilities (bounding)" 0000000000000000 "$(px CapBnd)"
expect_eq "proxy: no_new_privs" 1 "$(px NoNewPrivs)"
expect_eq "proxy: seccomp filter" 2 "$(px Seccomp)"
expect_eq "proxy: its view holds the resolver's files only" "dev etc" "$(ls "/proc/$PX/root" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "proxy: in the caller's netns (it dials out as the caller)" \
	"$(readlink /proc/self/ns/net)" "$(readlink "/proc/$PX/ns/net")"
INIT=$(sed -n 's/^pid=//p' "$state")
expect_nomatch "proxy: not in the sandbox's user namespace" "^$(readlink "/proc/$INIT/ns/user")\$" \
	"$(readlink "/proc/$PX/ns/user")"
expect_nomatch "proxy: not in the host's user namespace" "^$(readlink /proc/self/ns/user)\$" \
	"$(readlink "/proc/$PX/ns/user")"

# --- B sees none of it ---
expect_eq "B's ps: no sandboxes" "no sandboxes" "$(as_b "$UAGENTRUN" ps)"
expect_status "B's audit NAME: not found" 2 as_b "$UAGENTRUN" audit "$SB"
expect_status "B's check --name: no such sandbox" 2 as_b "$UAGENTRUN" check --policy "$POLICY" --name "$SB"
expect_match "B's check --name: the message" "no such sandbox" "$(cat "$AR_TMP/err")"
expect_status "B cannot list A's state" 2 as_b ls "$ST"
expect_status "B cannot read A's state" 1 as_b cat "$state"
expect_status "B cannot read A's audit" 1 as_b cat "$ST/audit/$SB.jsonl"
expect_eq "B's gc removes nothing" "removed 0 dead sandbox(es)" "$(as_b "$UAGENTRUN" gc | tail -1)"
expect_eq "A's sandbox lives on after B's gc" 1 "$(test -e "$state" && kill -0 "$INIT" && echo 1)"
expect_nomatch "root's ps does not list A's" "$SB" "$("$AGENTRUN" ps)"

# --- kill -9 of A's agentrun, then A's gc: nothing left ---
IDX=$(sed -n 's/^net_index=//p' "$state")
kill -9 "$RUN"
{ wait "$RUN"; } 2>/dev/null || true
sleep 0.3 # PDEATHSIG: the proxy and the sandbox follow
expect_match "A's ps --all: dead" "$SB .*dead" "$(as_user "$UAGENTRUN" ps --all)"
as_user "$UAGENTRUN" gc >"$AR_TMP/gc.out"
expect_eq "A's gc removes it" "removed 1 dead sandbox(es)" "$(tail -1 "$AR_TMP/gc.out")"
expect_eq "A's gc names it" "removed $SB: its state, address, proxy and cgroups" "$(head -1 "$AR_TMP/gc.out")"
left=""
[ -e "$ST/$SB" ] && left="$left state;"
[ -e "$ST/net/$IDX" ] && left="$left /30;"
alive() { [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null | grep -v Z)" != "" ]; }
alive "$PX" && left="$left proxy;"
alive "$INIT" && left="$left sandbox;"
expect_eq "kill -9 + gc: nothing left" "" "$left"

# --- a state directory made by someone else first: refused, never read ---
rm -rf "$RB" "/tmp/agentrun-$UB" # a removed user's of the same uid, if any
mkdir -m 0777 "/tmp/agentrun-$UB"
expect_status "a state directory of another's: 125" 125 as_b "$UAGENTRUN" --no-cgroups --policy "$POLICY" -- true
expect_eq "a state directory of another's: the message" \
	"agentrun: \`/tmp/agentrun-$UB\` (the state of your sandboxes) is not a directory of your own with mode 0700 (a directory, owner 0, mode 777): remove it, or set XDG_RUNTIME_DIR to a private directory" \
	"$(cat "$AR_TMP/err")"
mkdir -p "/tmp/agentrun-$UB/planted-1"
printf 'name=planted-1\nowner=%s\nowner_start=1\n' "$$" >"/tmp/agentrun-$UB/planted-1/state"
expect_eq "a planted state is not listed" "no sandboxes" "$(as_b "$UAGENTRUN" ps --all)"
rm -rf "/tmp/agentrun-$UB"
expect_status "without a runtime directory: /tmp/agentrun-UID, made 0700" 0 as_b "$UAGENTRUN" --no-cgroups -- true
expect_eq "/tmp/agentrun-UID: B's own, 0700" "$UB 700" "$(stat -c '%u %a' "/tmp/agentrun-$UB")"
finish

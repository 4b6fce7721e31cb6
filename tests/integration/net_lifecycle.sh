#!/usr/bin/env bash
# network: proxy, lifecycle: nothing (state, /30, proxy, sandbox, cgroups, the
# sandbox's netns) survives a normal exit, SIGTERM to agentrun, a failed start (bad
# mount source; a proxy that fails while starting), the proxy's death (the run fails
# closed: 125, the sandbox killed), or kill -9 of agentrun followed by `agentrun gc`;
# `agentrun ps` and `agentrun audit NAME` see the sandbox; 10 concurrent sandboxes
# from one policy all work, with distinct names and addresses.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"

ORIG=$(free_port)
start_origin "$ORIG"
NAME="netl-$$"
POLICY="$AR_TMP/policy.json"
cat >"$POLICY" <<JSON
{"name": "$NAME", "allowed_hosts": ["api.test.example:$ORIG"],
 "proxy": {"allow_private": ["127.0.0.1"]}}
JSON
ROOT=$AR_STATE
on_exit "rm -rf $ROOT/$NAME-* $ROOT/audit/$NAME-*"

# state_of OWNER: the state file of the sandbox agentrun OWNER runs (waits for it).
state_of() {
	local f
	f=$(net_state "$NAME-$1") && cat "$f"
}
# states: how many state directories of this test's policy exist.
states() {
	local n=0 d
	for d in "$ROOT/$NAME"-*; do [ -e "$d" ] && n=$((n + 1)); done
	echo "$n"
}
field() { printf '%s\n' "$1" | sed -n "s/^$2=//p"; }

# gone WHAT STATE: everything the state names is gone.
gone() {
	local what=$1 st=$2 left="" p
	for p in "$(field "$st" pid)" "$(field "$st" proxy_pid)"; do
		if [ -n "$p" ] && [ "$p" != 0 ] && [ -d "/proc/$p" ] &&
			! grep -q '^State:.*Z' "/proc/$p/status"; then left="$left process $p;"; fi
	done
	[ -e "$ROOT/$(field "$st" name)" ] && left="$left state dir;"
	local idx owner
	idx=$(field "$st" net_index)
	owner=$(readlink "$ROOT/net/$idx" 2>/dev/null || true)
	[ "${owner%%.*}" = "$(field "$st" owner)" ] && left="$left /30 entry $idx;"
	for p in "$(field "$st" cgroup)" "$(field "$st" proxy_cgroup)"; do
		[ -n "$p" ] && [ -d "$p" ] && left="$left cgroup $p;"
	done
	local left_cg
	left_cg=$(find /sys/fs/cgroup -maxdepth 6 -type d -name "agentrun-$NAME-*$(field "$st" owner)" 2>/dev/null)
	[ -n "$left_cg" ] && left="$left cgroups $left_cg;"
	if [ -n "${NETNS:-}" ] && find /proc/[0-9]*/ns/net -maxdepth 0 -printf '%l\n' 2>/dev/null |
		grep -qx "$NETNS"; then left="$left netns $NETNS;"; fi
	if [ -z "$left" ]; then pass "$what: nothing left"; else fail "$what: left$left"; fi
}

run_bg() {
	"$AGENTRUN" run --policy "$POLICY" "$@" >"$AR_TMP/bg.out" 2>"$AR_TMP/bg.err" &
	BG=$!
	on_exit "kill -9 $BG"
}

# --- normal exit; ps and audit NAME while it runs and after ---
run_bg -- sh -c 'curl -sS -m 5 -o /dev/null http://api.test.example:'"$ORIG"'/; sleep 1'
ST=$(state_of "$BG") || fail "no state for $BG"
NETNS=$(readlink "/proc/$(field "$ST" pid)/ns/net")
expect_match "ps lists it" "^$NAME-$BG +$(field "$ST" pid) .*$(field "$ST" sandbox_ip) via $(field "$ST" proxy_ip):3128" "$("$AGENTRUN" ps)"
wait "$BG" || fail "run exited $?: $(cat "$AR_TMP/bg.err")"
gone "normal exit" "$ST"
expect_match "audit NAME of a finished sandbox" "api.test.example +1 +0" "$("$AGENTRUN" audit "$NAME-$BG")"
expect_match "ps no longer lists it" "^no sandboxes|^NAME" "$("$AGENTRUN" ps | grep -v "$NAME-$BG" || true)"

# --- the proxy exits with the sandbox's init, on its own: agentrun stopped meanwhile
# (SIGSTOP), the proxy is gone before agentrun takes up its teardown ---
run_bg -- sleep 1
ST=$(state_of "$BG") || fail "no state for $BG"
kill -STOP "$BG"
PROXY=$(field "$ST" proxy_pid)
for _ in $(seq 1 100); do
	if [ ! -d "/proc/$PROXY" ] || grep -q '^State:.*Z' "/proc/$PROXY/status"; then break; fi
	sleep 0.05
done
if [ ! -d "/proc/$PROXY" ] || grep -q '^State:.*Z' "/proc/$PROXY/status"; then
	pass "the proxy exited with the sandbox's init, agentrun stopped"
else
	fail "the proxy $PROXY still runs 5 s after the sandbox's command ended"
fi
kill -CONT "$BG"
rc=0
wait "$BG" || rc=$?
expect_eq "the proxy exited with the init: the command's status" 0 "$rc"
expect_nomatch "the proxy exited with the init: not a proxy death" "proxy .*died" "$(cat "$AR_TMP/bg.err")"
gone "the proxy exited with the init" "$ST"

# --- SIGTERM to agentrun ---
run_bg -- sleep 30
ST=$(state_of "$BG") || fail "no state for $BG"
NETNS=$(readlink "/proc/$(field "$ST" pid)/ns/net")
kill -TERM "$BG"
rc=0
wait "$BG" || rc=$?
expect_eq "SIGTERM: the command's status" 143 "$rc"
gone "SIGTERM" "$ST"

# --- Ctrl-C: SIGINT to agentrun's whole process group is for the command; the proxy,
# in a process group of its own, stays up until agentrun stops it ---
setsid "$AGENTRUN" run --policy "$POLICY" -- sleep 30 >"$AR_TMP/bg.out" 2>"$AR_TMP/bg.err" &
BG=$!
on_exit "kill -9 $BG"
ST=$(state_of "$BG") || fail "no state for $BG"
NETNS=$(readlink "/proc/$(field "$ST" pid)/ns/net")
kill -INT -- "-$BG"
rc=0
wait "$BG" || rc=$?
expect_eq "Ctrl-C (SIGINT to the process group): the command's status" 130 "$rc"
expect_nomatch "Ctrl-C: not a proxy death" "proxy .*died" "$(cat "$AR_TMP/bg.err")"
gone "Ctrl-C" "$ST"

# --- the proxy dies: fail closed ---
run_bg -- sleep 30
ST=$(state_of "$BG") || fail "no state for $BG"
NETNS=$(readlink "/proc/$(field "$ST" pid)/ns/net")
kill -9 "$(field "$ST" proxy_pid)"
rc=0
wait "$BG" || rc=$?
expect_eq "proxy death: 125" 125 "$rc"
expect_match "proxy death: the message" "agentrun: the proxy \(pid [0-9]+\) died; the sandbox was killed" "$(cat "$AR_TMP/bg.err")"
gone "proxy death" "$ST"

# --- kill -9 of agentrun, then gc ---
run_bg -- sleep 30
ST=$(state_of "$BG") || fail "no state for $BG"
NETNS=$(readlink "/proc/$(field "$ST" pid)/ns/net")
kill -9 "$BG"
{ wait "$BG"; } 2>/dev/null || true
sleep 0.2 # PDEATHSIG: the proxy and the sandbox follow
expect_match "ps --all: dead" "$NAME-$BG .*dead" "$("$AGENTRUN" ps --all)"
"$AGENTRUN" gc >"$AR_TMP/gc.out"
expect_match "gc removed it" "removed [1-9][0-9]* dead sandbox" "$(cat "$AR_TMP/gc.out")"
expect_match "gc names what it removed" "^removed $NAME-$BG: its state, address, proxy and cgroups" "$(cat "$AR_TMP/gc.out")"
gone "kill -9 + gc" "$ST"
NETNS=

# --- kill -9 of agentrun started in a cgroup of the test's own (each v1 hierarchy):
# gc's sweep of its own cgroup cannot reach there, so only what the state recorded
# (every hierarchy's directory of the sandbox and of the proxy) is removed (root: a
# user has no cgroup here) ---
if [ "${AR_AS_USER:-0}" != 1 ]; then
CG_NEST="agentrun-nest-$AR_TAG"
nested=()
for h in memory pids cpu; do
	own=$(awk -F: -v h="$h" '{n = split($2, c, ","); for (i = 1; i <= n; i++) if (c[i] == h) print $3}' /proc/self/cgroup)
	d="/sys/fs/cgroup/$h${own%/}/$CG_NEST"
	if [ -n "$own" ] && mkdir "$d" 2>/dev/null; then
		nested+=("$d")
		on_exit "rmdir $d"
	fi
done
[ "${#nested[@]}" -gt 0 ] || fail "no v1 cgroup hierarchy to nest in"
# shellcheck disable=SC2016 # expanded by the inner sh
sh -c 'p=$1; shift; for d; do echo $$ >"$d/cgroup.procs" || exit 1; done; exec "$0" run --policy "$p" -- sleep 30' \
	"$AGENTRUN" "$POLICY" "${nested[@]}" >"$AR_TMP/bg.out" 2>"$AR_TMP/bg.err" &
BG=$!
on_exit "kill -9 $BG"
ST=$(state_of "$BG") || fail "no state for $BG: $(cat "$AR_TMP/bg.err")"
NETNS=$(readlink "/proc/$(field "$ST" pid)/ns/net")
want=$(grep -c "/agentrun-$NAME-proxy-$BG\$" "/proc/$(field "$ST" proxy_pid)/cgroup")
got=$(field "$ST" proxy_cgroup | tr ':' '\n' | grep -c .)
expect_eq "the state names every cgroup of the proxy (memory, pids)" "$want" "$got"
expect_eq "the proxy's own cgroups: memory and pids" 2 "$want"
want=$(grep -c "/agentrun-$NAME-$BG\$" "/proc/$(field "$ST" pid)/cgroup")
got=$(field "$ST" cgroup | tr ':' '\n' | grep -c .)
expect_eq "the state names every cgroup of the sandbox" "$want" "$got"
kill -9 "$BG"
{ wait "$BG"; } 2>/dev/null || true
sleep 0.2
"$AGENTRUN" gc >"$AR_TMP/gc.out"
expect_eq "kill -9 + gc: no cgroup left in any hierarchy" "" \
	"$(find "${nested[@]}" -mindepth 1 -type d)"
gone "kill -9 + gc (nested cgroups)" "$ST"
NETNS=
fi

# --- failed starts ---
before=$(states)
expect_status "bad mount source: 125" 125 "$AGENTRUN" run --policy "$POLICY" \
	--mount /nonexistent-$$:/x -- true
expect_match "bad mount source: the message" "nonexistent-$$" "$(cat "$AR_TMP/err")"
many=$(for i in $(seq 1 33); do printf '"10.0.%d.0/24",' "$i"; done)
cat >"$AR_TMP/bad-proxy.json" <<JSON
{"name": "$NAME", "allowed_hosts": ["api.test.example:$ORIG"],
 "proxy": {"allow_private": [${many%,}]}}
JSON
expect_status "a proxy that fails while starting: 125" 125 "$AGENTRUN" run --policy "$AR_TMP/bad-proxy.json" -- true
expect_match "the proxy's own message" "proxy: .*allow_private: more than 32" "$(cat "$AR_TMP/err")"
# out of network namespaces (a user namespace's max_net_namespaces, where root acts as
# the host's root): the sandbox's netns (its init's) or the proxy's (agentrun's), which
# ever is second to ask fails the start; the other is undone
NETNS_LIMIT="python3 $(dirname "$0")/net/netns_limit.py"
# the limit is per uid: root's counts netns_limit's own fresh netns, a user's does not
OWN=1
[ "${AR_AS_USER:-0}" != 1 ] || OWN=0
leases=$(ls "$ROOT/net" 2>/dev/null | wc -l)
expect_status "no netns left for network: none: 125" 125 $NETNS_LIMIT $OWN -- \
	"$AGENTRUN" run --no-cgroups -- true
expect_eq "no netns left for network: none: the message" \
	"agentrun: unshare (the sandbox's network namespace: user.max_net_namespaces is reached): No space left on device" \
	"$(cat "$AR_TMP/err")"
for limit in $OWN $((OWN + 1)); do
	expect_status "room for $((limit - OWN)) netns, network: proxy: 125" 125 $NETNS_LIMIT "$limit" -- \
		"$AGENTRUN" run --no-cgroups --policy "$POLICY" -- true
	expect_match "room for $((limit - OWN)) netns: the message" \
		"^agentrun: (network: unshare \(the proxy netns|unshare \(the sandbox's network namespace): user.max_net_namespaces is reached\): No space left on device$" \
		"$(cat "$AR_TMP/err")"
done
expect_eq "out of netns: no /30 left leased" "$leases" "$(ls "$ROOT/net" 2>/dev/null | wc -l)"
expect_eq "failed starts left no state" "$before" "$(states)"
expect_eq "failed starts left no cgroups" "" "$(find /sys/fs/cgroup -maxdepth 6 -type d -name "agentrun-$NAME-*" 2>/dev/null)"

# --- 10 concurrent sandboxes ---
# shellcheck disable=SC2016 # expanded inside the sandbox
for i in $(seq 1 10); do
	"$AGENTRUN" run --policy "$POLICY" -- sh -c \
		'echo "$HTTP_PROXY $(curl -sS -m 10 http://api.test.example:'"$ORIG"'/hello)"; sleep 0.5' \
		>"$AR_TMP/c.$i" 2>"$AR_TMP/c.$i.err" &
	PIDS="${PIDS:-} $!"
done
ok=0
for p in $PIDS; do wait "$p" && ok=$((ok + 1)); done
expect_eq "10 concurrent: all exit 0" 10 "$ok"
expect_eq "10 concurrent: all reach the origin" 10 "$(cat "$AR_TMP"/c.? "$AR_TMP"/c.10 | grep -c 'hello from origin$')"
expect_eq "10 concurrent: 10 distinct proxy addresses" 10 "$(cat "$AR_TMP"/c.? "$AR_TMP"/c.10 | cut -d' ' -f1 | sort -u | wc -l)"
expect_eq "10 concurrent: no state left" 0 "$(states)"
finish

#!/usr/bin/env bash
# agentrun check --name / --pid on a network: proxy sandbox: a healthy sandbox has no
# drift; an extra interface, a default route, a route past the /30, a missing proxy
# variable and another listener in the proxy netns each give one finding with its fix.
# With transparent capture (the default): healthy with its default route, DNS and
# captured listeners; a missing default route or capture rule is one finding each.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"
need_cmd nsenter
need_cmd ip
# user mode (user_net_check.sh): no cgroup is delegated to a user on this host, so every
# check also finds the three limits unenforced (docs/rootless.md#limits); those findings
# and their fix lines are set aside, the verdict and status recounted, the rest as root's
check_sans_limits() {
	local st=0 out n
	out=$("$AGENTRUN" check "$@") || st=$?
	out=$(printf '%s\n' "$out" | awk '/^DRIFT (pids|memory|cpu) limit / {skip = 1; next}
		skip && /^  fix:/ {skip = 0; next} {skip = 0; print}')
	n=$(printf '%s\n' "$out" | grep -c '^DRIFT' || true)
	if [ "$st" = 1 ] && [ "$n" = 0 ]; then st=0; fi
	printf '%s\n' "$out" | sed -E "s/: [0-9]+ drift finding\(s\)$/: $n drift finding(s)/"
	return "$st"
}
CHECK=("$AGENTRUN" check)
[ "${AR_AS_USER:-0}" != 1 ] || CHECK=(check_sans_limits)

NAME="netc-$$"
POLICY="$AR_TMP/policy.json"
cat >"$POLICY" <<JSON
{"name": "$NAME", "allowed_hosts": ["api.test.example:443"], "user": "1000",
 "proxy": {"transparent": false}}
JSON
# the command, and a second process inside without HTTP_PROXY
"$AGENTRUN" run --policy "$POLICY" -- sh -c \
	'env -u HTTP_PROXY sleep 30 & exec sleep 30' >"$AR_TMP/run.out" 2>"$AR_TMP/run.err" &
RUN=$!
on_exit "kill -TERM $RUN; wait $RUN"
SB="$NAME-$RUN"
net_state "$SB" >/dev/null || fail "no state for $SB"
INIT=$(sed -n 's/^pid=//p' "$AR_STATE/$SB/state")
sleep 0.3

expect_status "healthy sandbox, --name: no drift" 0 "${CHECK[@]}" --name "$SB"
expect_eq "healthy: the verdict" "$SB vs policy $NAME: 0 drift finding(s)" "$(cat "$AR_TMP/out")"

# a process of the sandbox without HTTP_PROXY: one finding naming it
read -ra kids <"/proc/$INIT/task/$INIT/children" || true
read -ra grandkids <"/proc/${kids[0]}/task/${kids[0]}/children" || true
lone=${grandkids[0]}
expect_status "a missing proxy variable: drift" 1 "${CHECK[@]}" --policy "$POLICY" --pid "$lone"
expect_match "a missing proxy variable: the finding" \
	"^DRIFT proxy variable HTTP_PROXY expected http://10\.254\.[0-9.]+:3128 actual unset$" \
	"$(grep DRIFT "$AR_TMP/out")"
expect_eq "a missing proxy variable: only that finding" 1 "$(grep -c DRIFT "$AR_TMP/out")"

in_sb() { nsenter -t "$INIT" -n "$@"; }
in_sb ip link add "d$$" type veth peer name "e$$"
expect_status "an extra interface: drift" 1 "${CHECK[@]}" --name "$SB"
expect_match "an extra interface: the finding" "^DRIFT network interfaces expected lo,eth0 actual .*d$$" "$(grep DRIFT "$AR_TMP/out")"
expect_match "an extra interface: the fix" "fix: remove the extra interface" "$(cat "$AR_TMP/out")"
expect_eq "an extra interface: one finding" 1 "$(grep -c DRIFT "$AR_TMP/out")"
in_sb ip link del "d$$"

in_sb ip route add default dev eth0
expect_status "a default route: drift" 1 "${CHECK[@]}" --name "$SB"
expect_eq "a default route: one finding" "DRIFT default route expected absent actual via eth0" "$(grep DRIFT "$AR_TMP/out")"
in_sb ip route del default dev eth0

in_sb ip route add 10.254.255.0/24 dev eth0
expect_status "a route past the /30: drift" 1 "${CHECK[@]}" --name "$SB"
expect_eq "a route past the /30: one finding" "DRIFT route 10.254.255.0/24 dev eth0 expected absent actual present" "$(grep DRIFT "$AR_TMP/out")"
in_sb ip route del 10.254.255.0/24 dev eth0

# drift in the proxy netns: another listener beside the proxy's
ST=$(cat "$AR_STATE/$SB/state")
pip=$(printf '%s\n' "$ST" | sed -n 's/^proxy_ip=//p')
python3 "$AR_SOURCE_DIR/tests/integration/net/peerns.py" \
	"$(printf '%s\n' "$ST" | sed -n 's/^proxy_pid=//p')" "$pip" 3128 -- \
	python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("0.0.0.0", 2222)); s.listen(1); print("ready", flush=True); time.sleep(30)' \
	>"$AR_TMP/peer.out" 2>&1 &
PEER=$!
on_exit "kill $PEER"
for _ in $(seq 1 100); do grep -qs ready "$AR_TMP/peer.out" && break; sleep 0.05; done
expect_status "a listener in the proxy netns: drift" 1 "${CHECK[@]}" --name "$SB"
expect_eq "a listener in the proxy netns: one finding" \
	"DRIFT proxy netns sockets expected tcp listen $pip:3128 actual tcp listen 0.0.0.0:2222,tcp listen $pip:3128" \
	"$(grep DRIFT "$AR_TMP/out")"
kill "$PEER"
wait "$PEER" 2>/dev/null || true

expect_status "back to healthy" 0 "${CHECK[@]}" --name "$SB"

# transparent capture
CPOL="$AR_TMP/capture.json"
cat >"$CPOL" <<JSON
{"name": "$NAME-c", "allowed_hosts": ["api.test.example:443", "ssh.test.example:22"], "user": "1000"}
JSON
"$AGENTRUN" run --policy "$CPOL" -- sleep 30 >"$AR_TMP/crun.out" 2>"$AR_TMP/crun.err" &
CRUN=$!
on_exit "kill -TERM $CRUN; wait $CRUN"
CSB="$NAME-c-$CRUN"
net_state "$CSB" >/dev/null || fail "no state for $CSB"
CINIT=$(sed -n 's/^pid=//p' "$AR_STATE/$CSB/state")
CST=$(cat "$AR_STATE/$CSB/state")
cpip=$(printf '%s\n' "$CST" | sed -n 's/^proxy_ip=//p')
cppid=$(printf '%s\n' "$CST" | sed -n 's/^proxy_pid=//p')
sleep 0.3
expect_status "capture: healthy, no drift" 0 "${CHECK[@]}" --name "$CSB"
in_proxy() { python3 "$AR_SOURCE_DIR/tests/integration/net/peerns.py" "$cppid" "$cpip" 3128 -- "$@"; }
expect_match "capture: the proxy netns listens on 22, 53, 80, 443" \
	"0\.0\.0\.0:22 .*0\.0\.0\.0:53 .*0\.0\.0\.0:80 .*0\.0\.0\.0:443 " \
	"$(in_proxy ss -Hltn | awk '{print $4}' | sort -t: -k2 -n | tr '\n' ' ')"
expect_eq "capture: the proxy netns has no route out (nothing can be forwarded)" \
	"$cpip" "$(in_proxy ip -4 route show table main | grep -v '^local' | awk '{print $NF}' | tr '\n' ' ' | sed 's/ $//')"
nsenter -t "$CINIT" -n ip route del default
expect_status "capture: no default route: drift" 1 "${CHECK[@]}" --name "$CSB"
expect_eq "capture: no default route: one finding" "DRIFT default route expected via eth0 actual absent" "$(grep DRIFT "$AR_TMP/out")"
nsenter -t "$CINIT" -n ip route add default via "$cpip" dev eth0 onlink
in_proxy ip rule del iif veth0 lookup 100
expect_status "capture: no rule: drift" 1 "${CHECK[@]}" --name "$CSB"
expect_match "capture: no rule: one finding" "^DRIFT transparent capture expected rule and routes in the proxy netns actual .+" "$(grep DRIFT "$AR_TMP/out")"
in_proxy ip rule add iif veth0 lookup 100 priority 100
expect_status "capture: back to healthy" 0 "${CHECK[@]}" --name "$CSB"
expect_status "--name of no sandbox: 2" 2 "${CHECK[@]}" --name "nope-$$"
expect_match "--name of no sandbox: the message" "agentrun: check: --name \`nope-$$\`: no such sandbox" "$(cat "$AR_TMP/err")"
finish

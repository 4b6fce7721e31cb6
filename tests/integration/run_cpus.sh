#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted on purpose: the shell inside the sandbox expands them
# agentrun run starts the sandbox's init on another CPU than its own when one is idle
# (it would otherwise wait for agentrun's CPU), and the command gets every CPU the caller had back: the
# caller's whole set, a set of one (nothing to move to), a set that leaves agentrun's
# CPU out; with network: none and network: proxy.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need "2 CPUs" [ "$(nproc)" -ge 2 ]
need taskset command -v taskset
A=$AGENTRUN
POLICY="$AR_TMP/proxy.json"
echo '{"name": "cpus-'$$'", "allowed_hosts": ["api.test.example"]}' >"$POLICY"
on_exit "rm -rf /run/agentrun/cpus-$$-* /run/agentrun/audit/cpus-$$-*"

mine=$(sed -n 's/^Cpus_allowed_list:\t//p' /proc/self/status)
inside() { "$A" "$@" -- sh -c 'sed -n "s/^Cpus_allowed_list:\t//p" /proc/self/status'; }
expect_eq "network none: the command has the caller's CPUs ($mine)" "$mine" "$(inside)"
expect_eq "network: proxy: the command has the caller's CPUs" "$mine" \
	"$(inside --policy "$POLICY" --proxy-log /dev/null)"
expect_eq "one CPU (0): the command has it, nothing moved" "0" "$(taskset -c 0 "$A" -- sh -c \
	'sed -n "s/^Cpus_allowed_list:\t//p" /proc/self/status')"
last=$(($(nproc) - 1))
expect_eq "CPUs 0 and $last: both" \
	"$(taskset -c "0,$last" sed -n 's/^Cpus_allowed_list:\t//p' /proc/self/status)" \
	"$(taskset -c "0,$last" "$A" -- sh -c 'sed -n "s/^Cpus_allowed_list:\t//p" /proc/self/status')"
# the init's own set, seen from outside while the command runs
"$A" -- sleep 2 &
BG=$!
on_exit "kill -9 $BG"
init=""
for _ in $(seq 1 100); do
	init=$(pgrep -P "$BG" | head -1) && [ -n "$init" ] && break
	sleep 0.02
done
sleep 0.3
expect_eq "the sandbox's init has the caller's CPUs again" "$mine" \
	"$(sed -n 's/^Cpus_allowed_list:\t//p' "/proc/$init/status")"
wait "$BG" || fail "the sleep sandbox exited $?"
finish

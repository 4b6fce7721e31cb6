#!/usr/bin/env bash
# The sandbox has its own /etc/hosts (localhost and its hostname) whatever its
# network (issue 23): a name the host's hosts file lists does not resolve inside
# (network none and proxy), and under transparent capture an allowed name the host's
# file pins to an address gets its synthetic address from the proxy's DNS stub instead.
# "The host" is a private mount namespace of the test's own, with a hosts file bound
# over /etc/hosts there (the machine's file is never touched). Needs root.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd unshare
need_cmd getent
A=$AGENTRUN
case $A in /*) ;; *) A=$PWD/$A ;; esac
ON="onhost-$$.test" OK="allowed-$$.test" N="hs-$$"
printf '127.0.0.1 localhost\n10.9.8.7 %s\n127.0.0.1 %s\n' "$ON" "$OK" >"$AR_TMP/hosts"
printf '{"name": "%s", "allowed_hosts": ["%s"]}\n' "$N" "$OK" >"$AR_TMP/proxy.json"
on_exit "rm -rf /run/agentrun/$N-* /run/agentrun/audit/$N-*"

# in_host CMD...: CMD in the test's "host": its own mount namespace with that hosts file
in_host() {
	unshare -m --propagation private sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' \
		sh "$AR_TMP/hosts" "$@"
}

# the host resolves both (so the checks below can fail)
expect_eq "the test's host resolves $ON" "10.9.8.7 $ON" "$(in_host getent hosts "$ON" | tr -s ' ')"
expect_eq "the test's host resolves $OK" "127.0.0.1 $OK" "$(in_host getent hosts "$OK" | tr -s ' ')"

# network none
expect_status "none: $ON does not resolve inside" 2 in_host "$A" -- getent hosts "$ON"
expect_eq "none: nothing printed" "" "$(cat "$AR_TMP/out")"
expect_status "none: localhost resolves" 0 in_host "$A" -- getent hosts localhost
expect_match "none: localhost is loopback" "^(127\.0\.0\.1|::1) +localhost" "$(head -1 "$AR_TMP/out")"
expect_status "none: its hostname resolves" 0 in_host "$A" -- getent hosts default
expect_eq "none: the hostname's address" "127.0.1.1 default" "$(tr -s ' ' <"$AR_TMP/out")"
expect_status "none: the file" 0 in_host "$A" -- cat /etc/hosts
expect_match "none: the file is agentrun's" "^# agentrun: the sandbox's own hosts file" "$(head -1 "$AR_TMP/out")"

# network proxy, transparent capture: the allowed name gets a synthetic address
expect_status "proxy: $OK resolves inside" 0 in_host "$A" --policy "$AR_TMP/proxy.json" -- getent ahostsv4 "$OK"
expect_match "proxy: $OK is synthetic (198.18.0.0/15)" "^198\.(18|19)\.[0-9]+\.[0-9]+ " "$(head -1 "$AR_TMP/out")"
expect_status "proxy: $ON does not resolve inside" 2 in_host "$A" --policy "$AR_TMP/proxy.json" -- getent hosts "$ON"
expect_status "proxy: its hostname resolves" 0 in_host "$A" --policy "$AR_TMP/proxy.json" -- getent hosts "$N"
expect_eq "proxy: the hostname's address" "127.0.1.1 $N" "$(tr -s ' ' <"$AR_TMP/out")"

# the proxy resolves the allowed name (through the test's hosts file) to loopback: the
# 403's reason names the policy's key, not a flag the user of a policy never typed
if command -v curl >/dev/null; then
	expect_status "proxy: a private address refused" 0 in_host "$A" --policy "$AR_TMP/proxy.json" -- \
		curl -s -o /dev/null -D - "http://$OK/"
	expect_match "proxy: 403" "^HTTP/1.1 403" "$(head -1 "$AR_TMP/out")"
	expect_match "proxy: the reason names proxy.allow_private" \
		"X-Agentrun-Reason: $OK resolves to 127.0.0.1, a loopback address \(allow it with the policy's proxy.allow_private\)" \
		"$(cat "$AR_TMP/out")"
elif [ "${AGENTRUN_MUST_WORK:-}" = 1 ]; then fail "curl is missing"; fi

# nothing left: no mount of the hosts file outside the sandbox, no state
expect_eq "no state left" "" "$(ls -d /run/agentrun/"$N"-* 2>/dev/null)"
finish

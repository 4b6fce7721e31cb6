#!/usr/bin/env bash
# `agentrun ps` lists every live sandbox: network: none ones (a dynamic uid, and an
# explicit user) from the record in their uid lease, a network: proxy one from its
# state, all at once; each row names the sandbox's init; none is listed once its
# agentrun is gone (normal exit, SIGTERM, kill -9), and a none sandbox leaves no state
# directory behind.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
A=$AGENTRUN
ROOT=/run/agentrun
N="psn-$$" P="psp-$$"
printf '{"name": "%s", "network": "none"}\n' "$N" >"$AR_TMP/none.json"
# a proxy sandbox needs no origin to be listed: the allowed host is never dialled
printf '{"name": "%s", "allowed_hosts": ["api.test.example:9"]}\n' "$P" >"$AR_TMP/proxy.json"
on_exit "rm -rf $ROOT/$P-* $ROOT/audit/$P-*"

# row OWNER: the ps line of the sandbox agentrun OWNER runs (waits up to 10 s).
row() {
	local _ line
	for _ in $(seq 1 200); do
		line=$("$A" ps | grep -E -- "-$1 " || true)
		[ -n "$line" ] && echo "$line" && return 0
		sleep 0.05
	done
	return 1
}
# init_of OWNER: the sandbox's init, agentrun's child.
init_of() { pgrep -P "$1" | head -1; }

"$A" --policy "$AR_TMP/none.json" -- sleep 30 &
dyn=$!
"$A" --policy "$AR_TMP/none.json" --user 61000 -- sleep 30 &
fixed=$!
"$A" --policy "$AR_TMP/proxy.json" -- sleep 30 2>"$AR_TMP/proxy.err" &
px=$!
on_exit "kill -9 $dyn $fixed $px 2>/dev/null"

r_dyn=$(row "$dyn") || fail "ps never listed the none sandbox (dynamic uid)"
r_fixed=$(row "$fixed") || fail "ps never listed the none sandbox (--user 61000)"
r_px=$(row "$px") || fail "ps never listed the proxy sandbox: $(cat "$AR_TMP/proxy.err")"
expect_match "none, dynamic uid: name, init pid, uptime, network, no counts" \
	"^$N-$dyn +$(init_of "$dyn") +0m0[0-9]s +none +- +-$" "$r_dyn"
expect_match "none, explicit user: listed the same way" \
	"^$N-$fixed +$(init_of "$fixed") +0m0[0-9]s +none +- +-$" "$r_fixed"
expect_match "proxy: its address, the listener and the counts" \
	"^$P-$px +$(init_of "$px") +0m0[0-9]s +10\.[0-9.]+ via 10\.[0-9.]+:3128 +0 +0$" "$r_px"
expect_eq "each listed once" 3 "$("$A" ps | grep -cE -- "^($N-$dyn|$N-$fixed|$P-$px) ")"
expect_eq "a none sandbox keeps no state directory" "" "$(ls -d "$ROOT/$N"-* 2>/dev/null)"

# SIGTERM: gone from ps once agentrun has exited.
kill -TERM "$dyn" "$px"
wait "$dyn" "$px" 2>/dev/null || true
expect_eq "SIGTERM: neither is listed" "" "$("$A" ps | grep -E -- "^($N-$dyn|$P-$px) " || true)"
expect_eq "SIGTERM: the proxy sandbox's state is gone" "" "$(ls -d "$ROOT/$P-$px" 2>/dev/null)"
# kill -9: nothing could run agentrun's cleanup; the record names a dead agentrun.
kill -9 "$fixed"
wait "$fixed" 2>/dev/null || true
expect_eq "kill -9: not listed" "" "$("$A" ps | grep -E -- "^$N-$fixed " || true)"

# A normal exit, then the same again with ps --all (which shows dead proxy state).
"$A" --policy "$AR_TMP/none.json" -- true
expect_eq "after exit: none of this test's sandboxes is listed, even with --all" "" \
	"$("$A" ps --all | grep -E -- "^($N|$P)-" || true)"
finish

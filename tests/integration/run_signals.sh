#!/usr/bin/env bash
# A supervisor's signal to agentrun is never read as success: SIGTERM, SIGINT and SIGHUP
# sent at many points of the start (delays growing past the moment the command runs),
# with network none and network: proxy, each end with 128+N within seconds (the command
# is sleep 30), and nothing of any run is left (state, cgroups: a cgroup with a process in it cannot go).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
NAME="rsig-$$"
POLICY="$AR_TMP/web.json"
printf '{"name": "%s", "allowed_hosts": ["api.example.com"]}\n' "$NAME" >"$POLICY"
NONE="$AR_TMP/none.json"
printf '{"name": "%s", "network": "none"}\n' "$NAME" >"$NONE"
on_exit "rm -rf $AR_STATE/$NAME-*"
PROBE="$(dirname "$0")/run/signal_start.py"

# the whole start takes 10-20 ms here: 40 runs 0.5 ms apart cover it and beyond
for sig in SIGTERM SIGINT SIGHUP; do
	if out=$(python3 "$PROBE" "$AGENTRUN" "$sig" 40 0.5 --policy "$NONE"); then
		pass "network none: $out"
	else fail "network none: $out"; fi
done
for sig in SIGTERM SIGINT; do
	if out=$(python3 "$PROBE" "$AGENTRUN" "$sig" 40 0.5 --policy "$POLICY"); then
		pass "network proxy: $out"
	else fail "network proxy: $out"; fi
done

# nothing left: the runs above are all reaped; what a killed agentrun left is gc's
"$AGENTRUN" gc >/dev/null 2>&1 || true
expect_eq "no state left" "" "$(find "$AR_STATE" -maxdepth 1 -name "$NAME-*" 2>/dev/null)"
left=$(find /sys/fs/cgroup -maxdepth 3 -type d -name "agentrun-$NAME-*" 2>/dev/null || true)
expect_eq "no cgroup left" "" "$left"
finish

#!/usr/bin/env bash
# Busy polling (docs/proxy.md): by default the proxy polls briefly before it sleeps, and a
# kept-alive exchange with a fast origin (proxy/quick.py) is answered by those polls (the summary says how
# many); an idle proxy does not poll (no CPU spent); --busy-poll 0 (run:
# --proxy-busy-poll 0) never polls; a value out of range is refused, naming the flag.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"

ORIG=$(free_port)
python3 "$PX_DIR/quick.py" "$ORIG" >"$AR_TMP/quick.log" 2>&1 &
on_exit "kill $!"
wait_file_has "$AR_TMP/quick.log" ready
URL="http://api.test.example:$ORIG/?[1-300]"
# cpu_ticks PID: its user + system time so far, in clock ticks
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# burst NAME PORT [ARGS...]: a proxy, 300 kept-alive GETs through it on one connection,
# then a second of nothing (its CPU ticks in IDLE), and stops the proxy
burst() {
	local name=$1 port=$2 t0
	shift 2
	start_proxy "$name" "$port" --allow "api.test.example:$ORIG" --allow-private 127.0.0.1 "$@"
	curl -sS -m 60 --fail -x "http://127.0.0.1:$port" -o /dev/null "$URL" || fail "$name: curl failed"
	t0=$(cpu_ticks "$PX_PID")
	sleep 1
	IDLE=$(($(cpu_ticks "$PX_PID") - t0))
	stop_proxy "$PX_PID"
}

P1=$(free_port)
burst default "$P1"
expect_eq "the default proxy stopped cleanly" 0 "$PX_STATUS"
expect_match "300 requests served" "stopped: 300 request\(s\), 300 allowed" "$(cat "$AR_TMP/default.err")"
line=$(grep 'busy polling' "$AR_TMP/default.err" || true)
echo "info: $line"
expect_match "by default it polls, up to 100 us" "^agentrun proxy: busy polling \(up to 100 us\) answered [0-9]+ of [1-9][0-9]* wait\(s\)$" "$line"
# idle, it sleeps: a proxy still polling would spend the whole second (100 ticks)
[ "$IDLE" -le 5 ] || fail "an idle proxy used $IDLE ticks of CPU in 1 s"

P2=$(free_port)
burst off "$P2" --busy-poll 0
expect_match "--busy-poll 0 serves all the same" "stopped: 300 request\(s\), 300 allowed" "$(cat "$AR_TMP/off.err")"
expect_eq "--busy-poll 0 never polls" "" "$(grep 'busy polling' "$AR_TMP/off.err" || true)"

P3=$(free_port)
burst long "$P3" --busy-poll 5000
# python's answers take 50-300 us, often more than the default's 100: with 5 ms most
# waits end in a poll that finds the answer
line=$(grep 'busy polling' "$AR_TMP/long.err" || true)
echo "info: $line"
caught=$(sed -n 's/.*answered \([0-9]*\) of.*/\1/p' <<<"$line")
[ "${caught:-0}" -ge 100 ] || fail "--busy-poll 5000: fewer than 100 of 300 exchanges answered by a poll: $line"
[ "$IDLE" -le 5 ] || fail "an idle proxy (--busy-poll 5000) used $IDLE ticks of CPU in 1 s"

for bad in -1 10001 1.5 x ""; do
	expect_status "--busy-poll '$bad' is refused" 2 "$AGENTRUN" proxy --listen 127.0.0.1:0 --allow a.example --busy-poll "$bad"
	expect_match "names the flag" "^agentrun: proxy: --busy-poll \`$bad\`: expected 0 \(never\) to 10000 microseconds" "$(cat "$AR_TMP/err")"
done

# run: the sandbox's proxy polls by default and not with --proxy-busy-poll 0; its
# summary goes to --proxy-log when the sandbox ends
cat >"$AR_TMP/policy.json" <<JSON
{"name": "bpoll-$$", "allowed_hosts": ["api.test.example:$ORIG"],
 "proxy": {"allow_private": ["127.0.0.1"], "transparent": false}}
JSON
for mode in default 0; do
	args=()
	[ "$mode" = default ] || args=(--proxy-busy-poll "$mode")
	expect_status "run with the proxy's busy polling $mode" 0 "$AGENTRUN" run --policy "$AR_TMP/policy.json" \
		--proxy-log "$AR_TMP/run-$mode.log" "${args[@]}" -- curl -sS -m 60 --fail -o /dev/null "$URL"
	expect_match "run's proxy served the 300 ($mode)" "stopped: 300 request\(s\), 300 allowed" "$(cat "$AR_TMP/run-$mode.log")"
done
echo "info: run: $(grep "busy polling" "$AR_TMP/run-default.log")"
expect_match "run's proxy polls by default" "busy polling \(up to 100 us\) answered [0-9]+ of [1-9]" "$(cat "$AR_TMP/run-default.log")"
expect_eq "run --proxy-busy-poll 0: its proxy never polls" "" "$(grep 'busy polling' "$AR_TMP/run-0.log" || true)"
expect_status "run --proxy-busy-poll out of range" 125 "$AGENTRUN" run --proxy-busy-poll 20000 -- true
expect_match "names the flag" "^agentrun: --proxy-busy-poll 20000: expected 0 \(never\) to 10000 microseconds" "$(cat "$AR_TMP/err")"
finish

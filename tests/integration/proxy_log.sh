#!/usr/bin/env bash
# agentrun proxy, the log never blocks: with stderr on a full pipe nobody reads, 400
# requests (allowed and denied, one connection each) are still served within 2 s each
# and every one is audited; when the reader comes back it gets whole lines, a note of
# how many were dropped, and the summary.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"

ORIG=$(free_port)
PP=$(free_port)
start_origin "$ORIG"
python3 "$PX_DIR/logfull.py" "$AGENTRUN" "$PP" "$AR_TMP/audit" "api.test.example:$ORIG" 400 -- \
	--allow "api.test.example:$ORIG" --allow-private 127.0.0.0/8 >"$AR_TMP/out" 2>&1 || true
out=$(cat "$AR_TMP/out")
expect_match "every request served while the log pipe was full" "^served 400/400" "$out"
expect_match "every request audited" "audited 400" "$out"
expect_match "the reader gets the start line" "agentrun proxy listening on 127.0.0.1:$PP" "$out"
expect_match "dropped lines are counted" "agentrun proxy: [1-9][0-9]* log line\(s\) dropped" "$out"
expect_match "the summary arrives" "agentrun proxy stopped: 400 request\(s\), 200 allowed, 0 failed, 200 denied" "$out"
expect_eq "only whole lines" "" "$(sed -n '/^log:$/,$p' "$AR_TMP/out" | tail -n +2 | grep -Ev '^(agentrun proxy|GET )' | head -3)"
finish

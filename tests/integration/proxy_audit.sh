#!/usr/bin/env bash
# agentrun proxy, writers that never block the loop: an audit FIFO nobody reads (lines
# are dropped and counted, requests keep being served, the FIFO holds whole lines), a
# regular audit file (every line kept), and accept out of descriptors (one warning per
# interval through the log queue, connections already open and new ones served).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"
need_cmd prlimit

N=1000
# --- an audit FIFO with a reader that never reads ---
PP=$(free_port)
mkfifo "$AR_TMP/fifo.audit"
exec 3<>"$AR_TMP/fifo.audit"
start_proxy fifo "$PP"
expect_eq "every request served while the audit FIFO was full" "served $N/$N" \
	"$(timeout 60 python3 "$PX_DIR/hold.py" requests "$PP" "$N")"
stop_proxy "$PX_PID"
expect_eq "the proxy exits 0" 0 "$PX_STATUS"
expect_match "the summary counts the dropped audit lines" \
	"agentrun proxy: [1-9][0-9]* audit line\(s\) dropped in all" "$(cat "$AR_TMP/fifo.err")"
expect_match "... and every request" "stopped: $N request\(s\), 0 allowed, 0 failed, $N denied" "$(cat "$AR_TMP/fifo.err")"
got=$(python3 -c '
import json, os
os.set_blocking(3, False)
data = b""
try:
    while True:
        c = os.read(3, 65536)
        if not c:
            break
        data += c
except BlockingIOError:
    pass
lines = data.decode().split("\n")
assert lines[-1] == "", "a torn last line"
print(sum(1 for l in lines[:-1] if json.loads(l)["status"] == 403))')
expect_match "the FIFO holds whole JSON lines" "^[1-9][0-9]*$" "$got"
expect_eq "... fewer than the requests (the rest were counted as dropped)" 1 "$((got < N))"
exec 3<&-

# --- a regular audit file keeps every line ---
PP=$(free_port)
start_proxy file "$PP"
expect_eq "every request served (audit file)" "served $N/$N" \
	"$(timeout 60 python3 "$PX_DIR/hold.py" requests "$PP" "$N")"
stop_proxy "$PX_PID"
expect_eq "every request audited in the file" "$N" "$(audit_valid "$AR_TMP/file.audit")"
expect_eq "nothing dropped" "" "$(grep 'dropped' "$AR_TMP/file.err")"

# --- accept out of descriptors ---
PP=$(free_port)
prlimit --nofile=48:48 "$AGENTRUN" proxy --listen "127.0.0.1:$PP" --dns-files-only \
	2>"$AR_TMP/emfile.err" &
EPID=$!
on_exit "kill -9 $EPID"
wait_file_has "$AR_TMP/emfile.err" "listening on"
out=$(timeout 30 python3 "$PX_DIR/hold.py" fds "$PP" 80 1.5)
expect_match "a connection open before the limit is still served" "held: 403" "$out"
expect_match "a new connection is served once descriptors are free" "fresh: 403" "$out"
expect_eq "one warning in 1.5 s of pauses every 100 ms" 1 \
	"$(grep -c 'accept: Too many open files; new connections wait' "$AR_TMP/emfile.err")"
stop_proxy "$EPID"
expect_eq "the proxy exits 0 after running out of descriptors" 0 "$PX_STATUS"
finish

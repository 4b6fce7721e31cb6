# shellcheck shell=bash
# Shared by tests/integration/proxy_*.sh (source it after tests/lib.sh).
# Re-runs the test in a private mount namespace whose /etc/hosts names the test hosts,
# so nothing is looked up in DNS (the proxy also runs with --dns-files-only). All
# traffic stays on 127.0.0.1 / ::1.
need_root
need_cmd unshare
need_cmd curl
need_cmd python3
if [ "${AR_PROXY_NS:-}" != 1 ]; then
	trap - EXIT
	rm -rf "$AR_TMP"
	exec unshare -m --propagation private env AR_PROXY_NS=1 bash "$0" "$@"
fi
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY no_proxy NO_PROXY all_proxy ALL_PROXY
PX_DIR="$AR_SOURCE_DIR/tests/integration/proxy"

cat >"$AR_TMP/hosts" <<'HOSTS'
127.0.0.1 localhost
::1 localhost ip6-localhost
127.0.0.1 api.test.example www.test.example test.example evil-test.example
127.0.0.1 other.test.example deep.www.test.example wwwtest.example
127.0.0.2 private.test.example
127.0.0.3 multi.test.example
127.0.0.1 multi.test.example
::1 v6.test.example
HOSTS
mount --bind "$AR_TMP/hosts" /etc/hosts

# wait_file_has FILE TEXT [TRIES]: until FILE contains TEXT (50 ms per try).
wait_file_has() {
	local _
	for _ in $(seq 1 "${3:-200}"); do
		if grep -qF -- "$2" "$1" 2>/dev/null; then return 0; fi
		sleep 0.05
	done
	echo "timed out waiting for [$2] in $1:" >&2
	cat "$1" >&2 || true
	return 1
}

# start_origin PORT [BIND]
start_origin() {
	python3 "$PX_DIR/origin.py" "$1" "${2:-127.0.0.1}" >"$AR_TMP/origin.$1.log" 2>&1 &
	on_exit "kill $!"
	wait_file_has "$AR_TMP/origin.$1.log" ready
}

start_echo() {
	python3 "$PX_DIR/echo.py" "$1" >"$AR_TMP/echo.$1.log" 2>&1 &
	on_exit "kill $!"
	wait_file_has "$AR_TMP/echo.$1.log" ready
}

# start_proxy NAME PORT ARGS...: sets PX_PID; stderr in $AR_TMP/NAME.err, audit in
# $AR_TMP/NAME.audit.
start_proxy() {
	local name=$1 port=$2
	shift 2
	"$AGENTRUN" proxy --listen "127.0.0.1:$port" --dns-files-only \
		--audit "$AR_TMP/$name.audit" "$@" 2>"$AR_TMP/$name.err" &
	PX_PID=$!
	on_exit "kill -9 $PX_PID"
	wait_file_has "$AR_TMP/$name.err" "listening on"
}

# stop_proxy PID: SIGTERM, and its exit status in PX_STATUS.
# shellcheck disable=SC2034 # PX_STATUS is read by the tests
stop_proxy() {
	PX_STATUS=0
	kill -TERM "$1" || true
	wait "$1" || PX_STATUS=$?
}

# audit_valid FILE: every line is a JSON object with the audit fields; prints the count.
audit_valid() {
	python3 - "$1" <<'PY'
import json, sys
need = ["at", "id", "method", "host", "port", "addr", "allowed", "status", "reason", "rule",
        "bytes_out", "bytes_in", "duration_ms"]
data = open(sys.argv[1], "rb").read()
if data and not data.endswith(b"\n"):
    sys.exit("torn last line")
n = 0
for line in data.splitlines():
    obj = json.loads(line)
    missing = [k for k in need if k not in obj]
    if missing:
        sys.exit("missing %s in %s" % (missing, line))
    n += 1
print(n)
PY
}

# audit_get FILE ID_SELECTOR FIELD: a field of the audit line selected by a Python
# expression over `e` (the last matching line), e.g. 'e["path"]' is not recorded,
# so select on host/port/method/status.
audit_field() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, sys
sel, field = sys.argv[2], sys.argv[3]
hit = None
for line in open(sys.argv[1]):
    e = json.loads(line)
    if eval(sel, {}, {"e": e}):
        hit = e
v = None if hit is None else hit[field]
print("null" if v is None else (str(v).lower() if isinstance(v, bool) else v))
PY
}

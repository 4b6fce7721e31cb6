#!/usr/bin/env bash
# agentrun proxy, CONNECT: allowed and denied tunnels, TLS end to end through a tunnel,
# 200 concurrent tunnels with byte-exact payloads and byte-exact audit counts, the IPv6
# listener, the idle timeout, SIGHUP reload of --policy with a tunnel open, the audit
# after kill -9 under load, and the SIGTERM summary.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"
need_cmd openssl

ECHO=$(free_port)
ORIG=$(free_port)
TLS=$(free_port)
PP=$(free_port)
P6=$(free_port)
start_echo "$ECHO"
start_origin "$ORIG"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=api.test.example \
	-addext subjectAltName=DNS:api.test.example -keyout "$AR_TMP/key.pem" \
	-out "$AR_TMP/cert.pem" >/dev/null 2>&1
openssl s_server -accept "127.0.0.1:$TLS" -cert "$AR_TMP/cert.pem" -key "$AR_TMP/key.pem" \
	-www -quiet >/dev/null 2>&1 &
on_exit "kill $!"
wait_port "$TLS"

POLICY="$AR_TMP/policy.json"
cat >"$POLICY" <<JSON
{"name": "tunnels", "allowed_hosts": ["api.test.example:$ECHO", "api.test.example:$ORIG",
 "api.test.example:$TLS", "test.example:$ECHO", "test.example:$ORIG"],
 "proxy": {"max_bytes_out": {"Test.Example.": 100000}}}
JSON
start_proxy main "$PP" --listen "[::1]:$P6" --policy "$POLICY" --allow-private 127.0.0.0/8
MPID=$PX_PID
AUD="$AR_TMP/main.audit"
px() { curl -sS --max-time 10 -x "http://127.0.0.1:$PP" "$@"; }
expect_match "start line names listeners and rules" "^agentrun proxy listening on 127.0.0.1:$PP, \[::1\]:$P6; 5 rule\(s\): api.test.example:$ECHO" "$(head -n 1 "$AR_TMP/main.err")"

# --- single tunnels ---
expect_eq "CONNECT tunnel to an HTTP origin" "hello from origin" "$(px -p "http://api.test.example:$ORIG/hello")"
expect_eq "tunnel audited" "CONNECT 200 true 127.0.0.1" \
	"$(for f in method status allowed addr; do audit_field "$AUD" "e['port'] == $ORIG" $f; done | tr '\n' ' ' | sed 's/ $//')"
px --cacert "$AR_TMP/cert.pem" -o "$AR_TMP/tls" "https://api.test.example:$TLS/" || true
got=$(head -c 2000 "$AR_TMP/tls")
expect_match "TLS end to end through the tunnel" "s_server" "$got"
expect_eq "IPv6 listener" "hello from origin" "$(curl -sS --max-time 10 -x "http://[::1]:$P6" -p "http://api.test.example:$ORIG/hello")"
expect_status "CONNECT denied: curl exit 56" 56 curl -sS --max-time 10 -x "http://127.0.0.1:$PP" -p "http://other.test.example:$ORIG/hello"
expect_match "curl saw the 403" "403" "$(cat "$AR_TMP/err")"
expect_eq "denied CONNECT audited" "CONNECT 403 false null" \
	"$(for f in method status allowed addr; do audit_field "$AUD" 'e["host"] == "other.test.example"' $f; done | tr '\n' ' ' | sed 's/ $//')"
expect_status "CONNECT to a port not in the list" 56 curl -sS --max-time 10 -x "http://127.0.0.1:$PP" -p "http://api.test.example:$P6/"

# --- 200 concurrent tunnels, byte-exact both ways ---
SIZE=262144
before=$(audit_valid "$AUD")
if python3 "$PX_DIR/tunnels.py" "$PP" "api.test.example:$ECHO" 200 "$SIZE" >"$AR_TMP/t200" 2>"$AR_TMP/t200.err"; then
	pass "200 tunnels: sha256 equal both ways"
else
	fail "200 tunnels: $(head -c 600 "$AR_TMP/t200.err")"
fi
expect_eq "200 tunnels reported" 200 "$(wc -l <"$AR_TMP/t200")"
sleep 0.3
expect_eq "200 audit lines added" "$((before + 200))" "$(audit_valid "$AUD")"
expect_eq "each tunnel audited with exact byte counts" 200 \
	"$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if (e:=json.loads(l))["port"] == int(sys.argv[2]) and e["bytes_out"] == int(sys.argv[3]) and e["bytes_in"] == int(sys.argv[3]) and e["status"] == 200))' "$AUD" "$ECHO" "$SIZE")"
expect_match "stderr line for a tunnel" "^CONNECT api.test.example:$ECHO ALLOW 200 out=$SIZE in=$SIZE [0-9]+ms matches rule api.test.example:$ECHO$" "$(cat "$AR_TMP/main.err")"

# --- proxy.max_bytes_out: 100000 bytes to test.example over all its requests ---
if python3 "$PX_DIR/tunnels.py" "$PP" "test.example:$ECHO" 1 60000 >/dev/null 2>&1; then
	pass "within budget"
else
	fail "60000 bytes within a 100000 budget"
fi
if python3 "$PX_DIR/tunnels.py" "$PP" "test.example:$ECHO" 1 60000 >/dev/null 2>&1; then
	fail "budget not enforced"
else
	pass "tunnel past the budget cut"
fi
sleep 0.2
expect_eq "budget cut audited as 413 with exactly the remaining bytes" "413 40000" \
	"$(audit_field "$AUD" 'e["host"] == "test.example"' status) $(audit_field "$AUD" 'e["host"] == "test.example"' bytes_out)"
expect_match "413 reason" "byte budget exceeded: test.example may receive 100000 bytes" \
	"$(audit_field "$AUD" 'e["host"] == "test.example"' reason)"
expect_eq "spent budget refuses plain HTTP too" 413 \
	"$(px -o /dev/null -w '%{http_code}' "http://test.example:$ORIG/hello")"

# --- SIGHUP: new rules apply, open tunnels keep working ---
expect_eq "before reload: www denied" 403 "$(px -o /dev/null -w '%{http_code}' "http://www.test.example:$ORIG/hello")"
python3 "$PX_DIR/tunnels.py" "$PP" "api.test.example:$ECHO" 5 65536 3 >"$AR_TMP/held" 2>&1 &
HELD=$!
sleep 1
cat >"$POLICY" <<JSON
{"name": "tunnels", "allowed_hosts": ["www.test.example:$ORIG", "api.test.example:$ORIG"]}
JSON
kill -HUP "$MPID"
wait_file_has "$AR_TMP/main.err" "agentrun proxy reloaded" 100
expect_eq "after reload: new rule allows www" "hello from origin" "$(px "http://www.test.example:$ORIG/hello")"
expect_status "after reload: removed rule denies new tunnels" 56 curl -sS --max-time 10 -x "http://127.0.0.1:$PP" -p "http://api.test.example:$ECHO/"
if wait "$HELD"; then pass "tunnels opened before the reload completed byte-exact"; else fail "held tunnels: $(cat "$AR_TMP/held")"; fi
echo '{"allowed_hosts": [' >"$POLICY"
kill -HUP "$MPID"
wait_file_has "$AR_TMP/main.err" "keeping the previous rules" 100
expect_eq "a broken policy keeps the old rules" "hello from origin" "$(px "http://www.test.example:$ORIG/hello")"
kill -0 "$MPID" && pass "proxy survived the broken policy"

# --- proxy.sni: a second proxy with "require" ---
SP="$AR_TMP/sni.json"
cat >"$SP" <<JSON
{"name": "sni", "allowed_hosts": ["api.test.example:$TLS", "127.0.0.1:$TLS", "api.test.example:$ORIG"],
 "proxy": {"sni": "require"}}
JSON
PS=$(free_port)
start_proxy sni "$PS" --policy "$SP" --allow-private 127.0.0.0/8
SNIPID=$PX_PID
tls() { python3 "$PX_DIR/tlsclient.py" "$PS" "$@"; }
expect_match "sni require: matching name passes" "^ok [1-9]" "$(tls "api.test.example:$TLS" API.test.example.)"
expect_eq "sni require: other name cut" closed "$(tls "api.test.example:$TLS" www.test.example)"
expect_eq "sni require: no name cut" closed "$(tls "api.test.example:$TLS" -)"
expect_eq "sni require: IP target cannot match" closed "$(tls "127.0.0.1:$TLS" api.test.example)"
expect_status "sni require: plain bytes in a tunnel cut" 52 curl -sS --max-time 10 -x "http://127.0.0.1:$PS" -p "http://api.test.example:$ORIG/hello"
sleep 0.2
expect_eq "sni refusals audited as 421" 4 \
	"$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["status"] == 421))' "$AR_TMP/sni.audit")"
expect_match "421 reason" "SNI www.test.example does not match CONNECT api.test.example" "$(cat "$AR_TMP/sni.err")"
expect_eq "421 forwarded nothing" 0 "$(audit_field "$AR_TMP/sni.audit" 'e["status"] == 421' bytes_out)"
stop_proxy "$SNIPID"

# --- SIGTERM summary ---
n=$(audit_valid "$AUD")
stop_proxy "$MPID"
expect_eq "SIGTERM exits 0" 0 "$PX_STATUS"
# counted as agentrun audit counts: failed = allowed but answered 413/502/503/504
read -r allowed failed < <(python3 -c '
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
f = sum(1 for r in rs if r["allowed"] and r["status"] in (413, 502, 503, 504))
print(sum(1 for r in rs if r["allowed"]) - f, f)' "$AUD")
bytes=$(python3 -c 'import json,sys; print(sum(json.loads(l)["bytes_out"] for l in open(sys.argv[1])))' "$AUD")
expect_eq "summary line" "agentrun proxy stopped: $n request(s), $allowed allowed, $failed failed, $((n - allowed - failed)) denied, $bytes bytes out" \
	"$(tail -n 1 "$AR_TMP/main.err")"

# --- idle timeout, then kill -9 under load ---
PL=$(free_port)
start_proxy load "$PL" --allow "api.test.example:$ECHO" --allow "api.test.example:$ORIG" \
	--allow-private 127.0.0.0/8 --idle-timeout 1
LPID=$PX_PID
idle=$(python3 - "$PL" "api.test.example:$ECHO" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"CONNECT %s HTTP/1.1\r\n\r\n" % sys.argv[2].encode())
s.settimeout(5)
s.recv(4096)
t = time.time()
print("eof" if s.recv(4096) == b"" else "data", round(time.time() - t))
PY
)
expect_match "idle tunnel closed after --idle-timeout" "^eof [12]$" "$idle"
python3 "$PX_DIR/tunnels.py" "$PL" "api.test.example:$ECHO" 100 2000000 >/dev/null 2>&1 &
on_exit "kill $!"
for _ in $(seq 1 30); do
	curl -s --max-time 3 -x "http://127.0.0.1:$PL" "http://api.test.example:$ORIG/hello" >/dev/null &
	on_exit "kill $!"
done
sleep 1.2
kill -9 "$LPID"
wait "$LPID" 2>/dev/null || true
if lines=$(audit_valid "$AR_TMP/load.audit"); then
	pass "audit parses line by line after kill -9 ($lines lines)"
else
	fail "audit torn after kill -9"
fi
if [ "${lines:-0}" -gt 0 ]; then pass "audit had lines under load"; else fail "no audit lines under load"; fi
finish

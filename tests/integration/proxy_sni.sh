#!/usr/bin/env bash
# agentrun proxy, proxy.sni: the shapes a hostile client used to get a foreign server
# name through a CONNECT to an allowed host under `check` (a ClientHello over 16 KiB, an
# empty record first, a hello in 1-byte records, 20 KiB of them) now get a verdict within
# 1 s (crafted bytes to an echo origin: "passed" means forwarded, "refused" means cut
# with nothing forwarded); openssl s_client with good, foreign and missing names; check
# is the default; require refuses what is not TLS; a hello that never completes is cut
# after the header timeout.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"
need_cmd openssl

ECHO=$(free_port)
TLS=$(free_port)
PC=$(free_port)
PR=$(free_port)
start_echo "$ECHO"
BANNER=$(free_port)
python3 "$PX_DIR/echo.py" "$BANNER" "220 banner" >"$AR_TMP/banner.log" 2>&1 &
on_exit "kill $!"
wait_file_has "$AR_TMP/banner.log" ready
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=api.test.example \
	-keyout "$AR_TMP/key.pem" -out "$AR_TMP/cert.pem" >/dev/null 2>&1
openssl s_server -accept "127.0.0.1:$TLS" -cert "$AR_TMP/cert.pem" -key "$AR_TMP/key.pem" \
	-www -quiet >/dev/null 2>&1 &
on_exit "kill $!"
wait_port "$TLS"

# no --sni: check is the default
start_proxy check "$PC" --allow "api.test.example:$ECHO" --allow "api.test.example:$BANNER" --allow "api.test.example:$TLS" --allow "127.0.0.1:$TLS" \
	--allow-private 127.0.0.0/8 --header-timeout 0.5
start_proxy require "$PR" --allow "api.test.example:$ECHO" --allow-private 127.0.0.0/8 --sni require

shape() { python3 "$PX_DIR/sni.py" "$1" "api.test.example:$ECHO" "$2" "$3" "${4:-1}"; }
verdict() { # NAME PORT SHAPE SNI WANT
	local got
	got=$(shape "$2" "$3" "$4")
	expect_eq "$1" "$5" "${got%% *}"
}
for s in hello empty-first bytewise big big-bytewise; do
	verdict "check, $s, foreign SNI: refused within 1 s" "$PC" $s evil.example refused
done
verdict "check, hello, no SNI: refused" "$PC" hello - refused
verdict "check, hello, matching SNI: forwarded" "$PC" hello api.test.example passed
verdict "check, 1-byte records, matching SNI: reassembled and forwarded" "$PC" bytewise API.Test.Example. passed
verdict "check, 20 KiB hello, matching SNI: forwarded" "$PC" big api.test.example passed
verdict "check, 20 KiB hello in 1-byte records, matching SNI: forwarded" "$PC" big-bytewise api.test.example passed
verdict "check, empty record first, matching SNI: still refused" "$PC" empty-first api.test.example refused
verdict "check, not TLS: forwarded" "$PC" plain - passed
verdict "require, not TLS: refused" "$PR" plain - refused
verdict "require, matching SNI: forwarded" "$PR" hello api.test.example passed
got=$(python3 "$PX_DIR/sni.py" "$PC" "api.test.example:$BANNER" server-first - 3)
expect_eq "check, server-first protocol: the banner comes through, then the client's bytes" passed "${got%% *}"
got=$(shape "$PC" truncated evil.example 3)
expect_eq "check, half a hello then silence: cut after the header timeout" refused "${got%% *}"
expect_match "... within about 0.5 s" "^refused 0\.[4-9]" "$got"

# openssl s_client through the tunnel (-proxy sends the CONNECT)
ossl() { # PROXY_PORT TARGET ARGS...
	local p=$1 t=$2
	shift 2
	echo | timeout 5 openssl s_client -proxy "127.0.0.1:$p" -connect "$t" "$@" 2>&1 || true
}
expect_match "s_client, matching SNI: handshake done" "Verification|Server certificate" \
	"$(ossl "$PC" "api.test.example:$TLS" -servername api.test.example)"
expect_nomatch "s_client, foreign SNI: no certificate" "Server certificate" \
	"$(ossl "$PC" "api.test.example:$TLS" -servername evil.example)"
expect_nomatch "s_client, no SNI: no certificate" "Server certificate" \
	"$(ossl "$PC" "api.test.example:$TLS" -noservername)"
expect_match "s_client to an IP literal without SNI passes check" "Server certificate" \
	"$(ossl "$PC" "127.0.0.1:$TLS" -noservername)"

sleep 0.2
AUD="$AR_TMP/check.audit"
expect_eq "refusals audited as 421, not allowed, nothing forwarded" "" \
	"$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["status"] == 421 and (e["allowed"] or e["bytes_out"]): print(l)' "$AUD")"
expect_eq "421 count" 10 \
	"$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["status"] == 421))' "$AUD")"
ERR="$AR_TMP/check.err"
expect_match "mismatch reason" "SNI evil.example does not match CONNECT api.test.example" "$(cat "$ERR")"
expect_match "no-SNI reason" "ClientHello for CONNECT api.test.example has no SNI" "$(cat "$ERR")"
expect_match "empty record reason" "malformed ClientHello for CONNECT api.test.example: empty handshake record" "$(cat "$ERR")"
expect_match "timeout reason" "no complete ClientHello for CONNECT api.test.example within 500 ms" "$(cat "$ERR")"
expect_match "require reason" "tunnel to CONNECT api.test.example is not TLS" "$(cat "$AR_TMP/require.err")"
finish

#!/usr/bin/env bash
# network: proxy, from inside the sandbox: the proxy variables, an allowed origin on the
# host's 127.0.0.1 through the proxy (GET and CONNECT), a denied host gets 403 with
# its reason, no route past the /30 (curl --noproxy, TCP and UDP sockets:
# ENETUNREACH), the proxy netns answers on no other port, the host's loopback
# services and abstract unix sockets are out of reach, the audit holds exactly the
# attempts made, the host netns gains nothing while the sandbox runs, and a SIGHUP to the
# proxy is refused in its log (run's proxy has no policy file to re-read).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"
need_cmd ip
mkdir -m 755 "$AR_TMP/bin"
install -m 644 "$AR_SOURCE_DIR/tests/integration/net/netprobe.py" "$AR_TMP/bin/"
PROBE=/ar-bin/netprobe.py

ORIG=$(free_port)
start_origin "$ORIG"
NAME="netp-$$"
POLICY="$AR_TMP/policy.json"
cat >"$POLICY" <<JSON
{"name": "$NAME", "allowed_hosts": ["api.test.example:$ORIG"],
 "proxy": {"allow_private": ["127.0.0.1"], "transparent": false}}
JSON
python3 "$AR_TMP/bin/netprobe.py" serve-abstract "agentrun-test-$$" >"$AR_TMP/abstract.log" 2>&1 &
on_exit "kill $!"
wait_file_has "$AR_TMP/abstract.log" ready

host_net() { ip -o link show | sed 's/@.*//; s/ state.*//' | sort; ip -o addr; ip route; ip rule; }
host_net >"$AR_TMP/host.before"

# The sandbox's side, one line per check; $1 = the origin port, $2 = the probe.
# shellcheck disable=SC2016 # expanded inside the sandbox
INSIDE='
o=$1 probe=$2
echo "env=$HTTP_PROXY|$HTTPS_PROXY|$http_proxy|$https_proxy|$NO_PROXY|$no_proxy"
px=${HTTP_PROXY#http://}; pip=${px%:*}; pport=${px##*:}
echo "links=$(ip -o link show | sed "s/@.*//" | cut -d" " -f2 | tr -d : | sort | tr "\n" " ")"
echo "routes=$(ip route | tr "\n" ";")"
echo "ipv6=$(ip -6 addr show dev eth0 | grep -c inet6)"
echo "get=$(curl -sS -m 10 http://api.test.example:$o/hello)"
echo "connect=$(curl -sS -m 10 -p http://api.test.example:$o/hello)"
echo "denied=$(curl -sS -m 10 -o /dev/null -w %{http_code} http://denied.test.example:$o/)"
echo "denied_reason=$(curl -sS -m 10 -D - -o /dev/null http://denied.test.example:$o/ | tr -d "\r" | sed -n "s/^X-Agentrun-Reason: //Ip")"
curl -sS -m 5 --noproxy "*" -o /dev/null "http://$pip:$o/" 2>/dev/null; echo "noproxy_gateway_port=$?"
a=${pip%.*}; b=${pip##*.}
far="$a.$(( (b + 4) % 256 ))"
curl -sS -m 5 --noproxy "*" -o /dev/null "http://$far:$o/" 2>"/tmp/c.err"; echo "noproxy_far=$? $(cat /tmp/c.err)"
echo "tcp_far=$(python3 "$probe" tcp "$far" 443)"
echo "udp_far=$(python3 "$probe" udp "$far" 53)"
echo "tcp_proxy_other=$(python3 "$probe" tcp "$pip" 22) $(python3 "$probe" tcp "$pip" $((pport + 1))) $(python3 "$probe" tcp "$pip" 53)"
echo "tcp_proxy_port=$(python3 "$probe" tcp "$pip" "$pport")"
echo "host_loopback=$(python3 "$probe" tcp 127.0.0.1 "$o")"
echo "abstract=$(python3 "$probe" abstract "agentrun-test-$3")"
sleep 1
'
AUD="$AR_TMP/audit.jsonl"
"$AGENTRUN" run --policy "$POLICY" --mount "$AR_TMP/bin:/ar-bin" --audit "$AUD" --proxy-log "$AR_TMP/proxy.log" \
	-- bash -c "$INSIDE" _ "$ORIG" "$PROBE" "$$" >"$AR_TMP/out" 2>"$AR_TMP/err" &
RUN=$!
wait_file_has "$AR_TMP/out" abstract= 400
host_net >"$AR_TMP/host.during"
# a SIGHUP to run's proxy: it has no policy file to re-read and says so (not "reloaded")
kill -HUP "$(sed -n 's/^proxy_pid=//p' "$AR_STATE/$NAME-$RUN/state")" || fail "no proxy_pid in the state"
wait "$RUN" || fail "run exited $?: $(cat "$AR_TMP/err")"
out=$(cat "$AR_TMP/out")
val() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }

url=$(val env | cut -d'|' -f1)
expect_match "HTTP_PROXY is the /30's first address" '^http://10\.254\.[0-9]+\.[0-9]+:3128$' "$url"
expect_eq "the six proxy variables" "$url|$url|$url|$url|localhost,127.0.0.1|localhost,127.0.0.1" "$(val env)"
expect_eq "only lo and eth0" "eth0 lo " "$(val links)"
expect_match "one route: the /30, no default" '^10\.254\.[0-9]+\.[0-9]+/30 dev eth0 proto kernel scope link src 10\.254\.[0-9.]+ ;$' "$(val routes)"
expect_eq "no IPv6 address on eth0" 0 "$(val ipv6)"
expect_eq "GET through the proxy" "hello from origin" "$(val get)"
expect_eq "CONNECT through the proxy" "hello from origin" "$(val connect)"
expect_eq "denied host: 403" 403 "$(val denied)"
expect_match "denied host: the reason" "denied.test.example:$ORIG is not in the allow-list" "$(val denied_reason)"
expect_eq "--noproxy to the proxy's address, another port: refused (curl 7)" 7 "$(val noproxy_gateway_port)"
expect_match "--noproxy past the /30: network unreachable" "^7 .*(unreachable|Couldn't connect)" "$(val noproxy_far)"
expect_eq "TCP socket past the /30" ENETUNREACH "$(val tcp_far)"
expect_eq "UDP socket past the /30" ENETUNREACH "$(val udp_far)"
expect_eq "the proxy netns answers on no other port" "ECONNREFUSED ECONNREFUSED ECONNREFUSED" "$(val tcp_proxy_other)"
expect_eq "the proxy port answers" ok "$(val tcp_proxy_port)"
expect_eq "the host's 127.0.0.1 services are out of reach" ECONNREFUSED "$(val host_loopback)"
expect_eq "the host's abstract unix sockets are out of reach" ECONNREFUSED "$(val abstract)"
if diff "$AR_TMP/host.before" "$AR_TMP/host.during" >"$AR_TMP/host.diff"; then
	pass "the host netns gained nothing (links, addresses, routes, rules)"
else
	fail "the host netns changed: $(cat "$AR_TMP/host.diff")"
fi

# the audit: exactly the five proxied attempts (GET, CONNECT, 2 denied; the probe's
# connect to the proxy port sent no request and is not one)
expect_eq "audit: one line per attempt" 4 "$(audit_valid "$AUD")"
expect_eq "audit: allowed GET" 200 "$(audit_field "$AUD" 'e["method"]=="GET" and e["allowed"]' status)"
expect_eq "audit: allowed CONNECT" 200 "$(audit_field "$AUD" 'e["method"]=="CONNECT"' status)"
expect_eq "audit: denied" 2 "$(grep -c '"allowed":false' "$AUD" || true)"
expect_match "proxy log: the decisions" "GET denied.test.example:$ORIG DENY 403" "$(cat "$AR_TMP/proxy.log")"
expect_match "SIGHUP: ignored, said so" "^agentrun: proxy: SIGHUP ignored: this proxy serves the policy it was started with" "$(grep SIGHUP "$AR_TMP/proxy.log")"
expect_eq "SIGHUP: no claim of a reload" 0 "$(grep -c 'proxy reloaded' "$AR_TMP/proxy.log" || true)"
expect_eq "agentrun's stderr has no proxy lines with --proxy-log" "" "$(grep -c 'ALLOW\|DENY' "$AR_TMP/err" | grep -v '^0$' || true)"
finish

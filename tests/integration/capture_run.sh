#!/usr/bin/env bash
# Transparent capture under `run`, the parts net_capture.sh does not reach: a
# non-default proxy.dns_pool (the stub hands out its addresses, the capture routes
# it), a bad pool refused with nothing left, the Host check of captured plain HTTP on a
# request head that arrives in several segments or stalls (421 at the header timeout,
# audited as a request head), and the success path of a literal
# (non-synthetic) address: the SNI or Host it carries names a rule-covered name that
# resolves to exactly that address. Runs in a network namespace of its own (so the
# literal origins can live on addresses of its loopback, which the sandbox can only
# reach through the capture) and a mount namespace whose /etc/hosts is the proxy's
# resolver. Last, the proxy library with the capture's listeners (ar-capture-test
# proxy) on a SIGHUP reload whose rules name a port nothing captures.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd unshare
if [ "${AR_CAPRUN_NS:-}" != 1 ]; then
	trap - EXIT
	rm -rf "$AR_TMP"
	exec unshare -m -n --propagation private env AR_CAPRUN_NS=1 AR_PROXY_NS=1 bash "$0" "$@"
fi
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"
need_cmd ip
need_cmd curl
need_cmd openssl
need_cmd getent

ip link set lo up
ip addr add 10.77.0.9/32 dev lo
ip addr add 10.77.0.10/32 dev lo
ORIG=$(free_port)
LIT=$(free_port)
TLSP=$(free_port)
start_origin "$ORIG"
start_origin "$LIT" 10.77.0.9
cat >>"$AR_TMP/hosts" <<HOSTS
127.0.0.1 allowed.example.test
10.77.0.9 lit.example.test
10.77.0.10 elsewhere.example.test
HOSTS
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$AR_TMP/key.pem" -out "$AR_TMP/cert.pem" \
	-days 1 -subj /CN=lit.example.test >/dev/null 2>&1 || fail "openssl req"
openssl s_server -accept "10.77.0.9:$TLSP" -cert "$AR_TMP/cert.pem" -key "$AR_TMP/key.pem" \
	-www -quiet >"$AR_TMP/tls.log" 2>&1 </dev/null &
on_exit "kill $!"
wait_port "$TLSP" 10.77.0.9 || fail "the TLS origin did not start"

NAME="caprun-$$"
POLICY="$AR_TMP/policy.json"
cat >"$POLICY" <<JSON
{"name": "$NAME",
 "allowed_hosts": ["allowed.example.test:$ORIG", "lit.example.test:$LIT", "lit.example.test:$TLSP",
                   "elsewhere.example.test:$LIT"],
 "proxy": {"allow_private": ["127.0.0.1", "10.77.0.0/24"], "dns_pool": "100.80.0.0/16"}}
JSON
printf '127.0.0.1 localhost\n' >"$AR_TMP/sandbox-hosts"
mkdir -m 755 "$AR_TMP/bin"
cat >"$AR_TMP/bin/segq.py" <<'PY'
import socket, sys, time
# segq.py HOST PORT SEG...: send each segment (backslash escapes) 150 ms apart, with
# TCP_NODELAY, then print the response's first line, or "closed", or the errno's name
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), 5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for seg in sys.argv[3:]:
        s.sendall(seg.encode().decode("unicode_escape").encode("latin-1"))
        time.sleep(0.15)
    s.settimeout(5)
    data = s.recv(4096)
    print(data.split(b"\r\n")[0].decode(errors="replace") if data else "closed")
except OSError as e:
    import errno
    print(errno.errorcode.get(e.errno, str(e)))
PY
chmod 644 "$AR_TMP/bin/segq.py"

# shellcheck disable=SC2016 # expanded inside the sandbox
INSIDE='
o=$1 l=$2 t=$3
q() { python3 /ar-bin/segq.py "$@"; }
python3 -c "
import socket, time
s = socket.create_connection((\"allowed.example.test\", $o), 5)
s.sendall(b\"GET /hello HTTP/1.1\\r\\nHost: allowed.exa\")
t = time.time(); s.settimeout(20)
d = s.recv(100)
print(\"stalled=%s after %d s\" % (\"closed\" if not d else d[:12], round(time.time() - t)))
" >/tmp/stalled 2>&1 &
echo "pool=$(getent hosts allowed.example.test | cut -d" " -f1)"
echo "route=$(ip route | tr "\n" ";")"
h="Host: allowed.example.test:$o\\r\\n"
echo "split_host=$(q allowed.example.test "$o" "GET /hello HTTP/1.1\\r\\nHo" "st: allowed.exa" "mple.test:$o\\r\\nConnection: close\\r\\n" "\\r\\n")"
many=$(for i in $(seq 60); do printf "X-Filler-%d: %060d\\\\r\\\\n" "$i" 0; done)
echo "late_host=$(q allowed.example.test "$o" "GET /hello HTTP/1.1\\r\\n$many" "Connection: close\\r\\n$h" "\\r\\n")"
echo "absolute=$(q allowed.example.test "$o" "GET http://allowed.example.test:$o/hello HTTP/1.1\\r\\n" "${h}Connection: close\\r\\n\\r\\n")"
echo "absolute_other=$(q allowed.example.test "$o" "GET http://lit.example.test:$l/hello HTTP/1.1\\r\\n" "${h}\\r\\n")"
echo "no_host=$(q allowed.example.test "$o" "GET /hello HTTP/1.1\\r\\nAccept: */*\\r\\n" "\\r\\n")"
echo "dup_host=$(q allowed.example.test "$o" "GET /hello HTTP/1.1\\r\\n$h" "$h\\r\\n")"
echo "split_wrong=$(q allowed.example.test "$o" "GET /hello HTTP/1.1\\r\\nHost: allowed.exa" "mple.test.evil:$o\\r\\n\\r\\n")"
echo "lit_http=$(q 10.77.0.9 "$l" "GET /hello HTTP/1.1\\r\\nHost: lit.exa" "mple.test:$l\\r\\nConnection: close\\r\\n\\r\\n")"
echo "lit_curl=$(curl -sS -m 10 --noproxy "*" -H "Host: lit.example.test:$l" http://10.77.0.9:$l/hello 2>&1)"
echo "lit_tls=$(curl -sSk -m 10 --noproxy "*" --resolve "lit.example.test:$t:10.77.0.9" https://lit.example.test:$t/ 2>&1 | grep -c -m1 "s_server")"
echo "lit_elsewhere=$(q 10.77.0.9 "$l" "GET /hello HTTP/1.1\\r\\nHost: elsewhere.example.test:$l\\r\\n\\r\\n")"
wait
cat /tmp/stalled
'
AUD="$AR_TMP/audit.jsonl"
"$AGENTRUN" run --policy "$POLICY" --mount "$AR_TMP/bin:/ar-bin" \
	--mount "$AR_TMP/sandbox-hosts:/etc/hosts" --audit "$AUD" --proxy-log "$AR_TMP/proxy.log" \
	-- bash -c "$INSIDE" _ "$ORIG" "$LIT" "$TLSP" >"$AR_TMP/out" 2>"$AR_TMP/err" ||
	fail "run exited $?: $(cat "$AR_TMP/err")"
out=$(cat "$AR_TMP/out")
val() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }
count() { python3 -c "
import json, sys
n = 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    if all(str(r.get(k)) == v for k, v in (a.split('=', 1) for a in sys.argv[3:])) and sys.argv[2] in r['reason']:
        n += 1
print(n)" "$AUD" "$@"; }

expect_eq "proxy.dns_pool: the stub hands out its first address" 100.80.0.1 "$(val pool)"
expect_match "a captured HTTP head that stalls: closed at the header timeout" "^closed after 1[0-2] s$" "$(val stalled)"
expect_eq "... audited as a request head, not a ClientHello" 1 "$(count "no complete HTTP request head for allowed.example.test within 10000 ms" status=421 method=HTTP)"
expect_eq "Host split across segments: allowed" "HTTP/1.1 200 OK" "$(val split_host)"
expect_eq "Host after 60 headers, in later segments: allowed" "HTTP/1.1 200 OK" "$(val late_host)"
expect_match "absolute-form target agreeing with Host: allowed" "^HTTP/1\.[01] " "$(val absolute)"
expect_eq "absolute-form target naming another host: refused" closed "$(val absolute_other)"
expect_eq "no Host: refused" closed "$(val no_host)"
expect_eq "two Host fields: refused" closed "$(val dup_host)"
expect_eq "a wrong Host split across segments: refused" closed "$(val split_wrong)"
expect_eq "the Host whole-head successes, audited 200" 3 "$(count "" method=HTTP host=allowed.example.test status=200)"
expect_eq "... absolute-form naming another host: 421 with the reason" 1 "$(count "the request target names lit.example.test" method=HTTP status=421)"
expect_eq "... no Host: 421 with the reason" 1 "$(count "no Host header" method=HTTP status=421)"
expect_eq "... two Host fields: 421 with the reason" 1 "$(count "duplicate Host header" method=HTTP status=421)"
expect_eq "... the split wrong Host: 421 naming it" 1 "$(count "Host allowed.example.test.evil:$ORIG does not match" method=HTTP status=421)"
expect_eq "a literal address whose Host resolves to it: allowed" "HTTP/1.1 200 OK" "$(val lit_http)"
expect_eq "... and with curl" "hello from origin" "$(val lit_curl)"
expect_eq "a literal address whose SNI resolves to it: allowed" 1 "$(val lit_tls)"
expect_eq "a literal address, Host allowed but resolving elsewhere: refused" closed "$(val lit_elsewhere)"
expect_eq "the literal successes audited with the name and the dialled address" 2 \
	"$(count "(captured at 10.77.0.9)" method=HTTP host=lit.example.test allowed=True status=200 addr=10.77.0.9)"
expect_eq "... TLS too" 1 \
	"$(count "(captured at 10.77.0.9)" method=TLS host=lit.example.test allowed=True status=200 addr=10.77.0.9)"
expect_eq "the mismatch: audited 403 with the reason" 1 \
	"$(count "elsewhere.example.test does not resolve to 10.77.0.9" host=elsewhere.example.test allowed=False status=403)"
compgen -G "$AR_STATE/$NAME-*" >/dev/null && fail "state is left"

# A bad pool: refused before anything exists (run 125, render 2), the field named.
bad() { # WHAT POOL PATTERN [ENV...]
	local what=$1 pool=$2 pat=$3
	shift 3
	sed "s|\"dns_pool\": \"100.80.0.0/16\"|\"dns_pool\": $pool|" "$POLICY" >"$AR_TMP/bad.json"
	expect_status "run refuses $what" 125 env "$@" "$AGENTRUN" run --policy "$AR_TMP/bad.json" -- true
	expect_match "... naming the field" "^agentrun: .*proxy\.dns_pool: .*$pat" "$(cat "$AR_TMP/err")"
	compgen -G "$AR_STATE/$NAME-*" >/dev/null && fail "$what: state is left"
	[ -n "$(ip netns list 2>/dev/null | grep "$NAME" || true)" ] && fail "$what: a netns is left"
	[ "$(ip -o link | wc -l)" = 1 ] || fail "$what: a link is left: $(ip -o link)"
	compgen -G "$AR_STATE/audit/$NAME-*" >/dev/null && fail "$what: an audit file is left"
	[ -z "$(find /sys/fs/cgroup -maxdepth 6 -name "*$NAME*" 2>/dev/null | head -1)" ] ||
		fail "$what: a cgroup is left"
}
bad "an IPv6 range" '"fd00::/8"' "must be an IPv4 CIDR range"
bad "host bits" '"100.80.0.1/16"' "host bits set"
bad "loopback" '"127.0.0.0/16"' "overlaps 127.0.0.0/8"
bad "the default network range" '"10.254.0.0/24"' "overlaps 10.254.0.0/16"
bad "an allow_private range" '"10.77.0.0/16"' "overlaps proxy.allow_private\[1\]"
bad "the network range in force" '"100.80.0.0/16"' "overlaps the network range in force" AGENTRUN_NET_RANGE=100.80.0.0/20
# the explicit listener on the stub's port: refused by name (it failed in the proxy's
# bind before), and fine without capture
sed 's|"dns_pool": "100.80.0.0/16"|"dns_pool": "100.80.0.0/16", "port": 53|' "$POLICY" >"$AR_TMP/p53.json"
expect_status "proxy.port 53 with capture: 125" 125 "$AGENTRUN" run --policy "$AR_TMP/p53.json" -- true
expect_eq "... naming the field" "agentrun: $AR_TMP/p53.json: proxy.port: 53 is the DNS stub's port under transparent capture; choose another port or set proxy.transparent to false" "$(cat "$AR_TMP/err")"
compgen -G "$AR_STATE/$NAME-*" >/dev/null && fail "proxy.port 53: state is left"
# ... and on a captured port (443; a rule's): refused before anything exists, with capture
for port in 443 "$LIT"; do
	sed "s|\"dns_pool\": \"100.80.0.0/16\"|\"dns_pool\": \"100.80.0.0/16\", \"port\": $port|" "$POLICY" >"$AR_TMP/pc.json"
	expect_status "proxy.port $port (captured) with capture: 125" 125 "$AGENTRUN" run --policy "$AR_TMP/pc.json" -- true
	expect_eq "... naming the field" "agentrun: $AR_TMP/pc.json: proxy.port $port is a port transparent capture listens on (80, 443 and every port allowed_hosts names): the sandbox's connections to that port on any other address would be refused; choose another port or set proxy.transparent to false" "$(cat "$AR_TMP/err")"
	compgen -G "$AR_STATE/$NAME-*" >/dev/null && fail "proxy.port $port: state is left"
done
sed 's|"port": 53|"port": 53, "transparent": false|' "$AR_TMP/p53.json" >"$AR_TMP/p53off.json"
expect_status "proxy.port 53 without capture: runs" 0 "$AGENTRUN" run --policy "$AR_TMP/p53off.json" \
	--proxy-log /dev/null -- sh -c 'case $HTTP_PROXY in *:53) ;; *) exit 1 ;; esac'
sed 's|"dns_pool": "100.80.0.0/16"|"dns_pool": 7|' "$POLICY" >"$AR_TMP/bad.json"
expect_status "render refuses a pool that is no string" 2 "$AGENTRUN" render --policy "$AR_TMP/bad.json"
expect_match "... naming the field" "proxy\.dns_pool: expected a string" "$(cat "$AR_TMP/err")"
[ -s "$AUD" ] || fail "the audit is empty"

# A reload whose rules name a new port: the confined proxy cannot open a transparent
# listener, so it says which ports stay uncaptured until a restart (docs/network.md).
helper=$AR_BUILD_DIR/tests/ar-capture-test
RP="$AR_TMP/reload.json"
PXP=$(free_port)
echo '{"name": "rl", "network": "proxy", "allowed_hosts": ["a.example.test:6443"]}' >"$RP"
"$helper" proxy --policy "$RP" --listen "127.0.0.1:$PXP" >"$AR_TMP/rl.out" 2>"$AR_TMP/rl.err" &
rl=$!
on_exit "kill $rl"
wait_file_has "$AR_TMP/rl.err" "listening on" || fail "the capturing proxy did not start"
expect_eq "the capture listens on 80, 443 and the rule's port" "READY ports=80,443,6443" "$(head -1 "$AR_TMP/rl.out")"
echo '{"name": "rl", "network": "proxy", "allowed_hosts": ["a.example.test:6443", "b.example.test:7443", "c.example.test:443", "d.example.test:9000"]}' >"$RP"
kill -HUP "$rl"
wait_file_has "$AR_TMP/rl.err" "reloaded" || fail "no reload"
expect_match "the reload names the new ports that stay uncaptured" \
	"warning: the new rules name port\(s\) 7443, 9000 that transparent capture does not listen on.*until it restarts" \
	"$(cat "$AR_TMP/rl.err")"
expect_eq "... and the new rules are in force" 1 "$(grep -c "reloaded.*d.example.test:9000" "$AR_TMP/rl.err")"
echo '{"name": "rl", "network": "proxy", "allowed_hosts": ["a.example.test:6443", "e.example.test:80"]}' >"$RP"
kill -HUP "$rl"
for _ in $(seq 100); do [ "$(grep -c reloaded "$AR_TMP/rl.err")" = 2 ] && break; sleep 0.05; done
expect_eq "a reload within the captured ports warns nothing more" 1 "$(grep -c "warning: the new rules" "$AR_TMP/rl.err")"
finish

#!/usr/bin/env bash
# agentrun proxy, plain HTTP: forwarding (GET/HEAD/POST, Content-Length and chunked,
# response framings), hop-by-hop removal, keep-alive and the upstream pool, denials
# with the JSON body, rule shapes (wildcard, apex, look-alike, ports, case, trailing
# dot, IPv6 literal), 502s, the private-range refusal and --allow-private, audit lines.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"

ORIG=$(free_port)
ORIG2=$(free_port)
ORIG6=$(free_port)
DEAD=$(free_port)
PP=$(free_port)
start_origin "$ORIG"
start_origin "$ORIG2"
start_origin "$ORIG6" ::1
start_proxy main "$PP" --allow "api.test.example:$ORIG" --allow "*.test.example:$ORIG2" \
	--allow "[::1]:$ORIG6" --allow "v6.test.example:$ORIG6" --allow "API.test.example:$DEAD" \
	--allow "nx.test.example:$ORIG" --allow "multi.test.example:$ORIG" --allow-private 127.0.0.0/8
MPID=$PX_PID
AUD="$AR_TMP/main.audit"
px() { curl -sS --max-time 10 -x "http://127.0.0.1:$PP" "$@"; }

# --- allowed requests ---
expect_eq "GET through the proxy" "hello from origin" "$(px "http://api.test.example:$ORIG/hello")"
head=$(px -I "http://api.test.example:$ORIG/hello" | tr -d '\r')
expect_match "HEAD status" "^HTTP/1.1 200" "$head"
expect_match "HEAD keeps Content-Length" "Content-Length: 18" "$head"
expect_match "the response names the proxy last (Via)" "Via: 1.1 agentrun$" "$(echo "$head" | grep -v '^$' | tail -1)"
expect_match "the response body is unchanged after Via" "^hello from origin" "$(px -i "http://api.test.example:$ORIG/hello" | tr -d '\r' | sed -n '/^Via: 1.1 agentrun$/,$p' | sed -n 3p)"

head -c 300000 /dev/urandom >"$AR_TMP/body"
want=$(sha256sum "$AR_TMP/body" | cut -d' ' -f1)
got=$(px --data-binary @"$AR_TMP/body" "http://api.test.example:$ORIG/echo")
expect_eq "POST body relayed intact (Content-Length)" "{\"len\": 300000, \"sha256\": \"$want\"}" "$got"
got=$(px -H "Transfer-Encoding: chunked" --data-binary @"$AR_TMP/body" "http://api.test.example:$ORIG/echo")
expect_eq "POST body relayed intact (chunked)" "{\"len\": 300000, \"sha256\": \"$want\"}" "$got"
expect_eq "chunked response" "one two three" "$(px "http://api.test.example:$ORIG/chunked")"
expect_eq "close-delimited response" "closed body" "$(px "http://api.test.example:$ORIG/close")"
want=$(python3 -c 'import hashlib,sys; n=3000000; p=bytes(range(256))*(n//256+1); print(hashlib.sha256(p[:n]).hexdigest())')
got=$(px "http://api.test.example:$ORIG/big?n=3000000" | sha256sum | cut -d' ' -f1)
expect_eq "3 MB response byte-exact" "$want" "$got"

expect_eq "response with 150 header lines" "cookies" "$(px "http://api.test.example:$ORIG/cookies")"

# exact byte counts in the audit: bytes_in is what the client received
sizes=$(px -o /dev/null -w '%{size_header} %{size_download}' "http://api.test.example:$ORIG/hello?count")
expect_eq "audit bytes_in = response bytes" "$(( ${sizes% *} + ${sizes#* } ))" \
	"$(audit_field "$AUD" 'e["status"] == 200' bytes_in)"

# --- hop-by-hop headers and origin-form ---
hdrs=$(px -H "Proxy-Authorization: Basic c2VjcmV0" -H "Connection: X-Private" -H "X-Private: 1" \
	-H "Keep-Alive: timeout=1" -H "TE: trailers" -H "Upgrade: h2c" -H "X-Kept: yes" \
	"http://api.test.example:$ORIG/headers" | tr -d '\r')
expect_match "origin-form request line" "^GET /headers HTTP/1.1" "$hdrs"
expect_match "end-to-end header kept" "X-Kept: yes" "$hdrs"
expect_nomatch "no hop-by-hop names (case-insensitive)" "[Pp]roxy-|[Kk]eep-[Aa]live|^TE:|^[Uu]pgrade|X-Private" "$hdrs"

# --- keep-alive: two requests on one client connection, each audited; pooled upstream ---
before=$(audit_valid "$AUD")
out=$(px "http://api.test.example:$ORIG/conn" "http://api.test.example:$ORIG/conn" -w '%{num_connects}\n')
first=$(echo "$out" | sed -n 1p)
second=$(echo "$out" | sed -n 3p)
expect_eq "second request reused the upstream connection" "$first" "$second"
expect_eq "curl opened one proxy connection for two requests" "0" "$(echo "$out" | sed -n 4p)"
expect_eq "each kept-alive request audited" "$((before + 2))" "$(audit_valid "$AUD")"

# --- denials ---
code=$(px -o "$AR_TMP/deny" -D "$AR_TMP/deny.h" -w '%{http_code}' "http://other.test.example:$ORIG/hello")
expect_eq "denied GET is 403" 403 "$code"
expect_match "403 status line" "^HTTP/1.1 403 Egress denied" "$(tr -d '\r' <"$AR_TMP/deny.h")"
expect_match "reason header" "X-Agentrun-Reason: other.test.example:$ORIG is not in the allow-list" "$(tr -d '\r' <"$AR_TMP/deny.h")"
expect_eq "403 JSON body" "egress denied|other.test.example|$ORIG|other.test.example:$ORIG is not in the allow-list" \
	"$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("|".join(str(d[k]) for k in ("error","host","port","reason")))' "$AR_TMP/deny")"
expect_eq "denied audited" "false 403 null" \
	"$(audit_field "$AUD" 'e["host"] == "other.test.example"' allowed) $(audit_field "$AUD" 'e["host"] == "other.test.example"' status) $(audit_field "$AUD" 'e["host"] == "other.test.example"' addr)"
dh=$(px -I "http://other.test.example:$ORIG/hello" | tr -d '\r')
expect_match "denied HEAD is 403" "^HTTP/1.1 403 Egress denied" "$dh"
expect_match "denied HEAD has the reason" "X-Agentrun-Reason: other.test.example:$ORIG is not" "$dh"
expect_match "denied HEAD announces the JSON length" "Content-Length: [1-9]" "$dh"
expect_match "stderr line for a denial" "^GET other.test.example:$ORIG DENY 403 out=0 in=0 [0-9]+ms other.test.example:$ORIG is not in the allow-list$" "$(cat "$AR_TMP/main.err")"

# relative URL
rel=$(python3 "$PX_DIR/raw.py" "$PP" 'GET /hello HTTP/1.1\r\nHost: api.test.example\r\n\r\n' --all | tr -d '\r')
expect_match "relative URL is 400" "^HTTP/1.1 400 Bad Request" "$rel"
expect_match "relative URL reason" "relative URL: a proxy request needs an absolute http:// URL" "$rel"
expect_match "400 closes" "Connection: close" "$rel"

# --- rule shapes ---
code() { px -o /dev/null -w '%{http_code}' "$1"; }
expect_eq "wildcard matches a subdomain" 200 "$(code "http://www.test.example:$ORIG2/hello")"
expect_eq "wildcard matches deeper subdomains" 200 "$(code "http://deep.www.test.example:$ORIG2/hello")"
expect_eq "wildcard never matches the apex" 403 "$(code "http://test.example:$ORIG2/hello")"
expect_eq "look-alike label denied" 403 "$(code "http://evil-test.example:$ORIG2/hello")"
expect_eq "look-alike without dot denied" 403 "$(code "http://wwwtest.example:$ORIG2/hello")"
expect_eq "port rule: other port denied" 403 "$(code "http://api.test.example:$ORIG6/hello")"
expect_eq "case and trailing dot canonicalised" 200 "$(code "http://API.Test.EXAMPLE.:$ORIG/hello")"
expect_eq "IPv6 literal rule allows [::1]" "hello from origin" "$(px "http://[::1]:$ORIG6/hello")"
expect_eq "IPv4 literal not covered by a name rule" 403 "$(code "http://127.0.0.1:$ORIG/hello")"
expect_eq "inet_aton spelling canonicalised and denied" 403 "$(code "http://2130706433:$ORIG/hello")"

# --- 502s ---
code=$(px -o "$AR_TMP/b502" -w '%{http_code}' "http://api.test.example:$DEAD/hello")
expect_eq "connection refused is 502" 502 "$code"
expect_match "502 names the dialled address" "connect to 127.0.0.1 port $DEAD failed: Connection refused" "$(cat "$AR_TMP/b502")"
expect_eq "502 audit addr" "127.0.0.1" "$(audit_field "$AUD" "e['port'] == $DEAD" addr)"
code=$(px -o "$AR_TMP/nx" -w '%{http_code}' "http://nx.test.example:$ORIG/hello")
expect_eq "resolution failure is 502" 502 "$code"
expect_match "resolution failure reason" "cannot resolve nx.test.example" "$(cat "$AR_TMP/nx")"

# several addresses: the first refuses, the next one is dialled
expect_eq "next address tried after a refused connect" "hello from origin" "$(px "http://multi.test.example:$ORIG/hello")"
expect_eq "audit names the address that answered" "127.0.0.1" "$(audit_field "$AUD" 'e["host"] == "multi.test.example"' addr)"

# --- address policy: a second proxy without --allow-private ---
PS=$(free_port)
start_proxy strict "$PS" --allow "api.test.example:$ORIG" --allow "127.0.0.1:$ORIG" \
	--allow "v6.test.example:$ORIG6" --allow "private.test.example:$ORIG" --allow-private 127.0.0.2/32
SPID=$PX_PID
sx() { curl -sS --max-time 10 -x "http://127.0.0.1:$PS" "$@"; }
code=$(sx -o "$AR_TMP/priv" -w '%{http_code}' "http://api.test.example:$ORIG/hello")
expect_eq "name resolving to loopback refused" 403 "$code"
expect_match "refusal names address and class" "api.test.example resolves to 127.0.0.1, a loopback address" "$(cat "$AR_TMP/priv")"
expect_eq "refused IPv6 loopback" 403 "$(sx -o /dev/null -w '%{http_code}' "http://v6.test.example:$ORIG6/hello")"
expect_eq "IP-literal rule allows exactly that address" "hello from origin" "$(sx "http://127.0.0.1:$ORIG/hello")"
# 127.0.0.2 is inside --allow-private 127.0.0.2/32: allowed and dialled (nobody listens: 502)
code=$(sx -o "$AR_TMP/p2" -w '%{http_code}' "http://private.test.example:$ORIG/hello")
expect_eq "--allow-private lets the range through" 502 "$code"
expect_match "dialled exactly the checked address" "connect to 127.0.0.2 port $ORIG" "$(cat "$AR_TMP/p2")"
stop_proxy "$SPID"

# --- --listen-fd: a listening socket inherited from the launcher ---
PF=$(free_port)
python3 - "$AGENTRUN" "$PF" "$ORIG" "$AR_TMP/fd.err" <<'PY' &
import os, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[2])))
s.listen(64)
os.set_inheritable(s.fileno(), True)
err = os.open(sys.argv[4], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.dup2(err, 2)
os.execv(sys.argv[1], [sys.argv[1], "proxy", "--listen-fd", str(s.fileno()), "--allow",
                       "api.test.example:" + sys.argv[3], "--allow-private", "127.0.0.0/8",
                       "--dns-files-only"])
PY
FPID=$!
on_exit "kill -9 $FPID"
wait_file_has "$AR_TMP/fd.err" "listening on 127.0.0.1:$PF"
expect_eq "--listen-fd serves the inherited socket" "hello from origin" \
	"$(curl -sS --max-time 10 -x "http://127.0.0.1:$PF" "http://api.test.example:$ORIG/hello")"
stop_proxy "$FPID"
expect_eq "--listen-fd proxy stops cleanly" 0 "$PX_STATUS"

# --- usage errors ---
expect_status "no listener is a usage error" 2 "$AGENTRUN" proxy --allow a.test
expect_match "names the missing flag" "agentrun: proxy: --listen ADDR:PORT or --listen-fd N is required" "$(cat "$AR_TMP/err")"
expect_status "bad --listen" 2 "$AGENTRUN" proxy --listen localhost:3128
expect_match "bad --listen names it" "agentrun: proxy: --listen .localhost:3128.: expected ADDR:PORT" "$(cat "$AR_TMP/err")"
expect_status "bad rule" 2 "$AGENTRUN" proxy --listen "127.0.0.1:$(free_port)" --allow '*.com'
expect_match "bad rule names --allow" "agentrun: proxy: .*--allow" "$(cat "$AR_TMP/err")"
expect_status "bad --allow-private" 2 "$AGENTRUN" proxy --listen 127.0.0.1:1 --allow-private 10.0.0.0/33
expect_status "bad timeout" 2 "$AGENTRUN" proxy --listen 127.0.0.1:1 --header-timeout soon
expect_status "port in use" 2 "$AGENTRUN" proxy --listen "127.0.0.1:$PP" --allow a.test
expect_match "bind error names the address" "agentrun: proxy: --listen .127.0.0.1:$PP.: bind: Address already in use" "$(cat "$AR_TMP/err")"
expect_status "--help" 0 "$AGENTRUN" proxy --help

# --- the audit file and the summary ---
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
finish

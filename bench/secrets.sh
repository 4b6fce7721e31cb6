#!/usr/bin/env bash
# bench/secrets.sh — secrets (docs/secrets.md) in one run, on loopback only. Not a test:
# prints figures and ratios.
#   requests/s over kept-alive HTTPS through agentrun's terminated connections (a secret's
#     host) at 1 and 16 connections, beside the same through agentrun's plain CONNECT
#     tunnel (a host no secret is for) and through mitmproxy (regular mode, trusting the
#     same origin CA); at 1 connection also with the proxy's busy polling off
#     (--proxy-busy-poll 0, docs/proxy.md), what the default's polling is worth
#   one 256 MiB download through a terminated connection vs a plain tunnel
#   `agentrun -- /bin/true` (no secrets) interleaved against AGENTRUN_BEFORE, when given:
#     the start must not pay for TLS (agentrun-tls.so is loaded only with secrets)
# The client is ar-tlsget (bench/tools/tlsget.c): threads, one kept-alive connection each,
# every response checked (200, its length); it is lean so that the figures are the
# proxies' and not the client's. curl (one process per connection, URL globbing), the
# client an agent would use, is run too, as a second line: it spends more CPU per request
# than the proxy does (docs/benchmarks.md). The clients of agentrun's two paths run inside
# the sandbox (over its veth), mitmproxy's on the host's loopback; the origin is nginx for
# all three. Needs nginx, mitmdump, openssl, curl (scripts/install-deps.sh --bench); a
# build in build/ (with build/bench/ar-tlsget). Run as root. Every server is started and
# stopped by PID, every load is bounded in requests and in time (ar-tlsget -t, timeout).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${AR_BENCH_NS:-}" != 1 ]; then # a private /etc/hosts for the bench's names
	exec unshare -m --propagation private env AR_BENCH_NS=1 bash "$0" "$@"
fi
AGENTRUN=${AGENTRUN:-$PWD/build/agentrun}
BEFORE=${AGENTRUN_BEFORE:-}
TLSGET=${TLSGET:-$PWD/build/bench/ar-tlsget}
N1=${N1:-3000}   # curl: requests on the one connection
N16=${N16:-600}  # curl: requests on each of 16 connections
NM=${NM:-300}    # curl: mitmproxy's (slower) share per connection
T1=${T1:-10000}  # ar-tlsget: requests on the one connection
T16=${T16:-1000} # ar-tlsget: requests on each of 16 connections
TM=${TM:-1000}   # ar-tlsget: mitmproxy's share (1 connection; /8 each of 16)
LIMIT=${LIMIT:-120} # seconds any one load may take
MB=${MB:-256}
RUNS=${RUNS:-40}
ROUNDS=${ROUNDS:-3} # of every ar-tlsget figure (medians printed)
for c in nginx mitmdump openssl curl python3; do
	command -v $c >/dev/null || { echo "bench: needs $c (scripts/install-deps.sh --bench)" >&2; exit 2; }
done
[ -x "$AGENTRUN" ] && [ -x "$TLSGET" ] || { echo "bench: build first ($AGENTRUN or $TLSGET missing)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/agentrun-bench.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	sleep 0.3
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

printf '127.0.0.1 localhost\n127.0.0.1 api.bench.example tun.bench.example\n' >"$tmp/hosts"
mount --bind "$tmp/hosts" /etc/hosts
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
	-keyout "$tmp/ca.key" -out "$tmp/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=bench" \
	-keyout "$tmp/o.key" -out "$tmp/o.csr" 2>/dev/null
printf 'subjectAltName=DNS:api.bench.example,DNS:tun.bench.example\n' >"$tmp/o.ext"
openssl x509 -req -in "$tmp/o.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial \
	-days 2 -extfile "$tmp/o.ext" -out "$tmp/o.pem" 2>/dev/null
cp "$TLSGET" "$tmp/ar-tlsget"
chmod 644 "$tmp"/*
chmod 755 "$tmp/ar-tlsget"
head -c $((MB << 20)) /dev/zero >"$tmp/big"
echo ok >"$tmp/small"
P=$(port) M=$(port)
cat >"$tmp/nginx.conf" <<NGINX
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/nginx.err;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$P ssl;
    ssl_certificate $tmp/o.pem;
    ssl_certificate_key $tmp/o.key;
    root $tmp;
  }
}
NGINX
nginx -c "$tmp/nginx.conf" -g 'daemon off;' & pids+=($!)
mkdir "$tmp/mitm"
mitmdump -q --mode regular --listen-host 127.0.0.1 --listen-port "$M" --set confdir="$tmp/mitm" \
	--set ssl_verify_upstream_trusted_ca="$tmp/ca.pem" >"$tmp/mitm.log" 2>&1 & pids+=($!)
for _ in $(seq 1 100); do [ -s "$tmp/mitm/mitmproxy-ca-cert.pem" ] && (exec 3<>/dev/tcp/127.0.0.1/$M) 2>/dev/null && break; sleep 0.1; done

# loops N CONNS URL [CURL ARGS...]: CONNS curls in parallel, N requests each, kept alive;
# prints requests per second
loops() {
	local n=$1 conns=$2 url=$3
	shift 3
	python3 - "$n" "$conns" "$url" "$@" <<'PY'
import subprocess, sys, time
n, conns, url, extra = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
t0 = time.time()
ps = [subprocess.Popen(["curl", "-s", "--fail", "-m", "120", *extra, f"{url}?[1-{n}]"], stdout=subprocess.DEVNULL)
      for _ in range(conns)]
if any(p.wait() for p in ps):
    sys.exit("bench: a curl failed")
print(f"{n * conns / (time.time() - t0):.0f}")
PY
}
# download URL [CURL ARGS...]: MB/s of one download
download() {
	curl -s --fail -m 120 -o /dev/null -w '%{speed_download}' "$@" | awk '{printf "%.0f", $1 / 1048576}'
}
# tget TLSGET CONNS REQS BODYLEN URL [ARGS...]: ar-tlsget's "requests/s MiB/s"
tget() {
	local bin=$1 conns=$2 n=$3 len=$4 url=$5
	shift 5
	"$bin" -t "$LIMIT" -c "$conns" -n "$n" -l "$len" "$@" "$url"
}

# the client checks what it gets: a wrong length and a CA that did not sign the origin
# must fail, or its figures mean nothing; then the origin alone, without a proxy (the
# ceiling every path shares)
direct=("https://api.bench.example:$P/small" -x "" -C "$tmp/ca.pem")
if tget "$TLSGET" 1 3 4 "${direct[@]}" >/dev/null 2>&1 ||
	tget "$TLSGET" 1 3 3 "https://api.bench.example:$P/small" -x "" -C "$tmp/mitm/mitmproxy-ca-cert.pem" >/dev/null 2>&1; then
	echo "bench: ar-tlsget accepted a wrong length or an untrusted origin" >&2
	exit 1
fi
o1=$(tget "$TLSGET" 1 "$T1" 3 "${direct[@]}" | cut -d' ' -f1)
o16=$(tget "$TLSGET" 16 "$T16" 3 "${direct[@]}" | cut -d' ' -f1)

cat >"$tmp/policy.json" <<JSON
{"name": "bench-sec", "allowed_hosts": ["api.bench.example:$P", "tun.bench.example:$P"],
 "proxy": {"allow_private": ["127.0.0.1"], "upstream_ca": "$tmp/ca.pem", "transparent": false},
 "secrets": {"BENCH_KEY": {"from": "env:BENCH_KEY", "hosts": ["api.bench.example:$P"]}}}
JSON
# the sandbox's side: each path under each load, one line each; curl in the first round
cat >"$tmp/inside.sh" <<'SH'
set -e
. /b/funcs.sh
A=https://api.bench.example:$P U=https://tun.bench.example:$P
key="Authorization: Bearer $BENCH_KEY"
if [ "$OFF" = 1 ]; then # the proxy without busy polling: 1 connection only
	echo "tterm1off $(tget /b/ar-tlsget 1 "$T1" 3 "$A/small" -H "$key" | cut -d' ' -f1)"
	echo "ttun1off $(tget /b/ar-tlsget 1 "$T1" 3 "$U/small" -C /b/ca.pem | cut -d' ' -f1)"
	exit 0
fi
for c in 1 16; do
	n=$T16 && [ $c = 16 ] || n=$T1
	echo "tterm$c $(tget /b/ar-tlsget $c "$n" 3 "$A/small" -H "$key" | cut -d' ' -f1)"
	echo "ttun$c $(tget /b/ar-tlsget $c "$n" 3 "$U/small" -C /b/ca.pem | cut -d' ' -f1)"
done
echo "ttermdl $(tget /b/ar-tlsget 1 1 $((MB << 20)) "$A/big" | cut -d' ' -f2)"
echo "ttundl $(tget /b/ar-tlsget 1 1 $((MB << 20)) "$U/big" -C /b/ca.pem | cut -d' ' -f2)"
[ "$CURL" = 1 ] || exit 0
echo "term1 $(loops "$N1" 1 "$A/small" -H "$key")"
echo "tun1 $(loops "$N1" 1 "$U/small" --cacert /b/ca.pem)"
echo "term16 $(loops "$N16" 16 "$A/small" -H "$key")"
echo "tun16 $(loops "$N16" 16 "$U/small" --cacert /b/ca.pem)"
echo "termdl $(download "$A/big")"
echo "tundl $(download --cacert /b/ca.pem "$U/big")"
SH
{ declare -f loops download tget; } >"$tmp/funcs.sh"
# ROUNDS rounds, each agentrun's two paths (a fresh sandbox) then mitmproxy, so that the
# other processes of a shared machine weigh on all three alike; medians are printed
mc=(-x "http://127.0.0.1:$M" --cacert "$tmp/mitm/mitmproxy-ca-cert.pem")
tc=(-x "http://127.0.0.1:$M" -C "$tmp/mitm/mitmproxy-ca-cert.pem")
for r in $(seq 1 "$ROUNDS"); do
	BENCH_KEY=bench-real-value "$AGENTRUN" run --policy "$tmp/policy.json" --mount "$tmp:/b" \
		--audit "$tmp/audit.jsonl" --proxy-log "$tmp/proxy.log" \
		-- env N1="$N1" N16="$N16" T1="$T1" T16="$T16" MB="$MB" LIMIT="$LIMIT" P="$P" \
		CURL=$((r == 1)) OFF=0 bash /b/inside.sh >>"$tmp/in.out"
	BENCH_KEY=bench-real-value "$AGENTRUN" run --policy "$tmp/policy.json" --mount "$tmp:/b" \
		--proxy-busy-poll 0 --audit "$tmp/audit-off.jsonl" --proxy-log /dev/null \
		-- env T1="$T1" LIMIT="$LIMIT" P="$P" OFF=1 bash /b/inside.sh >>"$tmp/in.out"
	echo "tm1 $(tget "$TLSGET" 1 "$TM" 3 "https://api.bench.example:$P/small" "${tc[@]}" | cut -d' ' -f1)"
	echo "tm16 $(tget "$TLSGET" 16 "$((TM / 8))" 3 "https://api.bench.example:$P/small" "${tc[@]}" | cut -d' ' -f1)"
	[ "$r" = 1 ] || continue
	echo "m1 $(loops "$NM" 1 "https://api.bench.example:$P/small" "${mc[@]}")"
	echo "m16 $(loops "$((NM / 4))" 16 "https://api.bench.example:$P/small" "${mc[@]}")"
done >>"$tmp/in.out"
# val KEY: the median of KEY's rounds
val() { sed -n "s/^$1 //p" "$tmp/in.out" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "agentrun $($AGENTRUN --version 2>/dev/null | head -1), $(mitmdump --version 2>/dev/null | head -1), nginx $(nginx -v 2>&1 | cut -d/ -f2), load $(cut -d' ' -f1 /proc/loadavg)"
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
# row LABEL TERM TUNNEL MITM
row() {
	printf '%-28s %10s %7s %10s %10s %12s\n' "$1" "$2" "$3" "$4" "$(ratio "$2" "$4")" "$(ratio "$2" "$3")"
}
printf 'the origin alone (ar-tlsget, no proxy): %s GETs/s on 1 connection, %s on 16\n' "$o1" "$o16"
printf '%-28s %10s %7s %10s %10s %12s\n' "kept-alive HTTPS GETs/s" terminated tunnel mitmproxy term/mitm term/tunnel
row "  ar-tlsget, 1 connection" "$(val tterm1)" "$(val ttun1)" "$(val tm1)"
row "  ar-tlsget, 16 connections" "$(val tterm16)" "$(val ttun16)" "$(val tm16)"
row "  1 connection, no busy poll" "$(val tterm1off)" "$(val ttun1off)" "$(val tm1)"
row "  curl, 1 connection" "$(val term1)" "$(val tun1)" "$(val m1)"
row "  curl, 16 connections" "$(val term16)" "$(val tun16)" "$(val m16)"
printf 'one %d MiB download MB/s: ar-tlsget terminated %s, tunnel %s: %s; curl %s, %s: %s\n' "$MB" \
	"$(val ttermdl)" "$(val ttundl)" "$(ratio "$(val ttermdl)" "$(val ttundl)")" \
	"$(val termdl)" "$(val tundl)" "$(ratio "$(val termdl)" "$(val tundl)")"
echo "requests audited as injected: $(grep -c '"secret":"BENCH_KEY","secret_action":"injected"' "$tmp/audit.jsonl") of $((ROUNDS * (T1 + 16 * T16) + N1 + 16 * N16)) GETs sent with its placeholder"

# what a start without secrets maps: agentrun links no TLS library (agentrun-tls.so is
# dlopen()ed by the proxy only when a policy has secrets)
echo "libssl/libcrypto linked into agentrun: $(ldd "$AGENTRUN" | grep -c -e libssl -e libcrypto || true)"
if [ -n "$BEFORE" ]; then
	python3 - "$RUNS" "$AGENTRUN" "$BEFORE" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "bench", "tools"))
from interleave import medians
runs, now, before = int(sys.argv[1]), sys.argv[2], sys.argv[3]
m = medians({"before": [before, "run", "--", "/bin/true"], "now": [now, "run", "--", "/bin/true"]}, runs, warmup=5)
print(f"agentrun -- /bin/true, interleaved, {runs} rounds: before {m['before']:.2f} ms, now {m['now']:.2f} ms, now/before {m['now'] / m['before']:.2f}")
PY
fi

#!/usr/bin/env bash
# bench/dns.sh — the DNS stub of transparent capture beside dnsmasq, in one run, on
# loopback only. Not a test: prints figures and ratios.
#   queries/s with 32 queries outstanding (closed loop, UDP), stub vs dnsmasq, RUNS rounds
#     alternating the two, for an allowed name (a synthetic address / a local record)
#   latency (p50, p99) with one query outstanding, allowed vs denied name, both servers
# The stub side is ar-capture-test serve-udp: the answering path the proxy runs
# (recvmsg with IP_PKTINFO, parse, decide, build, sendmsg from the queried address).
# dnsmasq answers the same names from local records and has no upstream:
#   --address=/allowed.example.test/198.18.0.1 --address=/#/ (NXDOMAIN for the rest)
#   the answering path alone (no sockets), ns per answer, allowed vs denied name
# Needs dnsmasq (scripts/install-deps.sh --bench installs dnsmasq-base) and a build in
# build/. Every server is started and stopped here by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
HELPER=${HELPER:-$PWD/build/tests/ar-capture-test}
SECONDS_EACH=${SECONDS_EACH:-3}
RUNS=${RUNS:-3}
INFLIGHT=${INFLIGHT:-32}
[ -x "$HELPER" ] || { echo "bench: build first ($HELPER missing)" >&2; exit 2; }
for c in dnsmasq python3; do
	command -v $c >/dev/null || { echo "bench: needs $c (scripts/install-deps.sh --bench)" >&2; exit 2; }
done

tmp=$(mktemp -d /tmp/agentrun-bench.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

p_stub=$(port)
p_dnsmasq=$(port)
"$HELPER" serve-udp --listen "127.0.0.1:$p_stub" --allow allowed.example.test >"$tmp/stub.out" &
pids+=($!)
dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --no-poll \
	--listen-address=127.0.0.1 --bind-interfaces --port="$p_dnsmasq" \
	--pid-file="$tmp/dnsmasq.pid" --log-facility="$tmp/dnsmasq.log" \
	--address=/allowed.example.test/198.18.0.1 --address=/#/ &
pids+=($!)
sleep 0.5
for p in "$p_stub" "$p_dnsmasq"; do
	"$HELPER" load --server "127.0.0.1:$p" --name allowed.example.test --seconds 1 \
		--inflight 1 >/dev/null || { echo "bench: no answer on port $p" >&2; exit 1; }
done

load() { # PORT NAME INFLIGHT SECONDS
	"$HELPER" load --server "127.0.0.1:$1" --name "$2" --inflight "$3" --seconds "$4"
}

echo "== queries/s, allowed name, $INFLIGHT outstanding, ${SECONDS_EACH}s each, $RUNS rounds"
: >"$tmp/qps.stub"
: >"$tmp/qps.dnsmasq"
for r in $(seq 1 "$RUNS"); do
	s=$(load "$p_stub" allowed.example.test "$INFLIGHT" "$SECONDS_EACH")
	d=$(load "$p_dnsmasq" allowed.example.test "$INFLIGHT" "$SECONDS_EACH")
	echo "round $r: stub $s"
	echo "round $r: dnsmasq $d"
	field qps <<<"$s" >>"$tmp/qps.stub"
	field qps <<<"$d" >>"$tmp/qps.dnsmasq"
done
qs=$(median <"$tmp/qps.stub")
qd=$(median <"$tmp/qps.dnsmasq")
printf '%-28s %10s q/s\n' "stub (median)" "$qs" "dnsmasq (median)" "$qd"
echo "stub/dnsmasq: $(ratio "$qs" "$qd")"

echo "== latency, one query outstanding, ${SECONDS_EACH}s each, $RUNS rounds alternating"
for r in $(seq 1 "$RUNS"); do
	for srv in stub dnsmasq; do
		p=$p_stub
		[ "$srv" = dnsmasq ] && p=$p_dnsmasq
		for name in allowed denied; do
			out=$(load "$p" "$name.example.test" 1 "$SECONDS_EACH")
			echo "round $r: $srv $name $out"
			field p50_us <<<"$out" >>"$tmp/p50.$srv.$name"
			field mean_us <<<"$out" >>"$tmp/mean.$srv.$name"
		done
	done
done
for srv in stub dnsmasq; do
	for name in allowed denied; do
		printf '%-8s %-8s median p50 %6s us, median mean %6s us\n' "$srv" "$name" \
			"$(median <"$tmp/p50.$srv.$name")" "$(median <"$tmp/mean.$srv.$name")"
	done
	echo "$srv denied/allowed (mean): $(ratio "$(median <"$tmp/mean.$srv.denied")" \
		"$(median <"$tmp/mean.$srv.allowed")")"
done

echo "== the answering path alone (ar_dns_stub_answer, no sockets), 2 million answers each"
rules=(--allow allowed.example.test --allow '*.github.com' --allow api.k8s.test:6443
	--allow github.com:22 --allow '*.pypi.org' --allow registry.npmjs.org)
for r in $(seq 1 "$RUNS"); do
	for name in allowed.example.test denied.example.test; do
		out=$("$HELPER" answer-bench --name "$name" --seconds 2 "${rules[@]}")
		echo "round $r: $out"
		field ns_per_answer <<<"$out" >>"$tmp/ns.$name"
	done
done
na=$(median <"$tmp/ns.allowed.example.test")
nd=$(median <"$tmp/ns.denied.example.test")
echo "ns per answer (median): allowed $na, denied $nd, denied/allowed $(ratio "$nd" "$na")"

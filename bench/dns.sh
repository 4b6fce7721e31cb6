#!/usr/bin/env bash
# bench/dns.sh — the DNS stub of transparent capture, as a sandbox meets it, beside
# dnsmasq, in one run. Not a test: prints figures and ratios.
#   The stub side is the real thing: `agentrun run` with network: proxy (transparent
#   capture on), whose proxy process answers on UDP 53 in its netns; the load comes
#   from inside the sandbox's netns (nsenter --net into the running sandbox), over the
#   veth, to the address its resolv.conf names.
#   dnsmasq answers the same names from local records and has no upstream
#   (--address=/allowed.example.test/198.18.0.1 --address=/#/: NXDOMAIN for the
#   rest), started inside the same proxy netns (entered through one of the proxy's
#   sockets) on the proxy's address, port 5353: both are asked from the sandbox, across
#   the same veth. The stub also writes one audit line per query (that is its job;
#   one write per batch); dnsmasq logs nothing.
#   queries/s with INFLIGHT outstanding (closed loop), RUNS rounds alternating the two
#   latency (p50, mean) with one query outstanding, allowed vs denied name, both
#   the answering path alone (ar-capture-test answer-bench, no sockets), ns per answer
# Needs root, dnsmasq (scripts/install-deps.sh --bench installs dnsmasq-base),
# nsenter, and a build in build/. Every process is started and stopped here by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTRUN=${AGENTRUN:-$PWD/build/agentrun}
HELPER=${HELPER:-$PWD/build/tests/ar-capture-test}
SECONDS_EACH=${SECONDS_EACH:-3}
RUNS=${RUNS:-3}
INFLIGHT=${INFLIGHT:-32}
if [ ! -x "$HELPER" ] || [ ! -x "$AGENTRUN" ]; then echo "bench: build first" >&2; exit 2; fi
[ "$(id -u)" = 0 ] || { echo "bench: needs root (network: proxy)" >&2; exit 2; }
for c in dnsmasq python3 nsenter; do
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

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

name="bdns-$$"
cat >"$tmp/policy.json" <<JSON
{"name": "$name", "network": "proxy", "allowed_hosts": ["allowed.example.test"]}
JSON
mkfifo -m 666 "$tmp/hold"
chmod 755 "$tmp" # the sandbox's uid reads the fifo
# the sandbox waits on the fifo until the bench is done
"$AGENTRUN" run --policy "$tmp/policy.json" --mount "$tmp:/bench" --audit "$tmp/audit.jsonl" \
	--proxy-log /dev/null -- sh -c 'read -r _ </bench/hold' >"$tmp/run.out" 2>&1 &
run_pid=$!
pids+=("$run_pid")
state=""
for _ in $(seq 1 200); do
	state=$(compgen -G "/run/agentrun/$name-*/state" | head -1 || true)
	[ -n "$state" ] && grep -q '^pid=[1-9]' "$state" && break
	sleep 0.05
done
[ -n "$state" ] || { echo "bench: the sandbox did not start: $(cat "$tmp/run.out")" >&2; exit 1; }
spid=$(sed -n 's/^pid=//p' "$state")
ppid=$(sed -n 's/^proxy_pid=//p' "$state")
stub_ip=$(sed -n 's/^proxy_ip=//p' "$state")
in_sandbox() { nsenter --net="/proc/$spid/ns/net" "$@"; }

# The proxy netns has no name: reach it through one of the proxy's sockets made there
# (pidfd_getfd, then SIOCGSKNS gives the socket's netns), and run dnsmasq in it.
cat >"$tmp/in_proxy_netns.py" <<'PY'
import ctypes, os, socket, sys
# in_proxy_netns.py PID CMD...: exec CMD in the netns of PID's first socket whose netns
# is not ours (the proxy's listeners live in the proxy netns, the proxy in the host's)
libc = ctypes.CDLL(None, use_errno=True)
SYS_pidfd_open, SYS_pidfd_getfd, SIOCGSKNS, CLONE_NEWNET = 434, 438, 0x894C, 0x40000000
pid = int(sys.argv[1])
ours = os.stat("/proc/self/ns/net").st_ino
pidfd = libc.syscall(SYS_pidfd_open, pid, 0)
for name in sorted(os.listdir("/proc/%d/fd" % pid), key=int):
    if not os.readlink("/proc/%d/fd/%s" % (pid, name)).startswith("socket:"):
        continue
    fd = libc.syscall(SYS_pidfd_getfd, pidfd, int(name), 0)
    ns = libc.ioctl(fd, SIOCGSKNS) if fd >= 0 else -1
    if ns >= 0 and os.fstat(ns).st_ino != ours:
        if libc.setns(ns, CLONE_NEWNET) != 0:
            sys.exit("setns failed")
        os.execvp(sys.argv[2], sys.argv[2:])
sys.exit("no socket of pid %d in another netns" % pid)
PY

p_dnsmasq=5353
python3 "$tmp/in_proxy_netns.py" "$ppid" \
	dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --no-poll \
	--listen-address="$stub_ip" --bind-interfaces --port="$p_dnsmasq" --user=root \
	--pid-file="$tmp/dnsmasq.pid" --log-facility="$tmp/dnsmasq.log" \
	--address=/allowed.example.test/198.18.0.1 --address=/#/ &
pids+=($!)
sleep 0.5
stub="$stub_ip:53"
dnsmasq="$stub_ip:$p_dnsmasq"
for s in "$stub" "$dnsmasq"; do
	in_sandbox "$HELPER" load --server "$s" --name allowed.example.test --seconds 1 \
		--inflight 1 | grep -q 'qps=[1-9]' || { echo "bench: no answer from $s" >&2; exit 1; }
done
echo "# agentrun run: sandbox pid $spid, proxy pid $ppid, stub $stub; dnsmasq $dnsmasq in the proxy netns"
echo "# load: $(uptime)"

load() { # SERVER NAME INFLIGHT SECONDS
	in_sandbox "$HELPER" load --server "$1" --name "$2" --inflight "$3" --seconds "$4"
}

echo "== queries/s, allowed name, $INFLIGHT outstanding, ${SECONDS_EACH}s each, $RUNS rounds"
: >"$tmp/qps.stub"
: >"$tmp/qps.dnsmasq"
for r in $(seq 1 "$RUNS"); do
	s=$(load "$stub" allowed.example.test "$INFLIGHT" "$SECONDS_EACH")
	d=$(load "$dnsmasq" allowed.example.test "$INFLIGHT" "$SECONDS_EACH")
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
		s=$stub
		[ "$srv" = dnsmasq ] && s=$dnsmasq
		for n in allowed denied; do
			out=$(load "$s" "$n.example.test" 1 "$SECONDS_EACH")
			echo "round $r: $srv $n $out"
			field p50_us <<<"$out" >>"$tmp/p50.$srv.$n"
			field mean_us <<<"$out" >>"$tmp/mean.$srv.$n"
		done
	done
done
for srv in stub dnsmasq; do
	for n in allowed denied; do
		printf '%-8s %-8s median p50 %6s us, median mean %6s us\n' "$srv" "$n" \
			"$(median <"$tmp/p50.$srv.$n")" "$(median <"$tmp/mean.$srv.$n")"
	done
	echo "$srv denied/allowed (mean): $(ratio "$(median <"$tmp/mean.$srv.denied")" \
		"$(median <"$tmp/mean.$srv.allowed")")"
done
echo "== the answering path alone (ar_dns_stub_answer, no sockets), 2 million answers each"
rules=(--allow allowed.example.test --allow '*.github.com' --allow api.k8s.test:6443
	--allow github.com:22 --allow '*.pypi.org' --allow registry.npmjs.org)
for r in $(seq 1 "$RUNS"); do
	for n in allowed.example.test denied.example.test; do
		out=$("$HELPER" answer-bench --name "$n" --seconds 2 "${rules[@]}")
		echo "round $r: $out"
		field ns_per_answer <<<"$out" >>"$tmp/ns.$n"
	done
done
na=$(median <"$tmp/ns.allowed.example.test")
nd=$(median <"$tmp/ns.denied.example.test")
echo "ns per answer (median): allowed $na, denied $nd, denied/allowed $(ratio "$nd" "$na")"
echo "# the proxy audited $(grep -c '"method":"DNS"' "$tmp/audit.jsonl" || true) DNS queries"
echo end >"$tmp/hold"
wait "$run_pid" || true

#!/usr/bin/env bash
# bench/net.sh — network: proxy beside its peers, in one run (not a test; ratios).
#   start-to-exit of /bin/true: agentrun with the proxy network, agentrun with
#     network none, bwrap --unshare-all (no network at all), interleaved rounds, medians
#   CONNECT throughput (BYTES through one tunnel, median of RUNS): from inside a sandbox
#     through the veth and its proxy; the bare proxy on loopback; a direct loopback transfer
#   the same stream with transparent capture: no proxy variables, the sink's name
#     resolved by the sandbox's DNS stub, the connection captured and relayed by name
#   CONCURRENT (50) sandboxes at once, each through its own proxy; kill -9 of every
#     agentrun; what `agentrun gc` leaves (nothing)
# Needs a build in build/ (scripts/build.sh), bwrap, python3; root. Traffic: 127.0.0.1 and
# the sandbox's own /30 only. Every process is started and stopped here by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTRUN=${AGENTRUN:-$PWD/build/agentrun}
BLAST=${BLAST:-$PWD/build/bench/ar-blast}
ROUNDS=${ROUNDS:-30}
BYTES=${BYTES:-536870912}
RUNS=${RUNS:-3}
for t in "$AGENTRUN" "$BLAST"; do [ -x "$t" ] || { echo "bench: build first ($t missing)" >&2; exit 2; }; done
for c in bwrap python3; do command -v $c >/dev/null || { echo "bench: needs $c" >&2; exit 2; }; done
[ "$(id -u)" = 0 ] || { echo "bench: network: proxy needs root" >&2; exit 2; }

tmp=$(mktemp -d /tmp/agentrun-bench.XXXXXX)
chmod 755 "$tmp"
pids=()
runs=()
cleanup() {
	local p
	for p in "${runs[@]}" "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
wait_port() {
	for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
	echo "bench: nothing listens on $1" >&2
	return 1
}

sink=$(port)
"$BLAST" sink "$sink" &
pids+=($!)
wait_port "$sink"
cat >"$tmp/proxy.json" <<JSON
{"name": "bench-net", "allowed_hosts": ["127.0.0.1:$sink"], "proxy": {"allow_private": ["127.0.0.1"]}}
JSON
cat >"$tmp/none.json" <<JSON
{"name": "bench-none", "network": "none"}
JSON

# Timed by bench/tools/interleave.py (posix_spawn and a monotonic clock, as startup.sh):
# a shell's $(date) around each run would add the same fork to every party and pull the
# ratios toward 1.
echo "== start-to-exit of /bin/true, $ROUNDS interleaved rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))"
python3 - "$ROUNDS" "$AGENTRUN" "$tmp" <<'PY'
import sys
sys.path.insert(0, "bench/tools")
from interleave import medians
runs, ar, tmp = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cmds = {
    "bwrap": "bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp --cap-drop ALL /bin/true".split(),
    "none": [ar, "--policy", f"{tmp}/none.json", "--", "/bin/true"],
    "proxy": [ar, "--policy", f"{tmp}/proxy.json", "--proxy-log", "/dev/null", "--", "/bin/true"],
}
m = medians(cmds, runs, warmup=5)
print("  %-28s %6.2f / %6.2f / %6.2f ms" % ("bwrap / none / proxy", m["bwrap"], m["none"], m["proxy"]))
print("  proxy/bwrap %.2f (target <= 1.5)   proxy/none %.2f" % (m["proxy"] / m["bwrap"], m["proxy"] / m["none"]))
PY

echo "== CONNECT throughput, $BYTES bytes, median of $RUNS (Gbit/s)"
direct=$(for _ in $(seq 1 "$RUNS"); do "$BLAST" send "$sink" "$BYTES" | awk '{print $3}'; done | median)
pp=$(port)
"$AGENTRUN" proxy --listen "127.0.0.1:$pp" --allow "127.0.0.1:$sink" --allow-private 127.0.0.1 \
	--audit /dev/null 2>/dev/null &
pids+=($!)
wait_port "$pp"
bare=$(for _ in $(seq 1 "$RUNS"); do "$BLAST" send "$sink" "$BYTES" "$pp" | awk '{print $3}'; done | median)
mkdir -m 755 "$tmp/bin"
cp "$BLAST" "$tmp/bin/"
# shellcheck disable=SC2016 # expanded inside the sandbox
inside=$("$AGENTRUN" --policy "$tmp/proxy.json" --mount "$tmp/bin:/ar-bench" --proxy-log /dev/null \
	--audit "$tmp/inside.jsonl" \
	-- sh -c 'h=${HTTP_PROXY#http://}; for _ in $(seq 1 "$3"); do
		AR_BLAST_PROXY_HOST=${h%:*} /ar-bench/ar-blast send "$1" "$2" "${h##*:}"; done' \
	_ "$sink" "$BYTES" "$RUNS" | awk '{print $3}' | median)
printf '  %-36s %6s\n' "direct loopback" "$direct" "bare proxy on loopback" "$bare" \
	"sandbox -> veth -> its proxy" "$inside"
echo "  sandbox/bare-proxy $(ratio "$inside" "$bare") (target >= 0.8)   bare-proxy/direct $(ratio "$bare" "$direct")"

# Transparent capture: the proxy resolves sink.bench.test from a private /etc/hosts (a
# mount namespace of this run only); the sandbox has its own hosts file without it, so
# the name comes from the stub as a synthetic address.
echo "== captured stream vs CONNECT from the same sandbox, $BYTES bytes, median of $RUNS (Gbit/s)"
echo "127.0.0.1 localhost sink.bench.test" >"$tmp/hosts"
echo "127.0.0.1 localhost" >"$tmp/sandbox-hosts"
cat >"$tmp/capture.json" <<JSON
{"name": "bench-cap", "allowed_hosts": ["sink.bench.test:$sink", "127.0.0.1:$sink"], "proxy": {"allow_private": ["127.0.0.1"]}}
JSON
# shellcheck disable=SC2016 # expanded inside the sandbox
both=$(unshare -m --propagation private sh -c 'mount --bind "$1/hosts" /etc/hosts && shift && exec "$@"' \
	_ "$tmp" "$AGENTRUN" --policy "$tmp/capture.json" --mount "$tmp/bin:/ar-bench" \
	--mount "$tmp/sandbox-hosts:/etc/hosts" --proxy-log /dev/null \
	-- sh -c 'a=$(getent hosts sink.bench.test | cut -d" " -f1); h=${HTTP_PROXY#http://}
		for _ in $(seq 1 "$3"); do
			printf "captured "; env -u HTTP_PROXY AR_BLAST_HOST=$a /ar-bench/ar-blast send "$1" "$2"
			printf "connect "; AR_BLAST_PROXY_HOST=${h%:*} /ar-bench/ar-blast send "$1" "$2" "${h##*:}"
		done' _ "$sink" "$BYTES" "$RUNS")
captured=$(awk '$1 == "captured" {print $4}' <<<"$both" | median)
connect=$(awk '$1 == "connect" {print $4}' <<<"$both" | median)
printf '  %-36s %6s\n' "CONNECT through HTTP_PROXY" "$connect" "captured, by name (no proxy vars)" "$captured"
echo "  captured/CONNECT $(ratio "$captured" "$connect") (target >= 0.9)"

N=${CONCURRENT:-50}
echo "== $N concurrent sandboxes from one policy, then kill -9 of every agentrun, then gc"
for i in $(seq 1 "$N"); do
	# shellcheck disable=SC2016 # expanded inside the sandbox
	"$AGENTRUN" --policy "$tmp/proxy.json" --proxy-log /dev/null --mount "$tmp/bin:/ar-bench" \
		--audit "$tmp/a.$i.jsonl" \
		-- sh -c 'h=${HTTP_PROXY#http://}
		AR_BLAST_PROXY_HOST=${h%:*} /ar-bench/ar-blast send "$1" 1048576 "${h##*:}" >/dev/null &&
			echo reached; sleep 60' _ "$sink" >"$tmp/c.$i" 2>&1 &
	runs+=($!)
	disown # killed with -9 below: no job report from this shell
done
for _ in $(seq 1 120); do
	[ "$(cat "$tmp"/c.* | grep -c '^reached$')" -ge "$N" ] && break
	sleep 0.5
done
echo "  reached the sink through their proxies: $(cat "$tmp"/c.* | grep -c '^reached$')/$N;" \
	"distinct /30s: $(grep -h '^proxy_ip=' /run/agentrun/bench-net-*/state | sort -u | wc -l)"
kill -9 "${runs[@]}"
for p in "${runs[@]}"; do
	for _ in $(seq 1 100); do
		[ -d "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null || break
		sleep 0.05
	done
done
sleep 1
"$AGENTRUN" gc | sed 's/^/  gc: /'
left_states=$(find /run/agentrun -maxdepth 1 -name 'bench-net-*' | wc -l)
left_cg=$(find /sys/fs/cgroup -maxdepth 6 -type d -name 'agentrun-bench-net-*' | wc -l)
left_procs=$(pgrep -fc -- "--policy $tmp/proxy.json" || true)
echo "  left after gc: $left_states state dirs, $left_cg cgroups, $left_procs processes"

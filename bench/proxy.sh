#!/usr/bin/env bash
# bench/proxy.sh — the egress proxy beside its peers, in one run, on loopback only.
# Not a test: prints figures and ratios (agentrun/peer, agentrun/direct).
#   CONNECT throughput (1 GiB through a tunnel, median of 3)
#   forwarded small GETs per second with wrk at 1, 16 and 128 connections (nginx origin)
#   proxy RSS per idle tunnel while holding 1,000 idle CONNECT tunnels
# AGENTRUN_BEFORE=/path/to/older/agentrun adds a "before" proxy to every figure, measured
# interleaved with agentrun in the same run (before/after on a shared machine).
# Needs: scripts/install-deps.sh --bench; a build in build/ (scripts/build.sh). Run as root
# (squid drops to its own user). Every server is started and stopped here by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTRUN=${AGENTRUN:-$PWD/build/agentrun}
BLAST=${BLAST:-$PWD/build/bench/ar-blast}
BYTES=${BYTES:-1073741824}
WRK_SECONDS=${WRK_SECONDS:-5}
IDLE=${IDLE:-1000}
BEFORE=${AGENTRUN_BEFORE:-}
RUNS=${RUNS:-3}
for t in "$AGENTRUN" "$BLAST"; do [ -x "$t" ] || { echo "bench: build first ($t missing)" >&2; exit 2; }; done
for c in tinyproxy squid nginx wrk python3; do command -v $c >/dev/null || { echo "bench: needs $c (scripts/install-deps.sh --bench)" >&2; exit 2; }; done

tmp=$(mktemp -d /tmp/agentrun-bench.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for _ in $(seq 1 30); do # squid takes its shutdown_lifetime (1 s)
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && break; done
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
	for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
	echo "bench: nothing listens on $1" >&2; return 1
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

sink=$(port); origin=$(port); p_ar=$(port); p_tiny=$(port); p_squid=$(port); p_before=$(port)
"$BLAST" sink "$sink" & pids+=($!)

cat >"$tmp/nginx.conf" <<NGINX
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/nginx.err;
events { worker_connections 4096; }
http {
	access_log off;
	keepalive_requests 1000000;
	server {
		listen 127.0.0.1:$origin;
		location / { return 200 "hello from the local origin\n"; }
	}
}
NGINX
nginx -c "$tmp/nginx.conf" -g 'daemon off;' & pids+=($!)

cat >"$tmp/tinyproxy.conf" <<TINY
Port $p_tiny
Listen 127.0.0.1
Timeout 600
MaxClients 4096
LogLevel Critical
LogFile "$tmp/tinyproxy.log"
TINY
tinyproxy -d -c "$tmp/tinyproxy.conf" >/dev/null 2>&1 & pids+=($!); tiny_pid=$!

cat >"$tmp/squid.conf" <<SQUID
http_port 127.0.0.1:$p_squid
http_access allow all
cache deny all
access_log none
cache_store_log none
cache_log $tmp/squid-cache.log
pid_filename $tmp/squid.pid
coredump_dir $tmp
max_filedescriptors 16384
shutdown_lifetime 1 seconds
SQUID
squid -N -f "$tmp/squid.conf" >/dev/null 2>&1 & pids+=($!); squid_pid=$!

ulimit -n 65536 2>/dev/null || true
"$AGENTRUN" proxy --listen "127.0.0.1:$p_ar" --allow "127.0.0.1:$sink" --allow "127.0.0.1:$origin" \
	--audit "$tmp/audit.jsonl" 2>"$tmp/agentrun.log" & pids+=($!); ar_pid=$!

if [ -n "$BEFORE" ]; then
	"$BEFORE" proxy --listen "127.0.0.1:$p_before" --allow "127.0.0.1:$sink" \
		--allow "127.0.0.1:$origin" --audit "$tmp/audit.before.jsonl" 2>"$tmp/before.log" &
	pids+=($!); before_pid=$!
	wait_port "$p_before"
fi
for p in $sink $origin $p_tiny $p_squid $p_ar; do wait_port "$p"; done

echo "agentrun proxy benchmark — $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, kernel $(uname -r)"
echo "peers: $(tinyproxy -v 2>&1 | head -1), squid $(squid -v | head -1 | awk '{print $4}'), nginx $(nginx -v 2>&1 | cut -d/ -f2), wrk"
echo

# 1. CONNECT throughput
declare -A gbps
one() { "$BLAST" send "$sink" "$BYTES" ${1:+"$1"} | awk '{print $3}'; }
# rounds interleave every party, so a burst of load elsewhere hits them alike
for _ in $(seq 1 "$RUNS"); do
	one >>"$tmp/t.direct"; one "$p_ar" >>"$tmp/t.agentrun"
	one "$p_squid" >>"$tmp/t.squid"; one "$p_tiny" >>"$tmp/t.tinyproxy"
	if [ -n "$BEFORE" ]; then one "$p_before" >>"$tmp/t.before"; fi
done
for k in direct agentrun squid tinyproxy; do gbps[$k]=$(median <"$tmp/t.$k"); done
if [ -n "$BEFORE" ]; then gbps[before]=$(median <"$tmp/t.before"); fi
echo "CONNECT throughput, $((BYTES >> 20)) MiB per run, median of $RUNS (GB/s)"
printf '  %-10s %8s\n' direct "${gbps[direct]}" agentrun "${gbps[agentrun]}" squid "${gbps[squid]}" tinyproxy "${gbps[tinyproxy]}"
if [ -n "$BEFORE" ]; then
	printf '  %-10s %8s   agentrun/before %s\n' before "${gbps[before]}" "$(ratio "${gbps[agentrun]}" "${gbps[before]}")"
fi
best=$(printf '%s\n%s\n' "${gbps[squid]}" "${gbps[tinyproxy]}" | sort -g | tail -1)
echo "  ratios: agentrun/direct $(ratio "${gbps[agentrun]}" "${gbps[direct]}")  agentrun/squid $(ratio "${gbps[agentrun]}" "${gbps[squid]}")  agentrun/tinyproxy $(ratio "${gbps[agentrun]}" "${gbps[tinyproxy]}")  agentrun/best-peer $(ratio "${gbps[agentrun]}" "$best")  (targets: >=0.5 direct, >=2 best peer)"
echo

# 2. forwarded GET rate
cat >"$tmp/proxy.lua" <<LUA
wrk.path = "http://127.0.0.1:$origin/"
wrk.headers["Host"] = "127.0.0.1:$origin"
LUA
rate() { # conns port [script]
	wrk -t1 -c"$1" -d"${WRK_SECONDS}s" ${3:+-s "$3"} "http://127.0.0.1:$2/" 2>/dev/null |
		awk '/^Requests\/sec/ {printf "%.0f", $2} /Non-2xx/ {bad=1} END {if (bad) printf " (non-2xx!)"}'
}
echo "forwarded small GETs (29-byte body), wrk 1 thread, ${WRK_SECONDS}s (requests/s)"
printf '  %-6s %10s %10s %10s %10s   %s\n' conns direct agentrun squid tinyproxy "agentrun/direct agentrun/squid agentrun/tinyproxy agentrun/best-peer"
for c in 1 16 128; do
	d=$(rate "$c" "$origin"); a=$(rate "$c" "$p_ar" "$tmp/proxy.lua")
	s=$(rate "$c" "$p_squid" "$tmp/proxy.lua"); t=$(rate "$c" "$p_tiny" "$tmp/proxy.lua")
	b=$(printf '%s\n%s\n' "${s%% *}" "${t%% *}" | sort -g | tail -1)
	printf '  %-6s %10s %10s %10s %10s   %s %s %s %s\n' "$c" "$d" "$a" "$s" "$t" \
		"$(ratio "${a%% *}" "${d%% *}")" "$(ratio "${a%% *}" "${s%% *}")" "$(ratio "${a%% *}" "${t%% *}")" "$(ratio "${a%% *}" "$b")"
done
if [ -n "$BEFORE" ]; then
	for c in 1 16 128; do # interleaved: after, before, after, before
		a1=$(rate "$c" "$p_ar" "$tmp/proxy.lua"); b1=$(rate "$c" "$p_before" "$tmp/proxy.lua")
		a2=$(rate "$c" "$p_ar" "$tmp/proxy.lua"); b2=$(rate "$c" "$p_before" "$tmp/proxy.lua")
		a=$(((${a1%% *} + ${a2%% *}) / 2)); b=$(((${b1%% *} + ${b2%% *}) / 2))
		printf '  %-6s agentrun %s before %s   agentrun/before %s\n' "$c" "$a" "$b" "$(ratio "$a" "$b")"
	done
fi
echo "  (target: agentrun/best-peer >= 1.5 at 16 and 128)"
echo

# 3. RSS per idle tunnel
echo "RSS while holding $IDLE idle CONNECT tunnels (KiB per tunnel; kernel socket buffers not included)"
per_tunnel() { # pid port
	local before after fifo=$tmp/idle.$2
	before=$(rss_kb "$1")
	mkfifo "$fifo"
	"$BLAST" idle "$sink" "$IDLE" "$2" <"$fifo" >"$tmp/idle.out" &
	local ip=$!
	exec 7>"$fifo"
	for _ in $(seq 1 600); do grep -q ready "$tmp/idle.out" 2>/dev/null && break; sleep 0.05; done
	after=$(rss_kb "$1")
	exec 7>&-
	wait "$ip" || true
	rm -f "$fifo"
	awk -v a="$after" -v b="$before" -v n="$IDLE" 'BEGIN { printf "%.1f", (a - b) / n }'
}
ra=$(per_tunnel "$ar_pid" "$p_ar"); rs=$(per_tunnel "$squid_pid" "$p_squid"); rt=$(per_tunnel "$tiny_pid" "$p_tiny")
printf '  %-10s %8s\n' agentrun "$ra" squid "$rs" tinyproxy "$rt"
if [ -n "$BEFORE" ]; then
	rb=$(per_tunnel "$before_pid" "$p_before")
	printf '  %-10s %8s   agentrun/before %s\n' before "$rb" "$(ratio "$ra" "$rb")"
fi
echo "  ratios: agentrun/squid $(ratio "$ra" "$rs")  agentrun/tinyproxy $(ratio "$ra" "$rt")  (target: < 16 KiB per tunnel)"

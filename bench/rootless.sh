#!/usr/bin/env bash
# bench/rootless.sh — agentrun run by an ordinary user, in one run (not a test; ratios).
#   start-to-exit of /bin/true, interleaved rounds, every party run by the same
#     unprivileged user: bwrap --unshare-all, agentrun network none, agentrun
#     network: proxy with transparent capture (targets: none <= 1.0x bwrap, proxy <= 1.5x)
#   one download (BYTES) through the sandbox's proxy from inside, explicit (CONNECT through
#     HTTP_PROXY) and captured (by name, no proxy variables), as the user and as root
#     (target: user >= 0.8x root, each)
#   optionally (PEERS=1) Codex's `codex sandbox` (without network: its managed proxy needs
#     a configuration this bench does not make) and Anthropic's sandbox-runtime (`srt`, with
#     its proxies; needs ripgrep and socat), installed from the npm registry into a scratch
#     directory of this run, start-to-exit as the user
# AGENTRUN_BEFORE=BINARY adds an older agentrun's none and proxy to the same interleaved
# rounds (before/after, as in bench/startup.sh).
# The user is one of this run's own (removed at the end); no cgroup is delegated to it
# here, so its runs pass --no-cgroups (root's too, for a like comparison). Run as root;
# traffic: 127.0.0.1 and the sandboxes' own /30s only. Processes stopped by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTRUN=${AGENTRUN:-$PWD/build/agentrun}
BLAST=${BLAST:-$PWD/build/bench/ar-blast}
ROUNDS=${ROUNDS:-40}
BYTES=${BYTES:-268435456}
RUNS=${RUNS:-3}
for t in "$AGENTRUN" "$BLAST"; do [ -x "$t" ] || { echo "bench: build first ($t missing)" >&2; exit 2; }; done
for c in bwrap python3 setpriv useradd; do command -v $c >/dev/null || { echo "bench: needs $c (scripts/install-deps.sh --bench)" >&2; exit 2; }; done
[ "$(id -u)" = 0 ] || { echo "bench: run as root (it creates the unprivileged user)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/agentrun-bench.XXXXXX)
chmod 755 "$tmp"
user=ar-bench-$$
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp" "/run/user/${uid:-none}"
	userdel -r "$user" >/dev/null 2>&1 || true
}
trap cleanup EXIT
useradd --create-home --user-group --shell /bin/sh "$user"
uid=$(id -u "$user")
gid=$(id -g "$user")
install -d -m 0700 -o "$uid" -g "$gid" "/run/user/$uid"
mkdir -m 755 "$tmp/bin"
cp "$AGENTRUN" "$tmp/bin/agentrun"
B=""
if [ -n "${AGENTRUN_BEFORE:-}" ]; then
	cp "$AGENTRUN_BEFORE" "$tmp/bin/agentrun-before"
	B=$tmp/bin/agentrun-before
fi
cp "$BLAST" bench/tools/interleave.py "$tmp/bin/"
chmod 644 "$tmp/bin/interleave.py"
A=$tmp/bin/agentrun
as_user() { (cd / && setpriv --reuid "$uid" --regid "$gid" --init-groups \
	env HOME="/home/$user" XDG_RUNTIME_DIR="/run/user/$uid" "$@"); }
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
echo "127.0.0.1 localhost sink.bench.test" >"$tmp/hosts"
echo "127.0.0.1 localhost" >"$tmp/sandbox-hosts"
cat >"$tmp/proxy.json" <<JSON
{"name": "bench-rl", "allowed_hosts": ["sink.bench.test:$sink", "127.0.0.1:$sink"],
 "proxy": {"allow_private": ["127.0.0.1"]}}
JSON
cat >"$tmp/none.json" <<JSON
{"name": "bench-rl-none", "network": "none"}
JSON
chmod 644 "$tmp"/*.json "$tmp"/*hosts

echo "agentrun run by an ordinary user — $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, kernel $(uname -r)"
# startup ROUNDS: the three, interleaved, as whoever runs it (the user, then root for
# the same ratios under root: what being a user costs shows as the difference)
startup() {
	python3 - "$ROUNDS" "$A" "$tmp" "$B" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[2]))
from interleave import medians
runs, ar, tmp, before = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
none = ["--no-cgroups", "--policy", f"{tmp}/none.json", "--", "/bin/true"]
proxy = ["--no-cgroups", "--policy", f"{tmp}/proxy.json", "--proxy-log", "/dev/null", "--", "/bin/true"]
cmds = {
    "bwrap": "bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp --cap-drop ALL /bin/true".split(),
    "none": [ar] + none,
    "proxy": [ar] + proxy,
}
if before:
    cmds["none (before)"] = [before] + none
    cmds["proxy (before)"] = [before] + proxy
m = medians(cmds, runs, warmup=5)
print("  %-30s %6.2f / %6.2f / %6.2f ms" % ("bwrap / none / proxy+capture", m["bwrap"], m["none"], m["proxy"]))
print("  none/bwrap %.2f (target <= 1.0)   proxy/bwrap %.2f (target <= 1.5)   (load %.1f)" % (m["none"] / m["bwrap"], m["proxy"] / m["bwrap"], os.getloadavg()[0]))
if before:
    print("  before: %.2f / %.2f ms, none/bwrap %.2f   proxy/bwrap %.2f" % (m["none (before)"], m["proxy (before)"], m["none (before)"] / m["bwrap"], m["proxy (before)"] / m["bwrap"]))
PY
}
echo "== start-to-exit of /bin/true as $user, $ROUNDS interleaved rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))"
as_user bash -c "$(declare -f startup); ROUNDS=$ROUNDS A=$A B=$B tmp=$tmp startup"
echo "== the same as root, for comparison"
startup

# The download from inside, CONNECT and captured, as one party (the user, root) at a time;
# the proxy resolves sink.bench.test from a private /etc/hosts (a mount namespace of this
# run), the sandbox from the DNS stub (a synthetic address).
download() { # WHO RUNNER...: one "connect GBIT" and one "captured GBIT" line
	local who=$1
	shift
	# shellcheck disable=SC2016 # expanded inside the sandbox
	unshare -m --propagation private sh -c 'mount --bind "$1/hosts" /etc/hosts && shift && exec "$@"' \
		_ "$tmp" "$@" "$A" --no-cgroups --policy "$tmp/proxy.json" --mount "$tmp/bin:/ar-bench" \
		--mount "$tmp/sandbox-hosts:/etc/hosts" --proxy-log /dev/null --audit /dev/null \
		-- sh -c 'a=$(getent hosts sink.bench.test | cut -d" " -f1); h=${HTTP_PROXY#http://}
		printf "captured "; env -u HTTP_PROXY AR_BLAST_HOST=$a /ar-bench/ar-blast send "$1" "$2"
		printf "connect "; AR_BLAST_PROXY_HOST=${h%:*} /ar-bench/ar-blast send "$1" "$2" "${h##*:}"' \
		_ "$sink" "$BYTES" >>"$tmp/dl.$who"
}
echo "== one download of $BYTES bytes from inside, median of $RUNS alternating runs (Gbit/s)"
for _ in $(seq 1 "$RUNS"); do
	download root env
	download user setpriv --reuid "$uid" --regid "$gid" --init-groups env XDG_RUNTIME_DIR="/run/user/$uid"
done
for kind in connect captured; do
	r=$(awk -v k="$kind" '$1 == k {print $4}' "$tmp/dl.root" | median)
	u=$(awk -v k="$kind" '$1 == k {print $4}' "$tmp/dl.user" | median)
	printf '  %-9s root %6s   user %6s   user/root %s (target >= 0.8)\n' "$kind" "$r" "$u" "$(ratio "$u" "$r")"
done

[ "${PEERS:-0}" = 1 ] || { echo "(PEERS=1 adds codex sandbox and sandbox-runtime from npm)"; exit 0; }
command -v npm >/dev/null || { echo "bench: PEERS=1 needs npm" >&2; exit 2; }
echo "== the peers, installed from npm into $tmp/npm (never committed)"
mkdir -m 755 "$tmp/npm"
npm install --silent --prefix "$tmp/npm" @openai/codex @anthropic-ai/sandbox-runtime >"$tmp/npm.log" 2>&1 ||
	{ echo "  npm install failed: $(tail -3 "$tmp/npm.log")"; exit 0; }
chmod -R a+rX "$tmp/npm"
codex=$tmp/npm/node_modules/.bin/codex srt=$tmp/npm/node_modules/.bin/srt
as_user python3 - "$ROUNDS" "$A" "$tmp" "$codex" "$srt" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[2]))
from interleave import medians
runs, ar, tmp, codex, srt = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
cmds = {
    "agentrun proxy": [ar, "--no-cgroups", "--policy", f"{tmp}/proxy.json", "--proxy-log", "/dev/null", "--", "/bin/true"],
    "codex sandbox": [codex, "sandbox", "/bin/true"],
    "sandbox-runtime": [srt, "/bin/true"],
}
m = medians(cmds, max(5, runs // 4), warmup=2)
for k, v in m.items():
    print("  %-18s %8.2f ms   x agentrun %.2f" % (k, v, v / m["agentrun proxy"]))
PY

#!/usr/bin/env bash
# bench/hook.sh — what the OCI hook costs: `runc run` of a static /bin/true from the same
# rendered bundle (network none, a fresh netns in both), with agentrun's createRuntime
# and poststop hooks and without them, and with the hooks for a `network: proxy` policy
# (the hook wires the veth and starts the detached confined proxy, which exits with the
# container), first with hyperfine -N (each command's runs in a block), then the three
# runc runs interleaved round by round (the figures to trust on a shared machine).
# AGENTRUN_BEFORE=<old agentrun binary>: also the proxy bundle rendered by (and hooked to)
# that binary, in the hyperfine run, for a before/after.
# Not a test: prints medians and the difference (target: the hook adds at most 15 ms).
# Needs: runc, hyperfine (scripts/install-deps.sh --bench), python3; a build in build/.
# Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTRUN=${AGENTRUN:-$PWD/build/agentrun}
RUNS=${RUNS:-60}
for c in hyperfine runc python3 cc; do
	command -v $c >/dev/null || {
		echo "bench: needs $c (scripts/install-deps.sh --bench)" >&2
		exit 2
	}
done
[ -x "$AGENTRUN" ] || {
	echo "bench: build first ($AGENTRUN missing)" >&2
	exit 2
}

tmp=$(mktemp -d /tmp/agentrun-bench-hook.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/rootfs/tmp" "$tmp/rootfs/proc" "$tmp/rootfs/sys" "$tmp/rootfs/dev"
printf 'int main(void){return 0;}\n' | cc -static -O2 -x c - -o "$tmp/rootfs/true"
"$AGENTRUN" render --policy profiles/offline.json --format oci --rootfs "$tmp/rootfs" \
	--bundle "$tmp/hook" -- /true
printf '{"name": "benchpx", "allowed_hosts": ["api.example.com"]}' >"$tmp/px.json"
"$AGENTRUN" render --policy "$tmp/px.json" --format oci --rootfs "$tmp/rootfs" \
	--bundle "$tmp/proxy" -- /true
before=()
if [ -n "${AGENTRUN_BEFORE:-}" ]; then
	"$AGENTRUN_BEFORE" render --policy "$tmp/px.json" --format oci --rootfs "$tmp/rootfs" \
		--bundle "$tmp/proxy-before" -- /true
	before=(-n "runc run, hook + proxy (before)" "runc --root $tmp/runc run --bundle $tmp/proxy-before ar-bench-before-$$")
fi
mkdir -p "$tmp/plain"
python3 - "$tmp/hook/config.json" "$tmp/plain/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.pop("hooks")
json.dump(c, open(sys.argv[2], "w"))
PY

# the two hook calls alone, against a process in a fresh netns, records in $tmp
unshare -n sleep 600 &
netns_pid=$!
trap 'kill $netns_pid; rm -rf "$tmp"' EXIT
printf '{"ociVersion": "1.0.2", "id": "b", "status": "creating", "pid": %d, "bundle": "/b"}' \
	"$netns_pid" >"$tmp/create.json"
printf '{"ociVersion": "1.0.2", "id": "b", "status": "stopped", "pid": 0, "bundle": "/b"}' >"$tmp/stop.json"
printf '#!/bin/sh\nexport AGENTRUN_HOOK_DIR=%s/hooks\n%s hook create-runtime --policy %s <%s/create.json\n%s hook poststop --policy %s <%s/stop.json\n' \
	"$tmp" "$AGENTRUN" "$PWD/profiles/offline.json" "$tmp" "$AGENTRUN" "$PWD/profiles/offline.json" "$tmp" >"$tmp/pair.sh"
chmod +x "$tmp/pair.sh"

r="runc --root $tmp/runc run"
hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$tmp/r.json" \
	-n "runc run, no hook" "$r --bundle $tmp/plain ar-bench-plain-$$" \
	-n "runc run, agentrun hook" "$r --bundle $tmp/hook ar-bench-hook-$$" \
	-n "runc run, hook + proxy" "$r --bundle $tmp/proxy ar-bench-proxy-$$" \
	"${before[@]}" \
	-n "the hook pair alone (sh)" "$tmp/pair.sh" >/dev/null 2>"$tmp/err" ||
	{
		cat "$tmp/err" >&2
		exit 1
	}
echo "runc run of /true, fresh netns — $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, kernel $(uname -r), $RUNS runs each (hyperfine -N), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp/r.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
for name, x in r.items():
    print(f"  {name:26} median {x['median']*1e3:7.2f} ms  mean {x['mean']*1e3:7.2f} ms")
d = (r["runc run, agentrun hook"]["median"] - r["runc run, no hook"]["median"]) * 1e3
p = (r["runc run, hook + proxy"]["median"] - r["runc run, no hook"]["median"]) * 1e3
print(f"  the hook adds {d:.2f} ms to runc run (target <= 15 ms); the pair of hook calls alone:"
      f" {r['the hook pair alone (sh)']['median']*1e3:.2f} ms including one sh")
print(f"  with network: proxy (veth, detached proxy, stopped at poststop) it adds {p:.2f} ms")
if "runc run, hook + proxy (before)" in r:
    b = (r["runc run, hook + proxy (before)"]["median"] - r["runc run, no hook"]["median"]) * 1e3
    print(f"  ... and {b:.2f} ms with AGENTRUN_BEFORE's hook")
PY

# The three runc runs again, interleaved (plain, hook, hook + proxy, plain, ...): hyperfine
# runs each command's runs in a block, so a burst of load can land on one of them; here
# it hits all three alike, and the differences of the medians are the figures to trust.
python3 - "$RUNS" "$tmp" "$$" <<'PY'
import os, sys
sys.path.insert(0, "bench/tools")
from interleave import medians
runs, tmp, tag = int(sys.argv[1]), sys.argv[2], sys.argv[3]
r = ["runc", "--root", f"{tmp}/runc", "run", "--bundle"]
cmds = {
    "plain": r + [f"{tmp}/plain", f"ar-bench-iplain-{tag}"],
    "hook": r + [f"{tmp}/hook", f"ar-bench-ihook-{tag}"],
    "hook + proxy": r + [f"{tmp}/proxy", f"ar-bench-iproxy-{tag}"],
}
m = medians(cmds, runs)
print(f"interleaved, {runs} rounds (load {os.getloadavg()[0]:.1f}): "
      + ", ".join(f"{k} {v:.2f} ms" for k, v in m.items()))
print(f"  the hook adds {m['hook'] - m['plain']:.2f} ms, with network: proxy "
      f"{m['hook + proxy'] - m['plain']:.2f} ms (target <= 15 ms)")
PY

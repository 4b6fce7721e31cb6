#!/usr/bin/env bash
# bench/startup.sh — start-to-exit of /bin/true under each sandbox, in one run (hyperfine -N).
# Not a test: prints medians and the ratio of each to agentrun.
# Needs: scripts/install-deps.sh --bench; a build in build/. Run as root.
# BENCH_JSON=FILE keeps hyperfine's JSON export (docs/benchmarks.md aggregates runs).
# AGENTRUN_BEFORE=BINARY adds an older agentrun to the interleaved rounds (before/after).
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTRUN=${AGENTRUN:-$PWD/build/agentrun}
RUNS=${RUNS:-100}
for c in hyperfine bwrap runc unshare python3 cc; do command -v $c >/dev/null || { echo "bench: needs $c (scripts/install-deps.sh --bench)" >&2; exit 2; }; done
[ -x "$AGENTRUN" ] || { echo "bench: build first ($AGENTRUN missing)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/agentrun-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# runc: a minimal bundle whose rootfs holds one static `true`.
mkdir -p "$tmp/bundle/rootfs"
printf 'int main(void){return 0;}\n' | cc -static -O2 -x c - -o "$tmp/bundle/rootfs/true"
(cd "$tmp/bundle" && runc spec)
python3 - "$tmp/bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]; c = json.load(open(p))
c["process"]["args"] = ["/true"]; c["process"]["terminal"] = False
json.dump(c, open(p, "w"))
PY

cmds=(
	"plain::/bin/true"
	"unshare::unshare --mount --pid --net --ipc --uts --fork /bin/true"
	"bwrap::bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp --cap-drop ALL /bin/true"
	"runc::runc run --bundle $tmp/bundle ar-bench-$$"
	"agentrun::$AGENTRUN -- /bin/true"
	"agentrun --no-cgroups::$AGENTRUN --no-cgroups -- /bin/true"
)
if command -v firejail >/dev/null; then
	cmds+=("firejail::firejail --quiet --noprofile --net=none --private-tmp /bin/true")
fi

args=()
for c in "${cmds[@]}"; do args+=(-n "${c%%::*}" "${c#*::}"); done
hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$tmp/r.json" "${args[@]}" >/dev/null 2>"$tmp/err" ||
	{ cat "$tmp/err" >&2; exit 1; }

[ -z "${BENCH_JSON:-}" ] || cp "$tmp/r.json" "$BENCH_JSON"
echo "startup of /bin/true — $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, kernel $(uname -r), $RUNS runs each (hyperfine -N)"
python3 - "$tmp/r.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
ar = r["agentrun"]["median"]
print(f"  {'':24} {'median ms':>10} {'mean ms':>9} {'x agentrun':>11}")
for name, x in r.items():
    print(f"  {name:24} {x['median']*1e3:10.2f} {x['mean']*1e3:9.2f} {x['median']/ar:11.2f}")
b = r["bwrap"]["median"]
print(f"  agentrun/bwrap {ar/b:.2f} (target <= 1.00: every layer on is no slower than bwrap --unshare-all)")
PY

# The same three again, interleaved (bwrap, agentrun, agentrun --no-cgroups, bwrap, ...):
# on a shared machine a burst of load then hits all three alike, where hyperfine's
# back-to-back blocks can put it on one.
python3 - "$RUNS" "$AGENTRUN" "${AGENTRUN_BEFORE:-}" <<'PY'
import os, sys
sys.path.insert(0, "bench/tools")
from interleave import medians
runs, ar, before = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cmds = {
    "bwrap": "bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp --cap-drop ALL /bin/true".split(),
    "agentrun": [ar, "--", "/bin/true"],
    "agentrun --no-cgroups": [ar, "--no-cgroups", "--", "/bin/true"],
}
if before:
    cmds["agentrun (before)"] = [before, "--", "/bin/true"]
m = medians(cmds, runs, warmup=5)
print(f"interleaved, {runs} rounds: " + ", ".join(f"{k} {v:.2f} ms" for k, v in m.items()))
print(f"  agentrun/bwrap {m['agentrun'] / m['bwrap']:.2f} interleaved (load {os.getloadavg()[0]:.1f})")
if before:
    print(f"  agentrun (before)/bwrap {m['agentrun (before)'] / m['bwrap']:.2f} interleaved")
PY

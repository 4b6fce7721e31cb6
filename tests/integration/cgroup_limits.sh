#!/usr/bin/env bash
# agentrun run with cgroup limits (v2, or v1 on hybrid hosts): a bounded fork bomb
# stops at --pids, an allocation over --memory is killed and reported (137), a
# CPU-bound loop is held near --cpus, --no-cgroups runs without limits, and no
# cgroup is left behind.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/cgroup/lib.sh
. "$(dirname "$0")/cgroup/lib.sh"
need_root
need_cmd python3
A=$AGENTRUN
cg_need_enforcement

# --- the values written, read while the command runs (v1: one directory per
# controller; v2: one directory)
timeout 60 "$A" --policy "$CG_POLICY" --pids 32 --memory 64m --cpus 0.2 -- sleep 2 &
pid=$!
cg_wait_some 5 || true
sleep 0.3
declare -A got=()
for d in $(cg_dirs); do
	for f in memory.limit_in_bytes memory.memsw.limit_in_bytes memory.max memory.swap.max \
		pids.max cpu.cfs_quota_us cpu.cfs_period_us cpu.max; do
		[ -f "$d/$f" ] && got[$f]=$(cat "$d/$f")
	done
	[ -n "$(cat "$d/cgroup.procs" 2>/dev/null)" ] || empty_dir=$d
done
wait "$pid" || fail "sleep 2 under limits failed"
if [ -n "${got[memory.max]:-}" ]; then
	expect_eq "v2 memory.max" 67108864 "${got[memory.max]}"
	[ -z "${got[memory.swap.max]:-}" ] || expect_eq "v2 memory.swap.max" 0 "${got[memory.swap.max]}"
	expect_eq "v2 cpu.max" "20000 100000" "${got[cpu.max]:-}"
else
	expect_eq "v1 memory.limit_in_bytes" 67108864 "${got[memory.limit_in_bytes]:-}"
	[ -z "${got[memory.memsw.limit_in_bytes]:-}" ] ||
		expect_eq "v1 memory.memsw.limit_in_bytes" 67108864 "${got[memory.memsw.limit_in_bytes]}"
	expect_eq "v1 cpu.cfs_quota_us" 20000 "${got[cpu.cfs_quota_us]:-}"
	expect_eq "v1 cpu.cfs_period_us" 100000 "${got[cpu.cfs_period_us]:-}"
fi
expect_eq "pids.max" 32 "${got[pids.max]:-}"
expect_eq "the sandbox is in every cgroup directory of the run" "" "${empty_dir:-}"

# --- pids: sh forks sleepers (at most 200, each for 5 s) until a fork fails. The
# sandbox's init and the shell are 2 of the 32, so at most 30 forks succeed.
start=$(date +%s)
rc=0
timeout 60 "$A" --policy "$CG_POLICY" --pids 32 -- sh -c \
	'n=0; while [ $n -lt 200 ]; do sleep 5 & n=$((n+1)); echo $n; done' \
	>"$AR_TMP/bomb.out" 2>"$AR_TMP/bomb.err" || rc=$?
forks=$(tail -n 1 "$AR_TMP/bomb.out")
expect_eq "fork bomb: the shell fails to fork and agentrun returns its status" 2 "$rc"
expect_match "fork bomb: the shell reports the failed fork" "Cannot fork" "$(cat "$AR_TMP/bomb.err")"
if [ "${forks:-0}" -le 30 ] && [ "${forks:-0}" -ge 20 ]; then
	pass "fork bomb: $forks forks succeeded under --pids 32"
else
	fail "fork bomb: $forks forks succeeded under --pids 32 (expected 20..30)"
fi
elapsed=$(($(date +%s) - start))
if [ "$elapsed" -lt 30 ]; then pass "fork bomb: over in ${elapsed}s"; else fail "fork bomb took ${elapsed}s"; fi
expect_eq "fork bomb: no cgroup left" 0 "$(cg_count)"

# --- memory: 200 MiB under 64m is killed by the OOM killer and reported.
alloc='import sys; b = bytearray(int(sys.argv[1]) * 1024 * 1024); b[::4096] = b"x" * len(b[::4096]); print("survived")'
expect_status "memory: 200 MiB under --memory 64m is killed (128+9)" 137 \
	timeout 60 "$A" --policy "$CG_POLICY" --memory 64m -- python3 -c "$alloc" 200
expect_eq "memory: the kill is reported" "agentrun: killed by the memory limit (64m)" "$(cat "$AR_TMP/err")"
expect_eq "memory: the allocation did not finish" "" "$(cat "$AR_TMP/out")"
expect_status "memory: 16 MiB under --memory 64m runs" 0 \
	timeout 60 "$A" --policy "$CG_POLICY" --memory 64m -- python3 -c "$alloc" 16
expect_eq "memory: no report without an OOM kill" "" "$(cat "$AR_TMP/err")"
expect_eq "memory: the small allocation finished" "survived" "$(cat "$AR_TMP/out")"

# --- cpu: a busy loop for 2 s of wall time under --cpus 0.2 gets about 20% of a CPU.
spin='import time
t, c = time.monotonic(), time.process_time()
while time.monotonic() - t < 2:
    pass
print(int(100 * (time.process_time() - c) / (time.monotonic() - t)))'
expect_status "cpu: the busy loop runs under --cpus 0.2" 0 \
	timeout 60 "$A" --policy "$CG_POLICY" --cpus 0.2 -- python3 -c "$spin"
pct=$(cat "$AR_TMP/out")
if [ "${pct:-100}" -le 30 ]; then pass "cpu: ${pct}% of one CPU under --cpus 0.2"; else
	fail "cpu: ${pct}% of one CPU under --cpus 0.2 (expected <= 30%)"
fi

# --- --no-cgroups: no cgroup exists while the command runs, and no limit applies.
timeout 60 "$A" --policy "$CG_POLICY" -- sleep 1 &
pid=$!
if cg_wait_some 5; then pass "a run has its cgroup while running"; else
	fail "no agentrun-$CG_NAME-$pid cgroup while the command runs: $(cg_dirs)"
fi
wait "$pid" || true
timeout 60 "$A" --policy "$CG_POLICY" --no-cgroups -- sleep 1 &
pid=$!
sleep 0.5
expect_eq "--no-cgroups: no cgroup while the command runs" "" "$(cg_dirs)"
wait "$pid" || fail "--no-cgroups: sleep 1 failed"
expect_status "--no-cgroups: --memory 64m is not enforced" 0 \
	timeout 60 "$A" --policy "$CG_POLICY" --no-cgroups --memory 64m -- python3 -c "$alloc" 100
expect_eq "--no-cgroups: the allocation finished" "survived" "$(cat "$AR_TMP/out")"

expect_eq "nothing left behind" "" "$(cg_dirs)"
finish

#!/usr/bin/env bash
# No sandbox cgroup outlives its run: not when the command is SIGKILLed, not when
# agentrun gets SIGTERM, and when agentrun itself is SIGKILLed the sandbox dies with
# it (PR_SET_PDEATHSIG on the sandbox's init) and the empty, stale cgroup is swept by
# the next agentrun run.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/cgroup/lib.sh
. "$(dirname "$0")/cgroup/lib.sh"
need_root
A=$AGENTRUN
cg_need_enforcement

# All processes in our cgroups, as one line.
cg_procs() {
	local d
	for d in $(cg_dirs); do cat "$d/cgroup.procs" 2>/dev/null; done | sort -u | tr '\n' ' '
}

# --- the command is killed with SIGKILL, with a background child still running
expect_status "command SIGKILLed: 128+9" 137 \
	timeout 60 "$A" --policy "$CG_POLICY" --pids 16 -- sh -c 'sleep 30 & kill -KILL $$'
expect_eq "command SIGKILLed: no cgroup left" "" "$(cg_dirs)"

# --- four runs at once from the same cgroup: each gets its own cgroup, all removed
pids=()
for i in 1 2 3 4; do
	timeout 60 "$A" --policy "$CG_POLICY" --pids 16 --memory 64m -- sh -c "sleep 1; exit $i" &
	pids+=($!)
done
cg_wait_some 10 || true
sleep 0.3
owners=$(cg_dirs | sed 's/.*-//' | sort -u | wc -l)
expect_eq "parallel runs: four cgroups, one per agentrun PID" 4 "$owners"
codes=""
for p in "${pids[@]}"; do
	rc=0
	wait "$p" || rc=$?
	codes="$codes$rc"
done
expect_eq "parallel runs: each returns its own status" 1234 "$codes"
expect_eq "parallel runs: no cgroup left" "" "$(cg_dirs)"

# --- agentrun gets SIGTERM: it forwards it, the command dies, teardown runs
timeout 60 "$A" --policy "$CG_POLICY" --pids 16 -- sh -c 'sleep 30 & sleep 30' &
apid=$!
cg_wait_some 10 || fail "SIGTERM: the sandbox cgroup never appeared"
kill -TERM "$apid"
rc=0
wait "$apid" || rc=$?
expect_eq "SIGTERM: agentrun returns 128+15" 143 "$rc"
expect_eq "SIGTERM: no cgroup left" "" "$(cg_dirs)"

# --- agentrun is SIGKILLed: nothing of it can run; the kernel kills the sandbox
# (its init has PR_SET_PDEATHSIG, and the PID namespace dies with init), leaving
# empty stale cgroups named after the dead agentrun PID.
"$A" --policy "$CG_POLICY" --pids 16 -- sh -c 'sleep 60 & sleep 60' &
apid=$!
cg_wait_some 10 || fail "kill -9: the sandbox cgroup never appeared"
sleep 0.3 # let the command start its sleepers
before=$(cg_procs)
if [ -n "$before" ]; then pass "kill -9: the sandbox runs in its cgroup ($before)"; else
	fail "kill -9: no process in the sandbox cgroup"
fi
kill -KILL "$apid"
wait "$apid" 2>/dev/null || true
for _ in $(seq 1 100); do
	[ -z "$(cg_procs)" ] && break
	sleep 0.05
done
expect_eq "kill -9: every sandbox process died with agentrun" "" "$(cg_procs)"
stale=$(cg_dirs)
expect_match "kill -9: the stale cgroup is named after the dead agentrun" "agentrun-$CG_NAME-$apid\$" "$stale"
expect_status "kill -9: the next run works" 0 timeout 60 "$A" --policy "$CG_POLICY" -- true
expect_eq "kill -9: the next run swept the stale cgroup" "" "$(cg_dirs)"

finish

# shellcheck shell=bash
# Helpers for tests/integration/cgroup_*.sh, sourced after tests/lib.sh. A policy with
# a name unique to this test run makes every sandbox cgroup of the run
# `agentrun-$CG_NAME-PID`, so leftovers are ours alone even while other tests create
# cgroups.
CG_NAME="cgt$$"
CG_POLICY=$AR_TMP/policy.json
printf '{"name": "%s", "network": "none", "tmpfs": ["/tmp"]}\n' "$CG_NAME" >"$CG_POLICY"

# Our sandbox cgroup directories that exist now (v1: one per controller).
cg_dirs() {
	find /sys/fs/cgroup -maxdepth 6 -type d -name "agentrun-$CG_NAME-*" 2>/dev/null | sort
}
cg_count() { cg_dirs | wc -l; }

# On exit, even after a failure: kill what is left in our cgroups (only processes
# of sandboxes this test started), then remove the directories.
cg_cleanup() {
	local d p
	for d in $(cg_dirs); do
		for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
	done
	sleep 0.2
	for d in $(cg_dirs | sort -r); do rmdir "$d" 2>/dev/null || true; done
}
on_exit cg_cleanup

# cg_wait_some SECONDS: until at least one of our directories exists.
cg_wait_some() {
	local _
	for _ in $(seq 1 $(($1 * 20))); do
		[ "$(cg_count)" -gt 0 ] && return 0
		sleep 0.05
	done
	return 1
}

# The host must be able to enforce limits at all; otherwise say why and skip.
cg_need_enforcement() {
	local rc=0
	timeout 30 "$AGENTRUN" --policy "$CG_POLICY" -- true 2>"$AR_TMP/probe.err" || rc=$?
	if [ "$rc" = 125 ] && grep -q cgroup "$AR_TMP/probe.err"; then
		skip "cgroup limits cannot be enforced here: $(cat "$AR_TMP/probe.err")"
	fi
	[ "$rc" = 0 ] || fail "agentrun -- true: exit $rc: $(cat "$AR_TMP/probe.err")"
}

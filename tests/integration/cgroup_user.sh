#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted on purpose: the shell inside the sandbox expands them
# Limits for an ordinary user on this hybrid host (docs/cgroups.md#without-root): the
# memory, pids and cpu controllers are cgroup v1's, which is never delegated to a user,
# so run says in one line which limits are not enforced and how to get them, and runs;
# --require-limits or the policy's limits.required make that a failure (125, nothing
# left); --no-cgroups runs without the line. Root is unchanged: limits, fail closed.
# (Delegated cgroup v2 for a user, enforced for real: tests/vm/cgroup_v2.sh.)
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
user_setup
# this host's layout; on a host whose user has a delegated v2 cgroup the line differs
[ -d /sys/fs/cgroup/memory ] && [ -d /sys/fs/cgroup/pids ] ||
	skip "the memory and pids controllers are not cgroup v1 hierarchies here"
NAME=cgu-$$
printf '{"name": "%s", "limits": {"required": true}}\n' "$NAME" >"$AR_TMP/required.json"
printf '{"name": "%s", "limits": {"pids": 8, "memory": "64m"}}\n' "$NAME" >"$AR_TMP/two.json"
chmod a+r "$AR_TMP" "$AR_TMP"/*.json
chmod a+x "$AR_TMP"
left() {
	find /sys/fs/cgroup -maxdepth 8 -name "agentrun-$NAME-*" 2>/dev/null | tr '\n' ' '
	pgrep -u "$AR_USER_UID" -f "marker-$$" | tr '\n' ' ' || true
}
HOW='on cgroup v2 (boot with systemd.unified_cgroup_hierarchy=1) run `systemd-run --user --scope -p Delegate=yes agentrun ...`'
LINE="agentrun: limits not enforced (memory 512m, pids 256, cpus 1): this host has the memory, pids and cpu controllers on cgroup v1, which is never delegated to a user; $HOW"

# the default policy (memory 512m, pids 256, cpus 1): one line, then the command runs
expect_status "user: runs without the limits" 7 as_user "$UAGENTRUN" -- sh -c 'echo ran; exit 7'
expect_eq "user: the command ran" ran "$(cat "$AR_TMP/out")"
expect_eq "user: one line says which limits are not enforced and how to get them" "$LINE" "$(cat "$AR_TMP/err")"
# the line names the limits that are set, as written
expect_status "user: a policy's limits" 0 as_user "$UAGENTRUN" --policy "$AR_TMP/two.json" --cpus 0.5 -- true
expect_eq "user: the line names the policy's and the flag's limits" \
	"agentrun: limits not enforced (memory 64m, pids 8, cpus 0.5): this host has the memory, pids and cpu controllers on cgroup v1, which is never delegated to a user; $HOW" \
	"$(cat "$AR_TMP/err")"
# they really are not enforced: 40 processes under pids 8 (the run said so)
# (dash gives up at the first fork that fails, exit 2)
BOMB='n=0; while [ $n -lt 40 ]; do sleep 2 & n=$((n+1)); echo $n; done'
expect_status "user: pids 8 not enforced, as said" 0 as_user "$UAGENTRUN" --pids 8 -- sh -c "$BOMB"
expect_eq "user: 40 children under an unenforced pids 8" 40 "$(tail -n 1 "$AR_TMP/out")"

# a hard failure when asked for: the flag, then the policy field
REQ="agentrun: limits required (--require-limits or limits.required) but not enforced without root (memory 512m, pids 256, cpus 1): this host has the memory, pids and cpu controllers on cgroup v1, which is never delegated to a user; $HOW (pass --no-cgroups to run without limits)"
expect_status "user --require-limits: fails (125)" 125 as_user "$UAGENTRUN" --require-limits -- sh -c "echo marker-$$"
expect_eq "user --require-limits: the reason" "$REQ" "$(cat "$AR_TMP/err")"
expect_eq "user --require-limits: the command never ran" "" "$(cat "$AR_TMP/out")"
expect_eq "user --require-limits: nothing left" "" "$(left)"
expect_status "user limits.required: fails (125)" 125 as_user "$UAGENTRUN" --policy "$AR_TMP/required.json" -- sh -c "echo marker-$$"
expect_eq "user limits.required: the reason (the policy's limits)" \
	"${REQ/memory 512m, pids 256, cpus 1/memory 256m, pids 64, cpus 1}" "$(cat "$AR_TMP/err")"
expect_eq "user limits.required: nothing left" "" "$(left)"
# a wrong type is a policy error naming the field
printf '{"limits": {"required": "yes"}}\n' >"$AR_TMP/bad.json"
chmod a+r "$AR_TMP/bad.json"
expect_status "limits.required: not a boolean" 125 as_user "$UAGENTRUN" --policy "$AR_TMP/bad.json" -- true
expect_match "limits.required: names the field" "^agentrun: .*bad.json: limits.required: expected a boolean, got string$" "$(cat "$AR_TMP/err")"

# --no-cgroups: no limits, no line, whatever is required
expect_status "user --no-cgroups: runs" 0 as_user "$UAGENTRUN" --no-cgroups -- true
expect_eq "user --no-cgroups: no line" "" "$(cat "$AR_TMP/err")"
expect_status "user --no-cgroups over limits.required: runs" 0 as_user "$UAGENTRUN" --no-cgroups --policy "$AR_TMP/required.json" -- true
expect_eq "user --no-cgroups over limits.required: no line" "" "$(cat "$AR_TMP/err")"

# root: unchanged; the limits are enforced (v1) whatever `required` says, no line
expect_status "root --require-limits: the fork bomb stops (2)" 2 "$AGENTRUN" --require-limits --policy "$AR_TMP/two.json" -- sh -c "$BOMB"
expect_match "root: only sh's fork failure on stderr" "^sh: [0-9]+: Cannot fork$" "$(cat "$AR_TMP/err")"
n=$(tail -n 1 "$AR_TMP/out")
if [ "${n:-40}" -lt 8 ]; then pass "root: pids 8 enforced ($n children)"; else fail "root: $n children under pids 8"; fi
expect_eq "nothing left" "" "$(left)"
finish

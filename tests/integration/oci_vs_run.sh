#!/usr/bin/env bash
# One agent spec, two builders: for each shipped profile (its network-none variant: the
# proxy network is not built yet), `agentrun run` and runc running the config.json that
# `render --format oci` made give the agent the same sandbox, seen from /proc inside:
# masked and read-only paths, read-only root, tmpfs and bind mounts with their modes,
# the environment (also equal to config.json's process.env), and the cgroup limits
# (read from outside while the command sleeps). `check --pid` finds no drift in either.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/oci/lib.sh
source "$(dirname "$0")/oci/lib.sh"
need_root
need_cmd runc
oci_need_rootfs_tools

oci_hook_wrapper
RUNC=(runc --root "$AR_TMP/runc")

# pid_of MARK: the /bin/sh whose script carries MARK (5 s at most; agentrun's own argv
# carries it too, so the first word decides)
pid_of() {
	local p i
	for i in $(seq 100); do
		for p in $(pgrep -f -- "$1"); do
			if [ "$(head -c 8 "/proc/$p/cmdline" 2>/dev/null | tr '\0' ' ')" = "/bin/sh " ]; then
				echo "$p"
				return 0
			fi
		done
		sleep 0.05
	done
	return 1
}

# limits PID: the v1 limit files of PID's cgroups, "file value" per line
limits() {
	local ctrl file path
	for spec in memory:memory.limit_in_bytes pids:pids.max cpu:cpu.cfs_quota_us cpu:cpu.cfs_period_us; do
		ctrl=${spec%%:*}
		file=${spec#*:}
		path=$(awk -F: -v c="$ctrl" '$2 ~ "(^|,)" c "(,|$)" {print $3}' "/proc/$1/cgroup")
		echo "$file $(cat "/sys/fs/cgroup/$ctrl$path/$file" 2>&1)"
	done
}

# wait_for FILE: until the command printed its report
wait_for() {
	local i
	for i in $(seq 100); do
		grep -q '^@@END' "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

for prof in offline triage; do
	policy="$AR_TMP/$prof.json"
	oci_policy "$AR_SOURCE_DIR/profiles/$prof.json" "$policy"
	# a rootfs each: runc makes a policy's mount points in it
	rootfs="$AR_TMP/rootfs-$prof"
	oci_rootfs "$rootfs"
	for kind in run oci; do
		mark="ar-cmp-$AR_TAG-$prof-$kind"
		script=": $mark; cat /proc/self/mountinfo; echo @@ENV; tr '\\0' '\\n' </proc/\$\$/environ; echo; echo @@END; sleep 3; true"
		out="$AR_TMP/$prof.$kind.out"
		if [ "$kind" = run ]; then
			(cd / && env -u TERM "$AGENTRUN" --policy "$policy" -- /bin/sh -c "$script" >"$out" 2>"$out.err") &
		else
			id="cmp-$prof-$AR_TAG"
			oci_bundle "$policy" "$AR_TMP/b-$prof" "$rootfs" "$id" /bin/sh -c "$script" || fail "$prof: render"
			on_exit "${RUNC[*]}" delete -f "$id"
			(cd "$AR_TMP/b-$prof" && timeout 60 "${RUNC[@]}" run "$id" </dev/null >"$out" 2>"$out.err") &
		fi
		bg=$!
		if ! wait_for "$out" || ! pid=$(pid_of "$mark"); then
			fail "$prof/$kind: no report (stderr: $(head -c 300 "$out.err"))"
			wait "$bg" || true
			continue
		fi
		limits "$pid" >"$AR_TMP/$prof.$kind.limits"
		rc=0
		"$AGENTRUN" check --policy "$policy" --pid "$pid" >"$AR_TMP/$prof.$kind.check" 2>&1 || rc=$?
		expect_eq "$prof/$kind: check --pid finds no drift ($(head -c 400 "$AR_TMP/$prof.$kind.check"))" 0 "$rc"
		wait "$bg" || fail "$prof/$kind: exit status $? (stderr: $(head -c 300 "$out.err"))"
	done
	if /usr/bin/python3 "$AR_SOURCE_DIR/tests/integration/oci/compare.py" "$AR_TMP/b-$prof/config.json" \
		"$AR_TMP/$prof.run.out" "$AR_TMP/$prof.oci.out" "$AR_TMP/$prof.run.limits" \
		"$AR_TMP/$prof.oci.limits" >"$AR_TMP/$prof.cmp"; then
		pass "$prof: run and the OCI config give the same sandbox ($(grep -c '^same' "$AR_TMP/$prof.cmp") fields)"
	else
		fail "$prof: run and OCI differ: $(grep '^DIFF' "$AR_TMP/$prof.cmp")"
	fi
	# the comparison must have seen the masks, the mounts and the limits, not nothing
	expect_match "$prof: masks compared" "^same masked /proc/keys: masked by /dev/null" "$(cat "$AR_TMP/$prof.cmp")"
	expect_match "$prof: /tmp compared" "^same mount /tmp: tmpfs rw" "$(cat "$AR_TMP/$prof.cmp")"
	expect_match "$prof: pids compared" "^same limit pids.max: 64" "$(cat "$AR_TMP/$prof.cmp")"
done
expect_match "triage: a masked directory compared" "^same masked /sys/firmware: masked tmpfs ro" "$(cat "$AR_TMP/triage.cmp")"
expect_match "triage: kubeconfig bind compared" "^same mount /home/agent/.kube/config: bind ro" "$(cat "$AR_TMP/triage.cmp")"
expect_match "triage: env compared" "^same env: .*ANTHROPIC_BASE_URL=https://api.anthropic.com" "$(cat "$AR_TMP/triage.cmp")"
finish

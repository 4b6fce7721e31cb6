#!/usr/bin/env bash
# A cgroup that cannot be created fails the run closed and leaves nothing. On cgroup v1
# agentrun creates the cgroups after the clone, while the sandbox builds its root: the
# sandbox, already running, must be killed, the command must never start, and the
# cgroups made before the failing one must be removed. The failure is forced by a
# cgroup of the name agentrun will use (agentrun-NAME-PID: `exec` keeps the PID) that
# holds a child cgroup, so it can be neither reused nor replaced. With network none and
# with network: proxy (whose proxy, netns and state must go too).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
A=$AGENTRUN
NAME="late-$$"
printf '{"name": "%s", "network": "none", "limits": {"pids": 32, "memory": "64m"}}\n' "$NAME" >"$AR_TMP/p.json"
mkdir -p "$AR_TMP/io"
chmod 1777 "$AR_TMP/io"

# Where agentrun creates its pids cgroup: our v1 pids hierarchy, else our v2 cgroup
# (the test's shell and agentrun share them).
pids_path=$(awk -F: '$2 ~ /(^|,)pids(,|$)/ {print $3}' /proc/self/cgroup)
if [ -n "$pids_path" ] && [ -d /sys/fs/cgroup/pids ]; then
	parent=/sys/fs/cgroup/pids$pids_path
else
	v2_path=$(awk -F: '$1 == 0 {print $3}' /proc/self/cgroup)
	v2_mnt=$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)
	[ -n "$v2_mnt" ] || skip "no pids cgroup hierarchy"
	parent=$v2_mnt$v2_path
fi
parent=${parent%/}
our_cgroups() { find /sys/fs/cgroup -maxdepth 8 -type d -name "agentrun-$NAME-*" 2>/dev/null | sort; }
on_exit "find /sys/fs/cgroup -maxdepth 9 -depth -type d -name 'agentrun-$NAME-*' -exec rmdir {} + 2>/dev/null; find /sys/fs/cgroup -maxdepth 9 -depth -type d -path '*/agentrun-$NAME-*/blocker' -exec rmdir {} + 2>/dev/null"

# late_case POLICY LABEL: the blocked run (LABEL names the case in each line)
late_case() {
	local got=0 blocker
	rm -f "$AR_TMP/io/ran"
	# shellcheck disable=SC2016 # $$ is the inner shell's, which exec turns into agentrun
	sh -c 'd=$1/agentrun-$2-$$; mkdir "$d" "$d/blocker" || exit 99; echo "$d" >"$3/dir"; shift 3; exec "$@"' \
		sh "$parent" "$NAME" "$AR_TMP" \
		"$A" --policy "$1" --mount "$AR_TMP/io:/io:rw" -- sh -c 'touch /io/ran' \
		>"$AR_TMP/out" 2>"$AR_TMP/err" || got=$?
	[ "$got" != 99 ] || skip "cannot create a cgroup in $parent"
	blocker=$(cat "$AR_TMP/dir")
	expect_eq "$2: a cgroup that cannot be created: exit 125" 125 "$got"
	expect_match "$2: the message names the cgroup" "create cgroup \`$blocker\`" "$(cat "$AR_TMP/err")"
	expect_match "$2: and says how to opt out" "--no-cgroups" "$(cat "$AR_TMP/err")"
	if [ -e "$AR_TMP/io/ran" ]; then fail "$2: the command ran"; else pass "$2: the command never ran"; fi
	# Only the directory the test made is left (the others agentrun made, the proxy's
	# included, are removed).
	expect_eq "$2: no cgroup of agentrun's is left" "$blocker" "$(our_cgroups)"
	rmdir "$blocker/blocker" "$blocker"
}
late_case "$AR_TMP/p.json" "network none"
# network: proxy: the v1 cgroups are made on a thread beside the netns and veth work;
# the network built meanwhile goes too (state, proxy, its cgroup)
printf '{"name": "%s", "allowed_hosts": ["a.example"], "limits": {"pids": 32, "memory": "64m"}}\n' "$NAME" >"$AR_TMP/px.json"
late_case "$AR_TMP/px.json" "network proxy"
expect_eq "network proxy: no state left" "" "$(ls -d /run/agentrun/"$NAME"-* 2>/dev/null)"

# The same policy runs once the name is free (the failure was the blocker's).
expect_status "then a run works" 0 "$A" --policy "$AR_TMP/p.json" --mount "$AR_TMP/io:/io:rw" -- sh -c 'touch /io/ran'
if [ -e "$AR_TMP/io/ran" ]; then pass "the command ran"; else fail "the command did not run"; fi
expect_eq "and leaves no cgroup" "" "$(our_cgroups)"
finish

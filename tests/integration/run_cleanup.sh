#!/usr/bin/env bash
# agentrun run leaves nothing behind: no mounts in the host's mount table, no
# processes, no cgroups under ours, after a normal exit, a failed start, a killed
# command, and when agentrun itself is kill -9'd (the sandbox dies with it; the
# empty cgroup it could not remove is swept by the next run).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
A=$AGENTRUN
NAME="rc-$$"
printf '{"name": "%s", "network": "none", "limits": {"pids": 32, "memory": "64m"}}\n' "$NAME" >"$AR_TMP/p.json"
P=(--policy "$AR_TMP/p.json")
MARK=$((4000 + $$ % 1000)) # a sleep length nothing else uses: `sleep $MARK` finds our processes

# Mount tables change under other tests (network namespaces): compare our kinds only.
host_mounts() { grep -v -e nsfs -e /run/netns /proc/self/mountinfo | cut -d' ' -f5- | sort; }
our_procs() { ps -eo pid=,args= | awk -v m="$MARK" 'NF == 3 && $2 == "sleep" && $3 == m {print $1}'; }
our_cgroups() {
	find /sys/fs/cgroup -maxdepth 8 -type d -name "agentrun-$NAME-*" 2>/dev/null || true
}
mkdir -p "$AR_TMP/io"
chmod 1777 "$AR_TMP/io"
wait_ready() {
	for _ in $(seq 1 100); do [ -e "$AR_TMP/io/ready" ] && return 0; sleep 0.05; done
	return 1
}
start_sleep() { # background agentrun running `sleep $MARK`; sets $pid
	rm -f "$AR_TMP/io/ready"
	"$A" "${P[@]}" --mount "$AR_TMP/io:/io:rw" -- sh -c "touch /io/ready; exec sleep $MARK" &
	pid=$!
	on_exit "kill -9 $pid"
	wait_ready || fail "the sandboxed sleep did not start"
}
gone_within() { # gone_within SECONDS: until no `sleep $MARK` is left
	for _ in $(seq 1 $(($1 * 20))); do [ -z "$(our_procs)" ] && return 0; sleep 0.05; done
	return 1
}

before=$(host_mounts)
check_clean() {
	expect_eq "$1: host mounts unchanged" "$before" "$(host_mounts)"
	expect_eq "$1: no sandbox processes left" "" "$(our_procs)"
	expect_eq "$1: no cgroups left" "" "$(our_cgroups)"
}

"$A" "${P[@]}" -- true || fail "a plain run failed"
check_clean "normal exit"

"$A" "${P[@]}" -- /nonexistent >/dev/null 2>&1 || true
check_clean "command not found"
"$A" "${P[@]}" --mount /nonexistent:/x -- true >/dev/null 2>&1 || true
check_clean "bad mount source"
"$A" "${P[@]}" --rootfs "$AR_TMP/io" -- true >/dev/null 2>&1 || true
check_clean "rootfs without /proc (the child fails after the cgroup exists)"

# The command forks a grandchild and exits: the namespace goes, with the grandchild.
"$A" "${P[@]}" -- sh -c "sleep $MARK & exit 0" || fail "fork-and-exit run failed"
gone_within 2 || true
check_clean "grandchild left running by the command"

# The command is killed from the host.
start_sleep
kill -9 "$(our_procs | head -1)"
st=0
wait "$pid" || st=$?
expect_eq "command killed from the host: 128+9" 137 "$st"
check_clean "command killed"

# agentrun killed by SIGTERM: forwarded, the command dies of it, then teardown.
start_sleep
kill -TERM "$pid"
st=0
wait "$pid" || st=$?
expect_eq "agentrun SIGTERMed: 128+15" 143 "$st"
check_clean "agentrun SIGTERMed"

# agentrun kill -9'd: PR_SET_PDEATHSIG takes the sandbox's init, and the kernel the
# rest of its PID namespace.
start_sleep
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
if gone_within 2; then pass "agentrun kill -9'd: the sandboxed sleep vanished"; else
	fail "agentrun kill -9'd: the sandboxed sleep is still running: $(our_procs)"
fi
expect_eq "agentrun kill -9'd: host mounts unchanged" "$before" "$(host_mounts)"
# its empty cgroup could not be removed by anyone; the next run sweeps it
"$A" "${P[@]}" -- true || fail "the run after a kill -9 failed"
check_clean "the run after agentrun was kill -9'd"

# On cgroup v1 the sandbox's init moves itself into the cgroups. A real-time caller
# cannot join a new cpu cgroup (its cpu.rt_runtime_us is 0): the move fails in the
# child, the run fails closed naming the cgroup, and nothing is left.
if [ -e /sys/fs/cgroup/cpu/cpu.rt_runtime_us ] && command -v chrt >/dev/null; then
	expect_status "real-time caller, v1 cpu cgroup: fails closed" 125 \
		chrt -f 10 "$A" "${P[@]}" --cpus 1 -- sleep "$MARK"
	expect_match "real-time caller: names the cgroup" \
		"^agentrun: cgroup v1: move the sandbox into /sys/fs/cgroup/cpu.*/agentrun-$NAME-[0-9]+/tasks \\(a real-time process" \
		"$(cat "$AR_TMP/err")"
	check_clean "real-time caller"
fi
finish

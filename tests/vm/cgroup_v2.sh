#!/usr/bin/env bash
# The cgroup v2 path on a pure-v2 kernel: boot User-Mode Linux (host root as
# read-only hostfs, cgroup_no_v1=all) with an init script that runs agentrun and
# the live cgroup unit test in four situations, prints `@@ key|value` lines on the
# console and powers off; this side parses the console and asserts.
#   root   agentrun in the root cgroup: limits written (memory.max, memory.swap.max,
#          pids.max, cpu.max), pids bomb, OOM reported, cpu held, nothing left
#   solo   agentrun alone in a non-root cgroup: it steps into a leaf so that the
#          controllers can be enabled, and undoes that afterwards
#   crowd  a non-root cgroup with other processes: fail closed (no-internal-processes)
#   bare   the memory controller is not offered: fail closed naming it
#   net    network: proxy on pure v2 (docs/network.md): the proxy's own cgroup, a GET
#          through the veth and the proxy to an origin on the guest's 127.0.0.1,
#          nothing left after the run nor after kill -9 + gc
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"
LIVE=$AR_BUILD_DIR/tests/test_cgroup_live
uml_need
[ -x "$LIVE" ] || skip "no $LIVE (build the test_cgroup_live target)"

{
	uml_guest_head
	printf 'A=%q\nLIVE=%q\n' "$AGENTRUN" "$LIVE"
	cat <<'GUEST'
leftovers() { find $CG -name 'agentrun*' -type d | tr '\n' ' '; }
r controllers "$(cat $CG/cgroup.controllers)"
r self "$(cat /proc/self/cgroup)"

# --- bare: only pids is handed down to cgroup `bare`, agentrun asks for memory
echo +pids >$CG/cgroup.subtree_control
mkdir $CG/bare
sh -c 'echo $$ >/sys/fs/cgroup/bare/cgroup.procs; exec "$0" --memory 64m -- true' "$A" 2>/run/bare.err
r bare_rc $?
r bare_err "$(cat /run/bare.err)"
r bare_left "$(leftovers)"
AR_CGROUP_EXPECT_FAIL="controller memory is not available in /sys/fs/cgroup/bare" \
	sh -c 'echo $$ >/sys/fs/cgroup/bare/cgroup.procs; exec "$0"' "$LIVE" >/run/live.out 2>&1
r bare_live $?
rmdir $CG/bare
echo -pids >$CG/cgroup.subtree_control

# --- root: agentrun in the root cgroup (exempt from the no-internal-processes rule)
AR_CGROUP_EXPECT_KIND=v2 "$LIVE" >/run/live.out 2>&1
rc=$?
r root_live $rc
[ $rc = 0 ] || cat /run/live.out
r root_subtree_after_live "$(cat $CG/cgroup.subtree_control)"
# long enough for the reads below on a slow guest (each cat is a fork and exec there):
# with 2 s the sandbox once ended between two of them
"$A" --pids 32 --memory 64m --cpus 0.2 -- sleep 6 &
apid=$!
sleep 1
d=$(find $CG -maxdepth 1 -name "agentrun-default-$apid")
r root_dir "$d"
for f in memory.max memory.swap.max pids.max cpu.max; do r "root_$f" "$(cat "$d/$f" 2>&1)"; done
r root_procs "$(wc -l <"$d/cgroup.procs")"
wait $apid
r root_sleep_rc $?
"$A" --pids 32 -- sh -c 'n=0; while [ $n -lt 200 ]; do sleep 5 & n=$((n+1)); echo $n; done' >/run/bomb.out 2>/run/bomb.err
r bomb_rc $?
r bomb_forks "$(tail -n 1 /run/bomb.out)"
r bomb_err "$(cat /run/bomb.err)"
"$A" --memory 64m -- python3 -c 'b = bytearray(200 << 20); print("survived")' >/run/oom.out 2>/run/oom.err
r oom_rc $?
r oom_err "$(cat /run/oom.err)"
r oom_out "$(cat /run/oom.out)"
"$A" --cpus 0.2 -- python3 -c 'import time
t, c = time.monotonic(), time.process_time()
while time.monotonic() - t < 2:
    pass
print(int(100 * (time.process_time() - c) / (time.monotonic() - t)))' >/run/cpu.out 2>&1
r cpu_rc $?
r cpu_pct "$(cat /run/cpu.out)"
"$A" --no-cgroups --memory 64m -- python3 -c 'b = bytearray(100 << 20); print("survived")' >/run/nocg.out 2>&1
r nocg_rc $?
r nocg_out "$(cat /run/nocg.out)"
r root_left "$(leftovers)"
"$A" -- sh -c 'sleep 30 & sleep 30' &
apid=$!
sleep 1
kill -KILL $apid
wait $apid
sleep 0.5
r kill9_stale "$(leftovers)"
r kill9_procs "$(cat $CG/agentrun-default-$apid/cgroup.procs 2>&1 | wc -l)"
"$A" -- true
r kill9_next_rc $?
r kill9_left "$(leftovers)"
r root_subtree_after "$(cat $CG/cgroup.subtree_control)"

# --- solo: agentrun alone in cgroup `solo`
echo "+memory +pids +cpu" >$CG/cgroup.subtree_control
mkdir $CG/solo
sh -c 'echo $$ >/sys/fs/cgroup/solo/cgroup.procs; exec "$0" --pids 16 --memory 64m -- sleep 6' "$A" &
apid=$!
sleep 1
r solo_dirs "$(cd $CG/solo && find . -mindepth 1 -maxdepth 1 -type d | sort | tr '\n' ' ')"
r solo_subtree_during "$(cat $CG/solo/cgroup.subtree_control)"
r solo_pids_max "$(cat $CG/solo/agentrun-default-$apid/pids.max 2>&1)"
r solo_agentrun_in "$(cat /proc/$apid/cgroup)"
wait $apid
r solo_rc $?
r solo_left "$(leftovers)"
r solo_subtree_after "$(cat $CG/solo/cgroup.subtree_control)"
AR_CGROUP_EXPECT_KIND=v2 sh -c 'echo $$ >/sys/fs/cgroup/solo/cgroup.procs; exec "$0"' "$LIVE" >/run/live.out 2>&1
rc=$?
r solo_live $rc
[ $rc = 0 ] || cat /run/live.out
r solo_live_left "$(leftovers)"
rmdir $CG/solo

# --- crowd: cgroup `crowd` holds another process besides agentrun
mkdir $CG/crowd
sh -c 'echo $$ >/sys/fs/cgroup/crowd/cgroup.procs; sleep 30 & s=$!
"$0" --pids 16 -- true 2>/run/crowd.err; rc=$?
"$0" --pids 16 --no-cgroups -- true; echo "$rc $?" >/run/crowd.rc; kill $s' "$A"
r crowd_rc "$(cat /run/crowd.rc)"
r crowd_err "$(cat /run/crowd.err)"
r crowd_left "$(leftovers)"
sleep 0.2
rmdir $CG/crowd
echo "-memory -pids -cpu" >$CG/cgroup.subtree_control

# --- net: network: proxy on pure v2 (veth is a module of this kernel)
uml_load_veth
r net_veth "$(grep -c '^veth ' /proc/modules)"
echo "+memory +pids +cpu" >$CG/cgroup.subtree_control
ip link set lo up # the guest's own loopback, where the origin listens
python3 -m http.server 18090 --bind 127.0.0.1 >/dev/null 2>&1 &
opid=$!
printf '{"name": "vmnet", "allowed_hosts": ["127.0.0.1:18090"], "proxy": {"allow_private": ["127.0.0.1"]}}' >/run/net.json
for _ in $(seq 1 100); do python3 -c 'import socket; socket.create_connection(("127.0.0.1", 18090))' 2>/dev/null && break; sleep 0.1; done
"$A" --policy /run/net.json -- sh -c 'echo "$HTTP_PROXY"; curl -sS -m 10 --noproxy "" -o /dev/null -w "%{http_code}\n" http://127.0.0.1:18090/; sleep 1' >/run/net.out 2>/run/net.err &
apid=$!
sleep 1
r net_proxy_pids "$(cat $CG/agentrun-vmnet-proxy-$apid/pids.max 2>&1)"
wait $apid
r net_rc $?
r net_url "$(head -n 1 /run/net.out)"
r net_get "$(sed -n 2p /run/net.out)"
[ "$(sed -n 2p /run/net.out)" = 200 ] || cat /run/net.err
r net_left "$(leftovers)$(ls /run/agentrun | grep vmnet)"
"$A" --policy /run/net.json -- sleep 30 >/dev/null 2>&1 &
apid=$!
sleep 1
kill -KILL $apid
wait $apid
sleep 0.5
"$A" gc >/dev/null
r net_gc_left "$(leftovers)$(ls /run/agentrun | grep vmnet)$(ls /run/agentrun/net)"
kill $opid
echo "-memory -pids -cpu" >$CG/cgroup.subtree_control

GUEST
	uml_guest_tail
} >"$AR_TMP/init.sh"
chmod +x "$AR_TMP/init.sh"

uml_boot "$AR_TMP/init.sh" 1G || finish
v() { uml_v "$@"; }
expect_match "pure v2: controllers" "memory" "$(v controllers)"
expect_eq "pure v2: we start in the root cgroup" "0::/" "$(v self)"

expect_eq "bare: agentrun fails closed (125)" 125 "$(v bare_rc)"
expect_match "bare: the message names the missing controller" \
	"^agentrun: (.*: )?cgroup v2: controller memory is not available in /sys/fs/cgroup/bare; use --no-cgroups to run without limits$" \
	"$(v bare_err)"
expect_eq "bare: nothing left" "" "$(v bare_left)"
expect_eq "bare: live test of the failure" 0 "$(v bare_live)"

expect_eq "root: live unit test passes on v2" 0 "$(v root_live)"
expect_eq "root: subtree_control restored after the live test" "" "$(v root_subtree_after_live)"
expect_match "root: the sandbox cgroup is a child of ours" "^/sys/fs/cgroup/agentrun-default-[0-9]+$" "$(v root_dir)"
expect_eq "root: memory.max" 67108864 "$(v root_memory.max)"
expect_eq "root: memory.swap.max" 0 "$(v root_memory.swap.max)"
expect_eq "root: pids.max" 32 "$(v root_pids.max)"
expect_eq "root: cpu.max" "20000 100000" "$(v root_cpu.max)"
expect_match "root: the command runs inside" "^[1-9]" "$(v root_procs)"
expect_eq "root: sleep 6 exits 0" 0 "$(v root_sleep_rc)"
expect_eq "bomb: the shell fails to fork, agentrun returns its status" 2 "$(v bomb_rc)"
forks=$(v bomb_forks)
if [ "${forks:-0}" -ge 20 ] && [ "${forks:-0}" -le 30 ]; then pass "bomb: $forks forks under --pids 32"; else
	fail "bomb: $forks forks under --pids 32 (expected 20..30)"
fi
expect_match "bomb: fork failure reported by sh" "Cannot fork" "$(v bomb_err)"
expect_eq "oom: 128+9" 137 "$(v oom_rc)"
expect_eq "oom: reported" "agentrun: killed by the memory limit (64m)" "$(v oom_err)"
expect_eq "oom: the allocation did not finish" "" "$(v oom_out)"
expect_eq "cpu: the loop runs" 0 "$(v cpu_rc)"
pct=$(v cpu_pct)
if [ "${pct:-100}" -le 30 ] 2>/dev/null; then pass "cpu: ${pct}% under --cpus 0.2"; else
	fail "cpu: [$pct]% under --cpus 0.2 (expected <= 30)"
fi
expect_eq "--no-cgroups: runs without the memory limit" 0 "$(v nocg_rc)"
expect_eq "--no-cgroups: the allocation finished" survived "$(v nocg_out)"
expect_eq "root: nothing left" "" "$(v root_left)"
expect_match "kill -9: the empty sandbox cgroup stays behind" "^/sys/fs/cgroup/agentrun-default-[0-9]+ $" "$(v kill9_stale)"
expect_eq "kill -9: the sandbox died with agentrun" 0 "$(v kill9_procs)"
expect_eq "kill -9: the next run works" 0 "$(v kill9_next_rc)"
expect_eq "kill -9: the next run swept the stale cgroup" "" "$(v kill9_left)"
# the dead run left memory, pids and cpu enabled; the next run found them enabled
# and so did not disable them (it only undoes what it did itself)
expect_eq "root: subtree_control after the kill -9" "cpu memory pids" "$(v root_subtree_after)"

expect_match "solo: agentrun stepped into a leaf next to the sandbox cgroup" \
	"^\./agentrun-default-[0-9]+ \./agentrun_supervisor-[0-9]+ $" "$(v solo_dirs)"
# the default policy limits memory, pids and cpu
expect_eq "solo: controllers enabled while running" "cpu memory pids" "$(v solo_subtree_during)"
expect_eq "solo: pids.max" 16 "$(v solo_pids_max)"
expect_match "solo: agentrun sits in its leaf" "^0::/solo/agentrun_supervisor-[0-9]+$" "$(v solo_agentrun_in)"
expect_eq "solo: sleep 6 exits 0" 0 "$(v solo_rc)"
expect_eq "solo: nothing left" "" "$(v solo_left)"
expect_eq "solo: subtree_control restored" "" "$(v solo_subtree_after)"
expect_eq "solo: live unit test passes" 0 "$(v solo_live)"
expect_eq "solo: nothing left after the live test" "" "$(v solo_live_left)"

expect_eq "crowd: fails closed (125); --no-cgroups runs (0)" "125 0" "$(v crowd_rc)"
expect_match "crowd: the message explains the no-internal-processes rule" \
	"^agentrun: (.*: )?cgroup v2: cannot enable .\+memory \+pids \+cpu. in ./sys/fs/cgroup/crowd/cgroup.subtree_control.: the cgroup holds other processes \([0-9 ]+\).*no-internal-processes rule.*use --no-cgroups to run without limits$" \
	"$(v crowd_err)"
expect_eq "crowd: nothing left" "" "$(v crowd_left)"

expect_eq "net: the veth module is loaded" 1 "$(v net_veth)"
expect_eq "net: the proxy's own cgroup (pids.max)" 16 "$(v net_proxy_pids)"
expect_eq "net: the run exits 0" 0 "$(v net_rc)"
expect_match "net: HTTP_PROXY is the /30's first address" '^http://10\.254\.[0-9]+\.[0-9]+:3128$' "$(v net_url)"
expect_eq "net: a GET through the veth and the proxy" 200 "$(v net_get)"
expect_eq "net: nothing left" "" "$(v net_left)"
expect_eq "net: kill -9 + gc: nothing left" "" "$(v net_gc_left)"
if [ "$AR_FAILED" != 0 ]; then uml_show_console; fi
finish

#!/usr/bin/env bash
# The cgroup v2 path on a pure-v2 kernel: boot User-Mode Linux (host root as
# read-only hostfs, cgroup_no_v1=all) with an init script that runs agentrun and
# the live cgroup unit test in the situations below, prints `@@ key|value` lines on the
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
#   solonet network: proxy with agentrun alone in a non-root cgroup: the proxy's
#          cgroup beside the sandbox's, not in agentrun's leaf; kill -9 + gc
#   deleg  agentrun as an unprivileged user in a cgroup delegated to it as systemd
#          does (docs/cgroups.md#without-root): limits enforced, network: none and
#          proxy, kill -9 + gc as the user; the line where it is crowded, not
#          delegated, or lacks a controller
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"
LIVE=$AR_BUILD_DIR/tests/test_cgroup_live
uml_need
[ -x "$LIVE" ] || skip "no $LIVE (build the test_cgroup_live target)"
user_setup # the tests' user and a copy of agentrun it can execute, for `deleg`

{
	uml_guest_head
	printf 'A=%q\nLIVE=%q\nUA=%q\nUU=%q\nUG=%q\n' "$AGENTRUN" "$LIVE" "$UAGENTRUN" "$AR_USER_UID" "$AR_USER_GID"
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
# kill -9: the leaf and the sandbox's cgroup stay, and with the controllers enabled in
# `solo` no process can join it to sweep them: the state (network: none too) leads gc
sh -c 'echo $$ >/sys/fs/cgroup/solo/cgroup.procs; exec "$0" -- sh -c "sleep 30 & sleep 30"' "$A" >/dev/null 2>&1 &
apid=$!
sleep 1.5
r solo_kill9_state "$(grep '^cgroup=' /run/agentrun/default-$apid/state)"
r solo_ps "$("$A" ps | grep -c "^default-$apid ")"
kill -KILL $apid
wait $apid
sleep 0.5
r solo_kill9_stale "$(cd $CG/solo && find . -mindepth 1 -maxdepth 1 -type d | sort | tr '\n' ' ')"
"$A" gc >/dev/null
r solo_gc_left "$(leftovers)$(ls /run/agentrun | grep default-)"
echo "-memory -pids -cpu" >$CG/solo/cgroup.subtree_control
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

# --- solonet: network: proxy with agentrun alone in a non-root cgroup (what
# `systemd-run --scope -p Delegate=yes` gives): the proxy's cgroup goes beside the
# sandbox's, not into the leaf agentrun stepped into
mkdir $CG/solonet
sh -c 'echo $$ >/sys/fs/cgroup/solonet/cgroup.procs; exec "$0" --policy /run/net.json -- sh -c "curl -sS -m 10 --noproxy \"\" -o /dev/null -w \"%{http_code}\n\" http://127.0.0.1:18090/; sleep 3"' "$A" >/run/solonet.out 2>/run/solonet.err &
apid=$!
sleep 1.5
r solonet_dirs "$(cd $CG/solonet && find . -mindepth 1 -maxdepth 1 -type d | sort | tr '\n' ' ')"
r solonet_proxy_pids "$(cat $CG/solonet/agentrun-vmnet-proxy-$apid/pids.max 2>&1)"
r solonet_state_cgroup "$(grep '^cgroup=' /run/agentrun/vmnet-$apid/state)"
wait $apid
r solonet_rc $?
r solonet_get "$(cat /run/solonet.out)"
[ "$(cat /run/solonet.out)" = 200 ] || cat /run/solonet.err
r solonet_left "$(leftovers)$(ls /run/agentrun | grep vmnet)"
r solonet_subtree_after "$(cat $CG/solonet/cgroup.subtree_control)"
sh -c 'echo $$ >/sys/fs/cgroup/solonet/cgroup.procs; exec "$0" --policy /run/net.json -- sleep 30' "$A" >/dev/null 2>&1 &
apid=$!
sleep 1.5
kill -KILL $apid
wait $apid
sleep 0.5
r solonet_kill9_stale "$(cd $CG/solonet && find . -mindepth 1 -maxdepth 1 -type d | sort | tr '\n' ' ')"
"$A" gc >/dev/null
r solonet_gc_left "$(leftovers)$(ls /run/agentrun | grep vmnet)$(ls /run/agentrun/net)"
rmdir $CG/solonet
kill $opid
echo "-memory -pids -cpu" >$CG/cgroup.subtree_control

# --- deleg: a cgroup delegated to the unprivileged user $UU the way systemd does for
# user@UID.service (the directory, cgroup.procs, cgroup.subtree_control and
# cgroup.threads chowned to it; the controllers enabled in the parent); agentrun runs
# as that user in it (as_user_in: the user's ids, no capabilities, a login's
# environment).
export UU UG
install -d -m 0700 -o "$UU" -g "$UG" "/run/user/$UU"
# a script, not a function: `/run/as_user_in ... &` is then agentrun's own PID (execs)
cat >/run/as_user_in <<'AS_USER'
#!/bin/sh
cg=$1
shift
echo $$ >"/sys/fs/cgroup/$cg/cgroup.procs" || exit 99
cd /
exec setpriv --reuid "$UU" --regid "$UG" --init-groups --inh-caps=-all env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/ "XDG_RUNTIME_DIR=/run/user/$UU" "$@"
AS_USER
chmod +x /run/as_user_in
delegate() {
	mkdir "$CG/$1"
	chown "$UU:$UG" "$CG/$1" "$CG/$1/cgroup.procs" "$CG/$1/cgroup.subtree_control" "$CG/$1/cgroup.threads"
}
echo "+memory +pids +cpu" >$CG/cgroup.subtree_control
delegate deleg
# (the command runs as a uid mapped to the user, who owns the cgroup's files: it must see
# none of them, or it could raise its own limits)
/run/as_user_in deleg "$UA" --pids 16 --memory 64m --cpus 0.5 -- sh -c 'ls -A /sys/fs/cgroup | wc -l; sleep 6' >/run/deleg.out 2>/run/deleg.err &
apid=$!
sleep 1.5
d=$CG/deleg/agentrun-default-$apid
r deleg_dirs "$(cd $CG/deleg && find . -mindepth 1 -maxdepth 1 -type d | sort | tr '\n' ' ')"
r deleg_owner "$(stat -c %u "$d")"
for f in memory.max memory.swap.max pids.max cpu.max; do r "deleg_$f" "$(cat "$d/$f" 2>&1)"; done
r deleg_procs "$(wc -l <"$d/cgroup.procs")"
r deleg_agentrun_in "$(cat /proc/$apid/cgroup)"
wait $apid
r deleg_rc $?
r deleg_err "$(cat /run/deleg.err)"
r deleg_cgroupfs_inside "$(cat /run/deleg.out)"
r deleg_left "$(leftovers)"
r deleg_subtree_after "$(cat $CG/deleg/cgroup.subtree_control)"
/run/as_user_in deleg "$UA" --memory 64m -- python3 -c 'b = bytearray(200 << 20); print("survived")' >/run/doom.out 2>/run/doom.err
r doom_rc $?
r doom_err "$(cat /run/doom.err)"
r doom_out "$(cat /run/doom.out)"
/run/as_user_in deleg "$UA" --pids 32 -- sh -c 'n=0; while [ $n -lt 200 ]; do sleep 5 & n=$((n+1)); echo $n; done' >/run/dbomb.out 2>/run/dbomb.err
r dbomb_rc $?
r dbomb_forks "$(tail -n 1 /run/dbomb.out)"
r dbomb_err "$(cat /run/dbomb.err)"
/run/as_user_in deleg "$UA" --cpus 0.2 -- python3 -c 'import time
t, c = time.monotonic(), time.process_time()
while time.monotonic() - t < 2:
    pass
print(int(100 * (time.process_time() - c) / (time.monotonic() - t)))' >/run/dcpu.out 2>&1
r dcpu_rc $?
r dcpu_pct "$(cat /run/dcpu.out)"
/run/as_user_in deleg "$UA" -- sh -c 'sleep 30 & sleep 30' &
apid=$!
sleep 1.5
kill -KILL $apid
wait $apid
sleep 0.5
r dkill9_stale "$(cd $CG/deleg && find . -mindepth 1 -maxdepth 1 -type d | sort | tr '\n' ' ')"
r dkill9_procs "$(cat $CG/deleg/agentrun-default-$apid/cgroup.procs 2>&1 | wc -l)"
r dkill9_state "$(cat /run/user/$UU/agentrun/default-$apid/state 2>&1 | grep '^cgroup=')"
# gc as the user (from the root cgroup): its state leads to both
/run/as_user_in "" "$UA" gc >/dev/null
r dkill9_gc_left "$(leftovers)$(ls /run/user/$UU/agentrun | grep default-)"
rmdir $CG/deleg

# network: proxy as the user: the proxy's cgroup beside the sandbox's, both the user's
delegate deleg
python3 -m http.server 18091 --bind 127.0.0.1 >/dev/null 2>&1 &
opid=$!
printf '{"name": "unet", "allowed_hosts": ["127.0.0.1:18091"], "proxy": {"allow_private": ["127.0.0.1"]}}' >/run/unet.json
for _ in $(seq 1 100); do python3 -c 'import socket; socket.create_connection(("127.0.0.1", 18091))' 2>/dev/null && break; sleep 0.1; done
/run/as_user_in deleg "$UA" --policy /run/unet.json -- sh -c 'curl -sS -m 10 --noproxy "" -o /dev/null -w "%{http_code}\n" http://127.0.0.1:18091/; sleep 3' >/run/unet.out 2>/run/unet.err &
apid=$!
sleep 2
r unet_dirs "$(cd $CG/deleg && find . -mindepth 1 -maxdepth 1 -type d | sort | tr '\n' ' ')"
r unet_proxy_pids "$(cat $CG/deleg/agentrun-unet-proxy-$apid/pids.max 2>&1)"
r unet_proxy_owner "$(stat -c %u $CG/deleg/agentrun-unet-proxy-$apid 2>&1)"
r unet_proxy_procs "$(wc -l <$CG/deleg/agentrun-unet-proxy-$apid/cgroup.procs)"
wait $apid
r unet_rc $?
r unet_get "$(cat /run/unet.out)"
[ "$(cat /run/unet.out)" = 200 ] || cat /run/unet.err
r unet_left "$(leftovers)$(ls /run/user/$UU/agentrun | grep unet-)"
r unet_subtree_after "$(cat $CG/deleg/cgroup.subtree_control)"
/run/as_user_in deleg "$UA" --policy /run/unet.json -- sleep 30 >/dev/null 2>&1 &
apid=$!
sleep 2
kill -KILL $apid
wait $apid
sleep 0.5
r unet_kill9_stale "$(cd $CG/deleg && find . -mindepth 1 -maxdepth 1 -type d | sort | tr '\n' ' ')"
/run/as_user_in "" "$UA" gc >/dev/null
r unet_gc_left "$(leftovers)$(ls /run/user/$UU/agentrun | grep unet-)"
kill $opid
rmdir $CG/deleg
# the user's shell in the same cgroup: the no-internal-processes rule
delegate deleg
/run/as_user_in deleg sh -c 'sleep 30 & s=$!
"$0" -- true 2>/run/dcrowd.err; a=$?
"$0" --require-limits -- true 2>/run/dcrowd_req.err; echo "$a $?" >/run/dcrowd.rc; kill $s' "$UA"
r dcrowd_rc "$(cat /run/dcrowd.rc)"
r dcrowd_err "$(cat /run/dcrowd.err)"
r dcrowd_req_err "$(cat /run/dcrowd_req.err)"
r dcrowd_left "$(leftovers)"
sleep 0.2
rmdir $CG/deleg
# root's cgroup, not chowned: not delegated
mkdir $CG/rootcg
/run/as_user_in rootcg "$UA" -- true 2>/run/dnot.err
r dnot_rc $?
r dnot_err "$(cat /run/dnot.err)"
r dnot_left "$(leftovers)"
rmdir $CG/rootcg
# the parent hands down memory and pids, not cpu: those two enforced, cpus said
mkdir $CG/part
echo "+memory +pids" >$CG/part/cgroup.subtree_control
delegate part/deleg
/run/as_user_in part/deleg "$UA" --pids 16 -- sleep 6 >/dev/null 2>/run/dpart.err &
apid=$!
sleep 1.5
d=$CG/part/deleg/agentrun-default-$apid
r dpart_pids_max "$(cat "$d/pids.max" 2>&1)"
r dpart_memory_max "$(cat "$d/memory.max" 2>&1)"
r dpart_cpu_max "$(ls "$d/cpu.max" 2>&1)"
wait $apid
r dpart_rc $?
r dpart_err "$(cat /run/dpart.err)"
r dpart_left "$(leftovers)"
rmdir $CG/part/deleg $CG/part
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
expect_match "solo kill -9: the state (network: none) lists the cgroup and the leaf" \
	"^cgroup=/sys/fs/cgroup/solo/agentrun-default-[0-9]+:/sys/fs/cgroup/solo/agentrun_supervisor-[0-9]+$" "$(v solo_kill9_state)"
expect_eq "solo: ps lists it once (its record; the state is gc's)" 1 "$(v solo_ps)"
expect_match "solo kill -9: the cgroup and the leaf stay behind" \
	"^\./agentrun-default-[0-9]+ \./agentrun_supervisor-[0-9]+ $" "$(v solo_kill9_stale)"
expect_eq "solo kill -9 + gc: nothing left" "" "$(v solo_gc_left)"

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

expect_match "solonet: the proxy's cgroup beside the sandbox's and the leaf" \
	"^\./agentrun-vmnet-[0-9]+ \./agentrun-vmnet-proxy-[0-9]+ \./agentrun_supervisor-[0-9]+ $" "$(v solonet_dirs)"
expect_eq "solonet: the proxy's own cgroup (pids.max)" 16 "$(v solonet_proxy_pids)"
expect_match "solonet: the state lists the sandbox's cgroup and the leaf" \
	"^cgroup=/sys/fs/cgroup/solonet/agentrun-vmnet-[0-9]+:/sys/fs/cgroup/solonet/agentrun_supervisor-[0-9]+$" "$(v solonet_state_cgroup)"
expect_eq "solonet: the run exits 0" 0 "$(v solonet_rc)"
expect_eq "solonet: a GET through the proxy" 200 "$(v solonet_get)"
expect_eq "solonet: nothing left" "" "$(v solonet_left)"
expect_eq "solonet: subtree_control restored" "" "$(v solonet_subtree_after)"
expect_match "solonet: kill -9 leaves the three cgroups" \
	"^\./agentrun-vmnet-[0-9]+ \./agentrun-vmnet-proxy-[0-9]+ \./agentrun_supervisor-[0-9]+ $" "$(v solonet_kill9_stale)"
expect_eq "solonet: kill -9 + gc: nothing left (the leaf too)" "" "$(v solonet_gc_left)"

expect_match "deleg: the sandbox's cgroup and agentrun's leaf in the delegated cgroup" \
	"^\./agentrun-default-[0-9]+ \./agentrun_supervisor-[0-9]+ $" "$(v deleg_dirs)"
expect_eq "deleg: the user made it" "$AR_USER_UID" "$(v deleg_owner)"
expect_eq "deleg: memory.max" 67108864 "$(v deleg_memory.max)"
expect_eq "deleg: memory.swap.max" 0 "$(v deleg_memory.swap.max)"
expect_eq "deleg: pids.max" 16 "$(v deleg_pids.max)"
expect_eq "deleg: cpu.max" "50000 100000" "$(v deleg_cpu.max)"
expect_match "deleg: the command runs inside" "^[1-9]" "$(v deleg_procs)"
expect_match "deleg: agentrun sits in its leaf" "^0::/deleg/agentrun_supervisor-[0-9]+$" "$(v deleg_agentrun_in)"
expect_eq "deleg: the command exits 0" 0 "$(v deleg_rc)"
expect_eq "deleg: every limit enforced: no line" "" "$(v deleg_err)"
expect_eq "deleg: no cgroup file inside (the sandbox cannot raise its limits)" 0 "$(v deleg_cgroupfs_inside)"
expect_eq "deleg: nothing left" "" "$(v deleg_left)"
expect_eq "deleg: subtree_control restored" "" "$(v deleg_subtree_after)"
expect_eq "deleg oom: 128+9" 137 "$(v doom_rc)"
expect_eq "deleg oom: reported" "agentrun: killed by the memory limit (64m)" "$(v doom_err)"
expect_eq "deleg oom: the allocation did not finish" "" "$(v doom_out)"
expect_eq "deleg bomb: the shell fails to fork" 2 "$(v dbomb_rc)"
forks=$(v dbomb_forks)
if [ "${forks:-0}" -ge 20 ] && [ "${forks:-0}" -le 30 ]; then pass "deleg bomb: $forks forks under --pids 32"; else
	fail "deleg bomb: $forks forks under --pids 32 (expected 20..30)"
fi
expect_match "deleg bomb: fork failure reported by sh" "Cannot fork" "$(v dbomb_err)"
expect_eq "deleg cpu: the loop runs" 0 "$(v dcpu_rc)"
pct=$(v dcpu_pct)
if [ "${pct:-100}" -le 30 ] 2>/dev/null; then pass "deleg cpu: ${pct}% under --cpus 0.2"; else
	fail "deleg cpu: [$pct]% under --cpus 0.2 (expected <= 30)"
fi
expect_match "deleg kill -9: the empty cgroup and the leaf stay behind" \
	"^\./agentrun-default-[0-9]+ \./agentrun_supervisor-[0-9]+ $" "$(v dkill9_stale)"
expect_eq "deleg kill -9: the sandbox died with agentrun" 0 "$(v dkill9_procs)"
expect_match "deleg kill -9: the user's state lists the cgroup and the leaf" \
	"^cgroup=/sys/fs/cgroup/deleg/agentrun-default-[0-9]+:/sys/fs/cgroup/deleg/agentrun_supervisor-[0-9]+$" "$(v dkill9_state)"
expect_eq "deleg kill -9 + gc as the user: nothing left" "" "$(v dkill9_gc_left)"
expect_match "deleg net: the proxy's cgroup beside the sandbox's and the leaf" \
	"^\./agentrun-unet-[0-9]+ \./agentrun-unet-proxy-[0-9]+ \./agentrun_supervisor-[0-9]+ $" "$(v unet_dirs)"
expect_eq "deleg net: the proxy's pids.max" 16 "$(v unet_proxy_pids)"
expect_eq "deleg net: the proxy's cgroup is the user's" "$AR_USER_UID" "$(v unet_proxy_owner)"
expect_match "deleg net: the proxy runs in it" "^[1-9]" "$(v unet_proxy_procs)"
expect_eq "deleg net: the run exits 0" 0 "$(v unet_rc)"
expect_eq "deleg net: a GET through the proxy" 200 "$(v unet_get)"
expect_eq "deleg net: nothing left" "" "$(v unet_left)"
expect_eq "deleg net: subtree_control restored" "" "$(v unet_subtree_after)"
expect_match "deleg net: kill -9 leaves the three cgroups" \
	"^\./agentrun-unet-[0-9]+ \./agentrun-unet-proxy-[0-9]+ \./agentrun_supervisor-[0-9]+ $" "$(v unet_kill9_stale)"
expect_eq "deleg net: kill -9 + gc as the user: nothing left" "" "$(v unet_gc_left)"
RUN='`systemd-run --user --scope -p Delegate=yes agentrun ...`'
expect_eq "deleg crowded: runs (0); --require-limits fails (125)" "0 125" "$(v dcrowd_rc)"
expect_eq "deleg crowded: the line" \
	"agentrun: limits not enforced (memory 512m, pids 256, cpus 1): cgroup \`/sys/fs/cgroup/deleg\` holds other processes, so it cannot hand controllers to a child (the no-internal-processes rule); run $RUN (a cgroup of its own)" \
	"$(v dcrowd_err)"
expect_match "deleg crowded --require-limits: says why" \
	"^agentrun: limits required \(--require-limits or limits.required\) but not enforced without root \(memory 512m, pids 256, cpus 1\): cgroup ./sys/fs/cgroup/deleg. holds other processes" \
	"$(v dcrowd_req_err)"
expect_eq "deleg crowded: nothing left" "" "$(v dcrowd_left)"
expect_eq "not delegated: runs" 0 "$(v dnot_rc)"
expect_eq "not delegated: the line" \
	"agentrun: limits not enforced (memory 512m, pids 256, cpus 1): cgroup \`/sys/fs/cgroup/rootcg\` is not delegated to uid $AR_USER_UID (not writable); run $RUN" \
	"$(v dnot_err)"
expect_eq "not delegated: nothing left" "" "$(v dnot_left)"
expect_eq "partial: pids enforced" 16 "$(v dpart_pids_max)"
expect_eq "partial: memory enforced" 536870912 "$(v dpart_memory_max)"
expect_match "partial: no cpu.max (not delegated)" "No such file" "$(v dpart_cpu_max)"
expect_eq "partial: runs" 0 "$(v dpart_rc)"
expect_eq "partial: the line names cpus only" \
	"agentrun: limits not enforced (cpus 1): the cpu controller is not delegated to \`/sys/fs/cgroup/part/deleg\`; have systemd delegate it (\`systemctl edit user@.service\`: \`Delegate=cpu memory pids\` under [Service]) and run $RUN" \
	"$(v dpart_err)"
expect_eq "partial: nothing left" "" "$(v dpart_left)"
if [ "$AR_FAILED" != 0 ]; then uml_show_console; fi
finish

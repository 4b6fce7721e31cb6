#!/usr/bin/env bash
# crun on a pure cgroup v2 kernel (User-Mode Linux, tests/vm/lib.sh): its init runs
# crun on bundles this side rendered and reports `@@ key|value` lines: CapEff 0,
# NoNewPrivs 1, Seccomp 2, the policy's pids/memory/cpu limits in crun's cgroup v2,
# the hook called at createRuntime and poststop, its record gone after delete; then
# network: proxy wired by the hook (veth loaded: a module of this kernel): the allowed
# origin on the guest's loopback through the proxy, a denied host 403 with its reason,
# no route past the /30, the proxy's cgroup v2 under crun's; nothing left (record,
# container, cgroups, net state). (crun on the hybrid host: tests/integration/oci_crun.sh.)
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/oci/lib.sh
. "$(dirname "$0")/../integration/oci/lib.sh"
uml_need
need_cmd crun
oci_need_rootfs_tools

rootfs="$AR_TMP/rootfs"
oci_rootfs "$rootfs"
# the guest's hook wrapper logs to its own tmpfs (the host root is read-only there)
{
	echo '#!/bin/sh'
	echo 'state=$(cat)'
	echo 'echo "$2" >>/run/hook.log'
	printf 'printf "%%s" "$state" | exec %q "$@" 2>>/run/hook.err\n' "$AGENTRUN"
} >"$AR_TMP/hook.sh"
chmod +x "$AR_TMP/hook.sh"
oci_policy "$AR_SOURCE_DIR/profiles/offline.json" "$AR_TMP/offline.json"
show='id -u; grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status; sleep 2'
oci_bundle "$AR_TMP/offline.json" "$AR_TMP/b-off" "$rootfs" "ar-crun" /bin/sh -c "$show" ||
	fail "render offline"
ORIG=18091
oci_proxy_policy "$AR_TMP/px.json" "vmpx" "$ORIG"
oci_bundle "$AR_TMP/px.json" "$AR_TMP/b-px" "$rootfs" "ar-crun-px" /bin/sh -c "$OCI_PROXY_INSIDE" _ "$ORIG" ||
	fail "render proxy"
printf '127.0.0.1 localhost\n127.0.0.1 api.test.example denied.test.example\n' >"$AR_TMP/hosts"
mkdir -p "$AR_TMP/out"

{
	uml_guest_head
	printf 'T=%q\nA=%q\nORIGIN=%q\n' "$AR_TMP" "$AGENTRUN" "$AR_SOURCE_DIR/tests/integration/proxy/origin.py"
	cat <<'GUEST'
C="crun --root /run/crun"
r crun_version "$(crun --version | head -n 1)"
(cd "$T/b-off" && $C run ar-off >/run/off.out 2>/run/off.err) &
sleep 1
d=$(find $CG -name ar-crun -type d | head -n 1)
for f in pids.max memory.max memory.swap.max cpu.max; do r "off_$f" "$(cat "$d/$f" 2>&1)"; done
r off_record "$(ls /run/agentrun/hooks 2>&1)"
wait
r off_rc $?
r off_out "$(tr '\n\t' '  ' </run/off.out)"
r off_err "$(head -c 300 /run/off.err)"
r off_hooks "$(tr '\n' ' ' </run/hook.log)"
r off_hook_err "$(tr '\n' ' ' </run/hook.err)"
r off_left "$(ls /run/agentrun/hooks) $($C list -q) $(find $CG -name 'ar-crun*')"
: >/run/hook.log
: >/run/hook.err

# network: proxy: the origin and the test names on the guest's own loopback; the
# container's output to a host directory mounted read-write
uml_load_veth
r px_veth "$(grep -c '^veth ' /proc/modules)"
ip link set lo up
mount --bind "$T/hosts" /etc/hosts
mount -t hostfs -o "$T/out" none /mnt
python3 "$ORIGIN" 18091 >/run/origin.log 2>&1 &
opid=$!
for _ in $(seq 100); do grep -q ready /run/origin.log && break; sleep 0.1; done
# create / start / delete, then `crun run` (crun waits for all its children: the proxy
# exits with the container)
(cd "$T/b-px" && timeout 40 $C create ar-px >/mnt/px.out 2>/run/px.err)
r px_rc $?
r px_proxy_cg "$(find $CG -name 'agentrun-vmpx-proxy-*' -type d | sed "s|^$CG||")"
$C start ar-px 2>>/run/px.err
for _ in $(seq 300); do $C state ar-px 2>/dev/null | grep -q '"stopped"' && break; sleep 0.1; done
$C delete ar-px 2>>/run/px.err
r px_delete_rc $?
r px_err "$(cat /run/px.err /run/hook.err | tr '\n' ' ')"
r px_out "$(tr '\n' ';' </mnt/px.out)"
r px_hooks "$(tr '\n' ' ' </run/hook.log)"
cp /run/agentrun/audit/vmpx-*.jsonl /mnt/audit.jsonl 2>/dev/null
r px_left "$(ls /run/agentrun/hooks) $($C list -q) $(find $CG -name 'ar-crun*' -o -name 'agentrun-vmpx-*')$(ls -d /run/agentrun/vmpx-* 2>/dev/null)"
: >/run/hook.log
(cd "$T/b-px" && timeout 40 $C run ar-pxr </dev/null >/mnt/pxr.out 2>/run/pxr.err)
r pxr_rc $?
r pxr_err "$(cat /run/pxr.err /run/hook.err | tr '\n' ' ')"
r pxr_hooks "$(tr '\n' ' ' </run/hook.log)"
cp "$(ls -t /run/agentrun/audit/vmpx-*.jsonl | head -n 1)" /mnt/audit-run.jsonl 2>/dev/null
r pxr_left "$(ls /run/agentrun/hooks) $($C list -q) $(find $CG -name 'ar-crun*' -o -name 'agentrun-vmpx-*')$(ls -d /run/agentrun/vmpx-* 2>/dev/null)"
kill $opid
umount /mnt
GUEST
	uml_guest_tail
} >"$AR_TMP/init.sh"

uml_boot "$AR_TMP/init.sh" 512M || finish
v() { uml_v "$@"; }
echo "guest: $(v crun_version)"
expect_eq "crun run (stderr: $(v off_err))" 0 "$(v off_rc)"
expect_eq "confinement" "1000 CapEff: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 " "$(v off_out)"
expect_eq "pids.max" 64 "$(v off_pids.max)"
expect_eq "memory.max" 268435456 "$(v off_memory.max)"
expect_eq "memory.swap.max (no swap)" 0 "$(v off_memory.swap.max)"
expect_eq "cpu.max" "100000 100000" "$(v off_cpu.max)"
expect_eq "recorded while running" "ar-off" "$(v off_record)"
expect_eq "hook stages" "create-runtime poststop " "$(v off_hooks)"
expect_eq "the hook said nothing" "" "$(v off_hook_err)"
expect_eq "nothing left (record, container, cgroup)" "  " "$(v off_left)"

expect_eq "network proxy: veth loaded" 1 "$(v px_veth)"
expect_eq "network proxy: crun create (stderr: $(v px_err))" 0 "$(v px_rc)"
expect_eq "network proxy: crun delete" 0 "$(v px_delete_rc)"
expect_match "network proxy: the proxy's own cgroup v2" "^/agentrun-vmpx-proxy-[0-9]+$" "$(v px_proxy_cg)"
oci_proxy_expect "network proxy" "$AR_TMP/out/px.out" "$ORIG" "$AR_TMP/out/audit.jsonl"
expect_eq "network proxy: hook stages" "create-runtime poststop " "$(v px_hooks)"
expect_eq "network proxy: nothing left" "  " "$(v px_left)"
expect_eq "network proxy: crun run (stderr: $(v pxr_err))" 0 "$(v pxr_rc)"
oci_proxy_expect "network proxy, crun run" "$AR_TMP/out/pxr.out" "$ORIG" "$AR_TMP/out/audit-run.jsonl"
expect_eq "network proxy, crun run: hook stages" "create-runtime poststop " "$(v pxr_hooks)"
expect_eq "network proxy, crun run: nothing left" "  " "$(v pxr_left)"
if [ "$AR_FAILED" != 0 ]; then uml_show_console; fi
finish

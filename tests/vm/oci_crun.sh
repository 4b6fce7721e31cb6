#!/usr/bin/env bash
# crun (which refuses this hybrid-cgroup host) runs an agentrun-rendered bundle on a pure
# cgroup v2 kernel: User-Mode Linux boots once (host root as read-only hostfs,
# cgroup_no_v1=all) and its init runs crun on bundles this side prepared, printing
# `@@ key|value` lines on the console: CapEff 0, NoNewPrivs 1, Seccomp 2, the policy's
# pids/memory/cpu limits in crun's cgroup, the hook called at createRuntime and
# poststop, its record gone after delete; a network-proxy policy refused (this UML
# kernel has no veth driver: the hook fails creating the pair), nothing left (record,
# container, cgroups, net state).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/oci/lib.sh
. "$(dirname "$0")/../integration/oci/lib.sh"
need_root
need_cmd linux.uml
need_cmd crun
oci_need_rootfs_tools
[ -x "$AGENTRUN" ] || skip "no agentrun binary at $AGENTRUN"
# ASan's shadow memory range collides with User-Mode Linux's address space layout.
if grep -aq __asan_init "$AGENTRUN"; then
	skip "AddressSanitizer builds cannot run under User-Mode Linux"
fi
mkdir -p "$AR_TMP/uml"

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
printf '{"name": "px", "allowed_hosts": ["api.example.com"], "user": "1000"}' >"$AR_TMP/px.json"
oci_bundle "$AR_TMP/px.json" "$AR_TMP/b-px" "$rootfs" "ar-crun-px" /bin/true || fail "render proxy"

{
	echo '#!/bin/sh'
	printf 'T=%q\n' "$AR_TMP"
	cat <<'GUEST'
# PID 1 inside User-Mode Linux: scratch on a tmpfs at /run, results as `@@ key|value`.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs tmpfs /run
r() { echo "@@ $1|$2"; }
C="crun --root /run/crun"
r crun_version "$(crun --version | head -n 1)"
(cd "$T/b-off" && $C run ar-off >/run/off.out 2>/run/off.err) &
sleep 1
d=$(find /sys/fs/cgroup -name ar-crun -type d | head -n 1)
for f in pids.max memory.max memory.swap.max cpu.max; do r "off_$f" "$(cat "$d/$f" 2>&1)"; done
r off_record "$(ls /run/agentrun/hooks 2>&1)"
wait
r off_rc $?
r off_out "$(tr '\n\t' '  ' </run/off.out)"
r off_err "$(head -c 300 /run/off.err)"
r off_hooks "$(tr '\n' ' ' </run/hook.log)"
r off_hook_err "$(tr '\n' ' ' </run/hook.err)"
r off_left "$(ls /run/agentrun/hooks) $($C list -q) $(find /sys/fs/cgroup -name 'ar-crun*')"
: >/run/hook.log
: >/run/hook.err
(cd "$T/b-px" && $C run ar-px >/run/px.out 2>/run/px.err)
r px_rc $?
r px_err "$(cat /run/px.err /run/hook.err | tr '\n' ' ')"
r px_left "$(ls /run/agentrun/hooks) $($C list -q) $(find /sys/fs/cgroup -name 'ar-crun*' -o -name 'agentrun-px-*')$(ls -d /run/agentrun/px-* 2>/dev/null)"
r end ok
echo o >/proc/sysrq-trigger
sleep 10
GUEST
} >"$AR_TMP/init.sh"
chmod +x "$AR_TMP/init.sh"

start=$(date +%s)
TMPDIR=$AR_TMP/uml timeout 120 linux.uml mem=512M root=/dev/root rootfstype=hostfs rootflags=/ ro \
	init="$AR_TMP/init.sh" cgroup_no_v1=all con0=null,fd:1 con=null quiet \
	</dev/null >"$AR_TMP/console" 2>&1 || true
echo "UML run took $(($(date +%s) - start)) s"

v() { grep -a "^@@ $1|" "$AR_TMP/console" | head -n 1 | cut -d'|' -f2- | tr -d '\r'; }
if [ "$(v end)" != ok ]; then
	fail "the VM did not finish its script"
	cat "$AR_TMP/console"
	finish
fi
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
expect_eq "network proxy: crun fails" "yes" "$([ "$(v px_rc)" != 0 ] && echo yes)"
expect_match "network proxy: the hook's message" \
	"agentrun: hook: network: create the veth pair eth0/veth0: Operation not supported" "$(v px_err)"
expect_eq "network proxy: nothing left" "  " "$(v px_left)"
if [ "$AR_FAILED" != 0 ]; then cat "$AR_TMP/console"; fi
finish

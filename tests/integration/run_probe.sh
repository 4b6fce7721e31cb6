#!/usr/bin/env bash
# agentrun run: the static probe inside the default sandbox reports its identity,
# capabilities, no_new_privs, seccomp and mounts, and every escape fails with the
# exact errno expected. uid 0 is refused.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
PROBE="$AR_BUILD_DIR/tests/ar-probe"
[ -x "$PROBE" ] || skip "ar-probe is not built ($PROBE)"
# The sandbox shows neither the host's /tmp nor /root, /home or /work, where a checkout may live: the probe
# reaches the sandbox through an explicit bind of a copy, never through the build tree.
mkdir -p "$AR_TMP/bin"
cp "$PROBE" "$AR_TMP/bin/ar-probe"
chmod 755 "$AR_TMP/bin" "$AR_TMP/bin/ar-probe"
IN_PROBE=/ar-bin/ar-probe
# The caller's working directory is kept when the sandbox shows it: start from one it
# does (the test's own directory may be hidden).
cd /etc

# A host process the sandbox must not be able to signal, and a setuid-root program
# it must not gain anything from.
sleep 300 &
HOST_PID=$!
on_exit "kill $HOST_PID"
mkdir -p "$AR_TMP/suid"
cp "$PROBE" "$AR_TMP/suid/probe"
chmod 4755 "$AR_TMP/suid/probe"

# Masked /proc files exist only on kernels that have them.
masked() { if [ -e "$1" ]; then echo masked; else echo ENOENT; fi; }

run_probe() {
	"$AGENTRUN" --mount "$AR_TMP/bin:/ar-bin" --mount "$AR_TMP/suid:/probe-suid" \
		--env PROBE_SUID=/probe-suid/probe --env "PROBE_HOST_PID=$HOST_PID" "$@" \
		-- "$IN_PROBE" </dev/null
}

out=$(run_probe) || fail "probe exited $?"
# a dynamic uid of its own (no `user` in the default policy): DYN below
U=$(printf '%s\n' "$out" | sed -n 's/^uid=//p')
if dynamic_uid "$U"; then pass "probe: a dynamic uid ($U)"; else fail "probe: uid [$U] is not a dynamic uid"; fi
out=$(printf '%s\n' "$out" | sed "s/=$U\$/=DYN/")
expected="uid=DYN
euid=DYN
gid=DYN
egid=DYN
groups=
pid=2
ppid=1
hostname=default
cap_inh=0000000000000000
cap_prm=0000000000000000
cap_eff=0000000000000000
cap_bnd=0000000000000000
cap_amb=0000000000000000
no_new_privs=1
seccomp=2
cwd=/etc
sid_is_self=1
root_ro=1
root_nosuid=1
tmp_nosuid=1
tmp_nodev=1
write_tmp=ok
net_ifaces=lo
write_root=EROFS
write_etc=EROFS
write_dev=EROFS
write_proc_sys=EACCES
write_sys=EROFS
write_sysrq=$(masked /proc/sysrq-trigger)
mknod=EPERM
list_root=ENOENT
list_home=ENOENT
docker_sock=ENOENT
docker_sock_run=ENOENT
read_init_environ=EACCES
read_kcore=$(masked /proc/kcore)
read_keys=$(masked /proc/keys)
read_timer_list=$(masked /proc/timer_list)
tmpfs_setuid=EPERM
setuid_exec=euid=DYN
mount=EPERM
umount=EPERM
unshare_user=EPERM
unshare_net=EPERM
unshare_mount=EPERM
setns=EPERM
chroot=EPERM
ptrace_init=EPERM
ptrace_traceme=EPERM
tiocsti=EPERM
keyctl=EPERM
bpf=EPERM
perf_event_open=EPERM
io_uring_setup=EPERM
userfaultfd=EPERM
af_packet=EPERM
sethostname=EPERM
setuid0=EPERM
reboot=EPERM
kill_host=ESRCH
kill_init=ok
probe=done"
# kill_init=ok: init runs as the command's uid, so kill(1, SIGKILL) is permitted, and
# the kernel drops it (a PID namespace's init ignores SIGKILL from inside): probe=done
# shows the sandbox lived on.
if [ "$out" = "$expected" ]; then pass "probe, default policy: every line as expected"; else
	fail "probe, default policy: differs (-expected +actual):
$(diff <(echo "$expected") <(echo "$out"))"
fi

# uid 0 (or gid 0) is host root without a user namespace: refused before anything runs.
expect_status "--user 0 is refused: 125" 125 run_probe --user 0
expect_eq "--user 0 is refused: message" \
	"agentrun: --user 0: user: uid 0 is root on the host; use a non-root uid" \
	"$(cat "$AR_TMP/err")"
expect_eq "--user 0 is refused: the probe did not run" "" "$(cat "$AR_TMP/out")"
expect_status "--user 1000:0 is refused: 125" 125 run_probe --user 1000:0
expect_eq "--user 1000:0 is refused: message" \
	"agentrun: --user 1000:0: user: gid 0 is root's group on the host; use a non-root gid" \
	"$(cat "$AR_TMP/err")"

# Without seccomp the kernel's own checks still refuse what needs a capability. A
# user namespace can then be created (unshare_user=ok; the probe gains capabilities
# over that namespace only, which is why the default profile denies it), yet the
# sandbox's mounts stay out of reach.
out=$(run_probe --seccomp unconfined --user 65534) || fail "probe unconfined exited $?"
for line in seccomp=0 no_new_privs=1 cap_eff=0000000000000000 unshare_user=ok mount=EPERM \
	umount=EPERM mknod=EPERM write_root=EROFS kill_host=ESRCH ptrace_init=EPERM \
	setuid_exec=euid=65534 tmpfs_setuid=euid=65534 reboot=EPERM probe=done; do
	expect_match "probe unconfined: $line" "^${line}\$" "$(printf '%s\n' "$out" | grep -x -- "$line" || true)"
done

# TIOCSTI with the caller's terminal on stdin (script(1) gives the run a pty, and
# --no-tty passes it through): refused by seccomp, and without seccomp by the kernel,
# because the command's new session has no controlling terminal to inject into. (With
# a pty of its own, tests/escape/pty.sh, it can only inject into that one.)
if command -v script >/dev/null 2>&1 && script -qec true /dev/null >/dev/null 2>&1; then
	for sc in default unconfined; do
		out=$(script -qec "$AGENTRUN --no-tty --mount $AR_TMP/bin:/ar-bin --seccomp $sc -- $IN_PROBE" /dev/null | tr -d '\r')
		expect_eq "TIOCSTI on a pty, seccomp $sc" "tiocsti=EPERM" "$(printf '%s\n' "$out" | grep '^tiocsti=')"
		expect_eq "new session on a pty, seccomp $sc" "sid_is_self=1" "$(printf '%s\n' "$out" | grep '^sid_is_self=')"
	done
fi
finish

#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted on purpose: the shell inside the sandbox expands them
# agentrun run by an unprivileged user: the sandbox gets its own user namespace
# (the caller's uid mapped to the policy's user), everything else as for root.
# Unprivileged users get no cgroup here (cgroup v1 is never delegated): without
# --no-cgroups run says which limits are not enforced (cgroup_user.sh), and runs.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd setpriv
PROBE="$AR_BUILD_DIR/tests/ar-probe"
[ -x "$PROBE" ] || skip "ar-probe is not built ($PROBE)"
[ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -gt 0 ] ||
	skip "user namespaces are disabled"
U=(setpriv --reuid 1000 --regid 1000 --clear-groups)
# uid 1000 may not reach the build tree (a checkout under /root is mode 700) and the
# sandbox hides /tmp, /root and /home: run copies of agentrun and the probe from a
# directory of our own that uid 1000 can traverse, the probe bound in explicitly.
BIN=$(mktemp -d /tmp/agentrun-userns.XXXXXX)
on_exit "rm -rf $BIN"
cp "$AGENTRUN" "$BIN/agentrun"
cp "$PROBE" "$BIN/ar-probe"
chmod 755 "$BIN" "$BIN/agentrun" "$BIN/ar-probe"
AGENTRUN=$BIN/agentrun
"${U[@]}" test -x "$AGENTRUN" || { fail "uid 1000 cannot execute $AGENTRUN"; finish; }
cd /

expect_eq "unprivileged: uid inside" "65534 65534" \
	"$("${U[@]}" "$AGENTRUN" --no-cgroups -- sh -c 'echo $(id -u) $(id -g)')"
expect_eq "unprivileged: uid map (policy user -> caller)" "65534 1000 1" \
	"$("${U[@]}" "$AGENTRUN" --no-cgroups -- sh -c 'read a b c </proc/self/uid_map; echo $a $b $c')"
expect_status "unprivileged: exit status" 3 "${U[@]}" "$AGENTRUN" --no-cgroups -- sh -c 'exit 3'
expect_status "unprivileged: not found" 127 "${U[@]}" "$AGENTRUN" --no-cgroups -- /nonexistent
expect_status "unprivileged without --no-cgroups: runs" 0 "${U[@]}" "$AGENTRUN" -- true
# (the line itself and --require-limits: cgroup_user.sh)
expect_match "unprivileged without --no-cgroups: says which limits are not enforced" "^agentrun: limits not enforced \\(memory 512m, pids 256, cpus 1\\): " "$(cat "$AR_TMP/err")"
expect_status "unprivileged --require-limits: fails closed" 125 "${U[@]}" "$AGENTRUN" --require-limits -- true

out=$("${U[@]}" "$AGENTRUN" --no-cgroups --mount "$BIN:/ar-bin" -- /ar-bin/ar-probe </dev/null) || fail "probe exited $?"
for line in uid=65534 cap_prm=0000000000000000 cap_eff=0000000000000000 cap_bnd=0000000000000000 \
	cap_amb=0000000000000000 no_new_privs=1 seccomp=2 pid=2 net_ifaces=lo root_ro=1 \
	write_root=EROFS write_etc=EROFS write_sys=EROFS mknod=EPERM list_root=ENOENT list_home=ENOENT \
	mount=EPERM unshare_user=EPERM unshare_net=EPERM setns=EPERM chroot=EPERM ptrace_init=EPERM \
	keyctl=EPERM bpf=EPERM af_packet=EPERM reboot=EPERM setuid0=EINVAL read_init_environ=EACCES \
	probe=done; do
	expect_eq "unprivileged probe: $line" "$line" "$(printf '%s\n' "$out" | grep -x -- "$line" || true)"
done
finish

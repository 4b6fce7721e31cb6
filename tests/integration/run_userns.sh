#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted on purpose: the shell inside the sandbox expands them
# agentrun run by an unprivileged user (the tests' user, no capabilities, no setuid helper): the
# sandbox gets its own user namespace with the caller's own uid and gid mapped in (podman's
# --userns=keep-id: what it writes to a read-write mount is the caller's), or the
# policy's `user` mapped to the caller; everything else as for root (the probe's list).
# Unprivileged users get no cgroup here (cgroup v1 is never delegated): without
# --no-cgroups run says which limits are not enforced (cgroup_user.sh), and runs.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
user_setup
PROBE="$AR_USER_BIN/ar-probe"
[ -x "$PROBE" ] || skip "ar-probe is not built"
U=$AR_USER_UID G=$AR_USER_GID
A=(as_user "$UAGENTRUN" --no-cgroups)

expect_eq "unprivileged: the caller's uid and gid inside" "$U $G" \
	"$("${A[@]}" -- sh -c 'echo $(id -u) $(id -g)')"
expect_eq "unprivileged: uid map (the caller's own uid, to itself)" "$U $U 1" \
	"$("${A[@]}" -- sh -c 'read a b c </proc/self/uid_map; echo $a $b $c')"
expect_eq "unprivileged: gid map" "$G $G 1" \
	"$("${A[@]}" -- sh -c 'read a b c </proc/self/gid_map; echo $a $b $c')"
expect_eq "unprivileged: setgroups denied" deny "$("${A[@]}" -- cat /proc/self/setgroups)"

# a read-write mount: what the command writes is the caller's on the host
W="$AR_TMP/rw"
install -d -m 0755 -o "$U" -g "$G" "$W"
"${A[@]}" --mount "$W:/w:rw" -- sh -c 'echo x >/w/keep-id' || fail "write to the rw mount"
expect_eq "keep-id: the file is the caller's on the host" "$U:$G" "$(stat -c %u:%g "$W/keep-id")"

# the policy's user: mapped to the caller (the only id an unprivileged caller may map)
printf '{"user": "4242:4343", "mounts": [{"source": "%s", "target": "/w", "readonly": false}]}\n' \
	"$W" >"$AR_TMP/u.json"
chmod 644 "$AR_TMP/u.json"
expect_eq "policy user: the uid and gid inside" "4242 4343" \
	"$("${A[@]}" --policy "$AR_TMP/u.json" -- sh -c 'echo $(id -u) $(id -g)')"
expect_eq "policy user: mapped to the caller" "4242 $U 1" \
	"$("${A[@]}" --policy "$AR_TMP/u.json" -- sh -c 'read a b c </proc/self/uid_map; echo $a $b $c')"
"${A[@]}" --policy "$AR_TMP/u.json" -- sh -c 'echo x >/w/mapped' || fail "write as the policy user"
expect_eq "policy user: its file is the caller's on the host" "$U:$G" "$(stat -c %u:%g "$W/mapped")"

expect_status "unprivileged: exit status" 3 "${A[@]}" -- sh -c 'exit 3'
expect_status "unprivileged: not found" 127 "${A[@]}" -- /nonexistent
expect_status "unprivileged: not executable" 126 "${A[@]}" -- /etc/passwd
expect_status "unprivileged: killed by a signal: 128+N" 137 "${A[@]}" -- sh -c 'kill -9 $$'
expect_status "unprivileged without --no-cgroups: runs" 0 as_user "$UAGENTRUN" -- true
# (the line itself and --require-limits: cgroup_user.sh)
expect_match "unprivileged without --no-cgroups: says which limits are not enforced" "^agentrun: limits not enforced \\(memory 512m, pids 256, cpus 1\\): " "$(cat "$AR_TMP/err")"
expect_status "unprivileged --require-limits: fails closed" 125 as_user "$UAGENTRUN" --require-limits -- true

out=$("${A[@]}" --mount "$AR_USER_BIN:/ar-bin" -- /ar-bin/ar-probe </dev/null) || fail "probe exited $?"
for line in "uid=$U" cap_prm=0000000000000000 cap_eff=0000000000000000 cap_bnd=0000000000000000 \
	cap_amb=0000000000000000 no_new_privs=1 seccomp=2 pid=2 net_ifaces=lo root_ro=1 \
	write_root=EROFS write_etc=EROFS write_sys=EROFS mknod=EPERM list_root=ENOENT list_home=ENOENT \
	mount=EPERM unshare_user=EPERM unshare_net=EPERM setns=EPERM chroot=EPERM ptrace_init=EPERM \
	keyctl=EPERM bpf=EPERM af_packet=EPERM reboot=EPERM setuid0=EINVAL read_init_environ=EACCES \
	probe=done; do
	expect_eq "unprivileged probe: $line" "$line" "$(printf '%s\n' "$out" | grep -x -- "$line" || true)"
done
finish

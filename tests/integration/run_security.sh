#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted on purpose: the shell inside the sandbox expands them
# agentrun run: the hardening from the security review (docs/sandbox.md, docs/seccomp.md):
# no set-id files on rw mounts, uid/gid 0 refused, mount sources that are or pass
# through symlinks refused, a fresh session keyring.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd python3
A=$AGENTRUN

# 1. A set-id file planted on a rw bind would work on the host (the bind is nosuid
#    only inside the sandbox): chmod and open(O_CREAT) with S_ISUID/S_ISGID are EPERM.
WS="$AR_TMP/ws"
mkdir -p "$WS"
chmod 1777 "$WS"
expect_status "setuid: chmod 4755 on a rw mount fails" 1 \
	"$A" --mount "$WS:/ws:rw" -- sh -c 'cp /bin/sh /ws/x && chmod 4755 /ws/x'
expect_match "setuid: chmod says EPERM" "Operation not permitted" "$(cat "$AR_TMP/err")"
expect_eq "setuid: the file on the host has no set-id bit" 755 "$(stat -c %a "$WS/x")"
expect_status "setgid: chmod g+s fails" 1 "$A" --mount "$WS:/ws:rw" -- chmod g+s /ws/x
expect_eq "setgid: the file on the host has no set-id bit" 755 "$(stat -c %a "$WS/x")"
expect_eq "setuid: python os.open(O_CREAT, 0o4755) is EPERM" "EPERM absent" \
	"$("$A" --mount "$WS:/ws:rw" -- python3 -c '
import errno, os
try:
    os.open("/ws/y", os.O_CREAT | os.O_WRONLY, 0o4755)
    print("created")
except OSError as e:
    print(errno.errorcode[e.errno], "present" if os.path.exists("/ws/y") else "absent")')"
[ ! -e "$WS/y" ] || fail "setuid: /ws/y was created on the host"
expect_eq "ordinary modes still work (chmod 0755, O_CREAT 0644, O_TMPFILE 0600, mkdir 0755)" \
	"755 644 ok 755" "$("$A" --mount "$WS:/ws:rw" -- python3 -c '
import os
os.chmod("/ws/x", 0o755)
os.close(os.open("/ws/z", os.O_CREAT | os.O_WRONLY, 0o644))
os.close(os.open("/ws", os.O_TMPFILE | os.O_RDWR, 0o600))
os.mkdir("/ws/d", 0o755)
st = lambda p: oct(os.stat(p).st_mode & 0o7777)[2:]
print(st("/ws/x"), st("/ws/z"), "ok", st("/ws/d"))')"

# 2. uid or gid 0 is host root (no user namespace maps it): refused in a policy file
#    and through --user, with exit 125, before anything runs.
printf '{"user": "0"}\n' >"$AR_TMP/root.json"
expect_status "policy user 0: 125" 125 "$A" --policy "$AR_TMP/root.json" -- true
expect_eq "policy user 0: message" \
	"agentrun: $AR_TMP/root.json: user: uid 0 is root on the host; use a non-root uid" \
	"$(cat "$AR_TMP/err")"
printf '{"user": "1000:0"}\n' >"$AR_TMP/root.json"
expect_status "policy gid 0: 125" 125 "$A" --policy "$AR_TMP/root.json" -- true
expect_eq "policy gid 0: message" \
	"agentrun: $AR_TMP/root.json: user: gid 0 is root's group on the host; use a non-root gid" \
	"$(cat "$AR_TMP/err")"
expect_status "--user 0: 125" 125 "$A" --user 0 -- touch "$AR_TMP/ran"
[ ! -e "$AR_TMP/ran" ] || fail "--user 0: the command ran"
expect_status "check: policy user 0 is bad input: 2" 2 "$A" check --policy "$AR_TMP/root.json" --pid $$

# 3. Mount sources are opened without following symlinks (and bound from that fd):
#    an agent that can write where a source lies cannot redirect a later run's mount.
S="$AR_TMP/src"
mkdir -p "$S/real/sub" "$S/rootfs/proc" "$S/rootfs/dev" "$S/rootfs/sys" "$S/rootfs/tmp"
echo "apiVersion: v1" >"$S/real/kubeconfig"
ln -s real "$S/link"
ln -s "$S/rootfs" "$S/rootfs-link"
symlink_msg() { echo "agentrun: $1: $2: is a symlink or passes through one; give the real path"; }
expect_status "--mount: a symlinked source is refused: 125" 125 "$A" --mount "$S/link:/x" -- true
expect_eq "--mount: a symlinked source: message" \
	"$(symlink_msg "<embedded default>: mounts[0].source" "$S/link")" "$(cat "$AR_TMP/err")"
expect_status "--mount: a source through a symlink is refused: 125" 125 \
	"$A" --mount "$S/real:/ok" --mount "$S/link/sub:/x" -- true
expect_eq "--mount: a source through a symlink: message" \
	"$(symlink_msg "<embedded default>: mounts[1].source" "$S/link/sub")" "$(cat "$AR_TMP/err")"
expect_eq "--mount: the real path works" "kubeconfig sub" "$("$A" --mount "$S/real:/x" -- ls /x | xargs)"
cat >"$AR_TMP/sym.json" <<JSON
{"mounts": [{"source": "$S/real", "target": "/a"}, {"source": "$S/link/sub", "target": "/b"}]}
JSON
expect_status "policy mounts[1] through a symlink: 125" 125 "$A" --policy "$AR_TMP/sym.json" -- true
expect_eq "policy mounts[1] through a symlink: message" \
	"$(symlink_msg "$AR_TMP/sym.json: mounts[1].source" "$S/link/sub")" "$(cat "$AR_TMP/err")"
printf '{"kubeconfig": "%s"}\n' "$S/link/kubeconfig" >"$AR_TMP/kube.json"
expect_status "kubeconfig through a symlink: 125" 125 "$A" --policy "$AR_TMP/kube.json" -- true
expect_eq "kubeconfig through a symlink: message" \
	"$(symlink_msg "$AR_TMP/kube.json: kubeconfig" "$S/link/kubeconfig")" "$(cat "$AR_TMP/err")"
cp /bin/busybox "$S/rootfs/sh" 2>/dev/null || cp "$AR_BUILD_DIR/tests/ar-probe" "$S/rootfs/sh"
expect_status "rootfs that is a symlink: 125" 125 "$A" --rootfs "$S/rootfs-link" --no-cgroups -- /sh
expect_eq "rootfs that is a symlink: message" \
	"$(symlink_msg "<embedded default>: rootfs" "$S/rootfs-link")" "$(cat "$AR_TMP/err")"
expect_status "rootfs by its real path still works" 0 "$A" --rootfs "$S/rootfs" --no-cgroups -- /sh </dev/null

# The review's attack: run 1 swaps a mount source in its rw workspace for a link to
# /run; run 2 refuses the source instead of binding the host's /run.
W="$AR_TMP/w"
mkdir -p "$W/cache"
chmod 0777 "$W"
"$A" --mount "$W:/ws:rw" -- sh -c 'rmdir /ws/cache && ln -s /run /ws/cache' ||
	fail "swap: run 1 failed"
[ -L "$W/cache" ] || fail "swap: run 1 did not plant the link"
expect_status "swap: run 2 refuses the planted link: 125" 125 \
	"$A" --mount "$W:/ws:rw" --mount "$W/cache:/cache" -- ls /cache
expect_eq "swap: run 2 message" "$(symlink_msg "<embedded default>: mounts[1].source" "$W/cache")" \
	"$(cat "$AR_TMP/err")"
expect_eq "swap: nothing listed" "" "$(cat "$AR_TMP/out")"

finish

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
#    (--user 65534: the runs share the files, which a dynamic uid per run would not own)
WS="$AR_TMP/ws"
mkdir -p "$WS"
chmod 1777 "$WS"
expect_status "setuid: chmod 4755 on a rw mount fails" 1 \
	"$A" --user 65534 --mount "$WS:/ws:rw" -- sh -c 'cp /bin/sh /ws/x && chmod 4755 /ws/x'
expect_match "setuid: chmod says EPERM" "Operation not permitted" "$(cat "$AR_TMP/err")"
expect_eq "setuid: the file on the host has no set-id bit" 755 "$(stat -c %a "$WS/x")"
expect_status "setgid: chmod g+s fails" 1 "$A" --user 65534 --mount "$WS:/ws:rw" -- chmod g+s /ws/x
expect_eq "setgid: the file on the host has no set-id bit" 755 "$(stat -c %a "$WS/x")"
expect_eq "setuid: python os.open(O_CREAT, 0o4755) is EPERM" "EPERM absent" \
	"$("$A" --user 65534 --mount "$WS:/ws:rw" -- python3 -c '
import errno, os
try:
    os.open("/ws/y", os.O_CREAT | os.O_WRONLY, 0o4755)
    print("created")
except OSError as e:
    print(errno.errorcode[e.errno], "present" if os.path.exists("/ws/y") else "absent")')"
[ ! -e "$WS/y" ] || fail "setuid: /ws/y was created on the host"
expect_eq "ordinary modes still work (chmod 0755, O_CREAT 0644, O_TMPFILE 0600, mkdir 0755)" \
	"755 644 ok 755" "$("$A" --user 65534 --mount "$WS:/ws:rw" -- python3 -c '
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
	"$(symlink_msg "--mount $S/link:/x" "$S/link")" "$(cat "$AR_TMP/err")"
expect_status "--mount: a source through a symlink is refused: 125" 125 \
	"$A" --mount "$S/real:/ok" --mount "$S/link/sub:/x" -- true
expect_eq "--mount: a source through a symlink: message" \
	"$(symlink_msg "--mount $S/link/sub:/x" "$S/link/sub")" "$(cat "$AR_TMP/err")"
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
# (the rw workspace is root's: the start says it is not mapped, run_idmap.sh)
expect_eq "swap: run 2 message" "$(symlink_msg "--mount $W/cache:/cache" "$W/cache")" \
	"$(grep -v '^agentrun: warning: .* belongs to root' "$AR_TMP/err")"
expect_eq "swap: nothing listed" "" "$(cat "$AR_TMP/out")"

# 5. A fresh session keyring: a key in the caller's session keyring is out of reach
#    even when a profile allows keyctl (--seccomp unconfined). The launcher joins a
#    session keyring of its own (the test runner's stays untouched), adds a key, and
#    execs agentrun; inside, the key is searched for and the keyring ids compared.
cat >"$AR_TMP/keys.py" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_add_key, SYS_keyctl = 248, 250
JOIN, GET_ID, SEARCH, READ, SESSION = 1, 0, 10, 11, -3
libc.syscall.restype = ctypes.c_long
def keyctl(*a):
    r = libc.syscall(SYS_keyctl, *[ctypes.c_long(x) if isinstance(x, int) else x for x in a])
    return r if r >= 0 else -ctypes.get_errno()
if sys.argv[1] == "launch":
    assert keyctl(JOIN, ctypes.c_char_p(b"agentrun-test")) > 0
    k = libc.syscall(SYS_add_key, b"user", b"agentrun-test:secret", b"hunter2",
                     ctypes.c_size_t(7), ctypes.c_long(SESSION))
    assert k > 0
    # the key is readable here, by uid 65534 only through possession
    print("outer", keyctl(GET_ID, SESSION, 0), flush=True)
    os.execv(sys.argv[2], sys.argv[2:])
k = keyctl(SEARCH, SESSION, ctypes.c_char_p(b"user"), ctypes.c_char_p(b"agentrun-test:secret"), 0)
buf = ctypes.create_string_buffer(64)
n = keyctl(READ, k, buf, 64) if k > 0 else k
print("inner", keyctl(GET_ID, SESSION, 0), "search", "found" if k > 0 else os.strerror(-k),
      "read", buf.value.decode() if n > 0 else os.strerror(-n))
PY
mkdir -p "$AR_TMP/k" && cp "$AR_TMP/keys.py" "$AR_TMP/k/" && chmod 755 "$AR_TMP/k"
out=$(python3 "$AR_TMP/keys.py" launch "$A" --seccomp unconfined --mount "$AR_TMP/k:/k" -- \
	python3 /k/keys.py inner) || fail "keyring: run failed: $out"
outer=$(printf '%s\n' "$out" | sed -n 's/^outer //p')
inner=$(printf '%s\n' "$out" | sed -n 's/^inner \([0-9-]*\) .*/\1/p')
expect_match "keyring: the launcher has a session keyring" '^[0-9]+$' "$outer"
expect_match "keyring: the sandbox has one too" '^[0-9]+$' "$inner"
if [ "$outer" != "$inner" ]; then pass "keyring: not the caller's ($outer vs $inner)"; else
	fail "keyring: the sandbox's session keyring is the caller's ($outer)"
fi
expect_eq "keyring: the caller's key is out of reach" "search $(python3 -c 'import os,errno; print(os.strerror(errno.ENOKEY))') read $(python3 -c 'import os,errno; print(os.strerror(errno.ENOKEY))')" \
	"$(printf '%s\n' "$out" | sed -n 's/^inner [0-9-]* //p')"

# 6. tmpfs sizes: the policy's tmpfs gets the memory limit, /dev/shm too (at most 64m
#    without cgroups, where nothing else charges its pages); /dev/null masks are
#    read-only.
sizes() { "$A" "$@" -- sh -c 'for m in /tmp /dev/shm; do grep " $m " /proc/self/mountinfo | grep -o "size=[0-9]*k"; done | xargs'; }
expect_eq "tmpfs sizes: the memory limit (512m)" "size=524288k size=524288k" "$(sizes)"
expect_eq "tmpfs sizes: --memory 128m" "size=131072k size=131072k" "$(sizes --memory 128m)"
expect_eq "tmpfs sizes: --no-cgroups" "size=524288k size=65536k" "$(sizes --no-cgroups)"
expect_eq "tmpfs sizes: --no-cgroups --memory 16m" "size=16384k size=16384k" "$(sizes --no-cgroups --memory 16m)"
expect_eq "tmpfs: full at the limit" "No space left on device 16777216" \
	"$("$A" --no-cgroups --memory 16m -- sh -c 'head -c 20000000 /dev/zero 2>&1 >/tmp/x | sed "s/.*: //"; wc -c </tmp/x' | xargs)"
expect_eq "/dev/null masks: read-only, nosuid, noexec" "ro nosuid noexec" \
	"$("$A" -- sh -c 'grep " /proc/keys " /proc/self/mountinfo | cut -d" " -f6 | tr , "\n" | grep -x -e ro -e nosuid -e noexec | xargs')"

finish

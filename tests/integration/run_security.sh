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

finish

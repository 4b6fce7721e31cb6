#!/usr/bin/env bash
# Ordinary programs (sh, coreutils, python3, curl, git) work under the default seccomp
# profile inside `agentrun run`, the profile's denials are what programs see (EPERM),
# a profile file given with --seccomp is loaded and its errors name file and field.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

need_root
for c in python3 curl git unshare; do need_cmd "$c"; done
case $AGENTRUN in /*) ;; *) AGENTRUN=$PWD/$AGENTRUN ;; esac

run() { "$AGENTRUN" run --no-cgroups "$@"; }

if ! run --seccomp unconfined -- true 2>"$AR_TMP/smoke"; then
	skip "agentrun run does not work here: $(head -c 300 "$AR_TMP/smoke")"
fi

# 1. ordinary programs under the default profile
# shellcheck disable=SC2016 # expanded by the sandboxed shell
programs='set -e
cd /tmp
export HOME=/tmp LC_ALL=C
grep -E "^Seccomp:" /proc/self/status
ls / | sort >/dev/null
printf "b\na\n" >in.txt
cp in.txt out.txt
echo "sort=$(sort out.txt | head -n1)"
echo "python=$(python3 -c "import os, subprocess, threading, json; print(sum(range(4)))")"
curl --version >/dev/null
echo "curl=$(curl -s file:///tmp/in.txt | head -n1)"
git init -q repo && cd repo
echo x >f && git add f
git -c user.name=t -c user.email=t@example.invalid commit -qm first
echo "git=$(git log --format=%s)"'
out=$(run --seccomp default -- sh -c "$programs" 2>"$AR_TMP/err") || fail "programs: exit $?: $(cat "$AR_TMP/err")"
expect_match "filter installed" '^Seccomp:[[:space:]]+2' "$out"
expect_match "sort" 'sort=a' "$out"
expect_match "python3" 'python=6' "$out"
expect_match "curl file://" 'curl=b' "$out"
expect_match "git commit" 'git=first' "$out"

# 2. what a program sees of the denials
probe='
import ctypes, errno, fcntl, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def sc(*a):
    r = libc.syscall(*[ctypes.c_long(x) for x in a])
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
def sock(*a):
    try:
        socket.socket(*a).close(); return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
def ioctl(req):
    fd = os.open("/dev/null", os.O_RDWR)
    try:
        fcntl.ioctl(fd, req, b"x"); return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
print("unshare_user", sc(272, 0x10000000))
print("ptrace", sc(101, 0, 0, 0, 0))
print("bpf", sc(321, 0, 0, 0))
print("io_uring", sc(425, 0, 0))
print("x32_getpid", sc(0x40000000 | 39))
print("packet", sock(17, socket.SOCK_RAW, 0))
print("netlink_audit", sock(16, socket.SOCK_RAW, 9))
print("netlink_route", sock(16, socket.SOCK_RAW, 0))
print("inet", sock(2, socket.SOCK_STREAM, 0))
print("tiocsti", ioctl(0x5412))
print("tcgets", ioctl(0x5401))
'
out=$(run --seccomp default -- python3 -c "$probe" 2>"$AR_TMP/err") || fail "probe: exit $?: $(cat "$AR_TMP/err")"
for denied in unshare_user ptrace bpf io_uring x32_getpid packet netlink_audit tiocsti; do
	expect_match "default denies $denied" "^$denied EPERM\$" "$(printf '%s\n' "$out" | grep "^$denied ")"
done
expect_match "netlink route allowed" '^netlink_route ok$' "$(printf '%s\n' "$out" | grep '^netlink_route ')"
expect_match "inet allowed" '^inet ok$' "$(printf '%s\n' "$out" | grep '^inet ')"
expect_match "TCGETS reaches the driver" '^tcgets ENOTTY$' "$(printf '%s\n' "$out" | grep '^tcgets ')"

# unconfined: no filter at all
out=$(run --seccomp unconfined -- grep -E '^Seccomp:' /proc/self/status 2>&1) || true
expect_match "unconfined has no filter" '^Seccomp:[[:space:]]+0' "$out"

# 3. a profile file: runtime-spec format, errno of our choosing
cat >"$AR_TMP/deny-mkdir.json" <<'EOF'
{"defaultAction": "SCMP_ACT_ALLOW",
 "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]}
EOF
out=$(run --seccomp "$AR_TMP/deny-mkdir.json" -- sh -c 'mkdir /tmp/d 2>&1; echo rc=$?') || true
expect_match "profile file applies" 'Permission denied' "$out"
expect_match "profile file: mkdir fails" 'rc=1' "$out"

# 4. a broken profile: 125, the message names the file and the field, nothing runs
cat >"$AR_TMP/bad.json" <<'EOF'
{"defaultAction": "SCMP_ACT_ALLOW",
 "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"},
              {"names": ["mkdir"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_FOO"}]}]}
EOF
expect_status "bad profile" 125 run --seccomp "$AR_TMP/bad.json" -- touch "$AR_TMP/ran"
expect_match "bad profile: message" "$AR_TMP/bad.json: syscalls\\[1\\]\\.args\\[0\\]\\.op: unknown operator \`SCMP_CMP_FOO\`" "$(cat "$AR_TMP/err")"
expect_eq "bad profile: nothing ran" "no" "$([ -e "$AR_TMP/ran" ] && echo yes || echo no)"

finish

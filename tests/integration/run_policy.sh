#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted on purpose: the shell inside the sandbox expands them
# agentrun run: the embedded default policy, a policy file (mounts, kubeconfig, env,
# user, hostname), CLI overrides, hidden host paths, a clean environment, a rootfs,
# and the cgroup limits wired to the sandbox.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
A=$AGENTRUN
PROBE="$AR_BUILD_DIR/tests/ar-probe"
NAME="rp-$$"

# The default policy: a dynamic uid of its own, gid the same number; hostname "default".
ids=$("$A" -- sh -c 'echo "$(id -u) $(id -g)"')
if dynamic_uid "${ids%% *}" && [ "${ids%% *}" = "${ids##* }" ]; then pass "default policy: a dynamic uid = gid ($ids)"; else
	fail "default policy: uid gid [$ids] is not a dynamic pair"
fi
expect_eq "default policy: hostname" default "$("$A" -- hostname)"
expect_eq "default policy: only loopback" "lo" "$("$A" -- ls /sys/class/net)"
expect_eq "loopback is up (IFF_UP|IFF_LOOPBACK)" "0x9" "$("$A" -- cat /sys/class/net/lo/flags)"
devs="fd full null ptmx pts random shm stderr stdin stdout urandom zero"
[ -e /dev/tty ] && devs="fd full null ptmx pts random shm stderr stdin stdout tty urandom zero"
expect_eq "a minimal /dev" "$devs" "$("$A" -- sh -c 'ls /dev | tr "\n" " " | sed "s/ $//"')"
expect_eq "the cgroup namespace is rooted at the sandbox cgroup" "" \
	"$("$A" -- sh -c 'grep -v ":/$" /proc/self/cgroup' || true)"
expect_eq "PID 1 is agentrun's init, the command PID 2" "1 2" \
	"$("$A" -- sh -c 'echo $(cut -d" " -f1 /proc/1/stat) $$')"

# Overrides write into the policy.
expect_eq "--user 1000:1001" "1000 1001" "$("$A" --user 1000:1001 -- sh -c 'echo $(id -u) $(id -g)')"
expect_eq "--env" "bar baz=1" "$("$A" --env FOO=bar --env QUX=baz=1 -- sh -c 'echo $FOO $QUX')"
expect_eq "--tmpfs: a new writable place" "ok" "$("$A" --tmpfs /scratch -- sh -c 'touch /scratch/f && echo ok')"
expect_eq "--mount read-only by default" "Read-only file system" \
	"$("$A" --mount /etc:/hostetc -- sh -c 'touch /hostetc/x 2>&1 | sed "s/.*: //"')"

# Nothing is ever created on the host: a mount point inside a host directory must exist.
expect_status "mount point below a host directory: 125" 125 "$A" --mount /etc:/etc/agentrun-$$ -- true
expect_eq "mount point below a host directory: message" \
	"agentrun: --mount /etc:/etc/agentrun-$$: cannot create the mount point /etc/agentrun-$$: /etc is a host directory (nothing is created on the host: create it there first, or mount elsewhere)" \
	"$(cat "$AR_TMP/err")"
[ ! -e "/etc/agentrun-$$" ] || fail "a mount point was created on the host"
# /var is the sandbox's own (empty) directory: a mount point there is made in the root
# tmpfs, not in the host's /var.
expect_eq "mount point below /var: made in the sandbox" "passwd" \
	"$("$A" --mount /etc:/var/log/agentrun-$$ -- sh -c "ls /var/log/agentrun-$$ | grep -x passwd")"
[ ! -e "/var/log/agentrun-$$" ] || fail "a mount point was created in the host's /var/log"

# The command is looked up in the sandbox's PATH, not the caller's.
mkdir -p "$AR_TMP/bin"
printf '#!/bin/sh\necho from-policy-path\n' >"$AR_TMP/bin/agentrun-tool"
chmod 755 "$AR_TMP/bin" "$AR_TMP/bin/agentrun-tool"
expect_eq "PATH of the policy finds the command" "from-policy-path" \
	"$("$A" --mount "$AR_TMP/bin:/tools" --env PATH=/tools:/usr/bin:/bin -- agentrun-tool)"
expect_eq "the caller's PATH plays no part" "65534" "$(PATH=/nonexistent "$AGENTRUN" --user 65534 -- id -u)"

# A clean environment: nothing of the caller's but TERM.
expect_eq "environment: clean, TERM passed" "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
HOME=/tmp
TERM=dumb
FOO=bar" "$(env -i TERM=dumb SECRET_TOKEN=x "$A" --env FOO=bar -- /usr/bin/env)"

# A policy file with read-only and read-write mounts and a kubeconfig.
mkdir -p "$AR_TMP/logs" "$AR_TMP/rw"
chmod 1777 "$AR_TMP/rw"
echo "a log line" >"$AR_TMP/logs/app.log"
echo "apiVersion: v1" >"$AR_TMP/kubeconfig"
cat >"$AR_TMP/p.json" <<EOF
{
  "name": "$NAME",
  "network": "none",
  "kubeconfig": "$AR_TMP/kubeconfig",
  "mounts": [
    {"source": "$AR_TMP/logs", "target": "/logs", "readonly": true},
    {"source": "$AR_TMP/rw", "target": "/data/rw", "readonly": false}
  ],
  "env": {"ANTHROPIC_BASE_URL": "https://api.anthropic.com"},
  "user": "1000"
}
EOF
P=(--policy "$AR_TMP/p.json" --no-cgroups)
expect_eq "policy: hostname is the policy name" "$NAME" "$("$A" "${P[@]}" -- hostname)"
expect_eq "policy: user 1000" "1000" "$("$A" "${P[@]}" -- id -u)"
expect_eq "policy: env" "https://api.anthropic.com" "$("$A" "${P[@]}" -- sh -c 'echo $ANTHROPIC_BASE_URL')"
expect_eq "kubeconfig: KUBECONFIG set" "/home/agent/.kube/config" "$("$A" "${P[@]}" -- sh -c 'echo $KUBECONFIG')"
expect_eq "kubeconfig: readable" "apiVersion: v1" "$("$A" "${P[@]}" -- sh -c 'cat "$KUBECONFIG"')"
chown 1000 "$AR_TMP/kubeconfig"
expect_eq "kubeconfig: read-only (even for the file's owner)" "Read-only file system" \
	"$("$A" "${P[@]}" -- sh -c 'echo x 2>&1 >>"$KUBECONFIG" | sed "s/.*: //"')"
expect_eq "mounts[0]: readable" "a log line" "$("$A" "${P[@]}" -- cat /logs/app.log)"
expect_eq "mounts[0]: read-only" "Read-only file system" \
	"$("$A" "${P[@]}" -- sh -c 'touch /logs/new 2>&1 | sed "s/.*: //"')"
expect_eq "mounts[0]: nosuid,nodev" "ro,nosuid,nodev" \
	"$("$A" "${P[@]}" -- sh -c 'grep " /logs " /proc/self/mountinfo | cut -d" " -f6 | cut -d, -f1-3')"
"$A" "${P[@]}" -- sh -c 'echo written >/data/rw/out' || fail "mounts[1]: write failed"
expect_eq "mounts[1]: read-write, seen on the host" "written" "$(cat "$AR_TMP/rw/out" 2>/dev/null)"

# The host root view is an allow-list (/usr, /bin, /sbin, /lib*, /etc, /opt; /var, /run
# empty; /tmp the policy's): homes, /root, /run (docker.sock, containerd), /srv and any
# other top-level directory are absent; credentials inside /etc and the caller's $HOME
# are hidden.
top=$("$A" -- sh -c 'ls -A /')
for d in bin etc proc dev sys tmp usr var run; do
	expect_match "the top level has /$d" "(^|\n)$d(\n|\$)" "$(printf '%s\n' "$top" | grep -x "$d")"
done
for e in /* /.[!.]*; do
	[ -e "$e" ] || [ -L "$e" ] || continue
	d=${e#/}
	case $d in bin | sbin | usr | etc | opt | lib | lib32 | lib64 | libx32 | proc | dev | sys | tmp | var | run) ;;
	*) expect_eq "absent: /$d" "" "$(printf '%s\n' "$top" | grep -x -- "$d" || true)" ;;
	esac
done
for d in root home srv mnt media; do
	expect_eq "absent: /$d" "absent" "$("$A" -- sh -c "test -e /$d && echo present || echo absent")"
done
expect_eq "/bin stays a symlink when the host's is one" "$(readlink /bin || echo dir)" \
	"$("$A" -- sh -c 'readlink /bin || echo dir')"
expect_eq "/var and /run: empty" "" "$("$A" -- sh -c 'ls -A /var /run | grep -v ":$" | grep .' || true)"
expect_eq "/var: read-only" "Read-only file system" "$("$A" -- sh -c 'mkdir /var/x 2>&1 | sed "s/.*: //"')"
# A daemon's pathname socket outside the allowed directories (0777: reachable by
# anyone who can see it) and a directory in /srv: absent.
TOPDIR="/agentrun-test-$$"
mkdir -p "$TOPDIR" "/srv/agentrun-test-$$"
on_exit "rm -rf $TOPDIR /srv/agentrun-test-$$"
python3 -c 'import os,socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777)' \
	"$TOPDIR/svc.sock"
[ -S "$TOPDIR/svc.sock" ] || fail "the test socket is not there"
expect_eq "absent: an unknown top-level directory with a 0777 socket" "absent ENOENT" \
	"$("$A" -- python3 -c '
import errno, os, socket, sys
print("present" if os.path.exists(sys.argv[1]) else "absent", end=" ")
try:
    socket.socket(socket.AF_UNIX).connect(sys.argv[1] + "/svc.sock"); print("connected")
except OSError as e:
    print(errno.errorcode[e.errno])' "$TOPDIR")"
expect_eq "absent: /srv" "absent" "$("$A" -- sh -c "test -e /srv/agentrun-test-$$ && echo present || echo absent")"
# The caller's $HOME must be a directory the sandbox would otherwise show (/opt).
HOMEDIR="/opt/agentrun-test-home-$$"
mkdir -p "$HOMEDIR/.aws"
on_exit "rm -rf $HOMEDIR"
expect_eq "not hidden: a directory that is not the caller's \$HOME" ".aws" "$(HOME=/ "$A" -- ls -A "$HOMEDIR")"
expect_eq "hidden: the caller's \$HOME is empty" "" "$(HOME=$HOMEDIR "$A" -- ls -A "$HOMEDIR")"
# A service account's home that is a system directory (daemon's /usr/sbin, bin's /bin,
# sys's /dev) is not hidden, or no command would run: a warning says it stays visible.
for h in /usr/sbin /usr /dev; do
	expect_status "HOME=$h (a system directory): the command runs" 0 env HOME="$h" "$A" -- sh -c 'ls /usr/sbin /dev/null >/dev/null'
	expect_eq "HOME=$h: one warning that it stays visible" "agentrun: warning: $h, the caller's home or runtime directory, is a system directory the sandbox needs: it stays visible (read-only), not hidden" "$(cat "$AR_TMP/err")"
done
expect_eq "HOME=/: no warning (no place of the caller's own)" "" "$(HOME=/ "$A" -- true 2>&1)"
# (a marker stands in for docker.sock: creating a real one could fool other tests)
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "/run/agentrun-test-$$.sock"
on_exit "rm -f /run/agentrun-test-$$.sock"
[ -S "/var/run/agentrun-test-$$.sock" ] || fail "the marker socket is not visible on the host"
expect_eq "hidden: a socket in /run" "absent" \
	"$("$A" -- sh -c "test -e /var/run/agentrun-test-$$.sock || test -e /run/agentrun-test-$$.sock && echo present || echo absent")"
expect_eq "hidden: /etc/shadow reads empty" "0" "$("$A" -- sh -c 'wc -c </etc/shadow')"
expect_eq "hidden: /etc/shadow is a read-only mask" "ro" \
	"$("$A" -- sh -c 'grep " /etc/shadow " /proc/self/mountinfo | cut -d" " -f6 | cut -d, -f1')"
# sudo's configuration and sshd's private host keys, by pattern (markers: harmless
# names that neither sudo nor sshd reads)
touch "/etc/sudoers-agentrun-test-$$"
on_exit "rm -f /etc/sudoers-agentrun-test-$$"
echo secret >"/etc/sudoers-agentrun-test-$$"
expect_eq "hidden: /etc/sudoers*" "0" "$("$A" -- sh -c "wc -c </etc/sudoers-agentrun-test-$$")"
if [ -d /etc/ssh ]; then
	echo secret >"/etc/ssh/agentrun_test_$$_key"
	echo public >"/etc/ssh/agentrun_test_$$_key.pub"
	on_exit "rm -f /etc/ssh/agentrun_test_$$_key /etc/ssh/agentrun_test_$$_key.pub"
	expect_eq "hidden: /etc/ssh/*_key, not *.pub" "0 public" \
		"$("$A" -- sh -c "echo \$(wc -c </etc/ssh/agentrun_test_$$_key) \$(cat /etc/ssh/agentrun_test_$$_key.pub)")"
fi
# The caller's working directory when the sandbox does not show it: /.
expect_eq "an invisible cwd starts in /" "/" "$(cd "$TOPDIR" && "$A" -- pwd)"
expect_eq "a visible cwd is kept" "/usr/share" "$(cd /usr/share && "$A" -- pwd)"
# Ordinary tools work in the default view.
expect_eq "tools: sh, coreutils, python3" "ok 6" "$("$A" -- sh -c 'ls /usr/bin >/dev/null && echo ok $(python3 -c "print(sum(range(4)))")')"

# A rootfs directory instead of the host's root: it needs /proc, /dev, /sys, /tmp.
if [ -x "$PROBE" ]; then
	R="$AR_TMP/rootfs"
	mkdir -p "$R/proc" "$R/dev" "$R/sys" "$R/tmp" "$R/etc"
	cp "$PROBE" "$R/probe"
	out=$("$A" --rootfs "$R" --no-cgroups --user 65534 -- /probe </dev/null) || fail "rootfs: probe exited $?"
	for line in uid=65534 root_ro=1 write_root=EROFS write_etc=EROFS write_tmp=ok \
		cap_eff=0000000000000000 seccomp=2 list_root=ENOENT mount=EPERM probe=done; do
		expect_eq "rootfs: $line" "$line" "$(printf '%s\n' "$out" | grep -x -- "$line" || true)"
	done
	rmdir "$R/proc"
	expect_status "rootfs without /proc: 125" 125 "$A" --rootfs "$R" --no-cgroups -- /probe
	expect_match "rootfs without /proc: names it" "/proc" "$(cat "$AR_TMP/err")"
	expect_status "rootfs that is a file: 125" 125 "$A" --rootfs "$R/probe" -- /probe
	expect_eq "rootfs that is a file: message" "agentrun: <embedded default>: rootfs: $R/probe: not a directory" "$(cat "$AR_TMP/err")"
fi

# The cgroup limits reach the sandbox (the limits themselves are tested by the
# cgroup tests): the memory cgroup of the running sandbox has the limit.
mkdir -p "$AR_TMP/io"
chmod 1777 "$AR_TMP/io"
"$A" --policy "$AR_TMP/p.json" --memory 64m --mount "$AR_TMP/io:/io:rw" -- sh -c 'touch /io/ready; exec sleep 30' &
pid=$!
on_exit "kill -9 $pid"
for _ in $(seq 1 100); do [ -e "$AR_TMP/io/ready" ] && break; sleep 0.05; done
memdir=$(find /sys/fs/cgroup/memory /sys/fs/cgroup/unified -maxdepth 6 -type d -name "agentrun-$NAME-$pid" 2>/dev/null | head -1)
if [ -z "$memdir" ]; then
	fail "cgroup: no agentrun-$NAME-$pid cgroup found"
elif [ -e "$memdir/memory.limit_in_bytes" ]; then
	expect_eq "cgroup v1: memory limit 64m" 67108864 "$(cat "$memdir/memory.limit_in_bytes")"
else
	expect_eq "cgroup v2: memory limit 64m" 67108864 "$(cat "$memdir/memory.max")"
fi
# The sandbox's init and the command are in the sandbox cgroup of every hierarchy
# that has a limit (on v1 the init moves itself in; the command inherits it).
init=$(awk '{print $1}' "/proc/$pid/task/$pid/children")
cmd=$(awk '{print $1}' "/proc/$init/task/$init/children" 2>/dev/null)
if [ -n "$memdir" ] && [ -e "$memdir/memory.limit_in_bytes" ]; then ctrls="memory pids cpu"; else ctrls=""; fi
for who in "init:$init" "command:$cmd"; do
	p=${who#*:}
	if [ -z "$ctrls" ]; then
		expect_match "cgroup v2: the ${who%%:*} is in the sandbox cgroup" "^0::.*/agentrun-$NAME-$pid\$" \
			"$(grep '^0::' "/proc/$p/cgroup" 2>&1)"
	fi
	for c in $ctrls; do
		expect_match "cgroup v1 $c: the ${who%%:*} is in the sandbox cgroup" "/agentrun-$NAME-$pid\$" \
			"$(grep -E "^[0-9]+:([^:]*,)?$c(,[^:]*)?:" "/proc/$p/cgroup" 2>&1)"
	done
done
kill -TERM "$pid"
wait "$pid" || true
finish

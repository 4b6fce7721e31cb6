#!/usr/bin/env bash
# A sandbox run by an ordinary user runs as the caller's own uid (keep-id), so the
# kernel's permission checks would let it reach whatever the caller can: each of the
# caller's things is tried from inside, with the positive control outside as the
# caller (it works there, so the sandbox is what stops it):
# - the caller's other processes (ptrace, a signal, /proc/PID/environ): the pid
#   namespace hides them, seccomp refuses ptrace;
# - the caller's home (its ~/.ssh, ~/.aws), wherever it lies: under /home, under a
#   directory the view shows (/opt) as $HOME, and as the home passwd names;
# - $XDG_RUNTIME_DIR (the SSH agent's and D-Bus's sockets), also when it lies in /opt;
# - /tmp/.X11-unix, and abstract unix sockets (X11's, D-Bus's: the netns hides them);
# - a socket under /run (docker.sock's place), the caller's files outside the mounts
#   (written: EROFS) and the caller's environment (SSH_AUTH_SOCK, tokens, DISPLAY).
AR_AS_USER=1
# shellcheck source=tests/escape/common.bash
. "$(dirname "$0")/common.bash"
need python3 command -v python3
U=$AR_USER_UID G=$AR_USER_GID RT=$AR_USER_RUNTIME
HOMEDIR=$(getent passwd "$AR_USER" | cut -d: -f6)
E=/ar-bin/ar-escape
mine() { as_user "$AR_TMP/bin/ar-escape" "$@" </dev/null; }
# both ATTEMPT ARG WANT [AGENTRUN OPTIONS...]: WANT inside, ok outside as the caller
both() {
	local attempt=$1 arg=$2 want=$3
	shift 3
	expect_eq "$attempt $arg: contained" "$want" "$(inside "$attempt" "$arg" -- "$@" 2>&1)"
	expect_eq "$attempt $arg: control, the caller outside" ok "$(mine "$attempt" "$arg" 2>&1)"
}

# --- the caller's processes ---
setpriv --reuid "$U" --regid "$G" --init-groups sleep 300 &
VPID=$!
on_exit "kill $VPID"
both ptrace_pid "$VPID" EPERM
both kill_pid "$VPID" ESRCH
both proc_environ "$VPID" ENOENT

# --- sockets of the caller's: pathname ones in its runtime directory and in
# /tmp/.X11-unix, abstract ones; a listener of the caller's own for each ---
X11=/tmp/.X11-unix
if [ ! -d "$X11" ]; then
	install -d -m 1777 "$X11"
	on_exit "rmdir $X11"
fi
XS="$X11/X$((1000 + $$ % 30000))"
SOCKS=("$RT/ssh-agent.$$" "$RT/bus-$$" "$XS" "@agentrun-dbus-$$" "@$XS")
(cd / && exec setpriv --reuid "$U" --regid "$G" --init-groups --reset-env python3 -c '
import socket, sys, time
for a in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    s.bind("\0" + a[1:] if a.startswith("@") else a)
    s.listen(8)
    globals().setdefault("keep", []).append(s)
print("ready", flush=True)
time.sleep(300)
' "${SOCKS[@]}") >"$AR_TMP/socks.log" 2>&1 &
on_exit "kill $!; rm -f ${SOCKS[*]//@*/}" # the listener itself: exec all the way
for _ in $(seq 1 100); do grep -q ready "$AR_TMP/socks.log" && break; sleep 0.05; done
grep -q ready "$AR_TMP/socks.log" || fail "the caller's listeners: $(cat "$AR_TMP/socks.log")"
both unix_path "$RT/ssh-agent.$$" ENOENT
both unix_path "$RT/bus-$$" ENOENT
both unix_path "$XS" ENOENT
both unix_abstract "agentrun-dbus-$$" ECONNREFUSED
both unix_abstract "$XS" ECONNREFUSED
# docker.sock's place: /run is not in the view
python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); print("ready",flush=True); time.sleep(300)' \
	"/run/agentrun-test-docker-$$.sock" >"$AR_TMP/docker.log" 2>&1 &
on_exit "kill $!; rm -f /run/agentrun-test-docker-$$.sock"
for _ in $(seq 1 100); do grep -q ready "$AR_TMP/docker.log" && break; sleep 0.05; done
chmod 666 "/run/agentrun-test-docker-$$.sock"
both unix_path "/run/agentrun-test-docker-$$.sock" ENOENT

# --- the caller's home under /home ---
as_user sh -c "mkdir -p '$HOMEDIR/.ssh' '$HOMEDIR/.aws' && echo k >'$HOMEDIR/.ssh/id-$$' && echo c >'$HOMEDIR/.aws/credentials-$$'"
on_exit "rm -f $HOMEDIR/.ssh/id-$$ $HOMEDIR/.aws/credentials-$$"
both read_file "$HOMEDIR/.ssh/id-$$" ENOENT
both read_file "$HOMEDIR/.aws/credentials-$$" ENOENT

# --- a home and a runtime directory in /opt, which the view shows: hidden by name ---
OH=/opt/agentrun-home-$$ ORT=/opt/agentrun-rt-$$ OTHER=/opt/agentrun-other-$$
install -d -m 0700 -o "$U" -g "$G" "$OH" "$ORT"
install -d -m 0755 -o "$U" -g "$G" "$OTHER"
on_exit "rm -rf $OH $ORT $OTHER"
as_user sh -c "echo k >$OH/secret; echo k >$ORT/secret; echo k >$OTHER/file"
opt_run() {
	as_user env HOME="$OH" XDG_RUNTIME_DIR="$ORT" "$UAGENTRUN" --no-cgroups \
		--mount "$AR_TMP/bin:/ar-bin" -- $E "$@" </dev/null
}
expect_eq "\$HOME in /opt: hidden" ENOENT "$(opt_run read_file "$OH/secret")"
expect_eq "\$XDG_RUNTIME_DIR in /opt: hidden" ENOENT "$(opt_run read_file "$ORT/secret")"
expect_eq "control: the rest of /opt is in the view" ok "$(opt_run read_file "$OTHER/file")"
expect_eq "the caller's files outside the mounts: read-only" EROFS "$(opt_run append_file "$OTHER/file")"
expect_eq "control: the caller may write it outside" ok "$(mine append_file "$OTHER/file")"

# --- the home passwd names, when $HOME says something else: a user of the test's own
# whose home is in /opt ---
U2=ar-u2-$$
useradd --home-dir "/opt/$U2" --create-home --user-group --shell /bin/sh "$U2" >/dev/null
on_exit "userdel -r $U2"
echo k >"/opt/$U2/secret"
chown "$U2:$U2" "/opt/$U2/secret"
expect_eq "passwd's home (\$HOME elsewhere): hidden" ENOENT \
	"$(cd / && setpriv --reuid "$U2" --regid "$U2" --init-groups env HOME=/tmp \
		"$UAGENTRUN" --no-cgroups --mount "$AR_TMP/bin:/ar-bin" -- $E read_file "/opt/$U2/secret" </dev/null)"
expect_eq "passwd's home: control, the user outside" ok \
	"$(cd / && setpriv --reuid "$U2" --regid "$U2" --init-groups "$AR_TMP/bin/ar-escape" read_file "/opt/$U2/secret")"

# --- the caller's environment: none of it passes ---
vars=$(as_user env SSH_AUTH_SOCK="$RT/ssh-agent.$$" AWS_SECRET_ACCESS_KEY=s GITHUB_TOKEN=t \
	DBUS_SESSION_BUS_ADDRESS="unix:path=$RT/bus-$$" DISPLAY=:9 WAYLAND_DISPLAY=wayland-0 TERM=dumb \
	"$UAGENTRUN" --no-cgroups -- sh -c 'env | cut -d= -f1 | sort | tr "\n" " "')
expect_eq "the caller's environment stays out (TERM excepted)" "HOME PATH PWD TERM " "$vars"
finish

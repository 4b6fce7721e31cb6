# shellcheck shell=bash
# Shared helpers for tests/integration/*.sh and tests/vm/*.sh. Source it; it sets -eu.
# AGENTRUN is the binary under test (set by ctest); AR_BUILD_DIR, AR_SOURCE_DIR too.
set -eu
: "${AGENTRUN:?AGENTRUN must point at the agentrun binary}"
AR_SOURCE_DIR=${AR_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
AR_BUILD_DIR=${AR_BUILD_DIR:-$AR_SOURCE_DIR/build}
# A short unique tag for namespaces, veths and cgroups this test makes.
export AR_TAG="ar-t$$"
AR_TMP=$(mktemp -d "/tmp/agentrun-test.XXXXXX")
AR_FAILED=0
AR_CLEANUPS=()

# Register a cleanup command (run in reverse order at exit, even on failure).
on_exit() { AR_CLEANUPS+=("$*"); }
ar_run_cleanups() {
	local i
	for ((i = ${#AR_CLEANUPS[@]} - 1; i >= 0; i--)); do
		eval "${AR_CLEANUPS[$i]}" >/dev/null 2>&1 || true
	done
	rm -rf "$AR_TMP"
}
trap ar_run_cleanups EXIT

# skip REASON: exit 77, or fail when AGENTRUN_MUST_WORK=1 (CI).
skip() {
	if [ "${AGENTRUN_MUST_WORK:-0}" = 1 ]; then
		echo "FAIL (must work): $*" >&2
		exit 1
	fi
	echo "SKIP: $*" >&2
	exit 77
}
# need WHAT CMD...: the test needs WHAT (root, a kernel feature, a program), which
# CMD checks quietly: when CMD fails, skip, which fails under AGENTRUN_MUST_WORK=1.
# The shell twin of AR_NEED in tests/unit/need.h.
need() {
	local what=$1
	shift
	"$@" >/dev/null 2>&1 || skip "needs $what"
}
need_root() { need root [ "$(id -u)" = 0 ]; }
need_cmd() { need "$1" command -v "$1"; }

# descendant PID COMM: the first descendant of PID running COMM (waits up to 10 s: the
# machine may be loaded), e.g. the command of a sandbox started by `agentrun run`.
descendant() {
	local root=$1 want=$2 i c k queue
	for i in $(seq 1 200); do
		queue=("$root")
		while [ "${#queue[@]}" -gt 0 ]; do
			c=${queue[0]}
			queue=("${queue[@]:1}")
			if [ "$c" != "$root" ] && [ "$(cat "/proc/$c/comm" 2>/dev/null)" = "$want" ]; then
				echo "$c"
				return 0
			fi
			for k in $(cat /proc/"$c"/task/*/children 2>/dev/null); do queue+=("$k"); done
		done
		sleep 0.05
	done
	return 1
}

# dynamic_uid N: N is a uid from run's dynamic range (no `user` in the policy) and no
# host account.
dynamic_uid() {
	[[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge 61184 ] && [ "$1" -le 65519 ] && ! getent passwd "$1" >/dev/null
}

fail() {
	echo "FAIL: $*" >&2
	AR_FAILED=1
}
pass() { echo "ok: $*"; }

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: expected [$2] got [$3]"; fi
}
# expect_match WHAT REGEX TEXT
expect_match() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then pass "$1"; else fail "$1: [$3] does not match /$2/"; fi
}
expect_nomatch() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then fail "$1: [$3] matches /$2/"; else pass "$1"; fi
}
# expect_status WHAT EXPECTED CMD...: run CMD, compare its exit status.
expect_status() {
	local what=$1 want=$2 got=0
	shift 2
	"$@" >"$AR_TMP/out" 2>"$AR_TMP/err" || got=$?
	if [ "$got" = "$want" ]; then pass "$what (exit $got)"; else
		fail "$what: exit $got, expected $want; stderr: $(head -c 600 "$AR_TMP/err")"
	fi
}
# Free TCP port on 127.0.0.1.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# wait_port PORT [HOST]: until something listens (5 s at most).
wait_port() {
	local i
	for i in $(seq 1 100); do
		if (exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1") 2>/dev/null; then return 0; fi
		sleep 0.05
	done
	return 1
}
# net_state NAME-PID: until $AR_STATE/NAME-PID/state names the sandbox's init (10 s
# at most); prints the state file's path.
net_state() {
	local f="$AR_STATE/$1/state" _
	for _ in $(seq 1 200); do
		if grep -q '^pid=[1-9]' "$f" 2>/dev/null; then
			echo "$f"
			return 0
		fi
		sleep 0.05
	done
	return 1
}
finish() {
	if [ "$AR_FAILED" = 0 ]; then echo "PASS"; exit 0; fi
	echo "FAILED" >&2
	exit 1
}

# --- rootless tests: an unprivileged user of the test's own ---
# user_setup: the user `ar-u<8 hex digits of the build directory>` (made by the first
# test that needs it, shared by the suite's tests and removed after the last with its
# runtime directory and state by user_teardown, ctest's fixture `ar_user`; one per build,
# so that two suites run at once, as in two checkouts, never gc or count each other's
# sandboxes), its runtime directory as logind makes it (/run/user/UID, 0700), and copies
# of agentrun and the probe it can execute (a checkout under /root is mode 700). Sets
# AR_USER, AR_USER_UID, AR_USER_GID, AR_USER_RUNTIME, AR_USER_BIN (agentrun and
# ar-probe in it) and UAGENTRUN.
AR_USER=ar-u$(printf %s "$AR_BUILD_DIR" | md5sum | cut -c1-8)
user_setup() {
	need_root
	need_cmd setpriv
	[ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -gt 0 ] ||
		skip "user namespaces are disabled"
	# (two tests of one suite at once: the second useradd finds it made)
	id -u "$AR_USER" >/dev/null 2>&1 ||
		useradd --create-home --user-group --shell /bin/sh "$AR_USER" >/dev/null 2>&1 ||
		id -u "$AR_USER" >/dev/null
	AR_USER_UID=$(id -u "$AR_USER")
	AR_USER_GID=$(id -g "$AR_USER")
	AR_USER_RUNTIME=/run/user/$AR_USER_UID
	install -d -m 0700 -o "$AR_USER_UID" -g "$AR_USER_GID" "$AR_USER_RUNTIME"
	# in AR_TMP: gone with it, also when a test re-executes itself (proxy/common.sh)
	chmod 0711 "$AR_TMP"
	AR_USER_BIN=$AR_TMP/user-bin
	mkdir -p "$AR_USER_BIN"
	cp "${AR_AGENTRUN_BIN:-$AGENTRUN}" "$AR_USER_BIN/agentrun"
	[ ! -x "$AR_BUILD_DIR/tests/ar-probe" ] || cp "$AR_BUILD_DIR/tests/ar-probe" "$AR_USER_BIN/"
	# the TLS module, found beside the binary (secrets: docs/secrets.md)
	[ ! -e "$AR_BUILD_DIR/agentrun-tls.so" ] || cp "$AR_BUILD_DIR/agentrun-tls.so" "$AR_USER_BIN/"
	chmod -R a+rX "$AR_USER_BIN"
	UAGENTRUN=$AR_USER_BIN/agentrun
	as_user test -x "$UAGENTRUN" || skip "$AR_USER cannot execute $UAGENTRUN"
}
# user_teardown: the user, its home, its runtime directory and the agentrun state in it
# go; nothing when the user does not exist, and not while a process of it runs (a test
# still running: userdel refuses, and the next suite reuses the user).
user_teardown() {
	local uid
	uid=$(id -u "$AR_USER" 2>/dev/null) || return 0
	userdel -r "$AR_USER" >/dev/null 2>&1 || { id -u "$AR_USER" >/dev/null 2>&1 && return 1; }
	rm -rf "/run/user/$uid"
}
# as_user CMD...: CMD as AR_USER: its uid, gid and groups, no capabilities (the bounding
# set of an ordinary login, full),
# the environment a login would give it (HOME, USER, PATH, XDG_RUNTIME_DIR), from /.
as_user() {
	(cd / && setpriv --reuid "$AR_USER_UID" --regid "$AR_USER_GID" --init-groups \
		--inh-caps=-all --reset-env \
		env XDG_RUNTIME_DIR="$AR_USER_RUNTIME" "$@")
}

# --- user mode: a test's cases run by ar-user instead of root ---
# AR_STATE: where agentrun keeps the state of the sandboxes the test starts (root's
# /run/agentrun, a user's $XDG_RUNTIME_DIR/agentrun). With AR_AS_USER=1 (the user_*.sh
# variants of root's tests: the same cases, no copy), AGENTRUN becomes a wrapper that
# runs agentrun as AR_USER (its uid, gid, groups, HOME and runtime directory, no
# capabilities), and AR_TMP is the user's, so that its policy, audit and mounts are
# reachable; the test's own shell stays root (it reads the state, signals, inspects).
AR_STATE=/run/agentrun
if [ "${AR_AS_USER:-0}" = 1 ]; then
	# the binary under test, kept apart from the wrapper (AGENTRUN is exported: a test
	# that re-executes itself sees the wrapper there)
	export AR_AGENTRUN_BIN=${AR_AGENTRUN_BIN:-$AGENTRUN}
	user_setup
	AR_STATE=$AR_USER_RUNTIME/agentrun
	chown "$AR_USER_UID:$AR_USER_GID" "$AR_TMP"
	chmod 0755 "$AR_TMP"
	cat >"$AR_USER_BIN/agentrun-as-user" <<WRAP
#!/bin/sh
# agentrun as $AR_USER (tests/lib.sh user mode). A run gets --no-cgroups: this host
# delegates no cgroup to the user, and without the flag each run would add its line
# about the limits (docs/cgroups.md) to what root's cases read; everything else as given.
case "\$1" in
run) shift; set -- run --no-cgroups "\$@" ;;
--help | -h | --version) ;;
-*) set -- --no-cgroups "\$@" ;;
esac
exec setpriv --reuid $AR_USER_UID --regid $AR_USER_GID --init-groups --inh-caps=-all \\
	env HOME=$(getent passwd "$AR_USER" | cut -d: -f6) USER=$AR_USER LOGNAME=$AR_USER \\
	XDG_RUNTIME_DIR=$AR_USER_RUNTIME $UAGENTRUN "\$@"
WRAP
	chmod 755 "$AR_USER_BIN/agentrun-as-user"
	AGENTRUN=$AR_USER_BIN/agentrun-as-user
fi

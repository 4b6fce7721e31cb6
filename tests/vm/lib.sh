# shellcheck shell=bash
# The User-Mode Linux boot every tests/vm/*.sh lane shares (source after tests/lib.sh):
# a pure cgroup v2 kernel (cgroup_no_v1=all) whose root is the host's, read-only
# (hostfs), running an init script this side wrote; the guest reports `@@ key|value`
# lines on its console, which this side reads with uml_v.

# uml_need: root, linux.uml and a non-ASan agentrun, or skip.
uml_need() {
	need_root
	need_cmd linux.uml
	[ -x "$AGENTRUN" ] || skip "no agentrun binary at $AGENTRUN"
	# ASan's shadow memory range collides with User-Mode Linux's address space layout.
	if grep -aq __asan_init "$AGENTRUN"; then
		skip "AddressSanitizer builds cannot run under User-Mode Linux"
	fi
	mkdir -p "$AR_TMP/uml"
}

# uml_guest_head: the first lines of a guest init (stdout): proc, sys, cgroup2 at
# /sys/fs/cgroup, scratch on a tmpfs at /run (the host root is read-only; /tmp stays
# the host's so a build tree under /tmp is still visible), `r KEY VALUE` to report,
# uml_load_veth.
uml_guest_head() {
	cat <<'GUEST'
#!/bin/sh
# PID 1 inside User-Mode Linux (tests/vm/lib.sh)
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs tmpfs /run
CG=/sys/fs/cgroup
r() { echo "@@ $1|$2"; }
# uml_load_veth: veth is a module of this kernel, and these hosts have no kmod:
# finit_module(2) (313 on x86_64) through python's ctypes
uml_load_veth() {
	python3 -c 'import ctypes, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(313, fd, b"", 0) != 0 and ctypes.get_errno() != 17:
    sys.exit(os.strerror(ctypes.get_errno()))' "/usr/lib/uml/modules/$(uname -r)/kernel/drivers/net/veth.ko"
}
GUEST
}

# uml_guest_tail: the last lines of a guest init: `@@ end|ok`, power off.
uml_guest_tail() {
	printf '%s\n' 'r end ok' 'echo o >/proc/sysrq-trigger' 'sleep 10'
}

# uml_boot INIT MEM: boot with INIT as init (at most 300 s: the cgroup lane's script takes
# 85-120 s on a 2-core host, more under load; ctest allows the lane 600); the console in
# $AR_TMP/console. Fails the test (and shows the console) when the guest did not
# reach its end.
uml_boot() {
	local start
	chmod +x "$1"
	start=$(date +%s)
	TMPDIR=$AR_TMP/uml timeout 300 linux.uml mem="$2" root=/dev/root rootfstype=hostfs rootflags=/ ro \
		init="$1" cgroup_no_v1=all con0=null,fd:1 con=null quiet \
		</dev/null >"$AR_TMP/console" 2>&1 || true
	echo "UML run took $(($(date +%s) - start)) s"
	if [ "$(uml_v end)" != ok ]; then
		fail "the VM did not finish its script"
		uml_show_console
		return 1
	fi
}

# uml_v KEY: the value the guest reported for KEY (one line).
uml_v() { grep -a "^@@ $1|" "$AR_TMP/console" | head -n 1 | cut -d'|' -f2- | tr -d '\r'; }

uml_show_console() {
	echo "--- UML console:"
	cat "$AR_TMP/console"
}

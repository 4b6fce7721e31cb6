#!/usr/bin/env bash
# stdin, stdout, stderr reach the command unchecked otherwise: a directory there
# walks out of the root (CVE-2024-21626's shape), so fds 0-2 must be a terminal,
# pipe, socket, regular file or character device, else 125 naming the fd.
# shellcheck source=tests/escape/common.bash
. "$(dirname "$0")/common.bash"
need python3 command -v python3
A=$AGENTRUN
B=(--mount "$AR_TMP/bin:/ar-bin")
msg() { echo "agentrun: $1 (fd $2) is $3; the command may only inherit a terminal, pipe, socket, regular file or character device (redirect it, e.g. to /dev/null)"; }

# the positive control: a directory on stdin lists the host's / from anywhere
expect_eq "control: a directory on fd 0 walks to the host root" ok "$("$AR_TMP/bin/ar-escape" fd0_walk </etc)"
expect_status "a directory on stdin: 125" 125 "$A" "${B[@]}" -- /ar-bin/ar-escape fd0_walk </etc
expect_eq "a directory on stdin: message" "$(msg stdin 0 "a directory")" "$(cat "$AR_TMP/err")"
expect_eq "a directory on stdin: the command did not run" "" "$(cat "$AR_TMP/out")"

# fds 1 and 2, and the other refused kinds, through python (bash cannot open them)
refuse() { # FD KIND PYTHON-EXPR-OPENING-THE-FD
	local got
	got=$(python3 - "$A" "$1" "$3" <<'PY' 2>&1
import os, subprocess, sys
a, fd, expr = sys.argv[1], int(sys.argv[2]), sys.argv[3]
new = eval(expr)
saved = os.dup(fd)
os.dup2(new, fd, inheritable=True)
r = subprocess.run([a, "--", "true"], stderr=subprocess.PIPE if fd != 2 else None,
                   stdout=subprocess.DEVNULL if fd != 1 else None, text=True)
os.dup2(saved, fd)
print(r.returncode, (r.stderr or "").strip())
PY
)
	expect_eq "fd $1 that is $2: 125 and the message" "125 $(msg "$4" "$1" "$2")" "$got"
}
refuse 0 "an O_PATH descriptor" 'os.open("/etc/passwd", os.O_PATH)' stdin
refuse 0 "an anonymous inode (eventfd, signalfd, epoll, ...)" 'os.eventfd(0)' stdin
refuse 1 "a directory" 'os.open("/etc", os.O_RDONLY | os.O_DIRECTORY)' stdout
refuse 0 "a namespace file" 'os.open("/proc/self/ns/net", os.O_RDONLY)' stdin

# A refusal is 125 whatever the command, and nothing ran: the file stays absent.
W="$AR_TMP/w" && mkdir -p "$W" && chmod 777 "$W"
expect_status "refused before anything runs" 125 "$A" --mount "$W:/w:rw" -- touch /w/ran </etc
[ ! -e "$W/ran" ] || fail "the command ran although stdin was a directory"

# The ordinary cases all work: a pipe, a file, /dev/null, a socket, a closed fd.
expect_eq "pipe on stdin" "hi" "$(echo hi | "$A" -- cat)"
echo file >"$AR_TMP/in"
expect_eq "regular file on stdin" "file" "$("$A" -- cat <"$AR_TMP/in")"
expect_eq "/dev/null on stdin" "" "$("$A" -- cat </dev/null)"
expect_eq "a file on stdout" "" "$("$A" -- echo out >"$AR_TMP/o"; cat /dev/null)"
expect_eq "a file on stdout: written" "out" "$(cat "$AR_TMP/o")"
expect_eq "socket on stdin" "sock" "$(python3 - "$A" <<'PY'
import socket, subprocess, sys
a, b = socket.socketpair()
b.sendall(b"sock"); b.close()
print(subprocess.run([sys.argv[1], "--", "cat"], stdin=a, capture_output=True, text=True).stdout)
PY
)"
expect_eq "closed stdin" "0" "$("$A" -- sh -c 'cat; echo $?' <&-)"
if command -v script >/dev/null 2>&1 && script -qec true /dev/null >/dev/null 2>&1; then
	# (match: script(1) may push an EOF byte at its own stdin's end, echoed here)
	expect_match "a terminal on stdin" "tty-ok" \
		"$(script -qec "$A -- sh -c 'test -t 0 && echo tty-ok'" /dev/null </dev/null | tr -d '\r')"
else
	skip "needs script(1) with a working pty"
fi
finish

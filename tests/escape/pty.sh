#!/usr/bin/env bash
# The caller's terminal is the caller's: with a terminal on stdin the command gets a
# pty of its own, so `stty -echo` (or raw mode) inside leaves the caller's terminal as
# it was, `tty` names a terminal inside, TIOCSTI reaches only the command's own input,
# the window size follows the caller's (also when it changes), ^C interrupts the
# command; --no-tty keeps plain pass-through (the positive control: there `stty -echo`
# does change the caller's terminal). kill -9 of agentrun gives the caller's terminal
# its settings back; the relay never blocks (a flood to a caller that reads nothing,
# a command whose input queue is full).
# shellcheck source=tests/escape/common.bash
. "$(dirname "$0")/common.bash"
need python3 command -v python3
A=$AGENTRUN
cp "$AR_BUILD_DIR/tests/ar-probe" "$AR_TMP/bin/ar-probe" 2>/dev/null || true
# ptyrun.spawn(argv): argv on a fresh pty (the "caller's terminal", 30x100), as its
# session leader with the pty as controlling terminal; returns pid, master, slave.
cat >"$AR_TMP/ptyrun.py" <<'PY'
import fcntl, os, struct, termios
def spawn(argv):
    master, slave = os.openpty()
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    pid = os.fork()
    if pid == 0:
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        os.execv(argv[0], argv)
    return pid, master, slave
PY
# term.py AGENTRUN-ARGS...: run agentrun on a fresh pty, feed it the actions of
# $ACTIONS, then print what came out, the caller's terminal flags afterwards, anything
# left in its input queue, and the exit status.
cat >"$AR_TMP/term.py" <<'PY'
import fcntl, os, select, struct, sys, termios, time
from ptyrun import spawn
pid, master, slave = spawn(sys.argv[1:])
out, start, acts, status = b"", time.time(), os.environ.get("ACTIONS", ""), None
acts = [a.split("@") for a in acts.split(",") if a]
while time.time() - start < 20:
    now = time.time() - start
    while acts and now >= float(acts[0][0]):
        what = acts.pop(0)[1]
        if what == "resize":
            fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        elif what == "intr":
            os.write(master, b"\x03")
        else:
            os.write(master, what.encode() + b"\r")
    r, _, _ = select.select([master], [], [], 0.05)
    if r:
        try:
            out += os.read(master, 65536)
        except OSError:
            pass
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        status = os.waitstatus_to_exitcode(st)
        break
time.sleep(0.1)
while select.select([master], [], [], 0)[0]:
    try:
        d = os.read(master, 65536)
    except OSError:
        break
    if not d:
        break
    out += d
lflag = termios.tcgetattr(slave)[3]
os.set_blocking(slave, False)
try:
    pending = os.read(slave, 100)
except BlockingIOError:
    pending = b""
print(out.decode(errors="replace").replace("\r", ""), end="")
print("caller:", "echo" if lflag & termios.ECHO else "noecho",
      "icanon" if lflag & termios.ICANON else "raw", "pending=%r" % pending, "status=%s" % status)
PY
term() { python3 "$AR_TMP/term.py" "$A" "$@"; }
last() { printf '%s\n' "$1" | tail -1; }

out=$(term -- sh -c 'tty; stty -echo -icanon; echo done')
expect_eq "tty inside names a terminal of its own" "/dev/pts/0" "$(printf '%s\n' "$out" | head -1)"
expect_eq "stty -echo -icanon inside leaves the caller's terminal alone" \
	"caller: echo icanon pending=b'' status=0" "$(last "$out")"
out=$(term --no-tty -- sh -c 'tty; stty -echo -icanon; echo done')
expect_eq "control, --no-tty: tty says none" "not a tty" "$(printf '%s\n' "$out" | head -1)"
expect_eq "control, --no-tty: stty -echo changes the caller's terminal" \
	"caller: noecho raw pending=b'' status=0" "$(last "$out")"

# a failing start restores the terminal too
out=$(term -- /nonexistent-command)
expect_eq "127 with the terminal restored" "caller: echo icanon pending=b'' status=127" "$(last "$out")"

# TIOCSTI (seccomp unconfined: the kernel allows it on one's own terminal) lands in
# the command's input, never in the caller's queue.
out=$(term --seccomp unconfined --mount "$AR_TMP/bin:/ar-bin" -- /ar-bin/ar-probe)
expect_match "TIOCSTI works on its own terminal" "tiocsti=ok" "$out"
expect_eq "and nothing reaches the caller's input queue" \
	"caller: echo icanon pending=b'' status=0" "$(last "$out")"

# window size: the caller's at start, and again after a change (SIGWINCH)
out=$(ACTIONS="1.2@resize" term -- sh -c 'stty size; trap "stty size; exit 0" WINCH; sleep 3 & wait')
expect_eq "window size at start and after a resize" "30 100
40 120" "$(printf '%s\n' "$out" | head -2)"

# input reaches the command, ^C interrupts it (SIGINT from its own terminal)
out=$(ACTIONS="0.8@hello" term -- sh -c 'read -r line; echo "got $line"')
expect_match "input is relayed" "got hello" "$out"
out=$(ACTIONS="0.8@intr" term -- sleep 5)
expect_match "^C interrupts the command: 130" "caller: echo icanon pending=b'' status=130\$" "$(last "$out")"

# pipes are untouched: stdout to a pipe stays a pipe while stdin is the terminal
out=$(term -- sh -c 'test -t 0 && echo in-tty; test -t 1 && echo out-tty; true')
expect_match "stdin a terminal, stdout the caller's terminal: both the pty" "in-tty" "$out"
# kill -9 of agentrun: nothing of it runs any more, yet the caller's terminal gets its
# settings back (the watcher); raw while it ran shows the relay had changed them.
# The relay never blocks: a command flooding output to a caller that reads nothing
# still gets its input, and one that reads no input (its pty's input queue full)
# still gets its output through.
cat >"$AR_TMP/relay.py" <<'PY'
import os, select, signal, sys, termios, time
from ptyrun import spawn
mode = sys.argv[1]
pid, master, slave = spawn(sys.argv[2:])
def flags():
    l = termios.tcgetattr(slave)[3]
    return ("echo" if l & termios.ECHO else "noecho") + " " + ("icanon" if l & termios.ICANON else "raw")
def read_for(secs):
    out, end = b"", time.time() + secs
    while time.time() < end:
        if select.select([master], [], [], 0.05)[0]:
            try:
                out += os.read(master, 65536)
            except OSError:
                break
    return out
if mode == "kill9":
    read_for(1.0)
    during = flags()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    time.sleep(0.3)
    print("during:", during, "after kill -9:", flags())
elif mode == "flood":
    # read nothing while the command floods; the input must get through
    time.sleep(0.5)
    os.write(master, b"hello\r")
    # up to 10 s on a loaded machine (the flood competes for the CPU), still reading nothing
    for _ in range(100):
        if os.path.exists(os.environ["GOT"]) and open(os.environ["GOT"]).read().strip():
            break
        time.sleep(0.1)
    print("input while the caller read nothing:", open(os.environ["GOT"]).read().strip() if os.path.exists(os.environ["GOT"]) else "none")
    os.set_blocking(master, False)
    read_for(1.0)
    os.kill(pid, signal.SIGTERM)
    end, hung = time.time() + 5, True
    while hung and time.time() < end:
        read_for(0.1)
        hung = os.waitpid(pid, os.WNOHANG)[0] == 0
    if hung:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    print("SIGTERM:", "hung" if hung else "exited")
elif mode == "stuffed":
    # fill the command's input (it reads none), then count the ticks it prints
    os.set_blocking(master, False)
    sent, end = 0, time.time() + 1.0
    while time.time() < end:
        try:
            sent += os.write(master, b"x" * 4096)
        except BlockingIOError:
            time.sleep(0.01)
    # ~10 ticks were queued while it sent; a relay stuck on the full input passes
    # those and no more, a free one ~30 more
    ticks = read_for(3.0).count(b"tick")
    print("input bytes sent:", "many" if sent > 8192 else sent, "ticks while its input was full:", "flowing" if ticks >= 20 else ticks)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
PY
relay() { python3 "$AR_TMP/relay.py" "$@"; }
expect_eq "kill -9 of agentrun: the caller's terminal comes back" \
	"during: noecho raw after kill -9: echo icanon" "$(relay kill9 "$A" -- sleep 10)"
W="$AR_TMP/got" && mkdir -p "$W" && chmod 777 "$W"
expect_eq "output flood, caller reads nothing: input still reaches the command" \
	"input while the caller read nothing: hello
SIGTERM: exited" \
	"$(GOT="$W/line" relay flood "$A" --mount "$W:/w:rw" -- sh -c 'head -c 20000000 /dev/zero | tr "\0" x & read -r l; echo "$l" >/w/line; wait')"
expect_eq "its input queue full: output still reaches the caller" \
	"input bytes sent: many ticks while its input was full: flowing" \
	"$(relay stuffed "$A" -- sh -c 'stty raw -echo; while :; do echo tick; sleep 0.1; done')"
finish

#!/usr/bin/env bash
# PID 1 of the sandbox: the command's uid, no capabilities, a seccomp filter of its
# own (also with --seccomp unconfined), not dumpable; it still reaps orphans and
# forwards signals.
# shellcheck source=tests/escape/common.bash
. "$(dirname "$0")/common.bash"
A=$AGENTRUN
inside_sh() { "$A" --mount "$AR_TMP/bin:/ar-bin" -- sh /ar-bin/zombies.sh "$@" </dev/null; }
status() { "$A" "$@" -- sh -c 'id -u; grep -E "^(Uid|Gid|CapPrm|CapEff|CapBnd|Seccomp|NoNewPrivs):" /proc/1/status | tr -s "\t" " "'; }
for sc in default unconfined; do
	out=$(status --seccomp "$sc")
	uid=$(printf '%s\n' "$out" | head -1)
	expect_eq "init, seccomp $sc: the command's uid, no capabilities, a filter" \
		"Uid: $uid $uid $uid $uid
CapPrm: 0000000000000000
CapEff: 0000000000000000
CapBnd: 0000000000000000
NoNewPrivs: 1
Seccomp: 2" "$(printf '%s\n' "$out" | grep -v -e '^[0-9]*$' -e '^Gid:')"
done
expect_eq "init with --user 1234:2345" "Uid: 1234 1234 1234 1234 Gid: 2345 2345 2345 2345" \
	"$("$A" --user 1234:2345 -- sh -c 'grep -E "^(Uid|Gid):" /proc/1/status' | tr -s '\t\n' '  ' | sed 's/ $//')"
# the positive control: the same check on the host's view of an unconfined process
expect_eq "control: a root process outside has capabilities" yes \
	"$(grep -q '^CapEff:.*[1-9a-f]' /proc/self/status && echo yes)"

# Not dumpable: its environment (the caller's) and memory stay unreadable.
expect_eq "init's environ is unreadable" "no" \
	"$("$A" --seccomp unconfined -- sh -c 'cat /proc/1/environ >/dev/null 2>&1 && echo yes || echo no')"

# Still an init: it reaps orphans, forwards signals, returns the command's status.
# zombies.sh: the number of zombies in the sandbox, after ARG: `orphan` leaves one to
# init; `child` leaves one to a shell that exec'd something that never waits
cat >"$AR_TMP/bin/zombies.sh" <<'SH'
# python3 counts: it waits for no child of its own (a shell would reap any)
count='import glob, time
time.sleep(0.5)
n = 0
for f in glob.glob("/proc/[0-9]*/stat"):
    try: n += open(f).read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError: pass
print(n)'
case $1 in
orphan) (sleep 0.1 &); exec python3 -c "$count" ;;
child) sleep 0.1 & exec python3 -c "$count" ;;
esac
SH
expect_eq "orphans are reaped" "0" "$(inside_sh orphan)"
expect_eq "control: a zombie nobody reaps shows" "1" "$(inside_sh child)"
expect_status "the command's status" 7 "$A" -- sh -c 'exit 7'
"$A" -- sleep 30 &
pid=$!
sleep 0.5
kill -TERM "$pid"
st=0
wait "$pid" || st=$?
expect_eq "SIGTERM is forwarded: 128+15" 143 "$st"
# The command can signal init (same uid), which only forwards: SIGKILL from inside
# is dropped by the kernel, the sandbox lives on.
expect_eq "kill -9 1 from inside changes nothing" "alive" \
	"$("$A" -- sh -c 'kill -9 1; sleep 0.2; echo alive')"
finish

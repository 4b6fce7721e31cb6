#!/usr/bin/env bash
# Container CVE shapes, each tried from inside the default sandbox with its positive
# control outside (as root, harmless: nothing is written):
# - CVE-2024-21626: an inherited directory fd above 2 walks out of the root (stdin,
#   stdout, stderr: stdio.sh);
# - CVE-2019-5736: a handle on PID 1's executable, to overwrite the runtime binary;
# - CVE-2022-0492: a cgroup v1 release_agent, a host program run as root;
# - a host credential file read through the view (/etc/shadow is covered).
# The symlink swap of a mount source and set-id files on rw mounts are in
# tests/integration/run_security.sh; the probe's full list in run_probe.sh.
# shellcheck source=tests/escape/common.bash
. "$(dirname "$0")/common.bash"
A=$AGENTRUN

# an inherited directory fd 5: closed at exec inside, a way out outside
expect_eq "control: an inherited directory fd walks to the host root" ok \
	"$("$AR_TMP/bin/ar-escape" fd_walk 5 5</etc)"
expect_eq "CVE-2024-21626: an inherited directory fd is closed at exec" ENOENT \
	"$("$A" --mount "$AR_TMP/bin:/ar-bin" -- /ar-bin/ar-escape fd_walk 5 </dev/null 5</etc)"

# PID 1 runs as the command's uid but is not dumpable: its exe stays out of reach. The
# control: the same uid opens the exe of an ordinary (dumpable) process of its own.
need setpriv command -v setpriv
U=(setpriv --reuid 61999 --regid 61999 --clear-groups)
"${U[@]}" sleep 10 &
spid=$!
on_exit "kill $spid"
sleep 0.2
expect_eq "control: a process's executable, by the same uid" ok \
	"$("${U[@]}" "$AR_TMP/bin/ar-escape" proc1_exe "$spid")"
for sc in default unconfined; do
	expect_eq "CVE-2019-5736: PID 1's executable, seccomp $sc" EACCES \
		"$(inside proc1_exe -- --seccomp "$sc")"
done

# no cgroup filesystem inside, and /sys is read-only
if [ -e /sys/fs/cgroup/memory/release_agent ] || [ -e /sys/fs/cgroup/pids/release_agent ]; then
	expect_eq "control: a release_agent opens for writing outside" ok "$(outside release_agent)"
fi
expect_eq "CVE-2022-0492: no release_agent inside" ENOENT "$(inside release_agent)"

# /etc/shadow reads as empty inside (covered by /dev/null), with content outside
expect_eq "control: /etc/shadow has content outside" ok "$(outside read_secret /etc/shadow)"
expect_eq "/etc/shadow is empty inside" ENODATA "$(inside read_secret /etc/shadow)"
finish

#!/usr/bin/env bash
# agentrun run: capabilities the caller holds in its ambient and inheritable sets
# reach neither the command nor the sandbox's init (which keeps none: it runs as the
# command's uid and signals only the command).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd setpriv
cd /
# the caller: ambient and inheritable CAP_NET_RAW (bit 13, 0x2000)
C=(setpriv --inh-caps +net_raw --ambient-caps +net_raw)
expect_eq "the caller has an ambient capability" "CapAmb:	0000000000002000" \
	"$("${C[@]}" grep CapAmb /proc/self/status)"
out=$("${C[@]}" "$AGENTRUN" -- sh -c 'grep -E "^Cap(Inh|Prm|Eff|Bnd|Amb)" /proc/self/status /proc/1/status')
expect_eq "command and init: no capability at all" "/proc/self/status:CapInh:	0000000000000000
/proc/self/status:CapPrm:	0000000000000000
/proc/self/status:CapEff:	0000000000000000
/proc/self/status:CapBnd:	0000000000000000
/proc/self/status:CapAmb:	0000000000000000
/proc/1/status:CapInh:	0000000000000000
/proc/1/status:CapPrm:	0000000000000000
/proc/1/status:CapEff:	0000000000000000
/proc/1/status:CapBnd:	0000000000000000
/proc/1/status:CapAmb:	0000000000000000" "$out"
# securebits (PR_GET_SECUREBITS, 27): NOROOT and NO_CAP_AMBIENT_RAISE, each locked (0xc3),
# set by the init before it forks the command, which inherits them
if [ -x /usr/bin/python3 ]; then
	expect_eq "command: securebits NOROOT, NO_CAP_AMBIENT_RAISE, locked" 0xc3 \
		"$("$AGENTRUN" -- /usr/bin/python3 -c 'import ctypes; print(hex(ctypes.CDLL(None).prctl(27, 0, 0, 0, 0)))')"
fi
finish

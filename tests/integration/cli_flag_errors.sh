#!/usr/bin/env bash
# Errors a flag causes name the flag and its value, never the policy file the flag
# overrides (issue 23): every run override with a value that does not parse and one
# that parses but the policy's checks refuse (range, reserved path, root), under a
# policy file that sets none of them; range errors say the range. Exit 125 (run) or
# 2 (proxy), one line, nothing on stdout. Needs no privileges: every case fails
# before a sandbox is built.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

A=$AGENTRUN
P=$AR_TMP/web.json
echo '{"name": "web"}' >"$P"

# flag_case FLAG VALUE MESSAGE-AFTER-"agentrun: FLAG VALUE: "
flag_case() {
	local flag=$1 value=$2 msg=$3
	expect_status "$flag '$value'" 125 "$A" --policy "$P" "$flag" "$value" -- true
	local shown=$value
	[ -z "$value" ] && shown='""'
	expect_eq "$flag '$value': names the flag" "agentrun: $flag $shown: $msg" "$(cat "$AR_TMP/err")"
	expect_nomatch "$flag '$value': not the policy file" "web.json" "$(cat "$AR_TMP/err")"
	expect_eq "$flag '$value': stdout" "" "$(cat "$AR_TMP/out")"
}

# values that do not parse
flag_case --memory x 'expected a size of at least 6m (e.g. 256m, 1g, 1048576)'
flag_case --pids many 'expected a number of processes (e.g. 64)'
flag_case --cpus fast 'expected a number of CPUs from 0.001 to 1024 with at most 3 decimals (e.g. 0.5, 2)'
flag_case --user nobody 'expected a numeric UID or UID:GID (e.g. 1000, 1000:1000)'
flag_case --env NOEQUALS 'expected KEY=VALUE'
flag_case --tmpfs tmp 'expected an absolute path'
flag_case --mount /etc 'expected SRC:DST[:rw]'
flag_case --mount /etc:/x:rx 'expected SRC:DST[:rw] (the mode is ro or rw)'
flag_case --rootfs rel 'expected an absolute directory path'
flag_case --seccomp '' 'expected FILE, default or unconfined'
flag_case --allow-private 10.0.0/99 'expected a CIDR (127.0.0.1, 10.0.0.0/8, fd00::/8)'
# values that parse but the policy refuses: the range, with the key the flag sets
flag_case --memory 5m 'limits.memory: "5m" is below the minimum of 6m'
flag_case --pids 0 'limits.pids: must be an integer from 1 to 4194304, got 0'
flag_case --pids 99999999 'limits.pids: must be an integer from 1 to 4194304, got 99999999'
flag_case --cpus 0.0001 'expected a number of CPUs from 0.001 to 1024 with at most 3 decimals (e.g. 0.5, 2)'
flag_case --cpus 2000 'expected a number of CPUs from 0.001 to 1024 with at most 3 decimals (e.g. 0.5, 2)'
flag_case --user 0 'user: uid 0 is root on the host; use a non-root uid'
flag_case --user 1000:0 "user: gid 0 is root's group on the host; use a non-root gid"
flag_case --env 1X=y 'env: key "1X" must match ^[A-Za-z_][A-Za-z0-9_]*$'
flag_case --mount /etc:/proc/x 'target: is managed by the sandbox (/proc, /sys and /dev are built by agentrun), got "/proc/x"'
flag_case --mount /etc:/tmp 'target: "/tmp" is also tmpfs[0]'
flag_case --tmpfs /proc 'tmpfs[1]: is managed by the sandbox (/proc, /sys and /dev are built by agentrun), got "/proc"'

# the proxy's ranges
expect_status "proxy --listen with a port past 65535" 2 "$A" proxy --listen 127.0.0.1:99999 --allow x.example
expect_eq "proxy --listen: the range" \
	"agentrun: proxy: --listen \`127.0.0.1:99999\`: expected ADDR:PORT with an IP address and a port from 0 to 65535 (127.0.0.1:3128, [::1]:3128)" \
	"$(cat "$AR_TMP/err")"
expect_status "proxy --max-conns 0" 2 "$A" proxy --listen 127.0.0.1:0 --max-conns 0
expect_match "proxy --max-conns: the range" "--max-conns \`0\`: expected 1 to 1000000" "$(cat "$AR_TMP/err")"
expect_status "proxy --idle-timeout 0" 2 "$A" proxy --listen 127.0.0.1:0 --idle-timeout 0
expect_match "proxy --idle-timeout: the range" "--idle-timeout \`0\`: expected seconds from 0.001 to 86400" "$(cat "$AR_TMP/err")"

finish

#!/usr/bin/env bash
# A start pays only for the libraries it uses: a running agentrun (network: none, and
# network: proxy with its proxy) maps libc, cJSON and the loader, never libm, OpenSSL,
# libpsl, libseccomp's or libnl's shared objects (static or loaded on demand:
# docs/architecture.md). The control: a python3 that maps libm is seen to.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd python3
A=$AGENTRUN
# the shared objects PID maps, by file name, sorted
libs() { awk '$6 ~ /\.so/ {n = split($6, p, "/"); print p[n]}' "/proc/$1/maps" | sort -u | tr '\n' ' '; }
ALLOWED='^(ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1|libc\.so\.6|libcjson\.so\.1(\..*)?) $'

for policy in none proxy; do
	if [ "$policy" = proxy ]; then
		echo '{"name": "libs", "allowed_hosts": ["example.test"]}' >"$AR_TMP/$policy.json"
	else
		echo '{"name": "libs", "network": "none"}' >"$AR_TMP/$policy.json"
	fi
	"$A" --policy "$AR_TMP/$policy.json" -- sleep 30 >"$AR_TMP/$policy.out" 2>"$AR_TMP/$policy.err" &
	runner=$!
	on_exit "kill -TERM $runner; wait $runner"
	if ! descendant "$runner" sleep >/dev/null; then
		fail "network: $policy: the sandboxed sleep did not start: $(head -c 600 "$AR_TMP/$policy.err")"
		continue
	fi
	got=$(libs "$runner")
	bad=$(for l in $got; do [[ "$l " =~ $ALLOWED ]] || printf '%s ' "$l"; done)
	expect_eq "network: $policy: agentrun maps only libc, cJSON and the loader (got: $got)" "" "$bad"
	expect_match "network: $policy: libc is among them (the reading works)" "libc\.so" "$got"
	kill -TERM "$runner"
	wait "$runner" 2>/dev/null || true
done
# the control: a process that does map libm shows it
python3 -c 'import math, time; time.sleep(30)' &
py=$!
on_exit "kill $py"
sleep 0.3
expect_match "control: python3 maps libm" "libm\.so" "$(libs "$py")"
finish

#!/usr/bin/env bash
# Every name `agentrun ps` prints works with `check --name` and `audit NAME`, from
# another directory than the one the sandbox was started in (issue 23): the embedded
# default (network none, no policy file), a policy given by a relative path with
# network none and one with network proxy; and each policy name (its newest sandbox).
# `ps --json` lists the same sandboxes; the table's columns line up whatever the
# length of a name or an address. Needs root (ps lists root's sandboxes).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd python3
A=$AGENTRUN
case $A in /*) ;; *) A=$PWD/$A ;; esac
N="nmn-$$" P="nmp-longer-name-$$"
start=$AR_TMP/start
mkdir -p "$start"
printf '{"name": "%s", "network": "none"}\n' "$N" >"$start/none.json"
printf '{"name": "%s", "allowed_hosts": ["api.test.example:9"]}\n' "$P" >"$start/proxy.json"
on_exit "rm -rf /run/agentrun/$P-* /run/agentrun/audit/$P-*"

# started from $start with relative policy paths, checked from /
(cd "$start" && exec "$A" -- sleep 60) &
dflt=$!
(cd "$start" && exec "$A" --policy none.json -- sleep 60) &
none=$!
(cd "$start" && exec "$A" --policy proxy.json -- sleep 60 2>"$AR_TMP/proxy.err") &
px=$!
on_exit "kill -9 $dflt $none $px 2>/dev/null"

want="default-$dflt $N-$none $P-$px"
for _ in $(seq 1 200); do
	listed=0
	for n in $want; do "$A" ps | grep -q -- "^$n " && listed=$((listed + 1)); done
	[ "$listed" = 3 ] && break
	sleep 0.05
done
expect_eq "ps lists the three" 3 "$listed"
cd / || exit 1

for n in $want; do
	expect_status "check --name $n (from /)" 0 "$A" check --name "$n"
	expect_match "check --name $n: against its policy" "^$n vs policy .*: 0 drift finding" "$(cat "$AR_TMP/out")"
	expect_status "audit $n" 0 "$A" audit "$n"
	expect_match "audit $n: a summary" "request\(s\) to" "$(cat "$AR_TMP/out")"
done
expect_match "audit of a none sandbox says why it is empty" \
	"audit: $N-$none has network none: no proxy, so nothing to audit" "$("$A" audit "$N-$none" 2>&1 >/dev/null)"
for policy in default "$N" "$P"; do
	expect_status "check --name $policy (a policy name)" 0 "$A" check --name "$policy"
	expect_status "audit $policy (a policy name)" 0 "$A" audit "$policy"
done

# the state records the policy by its absolute path
expect_eq "ps --json: the policy paths" \
	"$N-$none $start/none.json
$P-$px $start/proxy.json
default-$dflt " \
	"$("$A" ps --json | python3 -c '
import json, sys
rows = {r["name"]: r for r in json.load(sys.stdin)}
for n in sys.argv[1:]:
    print(n, rows[n]["policy"])' "$N-$none" "$P-$px" "default-$dflt")"
expect_eq "ps --json: networks and live" "none True|proxy True|none True" \
	"$("$A" ps --json | python3 -c '
import json, sys
rows = {r["name"]: r for r in json.load(sys.stdin)}
print("|".join("%s %s" % (rows[n]["network"], rows[n]["live"]) for n in sys.argv[1:]))' "$N-$none" "$P-$px" "default-$dflt")"

# the columns line up: every row's NETWORK and ALLOWED start where the header's do
"$A" ps >"$AR_TMP/ps"
expect_eq "ps: the columns line up" "ok" "$(python3 -c '
import sys
lines = open(sys.argv[1]).read().splitlines()
head = lines[0]
net, allowed = head.index("NETWORK"), head.index("ALLOWED")
bad = [l for l in lines[1:] if l[net - 1] != " " or l[net] == " " or l[allowed - 1] != " "]
print("ok" if not bad else "misaligned: %r" % bad)' "$AR_TMP/ps")"
finish

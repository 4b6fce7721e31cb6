#!/usr/bin/env bash
# Transparent capture (issue 9) between two network namespaces this test makes: a
# "proxy" netns where ar-capture-test sets up the capture (policy rule + local route
# over libnl, transparent listeners, the DNS stub) and a "sandbox" netns joined to it
# by a veth, where a python client asks DNS over UDP and TCP, dials synthetic addresses
# and unlisted ports, and getent resolves through a generated resolv.conf. Asserts that
# no DNS packet leaves the proxy netns: there is no route out of it (so no resolver is
# reachable at all) and its UDP counters equal the stub's replies.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
need_root
need_cmd ip
need_cmd python3
need_cmd getent
helper=$AR_BUILD_DIR/tests/ar-capture-test
[ -x "$helper" ] || { echo "FAIL: $helper not built" >&2; exit 1; }

pns=${AR_TAG}p sns=${AR_TAG}s pv=${AR_TAG}a sv=${AR_TAG}b
ip netns add "$pns" || skip "cannot create a network namespace"
on_exit ip netns del "$pns"
ip netns add "$sns"
on_exit ip netns del "$sns"
ip link add "$pv" netns "$pns" type veth peer name "$sv" netns "$sns" || skip "no veth"
ip -n "$pns" addr add 10.254.200.1/30 dev "$pv"
ip -n "$sns" addr add 10.254.200.2/30 dev "$sv"
for ns in "$pns" "$sns"; do ip -n "$ns" link set lo up; done
ip -n "$pns" link set "$pv" up
ip -n "$sns" link set "$sv" up
# the sandbox's resolv.conf, as `run` will generate it (ip netns exec bind-mounts it)
mkdir -p "/etc/netns/$sns"
on_exit rm -rf "/etc/netns/$sns"
echo "nameserver 10.254.200.1" >"/etc/netns/$sns/resolv.conf"

"$helper" serve --proxy-netns "/run/netns/$pns" --sandbox-netns "/run/netns/$sns" \
	--veth "$pv" --gw 10.254.200.1 --audit "$AR_TMP/audit.jsonl" \
	--allow allowed.example.test --allow api.example.test:6443 \
	>"$AR_TMP/server.out" 2>"$AR_TMP/server.err" &
server=$!
on_exit kill "$server"
for _ in $(seq 1 100); do
	grep -q '^READY' "$AR_TMP/server.out" 2>/dev/null && break
	kill -0 "$server" 2>/dev/null || break
	sleep 0.05
done
grep -q '^READY' "$AR_TMP/server.out" || {
	cat "$AR_TMP/server.err" >&2
	echo "FAIL: the capture server did not start" >&2
	exit 1
}
expect_eq "listeners on 80, 443 and the rule's port" "READY ports=80,443,6443" \
	"$(head -1 "$AR_TMP/server.out")"
expect_match "the rule iif VETH lookup 100" "^100:.*iif $pv lookup 100" "$(ip -n "$pns" rule)"
expect_match "the local route in table 100" "^local default dev lo" \
	"$(ip -n "$pns" route show table 100)"
expect_match "the pool is local for the kernel's RSTs" "^local 198.18.0.0/15 dev lo" \
	"$(ip -n "$pns" route show table local)"
expect_match "the sandbox's default route via the proxy" "^default via 10.254.200.1 dev $sv" \
	"$(ip -n "$sns" route)"
# No way out of the proxy netns: nothing but lo and the veth, no default route, so no
# resolver is reachable from where the stub runs (a route lookup, nothing is sent).
expect_eq "the proxy netns has only lo and the veth" "$(printf '%s\n' lo "$pv" | sort | xargs)" \
	"$(ip -n "$pns" -o link show | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | sort | xargs)"
expect_nomatch "no default route in the proxy netns" "default" "$(ip -n "$pns" route show table main)"
expect_status "no route out of the proxy netns (route lookup)" 2 ip -n "$pns" route get 192.0.2.53

udp_before=$(ip netns exec "$pns" awk '/^Udp:/ && $2 ~ /^[0-9]/ {print $5}' /proc/net/snmp)
ip netns exec "$sns" python3 "$AR_SOURCE_DIR/tests/capture/client.py" 10.254.200.1 \
	>"$AR_TMP/client.out" 2>&1 || fail "client: $(grep -v '^ok' "$AR_TMP/client.out")"
grep '^ok' "$AR_TMP/client.out" || true
udp_q=$(awk '/^UDP_QUERIES/ {print $2}' "$AR_TMP/client.out")
tcp_q=$(awk '/^TCP_QUERIES/ {print $2}' "$AR_TMP/client.out")

# glibc's resolver through the generated resolv.conf
got=$(ip netns exec "$sns" getent ahostsv4 allowed.example.test | awk 'NR==1 {print $1}')
expect_match "getent resolves allowed.example.test to a synthetic address" '^198\.1[89]\.' "$got"
expect_status "getent fails for denied.example.test" 2 \
	ip netns exec "$sns" getent ahostsv4 denied.example.test
# getent asks A (and maybe AAAA) for each name: count what the stub answered
getent_q=$(grep -c '^DNS udp .*\(allowed\|denied\)\.example\.test' "$AR_TMP/server.out" || true)

kill -TERM "$server"
wait "$server" || true
stats=$(grep '^STATS' "$AR_TMP/server.out" || true)
udp_replies=$(sed -n 's/.*udp_replies=\([0-9]*\).*/\1/p' <<<"$stats")
udp_queries=$(sed -n 's/.* udp_queries=\([0-9]*\).*/\1/p; s/^STATS udp_queries=\([0-9]*\).*/\1/p' <<<"$stats")
tcp_replies=$(sed -n 's/.*tcp_replies=\([0-9]*\).*/\1/p' <<<"$stats")
udp_after=$(ip netns exec "$pns" awk '/^Udp:/ && $2 ~ /^[0-9]/ {print $5}' /proc/net/snmp)
expect_eq "every TCP query answered" "$tcp_q" "$tcp_replies"
expect_eq "every UDP query got one reply" "$udp_queries" "$udp_replies"
# the client's queries, then getent's: all of them, and each answered once
if [ "$udp_queries" -ge $((udp_q + 2)) ]; then
	pass "the stub saw the client's and getent's queries"
else
	fail "the stub saw $udp_queries UDP queries, the client sent $udp_q plus getent"
fi
expect_eq "UDP datagrams out of the proxy netns = the stub's replies" "$udp_replies" \
	$((udp_after - udp_before))
echo "getent asked $getent_q time(s)"

# the audit: one DNS entry per query
audit_n=$(wc -l <"$AR_TMP/audit.jsonl")
expect_eq "one audit entry per DNS query" $((udp_queries + tcp_replies)) "$audit_n"
expect_match "a denied name is audited with NXDOMAIN" \
	'"method":"DNS","host":"denied.example.test","port":53.*"allowed":false,"status":3' \
	"$(cat "$AR_TMP/audit.jsonl")"
expect_match "TXT is audited as refused" \
	'"host":"allowed.example.test".*"allowed":false,"status":5,"reason":"TXT: only A and AAAA' \
	"$(cat "$AR_TMP/audit.jsonl")"
finish

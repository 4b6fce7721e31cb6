#!/usr/bin/env bash
# agentrun proxy, refused address ranges: names whose (test-controlled, /etc/hosts)
# answer is an IPv6 address embedding a refused IPv4 address (IPv4-compatible, 6to4,
# Teredo, NAT64 well-known and local-use, IPv4-mapped) are refused with 403 before any
# connect, for plain HTTP and CONNECT. Runs in a network namespace of its own with only
# loopback, so even a proxy that dialled them could reach nothing.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd unshare
if [ "${AR_PROXY_NETNS:-}" != 1 ]; then
	trap - EXIT
	rm -rf "$AR_TMP"
	exec unshare -n env AR_PROXY_NETNS=1 bash "$0" "$@"
fi
ip link set lo up
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"

cat >>"$AR_TMP/hosts" <<'HOSTS'
::a00:1 compat.test.example
2002:a9fe:a9fe::1 sixtofour.test.example
2001:0:a00:1::1 teredo-server.test.example
2001:0:808:808::80ff:fffe teredo-client.test.example
64:ff9b::a9fe:a9fe nat64.test.example
64:ff9b:1::a00:1 nat64-local.test.example
::ffff:169.254.169.254 mapped.test.example
fd00::1 ula.test.example
2001:db8::1 doc.test.example
HOSTS

PP=$(free_port)
start_proxy main "$PP" --allow '*.test.example:80' --allow '*.test.example:443' \
	--allow-private 127.0.0.0/8
refused() { # NAME ADDR CLASS
	local out
	out=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$PP" \
		"http://$1/" 2>&1)
	expect_eq "GET $1 ($2): 403" 403 "$out"
	out=$(curl -s --max-time 5 -o /dev/null -w '%{http_connect}' -x "http://127.0.0.1:$PP" \
		-p "http://$1:443/" || true)
	expect_eq "CONNECT $1: 403" 403 "$out"
	expect_match "reason names $2 as $3" "$1:80 DENY 403 .* $1 resolves to $2, a $3 address" \
		"$(cat "$AR_TMP/main.err")"
}
refused compat.test.example ::10.0.0.1 private
refused sixtofour.test.example 2002:a9fe:a9fe::1 metadata
refused teredo-server.test.example 2001:0:a00:1::1 private
refused teredo-client.test.example 2001:0:808:808::80ff:fffe loopback
refused nat64.test.example 64:ff9b::a9fe:a9fe metadata
refused nat64-local.test.example 64:ff9b:1::a00:1 private
refused mapped.test.example 169.254.169.254 metadata
refused ula.test.example fd00::1 unique-local
refused doc.test.example 2001:db8::1 documentation
sleep 0.2
expect_eq "nothing was dialled" 0 \
	"$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["addr"] is not None))' "$AR_TMP/main.audit")"
expect_eq "every refusal audited as not allowed" 18 \
	"$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if (e:=json.loads(l))["status"] == 403 and not e["allowed"]))' "$AR_TMP/main.audit")"
finish

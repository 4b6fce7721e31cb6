#!/usr/bin/env bash
# Transparent capture for a container the OCI hook wires (runc): a client that ignores
# the proxy variables (they are unset) resolves an allowed name through the proxy's DNS
# stub (the container's /etc/resolv.conf names the proxy's address, 10.254.0.1, as
# docs/oci.md says) and gets a synthetic address; its plain HTTP connection to it is
# captured and decided by name (200 from the origin); a denied name does not resolve;
# a port no rule names is refused at once; the audit has the DNS answers and the
# request; after delete nothing is left. Also `agentrun net up`: the same capture in
# the named netns (the DNS stub answers there).
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/oci/lib.sh
source "$(dirname "$0")/oci/lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
source "$(dirname "$0")/proxy/common.sh"
need_root
need_cmd runc
need_cmd nsenter
oci_need_rootfs_tools

rootfs="$AR_TMP/rootfs"
oci_rootfs "$rootfs"
for t in nslookup awk nc head tail; do ln -sf busybox "$rootfs/bin/$t"; done
mkdir -p "$rootfs/etc"
echo "nameserver 10.254.0.1" >"$rootfs/etc/resolv.conf"
oci_hook_wrapper
RUNC=(runc --root "$AR_TMP/runc")

ORIG=$(free_port)
start_origin "$ORIG"
NAME="oc$$"
printf '{"name": "%s", "allowed_hosts": ["api.test.example:%s"], "user": "1000",
 "proxy": {"allow_private": ["127.0.0.1"]}}' "$NAME" "$ORIG" >"$AR_TMP/cap.json"
# shellcheck disable=SC2016 # expanded inside the container
INSIDE='o=$1
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY
echo "proxyvar=${http_proxy:-none}"
echo "default=$(ip route show default | tr -s " " | tr "\n" ";")"
a=$(nslookup api.test.example | awk "/^Address/ {a = \$NF} END {print a}")
echo "addr=$a"
r=$(printf "GET /hello HTTP/1.0\r\nHost: api.test.example:$o\r\n\r\n" | nc "$a" "$o")
echo "get=$(printf "%s\n" "$r" | head -n 1 | tr -d "\r")"
echo "get_body=$(printf "%s\n" "$r" | tail -n 1)"
echo "denied_dns=$(nslookup denied.test.example 2>&1 | grep -c "^Address: 198\.")"
ar-probe connect unlisted "$a" 1
'
id="cap-$AR_TAG"
b="$AR_TMP/b-cap"
oci_bundle "$AR_TMP/cap.json" "$b" "$rootfs" "$id" /bin/sh -c "$INSIDE" _ "$ORIG" || fail "render"
on_exit "${RUNC[*]}" delete -f "$id"
(cd "$b" && timeout 60 "${RUNC[@]}" create "$id" </dev/null >"$AR_TMP/cap.out" 2>"$AR_TMP/cap.err") ||
	fail "runc create: $(cat "$AR_TMP/cap.err")"
pid=$("${RUNC[@]}" state "$id" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
name="$NAME-$pid"
audit="/run/agentrun/audit/$name.jsonl"
on_exit rm -f "$audit"
proxy=$(oci_proxy_field "$name" proxy_pid)
cg=$(oci_proxy_field "$name" proxy_cgroup)
"${RUNC[@]}" start "$id"
for _ in $(seq 100); do
	[ "$("${RUNC[@]}" state "$id" 2>/dev/null | grep -c '"stopped"')" = 1 ] && break
	sleep 0.1
done
"${RUNC[@]}" delete "$id"
out=$(cat "$AR_TMP/cap.out")
[ -n "${AR_VERBOSE:-}" ] && printf '%s\n' "$out" >&2
val() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }
expect_eq "no proxy variable in the client's environment" none "$(val proxyvar)"
expect_match "the default route goes to the proxy" "^default via 10\.254\.0\.1 dev eth0" "$(val default)"
expect_match "the allowed name resolves to a synthetic address" '^198\.(18|19)\.[0-9]+\.[0-9]+$' "$(val addr)"
expect_match "captured plain HTTP: 200 from the origin" "^HTTP/1\.[01] 200 .* hello from origin$" "$(val get) $(val get_body)"
expect_eq "a denied name gets no address" 0 "$(val denied_dns)"
expect_eq "a port no rule names: refused at once" ECONNREFUSED "$(val unlisted)"
expect_match "the audit: the DNS answer" '"api\.test\.example' "$(grep -i dns "$audit" 2>/dev/null | head -1)"
expect_match "the audit: the captured request, allowed" "api\.test\.example.*\"status\":200" "$(tr -d '\n' <"$audit")"
expect_eq "after delete nothing is left" "" "$(oci_proxy_gone "$name" "$proxy" "$cg")"

# net up: the named netns is captured the same way (its DNS stub answers)
nn="oc$$"
on_exit "$AGENTRUN" net down --name "$nn"
"$AGENTRUN" net up --policy "$AR_TMP/cap.json" --name "$nn" >/dev/null || fail "net up"
ns=(nsenter --net="/run/agentrun/netns/$nn")
expect_match "net up: the stub gives a synthetic address" "Address: 198\.(18|19)\." \
	"$("${ns[@]}" busybox nslookup api.test.example 10.254.0.1 2>&1)"
expect_status "net down" 0 "$AGENTRUN" net down --name "$nn"
finish

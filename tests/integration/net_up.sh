#!/usr/bin/env bash
# agentrun net up/down without a runtime: bad input (exit 2, the flag named), a policy
# with network none, a proxy.dns_pool over the /30, a proxy that fails midway (nothing left: no mount, file, state,
# proxy cgroup), down of an unknown name; a good one: the path printed, lo and eth0
# 10.254.0.2/30 with the default route to the proxy (transparent capture, the
# default) and none with "transparent": false, the proxy's listener answering from inside,
# ps listing it, down leaving nothing. (runsc in it: oci_runsc.sh.)
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
need_root
need_cmd nsenter
need_cmd ip

nn="nu$$"
on_exit "$AGENTRUN" net down --name "$nn"
printf '{"name": "nu%s", "allowed_hosts": ["a.example"]}' "$$" >"$AR_TMP/px.json"
printf '{"name": "nu%s", "network": "none"}' "$$" >"$AR_TMP/none.json"
printf '{"name": "nuf%s", "allowed_hosts": ["a.example"], "proxy": {"allow_private": [%s]}}' "$$" \
	"$(seq -s, -f '"127.0.0.%g"' 1 40)" >"$AR_TMP/fail.json"
left() {
	printf '%s' "$([ -e "/run/agentrun/netns/$1" ] && echo "netns ")$(grep -c " /run/agentrun/netns/$1 " /proc/self/mountinfo | grep -v '^0$')$([ -e "/run/agentrun/netns-$1" ] && echo "state ")$(find /sys/fs/cgroup -maxdepth 5 -name "agentrun-$2-proxy-*")"
}

expect_status "no action" 2 "$AGENTRUN" net --name "$nn"
expect_match "no action: message" "missing the action: up or down" "$(cat "$AR_TMP/err")"
expect_status "unknown action" 2 "$AGENTRUN" net sideways --name "$nn"
expect_match "unknown action: message" "unknown action \`sideways\`" "$(cat "$AR_TMP/err")"
expect_status "up without --name" 2 "$AGENTRUN" net up --policy "$AR_TMP/px.json"
expect_match "without --name: message" "^agentrun: net: up needs --name NAME" "$(cat "$AR_TMP/err")"
expect_status "up without --policy" 2 "$AGENTRUN" net up --name "$nn"
expect_match "without --policy: message" "^agentrun: net: up needs --policy FILE" "$(cat "$AR_TMP/err")"
expect_status "a name with a slash" 2 "$AGENTRUN" net up --policy "$AR_TMP/px.json" --name ../x
expect_match "slash: message" "^agentrun: net: --name \`../x\`: letters, digits" "$(cat "$AR_TMP/err")"
expect_status "a missing policy" 2 "$AGENTRUN" net up --policy "$AR_TMP/nope.json" --name "$nn"
expect_status "network none" 1 "$AGENTRUN" net up --policy "$AR_TMP/none.json" --name "$nn"
expect_match "network none: message" "network: none needs no prepared netns" "$(cat "$AR_TMP/err")"
expect_eq "refusals left nothing" "" "$(left "$nn" "nu$$")"
expect_status "the proxy fails midway" 1 "$AGENTRUN" net up --policy "$AR_TMP/fail.json" --name "$nn"
expect_eq "the proxy fails: message" "agentrun: net: proxy: proxy.allow_private: more than 32 ranges" "$(cat "$AR_TMP/err")"
sleep 0.2
expect_eq "the proxy fails: nothing left" "" "$(left "$nn" "nuf$$")"
printf '{"name": "nu%s", "allowed_hosts": ["a.example"], "proxy": {"dns_pool": "10.254.0.0/24"}}' "$$" >"$AR_TMP/pool.json"
# the hook's /30 is always in the default range, which the policy check itself guards
expect_status "a dns_pool over the hook's /30" 2 "$AGENTRUN" net up --policy "$AR_TMP/pool.json" --name "$nn"
expect_match "dns_pool: message" "^agentrun: net: .*pool\.json: proxy\.dns_pool: \"10\.254\.0\.0/24\" overlaps 10\.254\.0\.0/16" "$(cat "$AR_TMP/err")"
expect_eq "dns_pool: nothing left" "" "$(left "$nn" "nu$$")"
expect_status "down of an unknown name: bad input" 2 "$AGENTRUN" net down --name "$nn"
expect_match "unknown name: message" "^agentrun: net: no netns \`$nn\`" "$(cat "$AR_TMP/err")"

expect_eq "up prints the path" "/run/agentrun/netns/$nn" "$("$AGENTRUN" net up --policy "$AR_TMP/px.json" --name "$nn")"
ns=(nsenter --net="/run/agentrun/netns/$nn")
expect_eq "lo and eth0" "eth0 lo" "$("${ns[@]}" ip -o link | cut -d: -f2 | sed 's/@.*//' | tr -d ' ' | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "eth0: the rendered config's /30" "10.254.0.2/30" "$("${ns[@]}" ip -4 -o addr show eth0 | awk '{print $4}')"
expect_match "transparent capture: the default route goes to the proxy" "^default via 10\.254\.0\.1 dev eth0" "$("${ns[@]}" ip route show default)"
expect_eq "the proxy's listener answers" "open" "$("${ns[@]}" bash -c 'exec 3<>/dev/tcp/10.254.0.1/3128 && echo open' 2>&1)"
expect_match "ps lists it" "^netns-$nn " "$("$AGENTRUN" ps)"
# the names ps prints: audit works, check says why there is nothing to check
expect_status "audit netns-NAME" 0 "$AGENTRUN" audit "netns-$nn"
expect_status "check --name netns-NAME: nothing to check" 2 "$AGENTRUN" check --name "netns-$nn"
expect_eq "check --name netns-NAME: says why" \
	"agentrun: check: --name \`netns-$nn\`: a netns \`agentrun net up\` prepared, with no process of its own to check: check the container in it (--pid PID)" \
	"$(cat "$AR_TMP/err")"
cg=$(sed -n 's/^proxy_cgroup=//p' "/run/agentrun/netns-$nn/state")
expect_status "down" 0 "$AGENTRUN" net down --name "$nn"
sleep 0.2
expect_eq "down left nothing" "" "$(left "$nn" "nu$$")"
expect_eq "down: the proxy's cgroups are gone" "" "$(for d in ${cg//:/ }; do [ -d "$d" ] && echo "$d"; done)"
printf '{"name": "nu%s", "allowed_hosts": ["a.example"], "proxy": {"transparent": false}}' "$$" >"$AR_TMP/explicit.json"
"$AGENTRUN" net up --policy "$AR_TMP/explicit.json" --name "$nn" >/dev/null || fail "net up (explicit): $(cat "$AR_TMP/err" 2>/dev/null)"
expect_eq "transparent: false: no default route" "" "$("${ns[@]}" ip route show default)"
expect_status "down (explicit)" 0 "$AGENTRUN" net down --name "$nn"
finish

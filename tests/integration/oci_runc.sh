#!/usr/bin/env bash
# runc runs bundles rendered by agentrun from network-none variants of the shipped
# profiles, with a rootfs this test builds (busybox-static and the probe): CapEff 0,
# NoNewPrivs 1, Seccomp 2, the policy's uid; the hook called at createRuntime and at
# poststop, its record there between `runc create` and `runc delete` and gone after;
# a network-proxy policy refused by the hook (not wired yet) with nothing left behind.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/oci/lib.sh
source "$(dirname "$0")/oci/lib.sh"
need_root
need_cmd runc
oci_need_rootfs_tools

rootfs="$AR_TMP/rootfs"
oci_rootfs "$rootfs"
oci_hook_wrapper
RUNC=(runc --root "$AR_TMP/runc")

for prof in offline triage; do
	oci_policy "$AR_SOURCE_DIR/profiles/$prof.json" "$AR_TMP/$prof.json"
	id="$prof-$AR_TAG"
	b="$AR_TMP/b-$prof"
	oci_bundle "$AR_TMP/$prof.json" "$b" "$rootfs" "$id" /bin/ar-probe || fail "$prof: render"
	on_exit "${RUNC[*]}" delete -f "$id"
	: >"$AR_TMP/hook.log"
	rc=0
	(cd "$b" && timeout 60 "${RUNC[@]}" run "$id" </dev/null >"$AR_TMP/$prof.out" 2>"$AR_TMP/$prof.err") || rc=$?
	expect_eq "$prof: runc run (stderr: $(head -c 300 "$AR_TMP/$prof.err"))" 0 "$rc"
	expect_eq "$prof: confinement" "uid=1000
cap_inh=0000000000000000
cap_prm=0000000000000000
cap_eff=0000000000000000
cap_bnd=0000000000000000
cap_amb=0000000000000000
no_new_privs=1
seccomp=2
root_ro=1
net_ifaces=lo
mount=EPERM
unshare_user=EPERM" "$(oci_probe_lines "$AR_TMP/$prof.out" uid cap_inh cap_prm cap_eff cap_bnd cap_amb no_new_privs seccomp root_ro net_ifaces mount unshare_user)"
	expect_eq "$prof: hook stages" "create-runtime $id
poststop $id" "$(cat "$AR_TMP/hook.log")"
	expect_eq "$prof: no record left" "no" "$([ -e "/run/agentrun/hooks/$id" ] && echo yes || echo no)"
	expect_eq "$prof: runc forgot it" "" "$("${RUNC[@]}" list -q)"
done

# create / start / delete: the record lives exactly as long as the container
id="life-$AR_TAG"
b="$AR_TMP/b-life"
oci_bundle "$AR_TMP/offline.json" "$b" "$rootfs" "$id" /bin/sleep 30 || fail "life: render"
on_exit "${RUNC[*]}" delete -f "$id"
on_exit rm -f "/run/agentrun/hooks/$id"
: >"$AR_TMP/hook.log"
(cd "$b" && "${RUNC[@]}" create "$id" </dev/null >/dev/null 2>"$AR_TMP/life.err") || fail "runc create: $(cat "$AR_TMP/life.err")"
expect_eq "after create: recorded" "yes" "$([ -f "/run/agentrun/hooks/$id" ] && echo yes)"
pid=$("${RUNC[@]}" state "$id" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
expect_match "the record names the container's pid" "\"pid\": $pid," "$(cat "/run/agentrun/hooks/$id")"
"${RUNC[@]}" start "$id"
"${RUNC[@]}" kill "$id" KILL
for _ in $(seq 50); do
	[ "$("${RUNC[@]}" state "$id" 2>/dev/null | grep -c '"stopped"')" = 1 ] && break
	sleep 0.1
done
expect_eq "until delete: still recorded" "yes" "$([ -f "/run/agentrun/hooks/$id" ] && echo yes)"
"${RUNC[@]}" delete "$id"
expect_eq "after delete: record gone" "no" "$([ -e "/run/agentrun/hooks/$id" ] && echo yes || echo no)"
expect_eq "life: hook stages" "create-runtime $id
poststop $id" "$(cat "$AR_TMP/hook.log")"

# a network-proxy policy: the hook refuses it, runc fails the container with the
# hook's message, and nothing is left (container, record)
id="proxy-$AR_TAG"
b="$AR_TMP/b-proxy"
printf '{"name": "px", "allowed_hosts": ["api.example.com"], "user": "1000"}' >"$AR_TMP/px.json"
oci_bundle "$AR_TMP/px.json" "$b" "$rootfs" "$id" /bin/true || fail "proxy: render"
on_exit "${RUNC[*]}" delete -f "$id"
rc=0
(cd "$b" && timeout 60 "${RUNC[@]}" run "$id" </dev/null >/dev/null 2>"$AR_TMP/px.err") || rc=$?
expect_eq "network proxy: runc fails" "1" "$rc"
expect_match "network proxy: runc shows the hook's message" "agentrun: hook: network: proxy wiring is not available in this build" "$(cat "$AR_TMP/px.err")"
expect_eq "network proxy: no record" "no" "$([ -e "/run/agentrun/hooks/$id" ] && echo yes || echo no)"
expect_eq "network proxy: no container" "" "$("${RUNC[@]}" list -q)"
finish

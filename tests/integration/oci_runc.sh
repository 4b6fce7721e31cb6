#!/usr/bin/env bash
# runc runs bundles rendered by agentrun from network-none variants of the shipped
# profiles, with a rootfs this test builds (busybox-static and the probe): CapEff 0,
# NoNewPrivs 1, Seccomp 2, the policy's uid; the hook called at createRuntime and at
# poststop, its record there between `runc create` and `runc delete` and gone after;
# a network-proxy policy wired by the hook (proxy reached, denied, no route around it)
# with nothing left behind after delete, or after `agentrun gc` when poststop never ran.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/oci/lib.sh
source "$(dirname "$0")/oci/lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
source "$(dirname "$0")/proxy/common.sh"
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

# network: proxy, wired by the hook: from inside, an allowed loopback origin answers
# through the proxy, a denied host gets 403 with its reason, nothing is routed past the
# /30; while the container lives its proxy runs detached and confined and `ps` lists
# it; after delete nothing is left (state, proxy, cgroup, record, container).
ORIG=$(free_port)
start_origin "$ORIG"
id="proxy-$AR_TAG"
b="$AR_TMP/b-proxy"
oci_proxy_policy "$AR_TMP/px.json" "px$$" "$ORIG"
oci_bundle "$AR_TMP/px.json" "$b" "$rootfs" "$id" /bin/sh -c "$OCI_PROXY_INSIDE" _ "$ORIG" || fail "proxy: render"
on_exit "${RUNC[*]}" delete -f "$id"
: >"$AR_TMP/hook.log"
(cd "$b" && timeout 60 "${RUNC[@]}" create "$id" </dev/null >"$AR_TMP/px.out" 2>"$AR_TMP/px.err") || fail "proxy: runc create: $(cat "$AR_TMP/px.err")"
pid=$("${RUNC[@]}" state "$id" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
name="px$$-$pid"
on_exit rm -f "/run/agentrun/audit/$name.jsonl"
expect_match "proxy: the proxy runs detached and confined (a dynamic uid)" "^Uid: (6[1-5][0-9]{3}) \\1 \\1 \\1;CapEff: 0000000000000000;NoNewPrivs: 1;Seccomp: 2;$" "$(oci_proxy_state "$name")"
proxy=$(oci_proxy_field "$name" proxy_pid)
cg=$(oci_proxy_field "$name" proxy_cgroup)
expect_match "proxy: ps lists the container" "^$name +$pid .*10\.254\.0\.2 via 10\.254\.0\.1:3128" "$("$AGENTRUN" ps)"
"${RUNC[@]}" start "$id"
for _ in $(seq 100); do
	[ "$("${RUNC[@]}" state "$id" 2>/dev/null | grep -c '"stopped"')" = 1 ] && break
	sleep 0.1
done
"${RUNC[@]}" delete "$id"
oci_proxy_expect "proxy" "$AR_TMP/px.out" "$ORIG" "/run/agentrun/audit/$name.jsonl"
expect_eq "proxy: hook stages" "create-runtime $id
poststop $id" "$(cat "$AR_TMP/hook.log")"
expect_eq "proxy: after delete nothing is left" "" "$(oci_proxy_gone "$name" "$proxy" "$cg")"
expect_eq "proxy: no record" "no" "$([ -e "/run/agentrun/hooks/$id" ] && echo yes || echo no)"
expect_eq "proxy: no container" "" "$("${RUNC[@]}" list -q)"

# poststop never ran (runc killed, its state dropped): `agentrun gc` removes what the
# container left once its process is gone
id="gc-$AR_TAG"
oci_bundle "$AR_TMP/px.json" "$AR_TMP/b-gc" "$rootfs" "$id" /bin/sleep 30 || fail "gc: render"
on_exit "${RUNC[*]}" delete -f "$id"
(cd "$AR_TMP/b-gc" && "${RUNC[@]}" create "$id" </dev/null >/dev/null 2>"$AR_TMP/gc.err") || fail "gc: runc create: $(cat "$AR_TMP/gc.err")"
pid=$("${RUNC[@]}" state "$id" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
name="px$$-$pid"
proxy=$(oci_proxy_field "$name" proxy_pid)
cg=$(oci_proxy_field "$name" proxy_cgroup)
"$AGENTRUN" gc >/dev/null
expect_match "gc: a live container is not touched" "^Uid: 6[1-5][0-9]{3} " "$(oci_proxy_state "$name")"
kill -KILL "$pid"
rm -rf "$AR_TMP/runc/$id" # the runtime forgot it: no poststop will come
for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
"$AGENTRUN" gc >/dev/null
expect_eq "gc: nothing is left" "" "$(oci_proxy_gone "$name" "$proxy" "$cg")"
expect_eq "gc: no record" "no" "$([ -e "/run/agentrun/hooks/$id" ] && echo yes || echo no)"
finish

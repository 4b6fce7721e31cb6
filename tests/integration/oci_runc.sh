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
RT=(runc --root "$AR_TMP/runc")

oci_rt_profiles runc "$rootfs"

oci_rt_life runc "$rootfs"

# network: proxy, wired by the hook (tests/integration/oci/lib.sh)
ORIG=$(free_port)
start_origin "$ORIG"
oci_rt_proxy runc "$rootfs" "px$$" "$ORIG"

# poststop never ran (runc killed, its state dropped): `agentrun gc` removes what the
# container left once its process is gone
id="gc-$AR_TAG"
oci_bundle "$AR_TMP/runc-px.json" "$AR_TMP/b-gc" "$rootfs" "$id" /bin/sleep 30 || fail "gc: render"
on_exit "${RT[*]}" delete -f "$id"
(cd "$AR_TMP/b-gc" && "${RT[@]}" create "$id" </dev/null >/dev/null 2>"$AR_TMP/gc.err") || fail "gc: runc create: $(cat "$AR_TMP/gc.err")"
pid=$(oci_rt_pid "$id")
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

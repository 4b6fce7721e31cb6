#!/usr/bin/env bash
# podman (with runc: crun refuses this hybrid-cgroup host) picks up the shipped hooks.d
# JSON from a test copy of hooks/ (--hooks-dir), for containers annotated with
# io.agentrun.policy, from an image made locally with `podman import` of a small tree
# (no registry): CapEff 0, NoNewPrivs 1, Seccomp 2; the hook called at createRuntime and
# poststop with the container's id, not called without the annotation; a network-proxy
# policy wired by the hook (origin reached, denied host, no route around the proxy);
# nothing left (containers, records, net state, proxy cgroups, mounts).
# podman's storage, run root and tmpdir all live in this test's directory.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/oci/lib.sh
source "$(dirname "$0")/oci/lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
source "$(dirname "$0")/proxy/common.sh"
need_root
need_cmd podman
need_cmd runc
oci_need_rootfs_tools

rootfs="$AR_TMP/rootfs"
oci_rootfs "$rootfs"
oci_hook_wrapper
mkdir -p "$AR_TMP/hooks.d"
for f in "$AR_SOURCE_DIR"/hooks/*.json; do
	case $f in *config-snippet.json) continue ;; esac
	/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["hook"]["path"]=sys.argv[2]
json.dump(d, open(sys.argv[3], "w"))' "$f" "$AR_TMP/hook.sh" "$AR_TMP/hooks.d/$(basename "$f")"
done
PODMAN=(podman --root "$AR_TMP/storage" --runroot "$AR_TMP/run" --tmpdir "$AR_TMP/ptmp"
	--storage-driver vfs --cgroup-manager cgroupfs --events-backend file --runtime runc)
image="localhost/agentrun-test:$AR_TAG"
on_exit "${PODMAN[*]}" rm -af
tar -C "$rootfs" -cf "$AR_TMP/rootfs.tar" .
"${PODMAN[@]}" import "$AR_TMP/rootfs.tar" "$image" >/dev/null 2>"$AR_TMP/import.err" ||
	fail "podman import: $(cat "$AR_TMP/import.err")"
oci_policy "$AR_SOURCE_DIR/profiles/offline.json" "$AR_TMP/offline.json"

RUN_EXTRA=()
# run NAME POLICY|"" CMD... (RUN_EXTRA: more podman run options): podman run with the hooks dir and the agent's confinement
run() {
	local name=$1 policy=$2
	shift 2
	local ann=()
	[ -z "$policy" ] || ann=(--annotation "io.agentrun.policy=$policy")
	timeout 120 "${PODMAN[@]}" run --rm --name "$name" --cidfile "$AR_TMP/$name.cid" \
		--network none --read-only --user 1000:1000 --cap-drop all \
		--security-opt no-new-privileges --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
		--hooks-dir "$AR_TMP/hooks.d" "${ann[@]}" "${RUN_EXTRA[@]}" "$image" "$@" \
		</dev/null >"$AR_TMP/$name.out" 2>"$AR_TMP/$name.err"
}

: >"$AR_TMP/hook.log"
rc=0
run "ag-$AR_TAG" "$AR_TMP/offline.json" /bin/ar-probe || rc=$?
expect_eq "podman run (stderr: $(head -c 300 "$AR_TMP/ag-$AR_TAG.err"))" 0 "$rc"
cid=$(cat "$AR_TMP/ag-$AR_TAG.cid" 2>/dev/null || true)
expect_eq "confinement" "uid=1000
cap_eff=0000000000000000
cap_bnd=0000000000000000
no_new_privs=1
seccomp=2
root_ro=1
net_ifaces=lo" "$(oci_probe_lines "$AR_TMP/ag-$AR_TAG.out" uid cap_eff cap_bnd no_new_privs seccomp root_ro net_ifaces)"
expect_eq "hook stages, with the container's id" "create-runtime $cid
poststop $cid" "$(cat "$AR_TMP/hook.log")"
expect_eq "no record left" "no" "$([ -n "$cid" ] && [ -e "/run/agentrun/hooks/$cid" ] && echo yes || echo no)"

# without the annotation the hooks do not apply
: >"$AR_TMP/hook.log"
run "plain-$AR_TAG" "" /bin/true || fail "podman run without annotation: $(cat "$AR_TMP/plain-$AR_TAG.err")"
expect_eq "no annotation: hook not called" "" "$(cat "$AR_TMP/hook.log")"

# network: proxy, wired by the hook: an allowed loopback origin through the proxy, a
# denied host 403 with its reason, no route past the /30; after the container is
# removed nothing is left (state, proxy cgroup, record)
ORIG=$(free_port)
start_origin "$ORIG"
pol="pxp$$"
oci_proxy_policy "$AR_TMP/px.json" "$pol" "$ORIG"
on_exit rm -f "/run/agentrun/audit/$pol-"*.jsonl
: >"$AR_TMP/hook.log"
rc=0
on_exit "$AGENTRUN" gc # when a failure left the container behind
RUN_EXTRA=(--env http_proxy=http://10.254.0.1:3128)
run "px-$AR_TAG" "$AR_TMP/px.json" /bin/sh -c "$OCI_PROXY_INSIDE" _ "$ORIG" || rc=$?
RUN_EXTRA=()
expect_eq "network proxy: podman run (stderr: $(head -c 300 "$AR_TMP/px-$AR_TAG.err"))" 0 "$rc"
audit=$(find /run/agentrun/audit -name "$pol-*.jsonl" | head -1)
oci_proxy_expect "network proxy" "$AR_TMP/px-$AR_TAG.out" "$ORIG" "${audit:-/dev/null}"
pcid=$(cat "$AR_TMP/px-$AR_TAG.cid" 2>/dev/null || true)
expect_eq "network proxy: hook stages" "create-runtime $pcid
poststop $pcid" "$(cat "$AR_TMP/hook.log")"
expect_eq "network proxy: no record" "no" "$([ -n "$pcid" ] && [ -e "/run/agentrun/hooks/$pcid" ] && echo yes || echo no)"
sleep 0.3
expect_eq "network proxy: no state" "" "$(ls -d /run/agentrun/"$pol"-* 2>/dev/null)"
expect_eq "network proxy: no proxy cgroup (the proxy is gone)" "" "$(find /sys/fs/cgroup -maxdepth 5 -name "agentrun-$pol-proxy-*")"

"${PODMAN[@]}" rm -af >/dev/null 2>&1 || true
expect_eq "no containers left" "" "$("${PODMAN[@]}" ps -aq)"
expect_eq "no mounts left under the test directory" "" "$(grep -F "$AR_TMP" /proc/self/mountinfo | grep -v ' /etc/hosts ' || true)"
finish

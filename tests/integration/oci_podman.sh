#!/usr/bin/env bash
# podman (with runc: crun refuses this hybrid-cgroup host) picks up the shipped hooks.d
# JSON from a test copy of hooks/ (--hooks-dir), for containers annotated with
# io.agentrun.policy, from an image made locally with `podman import` of a small tree
# (no registry): CapEff 0, NoNewPrivs 1, Seccomp 2; the hook called at createRuntime and
# poststop with the container's id, not called without the annotation; a network-proxy
# policy refused with the hook's message; nothing left (containers, records, mounts).
# podman's storage, run root and tmpdir all live in this test's directory.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/oci/lib.sh
source "$(dirname "$0")/oci/lib.sh"
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

# run NAME POLICY|"" CMD...: podman run with the hooks dir and the agent's confinement
run() {
	local name=$1 policy=$2
	shift 2
	local ann=()
	[ -z "$policy" ] || ann=(--annotation "io.agentrun.policy=$policy")
	timeout 120 "${PODMAN[@]}" run --rm --name "$name" --cidfile "$AR_TMP/$name.cid" \
		--network none --read-only --user 1000:1000 --cap-drop all \
		--security-opt no-new-privileges --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
		--hooks-dir "$AR_TMP/hooks.d" "${ann[@]}" "$image" "$@" \
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

# a network-proxy policy: refused by the hook, podman shows its message
printf '{"name": "px", "allowed_hosts": ["api.example.com"], "user": "1000"}' >"$AR_TMP/px.json"
: >"$AR_TMP/hook.log"
rc=0
run "px-$AR_TAG" "$AR_TMP/px.json" /bin/true || rc=$?
expect_eq "network proxy: podman fails" "yes" "$([ "$rc" != 0 ] && echo yes)"
expect_match "network proxy: the hook's message" "agentrun: hook: network: proxy wiring is not available in this build" "$(cat "$AR_TMP/px-$AR_TAG.err")"
pcid=$(cat "$AR_TMP/px-$AR_TAG.cid" 2>/dev/null || true)
expect_eq "network proxy: no record" "no" "$([ -n "$pcid" ] && [ -e "/run/agentrun/hooks/$pcid" ] && echo yes || echo no)"

"${PODMAN[@]}" rm -af >/dev/null 2>&1 || true
expect_eq "no containers left" "" "$("${PODMAN[@]}" ps -aq)"
expect_eq "no mounts left under the test directory" "" "$(grep -F "$AR_TMP" /proc/self/mountinfo || true)"
finish

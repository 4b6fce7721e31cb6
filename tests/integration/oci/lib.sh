# shellcheck shell=bash
# Helpers for tests/integration/oci_*.sh (source after tests/lib.sh): a small static
# rootfs, network-none variants of the shipped profiles, rendered bundles, and a
# wrapper around `agentrun hook` that logs each stage it is called for.
OCI_PROBE=$AR_BUILD_DIR/tests/ar-probe

# The static tree every runtime runs: busybox-static and the probe. Skips (fails under
# AGENTRUN_MUST_WORK) when either is missing.
oci_need_rootfs_tools() {
	if ! [ -x /bin/busybox ] || ! LC_ALL=C ldd /bin/busybox 2>&1 | grep -q 'not a dynamic'; then
		skip "needs a static /bin/busybox (busybox-static)"
	fi
	[ -x "$OCI_PROBE" ] || skip "no probe at $OCI_PROBE (build the ar-probe target)"
}

# oci_rootfs DIR: bin/ with busybox, its applets the tests use, and the probe; the
# mount points of every container (runc makes a policy's own ones, crun under UML
# cannot: its root is read-only there).
oci_rootfs() {
	local d=$1 t
	mkdir -p "$d/bin" "$d/tmp" "$d/proc" "$d/sys" "$d/dev"
	chmod 1777 "$d/tmp" # runc gives a tmpfs the mode of the directory under it
	cp /bin/busybox "$OCI_PROBE" "$d/bin/"
	for t in sh cat id grep true tr sleep sort ls; do ln -sf busybox "$d/bin/$t"; done
}

# oci_policy PROFILE OUT: the profile with "network": "none" (the proxy network is not
# built yet), its kubeconfig and mounts pointed at files this test made.
oci_policy() {
	mkdir -p "$AR_TMP/logs"
	echo "kube: test" >"$AR_TMP/kubeconfig"
	/usr/bin/python3 - "$1" "$2" "$AR_TMP" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["network"] = "none"
d["allowed_hosts"] = []
d.pop("proxy", None)
if d.get("kubeconfig"):
    d["kubeconfig"] = sys.argv[3] + "/kubeconfig"
for m in d.get("mounts") or []:
    m["source"] = sys.argv[3] + "/logs"
json.dump(d, open(sys.argv[2], "w"))
PY
}

# oci_hook_wrapper: $AR_TMP/hook.sh logs "STAGE ID" to $AR_TMP/hook.log, then runs
# the real hook with the same arguments and state.
oci_hook_wrapper() {
	cat >"$AR_TMP/hook.sh" <<EOF
#!/bin/sh
state=\$(cat)
id=\$(printf '%s' "\$state" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "\$2 \$id" >>"$AR_TMP/hook.log"
printf '%s' "\$state" | exec "$AGENTRUN" "\$@"
EOF
	chmod +x "$AR_TMP/hook.sh"
}

# oci_bundle POLICY BUNDLE ROOTFS CGROUP CMD...: render the bundle, then point its hooks
# at the logging wrapper and (CGROUP non-empty) give it a relative cgroupsPath, so the
# runtime's cgroups go under this test's own cgroup.
oci_bundle() {
	local policy=$1 bundle=$2 rootfs=$3 cg=$4
	shift 4
	"$AGENTRUN" render --policy "$policy" --format oci --rootfs "$rootfs" --bundle "$bundle" \
		-- "$@" || return 1
	/usr/bin/python3 - "$bundle/config.json" "$AR_TMP/hook.sh" "$cg" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for stage in d.get("hooks", {}).values():
    for h in stage:
        h["path"] = sys.argv[2]
if sys.argv[3]:
    d["linux"]["cgroupsPath"] = sys.argv[3]
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
}

# oci_probe_lines FILE KEY...: "key=value" lines of the probe output for KEYs, in order.
oci_probe_lines() {
	local f=$1 k
	shift
	for k in "$@"; do grep -m1 "^$k=" "$f" || echo "$k=missing"; done
}

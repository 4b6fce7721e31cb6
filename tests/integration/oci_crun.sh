#!/usr/bin/env bash
# crun on this hybrid-cgroup host: crun refuses a host whose cgroup2 hierarchy
# (/sys/fs/cgroup/unified) has a controller ("cgroups in hybrid mode not supported";
# hugetlb sits there), so each crun command runs in a private mount namespace where
# that mount is gone: crun then sees a cgroup v1 host. --cgroup-manager=disabled, as
# crun's v1 cgroupfs manager would put a relative cgroupsPath at the root of each
# hierarchy, outside this test's own cgroup; the limits under crun are checked in the
# cgroup v2 lane (tests/vm/oci_crun.sh). Here: the shipped profiles' confinement
# (CapEff 0, NoNewPrivs 1, Seccomp 2, uid, read-only root, lo only), the hook's record
# for the container's life, and network: proxy wired by the hook (allowed 200, denied
# 403 with its reason, no route past the /30, nothing left after delete); `crun run`
# with a proxy too, where crun, a child subreaper, waits for every child: the proxy
# exits with the container (a pidfd), so crun reaches poststop and nothing is left.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/oci/lib.sh
source "$(dirname "$0")/oci/lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
source "$(dirname "$0")/proxy/common.sh"
need_root
need_cmd crun
need_cmd unshare
oci_need_rootfs_tools

rootfs="$AR_TMP/rootfs"
oci_rootfs "$rootfs"
oci_hook_wrapper
# crun as this host runs it: a private mount namespace (mounts still come in from the
# host; nothing goes out) without the cgroup2 mount
cat >"$AR_TMP/crun" <<'SH'
#!/bin/sh
exec unshare --mount --propagation slave sh -c \
	'if mountpoint -q /sys/fs/cgroup/unified; then umount /sys/fs/cgroup/unified || exit 125; fi; exec crun "$@"' \
	crun --cgroup-manager=disabled "$@"
SH
chmod +x "$AR_TMP/crun"
RT=("$AR_TMP/crun" --root "$AR_TMP/crun-state")

oci_rt_profiles crun "$rootfs" ""
oci_rt_life crun "$rootfs" ""

# the reason for the wrapper: crun as such refuses this host (or not, on a host that
# has no cgroup2 controllers: then there is nothing to work around)
if [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
	expect_match "crun as such refuses this hybrid host" "cgroups in hybrid mode not supported" \
		"$(cd "$AR_TMP/b-crun-offline" && crun --root "$AR_TMP/crun-plain" run "refused-$AR_TAG" 2>&1 </dev/null)"
fi
echo "crun: $(crun --version | head -n 1); cgroup2 controllers: $(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)"


ORIG=$(free_port)
start_origin "$ORIG"
oci_rt_proxy crun "$rootfs" "cpx$$" "$ORIG" ""

# `crun run` with a proxy: the same answers; the proxy exits with the container, crun
# reaps it and runs poststop, which removes its cgroup
id="crun-run-$AR_TAG"
oci_bundle "$AR_TMP/crun-px.json" "$AR_TMP/b-run" "$rootfs" "" /bin/sh -c "$OCI_PROXY_INSIDE" _ "$ORIG" ||
	fail "crun run proxy: render"
on_exit "${RT[*]}" delete -f "$id"
: >"$AR_TMP/hook.log"
rc=0
(cd "$AR_TMP/b-run" && timeout 60 "${RT[@]}" run "$id" </dev/null >"$AR_TMP/run.out" 2>"$AR_TMP/run.err") || rc=$?
expect_eq "crun run proxy (stderr: $(head -c 300 "$AR_TMP/run.err"))" 0 "$rc"
audit=$(find /run/agentrun/audit -name "cpx$$-*.jsonl" -newer "$AR_TMP/b-run/config.json" | head -n 1)
on_exit rm -f "$audit"
oci_proxy_expect "crun run proxy" "$AR_TMP/run.out" "$ORIG" "${audit:-/dev/null}"
expect_eq "crun run proxy: hook stages" "create-runtime $id
poststop $id" "$(cat "$AR_TMP/hook.log")"
expect_eq "crun run proxy: no net state" "" "$(ls -d /run/agentrun/cpx$$-* 2>/dev/null)"
expect_eq "crun run proxy: no proxy cgroup (the proxy exited with the container)" "" "$(find /sys/fs/cgroup -maxdepth 6 -name "agentrun-cpx$$-proxy-*")"
expect_eq "crun run proxy: no record" "no" "$([ -e "/run/agentrun/hooks/$id" ] && echo yes || echo no)"
expect_eq "no container left" "" "$("${RT[@]}" list -q)"
finish

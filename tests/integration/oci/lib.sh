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
	for t in sh cat id grep true tr sleep sort ls ip sed; do ln -sf busybox "$d/bin/$t"; done
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

# ---- network: proxy (the hook wires it): source tests/integration/proxy/common.sh
# first (its /etc/hosts names api.test.example and denied.test.example as 127.0.0.1).

# oci_proxy_policy OUT NAME ORIGIN_PORT [MORE]: a proxy policy allowing
# api.test.example:PORT, a private origin (proxy.allow_private 127.0.0.1), uid 1000,
# the explicit path only (transparent capture: net_oci_capture.sh);
# MORE: more members (", \"limits\": ...").
oci_proxy_policy() {
	printf '{"name": "%s", "allowed_hosts": ["api.test.example:%s"], "user": "1000",
 "proxy": {"allow_private": ["127.0.0.1"], "transparent": false}%s}' "$2" "$3" "${4:-}" >"$1"
}

# The container's side, one key=value line per check (busybox sh, the probe's http
# and connect; the proxy variable comes from the rendered config): $1 = the origin port.
# (gVisor's hostinet also lists the local table: local and broadcast routes.)
# shellcheck disable=SC2016 # expanded inside the container
# shellcheck disable=SC2034 # used by the tests that source this
OCI_PROXY_INSIDE='o=$1
echo "proxy=$http_proxy"
echo "routes=$(ip route | tr "\n" ";")"
px=${http_proxy#http://}; px=${px%/}
ar-probe http get "${px%:*}" "${px##*:}" "http://api.test.example:$o/hello"
ar-probe http denied "${px%:*}" "${px##*:}" "http://denied.test.example:$o/"
ar-probe connect direct_far 10.254.0.6 "$o"
ar-probe connect direct_loopback 127.0.0.1 "$o"
'

# oci_proxy_expect LABEL OUT PORT AUDIT: the lines OCI_PROXY_INSIDE wrote, and the
# proxy's audit, checked.
oci_proxy_expect() {
	local l=$1 out
	out=$(cat "$2")
	[ -n "${AR_VERBOSE:-}" ] && printf "%s\n" "$out" >&2
	val() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }
	expect_eq "$l: the proxy variable names the hook's /30" "http://10.254.0.1:3128" "$(val proxy)"
	expect_match "$l: one route, the /30, no default" '^10\.254\.0\.0/30 dev eth0 [^;]*;$' "$(val routes | sed 's/\(local\|broadcast\) [^;]*;//g')"
	expect_eq "$l: allowed origin through the proxy" "200 hello from origin" "$(val get) $(val get_body)"
	expect_eq "$l: denied host: 403" 403 "$(val denied)"
	expect_match "$l: denied host: the reason" "denied.test.example:$3 is not in the allow-list" "$(val denied_reason)"
	expect_match "$l: the audit has both" "\"status\":200,.*\"status\":403,\"reason\":\"denied.test.example:$3 is not in the allow-list" "$(tr -d '\n' <"$4")"
	expect_match "$l: no route past the /30" "ENETUNREACH" "$(val direct_far)"
	expect_match "$l: the host's loopback is not the container's" "ECONNREFUSED" "$(val direct_loopback)"
}

# oci_proxy_state NAME: "live" when the net state NAME exists and its proxy runs
# confined (uid 65534, no capabilities, no_new_privs, seccomp), else what is wrong.
oci_proxy_state() {
	local st=/run/agentrun/$1/state pid
	[ -f "$st" ] || { echo "no state"; return; }
	pid=$(sed -n 's/^proxy_pid=//p' "$st")
	if [ -z "$pid" ] || ! [ -d "/proc/$pid" ]; then
		echo "no proxy"
		return
	fi
	grep -E '^(Uid|CapEff|NoNewPrivs|Seccomp):' "/proc/$pid/status" | tr -s '\t ' ' ' | tr '\n' ';'
}

# oci_proxy_field NAME KEY: a field of the net state NAME.
oci_proxy_field() { sed -n "s/^$2=//p" "/run/agentrun/$1/state" 2>/dev/null; }

# oci_proxy_gone NAME PROXY_PID CGROUPS: what is left of the net state NAME, its proxy
# (a zombie waiting for its reaper is gone) and its cgroups (the state's ':'-joined
# proxy_cgroup; "" = nothing).
oci_proxy_gone() {
	local left="" _ d
	for _ in $(seq 50); do
		left=""
		[ -e "/run/agentrun/$1" ] && left+="state "
		grep -qE '^State:\s+[^Z[:space:]]' "/proc/$2/status" 2>/dev/null && left+="proxy "
		for d in ${3//:/ }; do [ -d "$d" ] && left+="cgroup "; done
		[ -z "$left" ] && break
		sleep 0.1
	done
	printf '%s' "$left"
}

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
echo "status=$(grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status | tr "\t\n" " ;")"
echo "routes=$(ip route | tr "\n" ";")"
px=${http_proxy#http://}; px=${px%/}
ar-probe http get "${px%:*}" "${px##*:}" "http://api.test.example:$o/hello"
ar-probe http denied "${px%:*}" "${px##*:}" "http://denied.test.example:$o/"
ar-probe connect direct_far 10.254.0.6 "$o"
ar-probe connect direct_loopback 127.0.0.1 "$o"
'

# oci_proxy_expect LABEL OUT PORT AUDIT [NOROUTE]: the lines OCI_PROXY_INSIDE wrote, and
# the proxy's audit, checked; NOROUTE: the errno a connect past the /30 gets (the
# kernel's ENETUNREACH; gVisor's netstack says EHOSTUNREACH).
oci_proxy_expect() {
	local l=$1 out
	out=$(cat "$2")
	[ -n "${AR_VERBOSE:-}" ] && printf "%s\n" "$out" >&2
	val() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }
	expect_eq "$l: the proxy variable names the hook's /30" "http://10.254.0.1:3128" "$(val proxy)"
	# (gVisor's /proc/self/status has no NoNewPrivs line: OCI_GVISOR=1)
	local nnp='NoNewPrivs: 1;'
	[ "${OCI_GVISOR:-}" = 1 ] && nnp='(NoNewPrivs: 1;)?'
	expect_match "$l: the agent: CapEff 0, NoNewPrivs 1, Seccomp 2" "^CapEff: 0{16};${nnp}Seccomp: 2;$" "$(val status)"
	# (local and broadcast: gVisor's hostinet; lo's own: gVisor's netstack)
	expect_match "$l: one route, the /30, no default" '^10\.254\.0\.0/30 dev eth0 [^;]*;$' \
		"$(val routes | sed 's/\(local\|broadcast\) [^;]*;//g; s/[^;]* dev lo [^;]*;//g')"
	expect_eq "$l: allowed origin through the proxy" "200 hello from origin" "$(val get) $(val get_body)"
	expect_eq "$l: denied host: 403" 403 "$(val denied)"
	expect_match "$l: denied host: the reason" "denied.test.example:$3 is not in the allow-list" "$(val denied_reason)"
	expect_match "$l: the audit has both" "\"status\":200,.*\"status\":403,\"reason\":\"denied.test.example:$3 is not in the allow-list" "$(tr -d '\n' <"$4")"
	expect_match "$l: no route past the /30" "${5:-ENETUNREACH}" "$(val direct_far)"
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

# ---- bodies shared by the runtimes that take runc's command line (runc, crun): the
# caller sets RT=(runtime --root DIR ...) and has called oci_rootfs and oci_hook_wrapper.

# oci_rt_pid ID: the container's pid from `state`.
oci_rt_pid() {
	"${RT[@]}" state "$1" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])'
}

# oci_rt_wait_stopped ID: until `state` says stopped (at most 10 s).
oci_rt_wait_stopped() {
	local _
	for _ in $(seq 100); do
		"${RT[@]}" state "$1" 2>/dev/null | grep -q '"stopped"' && return
		sleep 0.1
	done
}

# oci_rt_profiles LABEL ROOTFS [CGROUP]: `run` of a bundle rendered from the
# network-none variant of each shipped profile (offline, triage) running the probe: the
# confinement, the hook called at createRuntime and poststop, nothing left.
# CGROUP "": the bundle's cgroupsPath is the container id.
oci_rt_profiles() {
	local l=$1 rootfs=$2 prof id b rc
	for prof in offline triage; do
		oci_policy "$AR_SOURCE_DIR/profiles/$prof.json" "$AR_TMP/$prof.json"
		id="$l-$prof-$AR_TAG"
		b="$AR_TMP/b-$l-$prof"
		oci_bundle "$AR_TMP/$prof.json" "$b" "$rootfs" "${3-$id}" /bin/ar-probe || fail "$l $prof: render"
		on_exit "${RT[*]}" delete -f "$id"
		: >"$AR_TMP/hook.log"
		rc=0
		(cd "$b" && timeout 60 "${RT[@]}" run "$id" </dev/null >"$AR_TMP/$l-$prof.out" 2>"$AR_TMP/$l-$prof.err") || rc=$?
		expect_eq "$l $prof: run (stderr: $(head -c 300 "$AR_TMP/$l-$prof.err"))" 0 "$rc"
		expect_eq "$l $prof: confinement" "uid=1000
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
unshare_user=EPERM" "$(oci_probe_lines "$AR_TMP/$l-$prof.out" uid cap_inh cap_prm cap_eff cap_bnd cap_amb no_new_privs seccomp root_ro net_ifaces mount unshare_user)"
		expect_eq "$l $prof: hook stages" "create-runtime $id
poststop $id" "$(cat "$AR_TMP/hook.log")"
		expect_eq "$l $prof: no record left" "no" "$([ -e "/run/agentrun/hooks/$id" ] && echo yes || echo no)"
		expect_eq "$l $prof: the runtime forgot it" "" "$("${RT[@]}" list -q)"
	done
}

# oci_rt_life LABEL ROOTFS [CGROUP]: create / start / kill / delete: the hook's record
# lives exactly as long as the container and names its pid.
oci_rt_life() {
	local l=$1 id="$1-life-$AR_TAG" b="$AR_TMP/b-$1-life" pid
	oci_bundle "$AR_TMP/offline.json" "$b" "$2" "${3-$id}" /bin/sleep 30 || fail "$l life: render"
	on_exit "${RT[*]}" delete -f "$id"
	on_exit rm -f "/run/agentrun/hooks/$id"
	: >"$AR_TMP/hook.log"
	(cd "$b" && "${RT[@]}" create "$id" </dev/null >/dev/null 2>"$AR_TMP/$l-life.err") ||
		fail "$l life: create: $(cat "$AR_TMP/$l-life.err")"
	expect_eq "$l life: after create: recorded" "yes" "$([ -f "/run/agentrun/hooks/$id" ] && echo yes)"
	pid=$(oci_rt_pid "$id")
	expect_match "$l life: the record names the container's pid" "\"pid\": $pid," "$(cat "/run/agentrun/hooks/$id")"
	"${RT[@]}" start "$id"
	"${RT[@]}" kill "$id" KILL
	oci_rt_wait_stopped "$id"
	expect_eq "$l life: until delete: still recorded" "yes" "$([ -f "/run/agentrun/hooks/$id" ] && echo yes)"
	"${RT[@]}" delete "$id"
	expect_eq "$l life: after delete: record gone" "no" "$([ -e "/run/agentrun/hooks/$id" ] && echo yes || echo no)"
	expect_eq "$l life: hook stages" "create-runtime $id
poststop $id" "$(cat "$AR_TMP/hook.log")"
}

# oci_rt_proxy LABEL ROOTFS POLICY_NAME ORIGIN_PORT [CGROUP]: network: proxy, wired by
# the hook, through create / start / delete: from inside, the allowed loopback origin
# answers through the proxy, a denied host gets 403 with its reason, nothing is routed
# past the /30; while the container lives its proxy runs detached and confined and `ps`
# lists it; after delete nothing is left (state, proxy, cgroups, record, container).
# oci_proc_gone PID: "gone" once PID has exited (reaped, or a zombie) within 5 s.
oci_proc_gone() {
	local st
	for _ in $(seq 50); do
		st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
		case $st in "" | Z | X) echo gone && return ;; esac
		sleep 0.1
	done
	echo "alive ($st)"
}

oci_rt_proxy() {
	local l=$1 rootfs=$2 pol=$3 orig=$4 id="$1-px-$AR_TAG" b="$AR_TMP/b-$1-px" pid name proxy cg
	oci_proxy_policy "$AR_TMP/$l-px.json" "$pol" "$orig"
	oci_bundle "$AR_TMP/$l-px.json" "$b" "$rootfs" "${5-$id}" /bin/sh -c "$OCI_PROXY_INSIDE" _ "$orig" ||
		fail "$l proxy: render"
	on_exit "${RT[*]}" delete -f "$id"
	: >"$AR_TMP/hook.log"
	(cd "$b" && timeout 60 "${RT[@]}" create "$id" </dev/null >"$AR_TMP/$l-px.out" 2>"$AR_TMP/$l-px.err") ||
		fail "$l proxy: create: $(cat "$AR_TMP/$l-px.err")"
	pid=$(oci_rt_pid "$id")
	name="$pol-$pid"
	on_exit rm -f "/run/agentrun/audit/$name.jsonl"
	expect_match "$l proxy: the proxy runs detached and confined (a dynamic uid)" "^Uid: (6[1-5][0-9]{3}) \\1 \\1 \\1;CapEff: 0000000000000000;NoNewPrivs: 1;Seccomp: 2;$" "$(oci_proxy_state "$name")"
	proxy=$(oci_proxy_field "$name" proxy_pid)
	cg=$(oci_proxy_field "$name" proxy_cgroup)
	expect_match "$l proxy: ps lists the container" "^$name +$pid .*10\.254\.0\.2 via 10\.254\.0\.1:3128" "$("$AGENTRUN" ps)"
	"${RT[@]}" start "$id"
	oci_rt_wait_stopped "$id"
	expect_eq "$l proxy: the proxy exits with the container, before delete" "gone" "$(oci_proc_gone "$proxy")"
	"${RT[@]}" delete "$id"
	oci_proxy_expect "$l proxy" "$AR_TMP/$l-px.out" "$orig" "/run/agentrun/audit/$name.jsonl"
	expect_eq "$l proxy: hook stages" "create-runtime $id
poststop $id" "$(cat "$AR_TMP/hook.log")"
	expect_eq "$l proxy: after delete nothing is left" "" "$(oci_proxy_gone "$name" "$proxy" "$cg")"
	expect_eq "$l proxy: no record" "no" "$([ -e "/run/agentrun/hooks/$id" ] && echo yes || echo no)"
	expect_eq "$l proxy: no container" "" "$("${RT[@]}" list -q)"
}

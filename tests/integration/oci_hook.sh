#!/usr/bin/env bash
# agentrun hook create-runtime|poststop as a runtime calls it, against real processes in
# network namespaces this test made: the record under the hook directory, a second
# create, a netns with an interface, the host's netns, a missing pid, malformed state,
# no policy, a proxy policy whose proxy fails; nothing half-built after any of them.
# One case uses the real /run/agentrun/hooks, and a proxy policy wired for real: the
# veth and its /30, the proxy reached from the container's netns, detached and
# confined; poststop removes all of it.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
need_root
need_cmd unshare
need_cmd ip

HOOKS="$AR_TMP/hooks"
export AGENTRUN_HOOK_DIR="$HOOKS"
offline="$AR_SOURCE_DIR/profiles/offline.json"
# the triage profile without its kubeconfig (with one, the hook needs the bundle's own
# kubeconfig file and the real one: secrets_oci.sh)
triage="$AR_TMP/triage.json"
/usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
del d["kubeconfig"]
json.dump(d, open(sys.argv[2], "w"))' "$AR_SOURCE_DIR/profiles/triage.json" "$triage"

# state ID PID [EXTRA]: the OCI state JSON a runtime writes.
state() { printf '{"ociVersion": "1.0.2", "id": "%s", "status": "creating", "pid": %s, "bundle": "/srv/b"%s}' "$1" "$2" "${3:-}"; }
hook() { # hook STAGE STATE [ARGS...]
	local stage=$1 st=$2
	shift 2
	printf '%s' "$st" | "$AGENTRUN" hook "$stage" "$@"
}
left() { find "$HOOKS" -mindepth 1 2>/dev/null | tr '\n' ' '; }

# a process in a fresh netns (only lo), as a runtime leaves it at createRuntime
unshare -n sleep 60 &
fresh=$!
on_exit kill "$fresh"
# and one whose netns already has an interface
unshare -n sh -c 'ip link add ar-v0 type veth peer name ar-v1 && exec sleep 60' &
busy=$!
on_exit kill "$busy"
sleep 0.3

id="c-$AR_TAG"
expect_status "create-runtime: fresh netns" 0 hook create-runtime "$(state "$id" "$fresh")" --policy "$offline"
expect_eq "the record" "{\"id\": \"$id\", \"pid\": $fresh, \"bundle\": \"/srv/b\", \"policy\": \"$offline\", \"name\": \"offline\", \"network\": \"none\"}" "$(cat "$HOOKS/$id")"
expect_status "create-runtime: the same id again" 1 hook create-runtime "$(state "$id" "$fresh")" --policy "$offline"
expect_match "second create: message" "^agentrun: hook: container \`$id\` is already recorded" "$(cat "$AR_TMP/err")"
expect_eq "second create: first record kept" "$fresh" "$(grep -o '"pid": [0-9]*' "$HOOKS/$id" | cut -d' ' -f2)"
expect_status "poststop" 0 hook poststop "$(state "$id" 0)" --policy "$offline"
expect_eq "poststop removed the record" "" "$(left)"
expect_status "poststop again (no record)" 0 hook poststop "$(state "$id" 0)" --policy "$offline"

# policy from the annotation (podman's hooks.d entries carry no per-container args)
ann=", \"annotations\": {\"io.agentrun.policy\": \"$offline\"}"
expect_status "create-runtime: policy from the annotation" 0 hook create-runtime "$(state a1 "$fresh" "$ann")"
expect_match "annotation: recorded" '"name": "offline"' "$(cat "$HOOKS/a1")"
expect_status "poststop: policy from the annotation" 0 hook poststop "$(state a1 -1 "$ann")"
expect_eq "annotation: record removed" "" "$(left)"

# refusals: exit 1, the message the runtime shows, nothing recorded
expect_status "netns with an interface" 1 hook create-runtime "$(state b1 "$busy")" --policy "$offline"
expect_match "netns with an interface: message" "^agentrun: hook: the container's network namespace \(/proc/$busy/ns/net\) already has interfaces besides lo: ar-v[01],ar-v[01]" "$(cat "$AR_TMP/err")"
expect_status "the host's netns" 1 hook create-runtime "$(state b2 $$)" --policy "$offline"
expect_match "host netns: message" "shares the host's network namespace" "$(cat "$AR_TMP/err")"
expect_status "missing pid" 1 hook create-runtime '{"ociVersion": "1.0.2", "id": "b3", "status": "creating", "bundle": "/b"}' --policy "$offline"
expect_eq "missing pid: message" "agentrun: hook: state: pid: missing (create-runtime needs the container's process)" "$(cat "$AR_TMP/err")"
expect_status "a pid that is gone" 1 hook create-runtime "$(state b4 4194000)" --policy "$offline"
expect_match "gone pid: message" "^agentrun: hook: state: pid 4194000: not a running process" "$(cat "$AR_TMP/err")"
# a proxy policy whose proxy fails after the veth, its cgroup and the proxy process
# were made (the proxy refuses more than 32 private ranges): nothing is left of any
unshare -n sleep 60 &
failing=$!
on_exit kill "$failing"
sleep 0.2
printf '{"name": "hkf%s", "allowed_hosts": ["a.example"], "proxy": {"allow_private": [%s]}}' "$$" \
	"$(seq -s, -f '"127.0.0.%g"' 1 40)" >"$AR_TMP/fail.json"
expect_status "network proxy: the proxy fails" 1 hook create-runtime "$(state b5 "$failing")" --policy "$AR_TMP/fail.json"
expect_eq "the proxy fails: message" "agentrun: hook: proxy: proxy.allow_private: more than 32 ranges" "$(cat "$AR_TMP/err")"
sleep 0.3
expect_eq "the proxy fails: no state" "no" "$([ -e "/run/agentrun/hkf$$-$failing" ] && echo yes || echo no)"
expect_eq "the proxy fails: the container's netns has only lo again" "lo" "$(nsenter -t "$failing" -n ip -o link | cut -d: -f2 | tr -d ' \n')"
expect_eq "the proxy fails: no proxy cgroup" "" "$(find /sys/fs/cgroup -maxdepth 5 -name "agentrun-hkf$$-proxy-*")"
expect_eq "refusals left nothing" "" "$(left)"

# bad input: exit 2
expect_status "malformed state" 2 hook create-runtime '{"id": ' --policy "$offline"
expect_eq "malformed: message" "agentrun: hook: state: not valid JSON" "$(cat "$AR_TMP/err")"
expect_status "id with a slash" 2 hook create-runtime "$(state ../x "$fresh")" --policy "$offline"
expect_match "id: message" "state: id: \`../x\` is not a container id" "$(cat "$AR_TMP/err")"
expect_status "no policy" 2 hook create-runtime "$(state b6 "$fresh")"
expect_match "no policy: message" "no policy: pass --policy FILE or set the container's annotation io.agentrun.policy" "$(cat "$AR_TMP/err")"
expect_status "unknown stage" 2 "$AGENTRUN" hook prestart --policy "$offline" </dev/null
expect_match "unknown stage: message" "unknown stage \`prestart\`" "$(cat "$AR_TMP/err")"
expect_status "missing policy file" 2 hook create-runtime "$(state b7 "$fresh")" --policy "$AR_TMP/none.json"
expect_eq "bad input left nothing" "" "$(left)"

# the real directory, once
unset AGENTRUN_HOOK_DIR
id="r-$AR_TAG"
on_exit rm -f "/run/agentrun/hooks/$id"
expect_status "create-runtime: /run/agentrun/hooks" 0 hook create-runtime "$(state "$id" "$fresh")" --policy "$offline"
expect_eq "recorded under /run/agentrun/hooks" "yes" "$([ -f "/run/agentrun/hooks/$id" ] && echo yes)"
expect_eq "the directory is root's alone" "700" "$(stat -c %a /run/agentrun/hooks)"
expect_status "poststop: /run/agentrun/hooks" 0 hook poststop "$(state "$id" 0)" --policy "$offline"
expect_eq "removed from /run/agentrun/hooks" "no" "$([ -e "/run/agentrun/hooks/$id" ] && echo yes || echo no)"

# network: proxy wired (the real /run/agentrun/hooks: the net state is machine-wide)
unshare -n sleep 60 &
wired=$!
on_exit kill "$wired"
sleep 0.2
id="w-$AR_TAG"
name="triage-$wired"
on_exit rm -f "/run/agentrun/hooks/$id" "/run/agentrun/audit/$name.jsonl"
expect_status "network proxy: create-runtime" 0 hook create-runtime "$(state "$id" "$wired")" --policy "$triage"
expect_match "network proxy: the record" '"network": "proxy"' "$(cat "/run/agentrun/hooks/$id")"
expect_eq "network proxy: eth0 with the rendered config's /30" "10.254.0.2/30" "$(nsenter -t "$wired" -n ip -4 -o addr show eth0 | awk '{print $4}')"
expect_match "network proxy: transparent capture routes everything to the proxy" "^default via 10\.254\.0\.1 dev eth0" "$(nsenter -t "$wired" -n ip route show default)"
proxy=$(sed -n 's/^proxy_pid=//p' "/run/agentrun/$name/state")
expect_eq "network proxy: detached (a session of its own)" "$proxy" "$(ps -o sid= -p "$proxy" | tr -d ' ')"
expect_match "network proxy: confined (a dynamic uid)" "^6[1-5][0-9]{3} 0000000000000000 1 2$" "$(awk '/^Uid:/{u=$2} /^CapEff:/{c=$2} /^NoNewPrivs:/{n=$2} /^Seccomp:/{s=$2} END{print u, c, n, s}' "/proc/$proxy/status")"
expect_eq "network proxy: the listener answers in the container's netns" "open" "$(nsenter -t "$wired" -n bash -c 'exec 3<>/dev/tcp/10.254.0.1/3128 && echo open' 2>&1)"
expect_status "network proxy: poststop" 0 hook poststop "$(state "$id" 0)" --policy "$triage"
sleep 0.3
expect_eq "network proxy: after poststop: no state, no record" "no no" "$([ -e "/run/agentrun/$name" ] && echo yes || echo no) $([ -e "/run/agentrun/hooks/$id" ] && echo yes || echo no)"
expect_eq "network proxy: after poststop: the proxy is gone" "no" "$(grep -qE '^State:\s+[^Z[:space:]]' "/proc/$proxy/status" 2>/dev/null && echo yes || echo no)"
expect_eq "network proxy: after poststop: only lo" "lo" "$(nsenter -t "$wired" -n ip -o link | cut -d: -f2 | tr -d ' \n')"
finish

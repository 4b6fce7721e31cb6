#!/usr/bin/env bash
# agentrun render end to end:
#  - the text output pasted into sh and bash runs exactly the JSON plan's argv
#    (a fake `docker` on PATH logs each argv as a JSON line);
#  - the sh script passes `sh -n` (and shellcheck), and its up/run/down/audit run the
#    plan's commands, echo each one with `+ ` first, stop on a failure, and `down`
#    tolerates missing objects;
#  - the OCI config runs under a real runc (busybox rootfs): uid/gid, read-only root,
#    tmpfs, read-only and read-write binds, env, no capabilities, no_new_privs, seccomp,
#    pids/memory/cpu limits, hostname. The container is removed by its id.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cmd python3

fakebin="$AR_TMP/bin"
mkdir -p "$fakebin"
cat >"$fakebin/docker" <<'EOF'
#!/usr/bin/env python3
import json, os, sys
with open(os.environ["DOCKER_LOG"], "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\n")
sys.exit(int(os.environ.get("DOCKER_FAIL", "0")))
EOF
chmod +x "$fakebin/docker"
log="$AR_TMP/docker.log"

cat >"$AR_TMP/triage.json" <<EOF
{"name": "triage", "image": "python:3.12-alpine",
 "allowed_hosts": ["api.anthropic.com", "*.github.com:443", "cc-lab-control-plane:6443"],
 "kubeconfig": "/home/me/.kube/agent-config",
 "mounts": [{"source": "/srv/logs", "target": "/logs", "readonly": true}],
 "limits": {"pids": 64, "memory": "256m", "cpus": "1"}, "user": "1000",
 "env": {"ANTHROPIC_BASE_URL": "https://api.anthropic.com", "GREETING": "it's \"quoted\" \$HOME"},
 "network": "proxy"}
EOF
cat >"$AR_TMP/offline.json" <<'EOF'
{"name": "offline", "image": "busybox:1", "network": "none"}
EOF
# a command whose arguments need every kind of quoting
# shellcheck disable=SC2016
cmd=(sh -c 'echo "it'\''s" $HOME; printf "%s\n" *' 'two words' $'new\nline' '' '*.github.com:443')

# run_fake WHAT EXPECTED-STATUS CMD...: run CMD with the fake docker first on PATH
run_fake() {
	local what=$1 want=$2
	shift 2
	: >"$log"
	expect_status "$what" "$want" env DOCKER_LOG="$log" PATH="$fakebin:$PATH" "$@"
}

# plan_argv FILE KEY [FROM TO]: the plan's argv lists (without "docker") as JSON lines
plan_argv() {
	python3 - "$@" <<'EOF'
import json, sys
steps = json.load(open(sys.argv[1]))[sys.argv[2]]
if len(sys.argv) > 3:
    steps = steps[int(sys.argv[3]):int(sys.argv[4])]
for s in steps:
    assert s["argv"][0] == "docker"
    print(json.dumps(s["argv"][1:]))
EOF
}

# --- text and json -------------------------------------------------------------------
expect_status "render text" 0 "$AGENTRUN" render --policy "$AR_TMP/triage.json" -- "${cmd[@]}"
cp "$AR_TMP/out" "$AR_TMP/plan.txt"
# the same text with its ` \` continuations joined: one command per line
python3 -c 'import sys; print(open(sys.argv[1]).read().replace(" \\\n    ", " "), end="")' \
	"$AR_TMP/plan.txt" >"$AR_TMP/plan.joined"
expect_status "render json" 0 "$AGENTRUN" render --policy "$AR_TMP/triage.json" --format json \
	-- "${cmd[@]}"
cp "$AR_TMP/out" "$AR_TMP/plan.json"
expect_eq "json labels in order" "internal network,egress network,proxy,connect proxy,agent" \
	"$(python3 -c 'import json,sys; print(",".join(s["label"] for s in json.load(open(sys.argv[1]))["steps"]))' "$AR_TMP/plan.json")"
expect_eq "json: the agent command is last, unchanged" \
	"$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "${cmd[@]}")" \
	"$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["steps"][4]["argv"][-7:]))' "$AR_TMP/plan.json")"
expect_match "text quotes the wildcard rule" "--allow '\\*\\.github\\.com:443' " "$(cat "$AR_TMP/plan.txt")"
expect_eq "text: five commands" 5 "$(grep -c '^docker ' "$AR_TMP/plan.joined")"

plan_argv "$AR_TMP/plan.json" steps >"$AR_TMP/want.steps"
for shell in sh bash; do
	run_fake "text pasted into $shell" 0 "$shell" "$AR_TMP/plan.txt"
	expect_eq "text pasted into $shell runs the json plan" "$(cat "$AR_TMP/want.steps")" "$(cat "$log")"
done

# --- sh script ----------------------------------------------------------------------
expect_status "render sh" 0 "$AGENTRUN" render --policy "$AR_TMP/triage.json" --format sh \
	-- "${cmd[@]}"
script="$AR_TMP/plan.sh"
cp "$AR_TMP/out" "$script"
expect_status "sh -n accepts the script" 0 sh -n "$script"
if command -v shellcheck >/dev/null 2>&1; then
	expect_status "shellcheck accepts the script" 0 shellcheck -s sh "$script"
fi

run_fake "script up" 0 sh "$script" up
expect_eq "up runs the plan's up steps" "$(head -4 "$AR_TMP/want.steps")" "$(cat "$log")"
expect_eq "up echoes each command with + first" \
	"$(grep -v "^#" "$AR_TMP/plan.joined" | head -4 | sed "s/^/+ /")" "$(cat "$AR_TMP/err")"
expect_eq "up echoes exactly four commands" 4 "$(grep -c '^+ docker ' "$AR_TMP/err")"
expect_match "text says docker has no transparent capture" "^# No equivalent here of agentrun run's transparent capture" "$(head -1 "$AR_TMP/plan.txt")"
expect_match "json says it too" "transparent capture" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["note"])' "$AR_TMP/plan.json")"
expect_match "the script says it too" "transparent capture" "$(grep '^# No equivalent' "$script")"
run_fake "script run" 0 sh "$script" run
expect_eq "run runs the agent step" "$(sed -n 5p "$AR_TMP/want.steps")" "$(cat "$log")"
plan_argv "$AR_TMP/plan.json" down >"$AR_TMP/want.down"
run_fake "script down with every object missing" 0 env DOCKER_FAIL=1 sh "$script" down
expect_eq "down removes agent, proxy, networks" "$(cat "$AR_TMP/want.down")" "$(cat "$log")"
expect_eq "down echoes each command" 4 "$(grep -c '^+ docker ' "$AR_TMP/err")"
run_fake "script audit" 0 sh "$script" audit
expect_eq "audit reads the proxy's log" \
	'["exec", "triage-proxy", "agentrun", "audit", "/var/log/agentrun/audit.jsonl"]' "$(cat "$log")"
run_fake "script up stops at the first failure" 3 env DOCKER_FAIL=3 sh "$script" up
expect_eq "only the first command ran" "$(head -1 "$AR_TMP/want.steps")" "$(cat "$log")"
run_fake "script without an argument" 2 sh "$script"
expect_match "usage names the functions" 'usage: .* up\|run\|down\|audit' "$(cat "$AR_TMP/err")"
run_fake "script with an unknown argument" 2 sh "$script" sideways
expect_eq "nothing ran on usage errors" "" "$(cat "$log")"

# network none: no networks, no proxy, no audit
expect_status "render sh (network none)" 0 "$AGENTRUN" render --policy "$AR_TMP/offline.json" \
	--format sh -- id
cp "$AR_TMP/out" "$AR_TMP/offline.sh"
expect_status "sh -n (network none)" 0 sh -n "$AR_TMP/offline.sh"
run_fake "offline up does nothing" 0 sh "$AR_TMP/offline.sh" up
expect_eq "offline up: no docker call" "" "$(cat "$log")"
run_fake "offline run" 0 sh "$AR_TMP/offline.sh" run
expect_match "offline run: --network none, no proxy env" \
	'^\["run", "--rm", "-i", "--name", "offline-agent", "--network", "none", "--read-only", ' \
	"$(cat "$log")"
expect_nomatch "offline run: no proxy variables" 'PROXY' "$(cat "$log")"
run_fake "offline audit fails" 2 sh "$AR_TMP/offline.sh" audit
expect_eq "offline audit says why" \
	"agentrun: policy offline has network none: there is no proxy and no audit log" \
	"$(cat "$AR_TMP/err")"

# --- render agrees with check ---------------------------------------------------------
# What docker would record for the agent's `docker run` flags, as `docker inspect` prints
# it; `agentrun check` must find no drift from the policy in it.
cp "$AR_SOURCE_DIR/tests/integration/argv2inspect.py" "$AR_TMP/argv2inspect.py"
expect_status "render json (network none)" 0 "$AGENTRUN" render --policy "$AR_TMP/offline.json" \
	--format json -- id
cp "$AR_TMP/out" "$AR_TMP/offline.plan.json"
cp "$AR_TMP/plan.json" "$AR_TMP/triage.plan.json"
for p in triage offline; do
	python3 "$AR_TMP/argv2inspect.py" "$AR_TMP/$p.plan.json" >"$AR_TMP/$p.inspect.json" 2>"$AR_TMP/err" ||
		fail "argv2inspect $p: $(cat "$AR_TMP/err")"
	expect_status "check finds no drift in the rendered $p agent" 0 \
		"$AGENTRUN" check --policy "$AR_TMP/$p.json" --inspect "$AR_TMP/$p.inspect.json"
	expect_eq "check's verdict on $p" "$p-agent vs policy $p: 0 drift finding(s)" "$(cat "$AR_TMP/out")"
done
# control: the same plan without --read-only is drift, so the comparison sees the flags
python3 "$AR_TMP/argv2inspect.py" "$AR_TMP/triage.plan.json" --read-only >"$AR_TMP/rw.inspect.json"
expect_status "check sees a plan without --read-only" 1 \
	"$AGENTRUN" check --policy "$AR_TMP/triage.json" --inspect "$AR_TMP/rw.inspect.json"
# and without --cgroupns private docker would share the host's cgroup namespace (v1 hosts)
python3 "$AR_TMP/argv2inspect.py" "$AR_TMP/triage.plan.json" --cgroupns private >"$AR_TMP/cgns.inspect.json"
expect_status "check sees a plan without --cgroupns private" 1 \
	"$AGENTRUN" check --policy "$AR_TMP/triage.json" --inspect "$AR_TMP/cgns.inspect.json"
expect_match "the finding is the cgroup namespace" '^DRIFT cgroupns mode expected private actual host' "$(cat "$AR_TMP/out")"
# and a network made without the inhibit_ipv4 option leaves the host reachable from it
python3 "$AR_TMP/argv2inspect.py" "$AR_TMP/triage.plan.json" -o com.docker.network.bridge.inhibit_ipv4=true >"$AR_TMP/gw.inspect.json"
expect_status "check sees a network where the host has an address" 1 \
	"$AGENTRUN" check --policy "$AR_TMP/triage.json" --inspect "$AR_TMP/gw.inspect.json"
expect_match "the finding is the host path" '^DRIFT host services reachable through triage-net expected no actual yes \(gateway 172\.18\.0\.1\)' "$(cat "$AR_TMP/out")"
python3 "$AR_TMP/argv2inspect.py" "$AR_TMP/triage.plan.json" --internal >"$AR_TMP/nat.inspect.json"
expect_status "check sees a network made without --internal" 1 \
	"$AGENTRUN" check --policy "$AR_TMP/triage.json" --inspect "$AR_TMP/nat.inspect.json"
expect_match "the finding is the outbound NAT" '^DRIFT network triage-net internal expected true actual false' "$(cat "$AR_TMP/out")"

# --- OCI under runc -------------------------------------------------------------------
oci_prereq() {
	[ "$(id -u)" = 0 ] || { echo "needs root"; return; }
	command -v runc >/dev/null 2>&1 || { echo "needs runc"; return; }
	[ -x /bin/busybox ] && LC_ALL=C ldd /bin/busybox 2>&1 | grep -q 'not a dynamic' ||
		echo "needs a static /bin/busybox (busybox-static)"
}
why=$(oci_prereq)
if [ -n "$why" ]; then
	[ "$AR_FAILED" = 0 ] || finish
	skip "OCI part: $why"
fi

bundle="$AR_TMP/bundle"

# run_bundle WHAT ID: the rendered config ($AR_TMP/out) becomes the bundle's config.json,
# with a relative cgroupsPath so runc's cgroups go under this test's own cgroup; runc runs
# it as container ID (removed at exit); the output lands in $AR_TMP/oci.out.
run_bundle() {
	local what=$1 id=$2 got=0
	python3 -c 'import json, sys
config = json.load(open(sys.argv[1]))
config["linux"]["cgroupsPath"] = sys.argv[3]
json.dump(config, open(sys.argv[2], "w"))' "$AR_TMP/out" "$bundle/config.json" "$id"
	on_exit runc delete -f "$id"
	(cd "$bundle" && timeout 60 runc run "$id" </dev/null >"$AR_TMP/oci.out" 2>"$AR_TMP/oci.err") ||
		got=$?
	expect_eq "$what (stderr: $(head -c 300 "$AR_TMP/oci.err"))" 0 "$got"
}
mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs/tmp" "$AR_TMP/data" "$AR_TMP/out.d"
chmod 1777 "$bundle/rootfs/tmp" # runc gives a tmpfs the mode of the directory under it
chmod 0777 "$AR_TMP/out.d"
cp /bin/busybox "$bundle/rootfs/bin/"
for tool in sh id cat touch echo grep mkdir hostname; do
	ln -s busybox "$bundle/rootfs/bin/$tool"
done
echo "kube-secret" >"$AR_TMP/kubeconfig"
echo "data-file" >"$AR_TMP/data/f"
# allow everything but mkdir: proves the profile reached the kernel through config.json
cat >"$AR_TMP/seccomp.json" <<'EOF'
{"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
 "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}
EOF
cat >"$AR_TMP/oci.json" <<EOF
{"name": "ocitest", "network": "none", "user": "1000:1001",
 "kubeconfig": "$AR_TMP/kubeconfig",
 "mounts": [{"source": "$AR_TMP/data", "target": "/data", "readonly": true},
            {"source": "$AR_TMP/out.d", "target": "/out", "readonly": false}],
 "env": {"FOO": "bar baz"}, "seccomp": "$AR_TMP/seccomp.json",
 "limits": {"pids": 32, "memory": "64m", "cpus": "0.5"}}
EOF
# shellcheck disable=SC2016
probe='id -u; id -g; echo "FOO=$FOO"; echo "KUBECONFIG=$KUBECONFIG"; hostname
touch /rootfile 2>&1; touch /tmp/t && echo tmp-ok; cat "$KUBECONFIG"; cat /data/f
touch /data/x 2>&1; echo w >/out/f && echo out-ok; mkdir /tmp/d 2>&1
grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status
cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/memory/memory.limit_in_bytes
cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us'
expect_status "render oci" 0 "$AGENTRUN" render --policy "$AR_TMP/oci.json" --format oci -- \
	/bin/sh -c "$probe"
cid="ar-render-$$"
run_bundle "runc ran the rendered config" "$cid"
expect_eq "the container's output" "1000
1001
FOO=bar baz
KUBECONFIG=/home/agent/.kube/config
ocitest
touch: /rootfile: Read-only file system
tmp-ok
kube-secret
data-file
touch: /data/x: Read-only file system
out-ok
mkdir: can't create directory '/tmp/d': Operation not permitted
CapEff:	0000000000000000
CapBnd:	0000000000000000
NoNewPrivs:	1
Seccomp:	2
32
67108864
50000" "$(cat "$AR_TMP/oci.out")"
expect_eq "the read-write bind was written as uid 1000" "1000 w" \
	"$(stat -c %u "$AR_TMP/out.d/f") $(cat "$AR_TMP/out.d/f")"
runc delete -f "$cid" >/dev/null 2>&1 || true
expect_eq "the container is gone" "" "$(runc list -q | grep -x "$cid" || true)"

# "seccomp": "default": the embedded profile reaches the kernel through config.json and
# lets busybox work, but denies namespace creation (unshare -U works without it here)
ln -s busybox "$bundle/rootfs/bin/unshare"
printf '{"name": "ocidefault", "network": "none", "user": "1000", "seccomp": "default"}' \
	>"$AR_TMP/oci-default.json"
# shellcheck disable=SC2016
expect_status "render oci (default seccomp)" 0 "$AGENTRUN" render \
	--policy "$AR_TMP/oci-default.json" --format oci -- /bin/sh -c \
	'id -u; grep Seccomp: /proc/self/status; mkdir /tmp/d && echo mkdir-ok; unshare -U -r true 2>&1; echo "unshare=$?"'
cid2="ar-render-default-$$"
run_bundle "runc ran with the default profile" "$cid2"
expect_eq "default profile: works, denies unshare" "1000
Seccomp:	2
mkdir-ok
unshare: unshare(0x10000000): Operation not permitted
unshare=1" "$(cat "$AR_TMP/oci.out")"
runc delete -f "$cid2" >/dev/null 2>&1 || true

finish

#!/usr/bin/env bash
# Every example in the README's usage block, run exactly as written (the text of the line
# goes to bash unchanged), after `scripts/install.sh` put `agentrun` on PATH. Each
# example needs an entry below with its exit status and what to prepare; an example
# without one fails the test, so none is skipped silently. What an example needs that
# this machine must not give it is supplied around it, never by editing it: the proxy
# runs in a network namespace of its own (its port and traffic stay there), and
# `--container` talks to a stand-in `docker` that reports the rendered container.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd curl
need_cmd unshare
need_cmd nsenter

# --- the examples, as the README writes them ------------------------------------------
mapfile -t examples < <(python3 - "$AR_SOURCE_DIR/README.md" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
usage = text[text.index("\n## Usage"):]
block = re.search(r"```sh\n(.*?)```", usage, re.S).group(1)
cmd = ""
for line in block.splitlines():
    if not cmd and (not line.strip() or line.lstrip().startswith("#")):
        continue
    cmd += line[:-1] + " " if line.endswith("\\") else line
    if not line.endswith("\\"):
        print(cmd)
        cmd = ""
EOF
)
[ "${#examples[@]}" -ge 7 ] || fail "found ${#examples[@]} examples in the README's usage block"

# --- install as a newcomer would -------------------------------------------------------
prefix=$AR_TMP/prefix
PREFIX=$prefix BUILD_DIR=$AR_BUILD_DIR "$AR_SOURCE_DIR/scripts/install.sh" --no-build \
	>"$AR_TMP/install.out" 2>&1 || fail "install.sh: $(cat "$AR_TMP/install.out")"
expect_match "install.sh put agentrun in PREFIX/bin" "^agentrun: installed $prefix/bin/agentrun," \
	"$(head -1 "$AR_TMP/install.out")"
expect_status "install.sh rejects an unknown argument" 2 "$AR_SOURCE_DIR/scripts/install.sh" --frob
export PATH="$prefix/bin:$AR_TMP/fakebin:$PATH"
expect_eq "agentrun on PATH is the installed one" "$prefix/bin/agentrun" "$(command -v agentrun)"

# --- the working directory the examples assume -----------------------------------------
work=$AR_TMP/work
mkdir -p "$work" "$AR_TMP/fakebin"
chmod 755 "$work"
# no profiles/ here: `--policy offline` finds the installed ones
echo 'print("triage ok")' >"$work/triage.py"
chmod 644 "$work/triage.py"
cd "$work" || exit 1

# A stand-in docker for `check --container triage-agent`: the rendered triage container
# and its network, as docker inspect would show them.
agentrun render --policy triage --format json -- python3 agent.py >"$AR_TMP/plan.json"
python3 "$AR_SOURCE_DIR/tests/integration/argv2inspect.py" "$AR_TMP/plan.json" >"$AR_TMP/inspect.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); json.dump(d[1:], open(sys.argv[2], "w"))' \
	"$AR_TMP/inspect.json" "$AR_TMP/network.json"
cat >"$AR_TMP/fakebin/docker" <<FAKE
#!/bin/sh
case "\$*" in
"inspect --type container triage-agent") cat "$AR_TMP/inspect.json" ;;
"inspect --type network triage-net") cat "$AR_TMP/network.json" ;;
*) echo "Error: No such object: \$4" >&2; exit 1 ;;
esac
FAKE
chmod +x "$AR_TMP/fakebin/docker"

# A stand-in kubectl for `render --format k8s | kubectl apply -f -` (no cluster here):
# it takes the stream from stdin, keeps it, and answers as apply does for each object.
cat >"$AR_TMP/fakebin/kubectl" <<FAKE
#!/bin/sh
[ "\$*" = "apply -f -" ] || { echo "error: unexpected arguments: \$*" >&2; exit 1; }
tee "$AR_TMP/applied.yaml" | sed -n 's/^kind: \(.*\)/\1 created/p'
FAKE
chmod +x "$AR_TMP/fakebin/kubectl"

# The OCI example's rootfs: busybox (its sh and id) and the mount points a container needs.
mkdir -p rootfs/bin rootfs/tmp rootfs/proc rootfs/sys rootfs/dev
chmod 1777 rootfs/tmp
cp /bin/busybox rootfs/bin/
ln -s busybox rootfs/bin/sh
ln -s busybox rootfs/bin/id
on_exit "runc delete -f agent-1"

# run_example STATUS CMD: the README line through bash, as written.
run_example() {
	expect_status "README: $2" "$1" bash -c "$2"
}

# The proxy runs until stopped: start it in a netns of its own, send it one allowed-host
# request that cannot resolve there and one denied request, stop it.
run_proxy_example() {
	unshare --net bash -c "ip link set lo up && exec $1" >"$AR_TMP/proxy.out" 2>&1 &
	local pid=$!
	on_exit "kill -9 $pid"
	local i ns=/proc/$pid/ns/net
	for i in $(seq 1 100); do
		nsenter --net="$ns" bash -c '(exec 3<>/dev/tcp/127.0.0.1/3128)' 2>/dev/null && break
		sleep 0.05
	done
	local code
	code=$(nsenter --net="$ns" curl -s -o /dev/null -w '%{http_code}' -x http://127.0.0.1:3128 \
		http://denied.invalid/ || true)
	expect_eq "README proxy: a host off the allow-list gets 403" 403 "$code"
	kill -TERM "$pid"
	wait "$pid" || true
	expect_match "README proxy: stopped with a summary" '^agentrun proxy stopped: 1 request' \
		"$(grep '^agentrun proxy stopped' "$AR_TMP/proxy.out" || true)"
}

# wait_sandbox POLICY: the name of a live sandbox of POLICY (NAME-PID), within 10 s.
wait_sandbox() {
	local i d
	for i in $(seq 1 100); do
		for d in /run/agentrun/"$1"-*; do
			[ -f "$d/state" ] && kill -0 "${d##*-}" 2>/dev/null && {
				basename "$d"
				return 0
			}
		done
		sleep 0.1 || true
		: "$i"
	done
	return 1
}

for ex in "${examples[@]}"; do
	case $ex in
	"agentrun -- sh -c 'id; touch /etc/x'")
		run_example 1 "$ex"
		expect_match "README: runs as a dynamic uid" '^uid=(6[1-5][0-9]{3}) gid=\1 ' "$(cat "$AR_TMP/out")"
		expect_match "README: /etc is read-only" 'Read-only file system' "$(cat "$AR_TMP/err")"
		;;
	"agentrun --policy offline --memory 128m --mount \"\$PWD:/work\" -- python3 /work/triage.py")
		run_example 0 "$ex"
		expect_eq "README: the script ran from the mounted directory" "triage ok" "$(cat "$AR_TMP/out")"
		;;
	"agentrun proxy --listen 127.0.0.1:3128 "*)
		run_proxy_example "$ex"
		;;
	"agentrun audit audit.jsonl "*)
		run_example 0 "$ex"
		expect_match "README: audit counts the denied request" '^1 request\(s\) to 1 host\(s\): 0 allowed, 0 failed, 1 denied' \
			"$(tail -n 1 "$AR_TMP/out")"
		;;
	"agentrun render --policy triage -- python3 agent.py")
		run_example 0 "$ex"
		expect_match "README: render prints docker commands" '^docker network create --internal' "$(grep -v '^#' "$AR_TMP/out" | head -1)"
		;;
	"agentrun check --policy triage --container triage-agent")
		run_example 0 "$ex"
		expect_eq "README: the rendered container has no drift" \
			"triage-agent vs policy triage: 0 drift finding(s)" "$(cat "$AR_TMP/out")"
		;;
	"agentrun check -p offline --pid \$\$ "*)
		run_example 1 "$ex"
		expect_match "README: a shell is not sandboxed" '^pid [0-9]+ vs policy offline: [0-9]+ drift finding' \
			"$(tail -n 1 "$AR_TMP/out")"
		;;
	"agentrun render --policy triage --format k8s -- python3 agent.py | kubectl apply -f -")
		run_example 0 "$ex"
		expect_match "README k8s: the Job reached kubectl" '^Job created$' "$(cat "$AR_TMP/out")"
		expect_eq "README k8s: the applied stream validates as rendered" "0" \
			"$(agentrun check --policy triage --manifest "$AR_TMP/applied.yaml" >/dev/null; echo $?)"
		;;
	"agentrun render --policy offline --format oci --rootfs "*)
		need_cmd runc
		[ -x /bin/busybox ] || skip "needs busybox-static"
		run_example 0 "$ex"
		expect_match "README oci: the container ran as the policy's user" '^uid=1000 gid=1000' \
			"$(cat "$AR_TMP/out")"
		;;
	"agentrun check --policy offline --bundle bundle")
		run_example 0 "$ex"
		expect_eq "README oci: the rendered bundle has no drift" \
			"bundle bundle vs policy offline: 0 drift finding(s)" "$(cat "$AR_TMP/out")"
		;;
	"echo '{\"name\": \"web\", "*)
		run_example 0 "$ex"
		;;
	"agentrun --policy web.json -- sleep 300 & "*)
		run_example 0 "$ex"
		web=$(wait_sandbox web) || fail "README: no live web sandbox after 10 s"
		on_exit "kill -TERM ${web#web-}"
		;;
	"agentrun ps "*)
		run_example 0 "$ex"
		expect_match "README ps: lists the web sandbox" "^$web " "$(cat "$AR_TMP/out")"
		;;
	"agentrun check --name web "*)
		run_example 0 "$ex"
		expect_eq "README check --name: a healthy sandbox has no drift" \
			"$web vs policy web: 0 drift finding(s)" "$(tail -n 1 "$AR_TMP/out")"
		;;
	"agentrun audit web "*)
		run_example 0 "$ex"
		expect_match "README audit NAME: nothing tried yet" '^0 request' "$(tail -n 1 "$AR_TMP/out")"
		;;
	"agentrun gc "*)
		run_example 0 "$ex"
		if [ -d "/run/agentrun/$web" ]; then pass "README gc: the live sandbox is kept"; else
			fail "README gc removed a live sandbox"; fi
		;;
	*)
		fail "README example not covered by this test (add it here with its exit status): $ex"
		;;
	esac
done
finish

#!/usr/bin/env bash
# The live docker lane: Debian's dockerd, started inside a network and mount namespace of
# its own (tests/docker/dockerd.sh), runs what `agentrun render --format sh` prints for
# each shipped profile, for real: up, run, audit, down. A local origin container is the
# allowed host. From inside the agent: the restrictions, the origin through the proxy
# (200), a denied host (403 with its reason), no way around the proxy, no way to the
# host's services. Then `check --container` on the rendered container (0 findings) and on
# drifted ones (exactly the expected finding each, no secret value printed), and
# `check --pid` on the container's init agreeing with it. A policy with secrets: the
# values in the proxy container only, the agent's placeholders replaced on the way to a
# TLS origin (the proxy terminates with the CA it hands the agent through a volume),
# check clean, a real value drift. The host's network must be
# exactly as found: links, routes, iptables, nft and forwarding compared before and after.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/docker/dockerd.sh
. "$(dirname "$0")/dockerd.sh"
need_root
for c in unshare nsenter ip iptables-save ip6tables-save nft busybox curl python3 socat; do need_cmd "$c"; done
[ -x "$AR_DOCKER" ] && [ -x "$AR_DOCKERD" ] || skip "needs Debian's docker.io ($AR_DOCKER, $AR_DOCKERD)"
started=$(date +%s)

host_net_snapshot "$AR_TMP/net-before"

dockerd_start || fail "dockerd did not start"
[ "$AR_FAILED" = 0 ] || finish
expect_eq "dockerd runs in its own network namespace" no \
	"$([ "$DOCKERD_NETNS" = "$(readlink /proc/self/ns/net)" ] && echo yes || echo no)"

# --- images, made here ---------------------------------------------------------------
lane_image ar-lane:1 "$(command -v curl)"
DOCKER=$AR_DOCKER BUILD_DIR=$AR_BUILD_DIR "$AR_SOURCE_DIR/scripts/docker-image.sh" >"$AR_TMP/img.out" 2>&1 ||
	fail "docker-image.sh: $(cat "$AR_TMP/img.out")"
version=$("$AGENTRUN" version | awk '{print $2}')
expect_eq "the agentrun image runs agentrun as 65534" "65534:65534 agentrun $version" \
	"$(docker image inspect -f '{{.Config.User}}' "agentrun:$version") $(docker run --rm "agentrun:$version" version)"

# A service on the host (here: dockerd's namespace) that no agent may reach.
mkdir -p "$AR_TMP/hostwww" && echo "host ok" >"$AR_TMP/hostwww/index.html"
nsenter --net="/proc/$DOCKERD_PID/ns/net" busybox httpd -f -p 0.0.0.0:8080 -h "$AR_TMP/hostwww" &
host_httpd=$!
on_exit "kill $host_httpd"

# The host's resolver (here: 127.0.0.1:53 in dockerd's namespace, its "dns"): a listener
# that writes down the names it is asked for and never answers.
nsenter --net="/proc/$DOCKERD_PID/ns/net" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 53))
while True:
    d, _ = s.recvfrom(512); i, labels = 12, []
    while i < len(d) and d[i]: labels.append(d[i + 1:i + 1 + d[i]].decode(errors="replace")); i += 1 + d[i]
    open(sys.argv[1], "a").write(".".join(labels) + "\n")
' "$AR_TMP/dns.log" &
dns_listener=$!
on_exit "kill $dns_listener"
touch "$AR_TMP/dns.log"

# --- the profiles, as a user would adapt them: our image, our origin ------------------
mkdir -p "$AR_TMP/logs" "$AR_TMP/kube"
echo "apiVersion: v1" >"$AR_TMP/kube/config"
python3 - "$AR_SOURCE_DIR/profiles" "$AR_TMP" <<'EOF'
import json, os, sys
src, tmp = sys.argv[1], sys.argv[2]
for f in sorted(f for f in os.listdir(src) if f.endswith(".json")):  # apparmor/: no policy
    p = json.load(open(os.path.join(src, f)))
    p["image"] = "ar-lane:1"
    if p.get("network") == "proxy":
        p["allowed_hosts"] = p["allowed_hosts"] + ["lane-origin"]
        p.setdefault("proxy", {})["allow_private"] = ["172.16.0.0/12"]
    if p.get("kubeconfig"): p["kubeconfig"] = tmp + "/kube/config"
    for m in p.get("mounts", []): m["source"] = tmp + "/logs"
    json.dump(p, open(os.path.join(tmp, f), "w"))
EOF

# probe [IP...]: what the agent runs; proxy policies also try the origin by name and by
# address without the proxy, and each IP:8080 (the host's service).
probe() {
	cat <<-'EOF'
		echo "ids=$(id -u):$(id -g)"
		grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr -d '\t' | tr ':' '='
		if touch /probe 2>/dev/null; then echo rootfs=rw; else echo rootfs=ro; fi
		cg=/sys/fs/cgroup # cgroup v1 (hybrid hosts), else v2
		echo "pids=$(cat $cg/pids/pids.max 2>/dev/null || cat $cg/pids.max)"
		echo "memory=$(cat $cg/memory/memory.limit_in_bytes 2>/dev/null || cat $cg/memory.max)"
	EOF
	[ $# -gt 0 ] || return 0
	cat <<-'EOF'
		echo "allowed=$(curl -s -m 5 -o /dev/null -w '%{http_code}' http://lane-origin/)"
		echo "denied=$(curl -s -m 5 -w ' %{http_code}' http://denied.example/ | tr -d '\n')"
		curl -s -m 3 --noproxy '*' http://lane-origin/ >/dev/null; echo "noproxy_name=$?"
		nslookup lane-exfil.example >/dev/null 2>&1; echo "dns_tried=$?"
	EOF
	local ip
	for ip in "$@"; do
		echo "curl -s -m 2 --noproxy '*' http://$ip/ >/dev/null; echo \"direct_$ip=\$?\""
	done
}

# run_sleeping NAME: the rendered agent of policy $P running `sleep 120` in the background,
# as the script's `run` starts it; returns once NAME-agent is running.
run_sleeping() {
	"$AGENTRUN" render --policy "$P" --format sh -- sleep 120 >"$AR_TMP/$1-sleep.sh"
	sh "$AR_TMP/$1-sleep.sh" run >/dev/null 2>&1 &
	for _ in $(seq 1 100); do
		[ "$(docker inspect -f '{{.State.Running}}' "$1-agent" 2>/dev/null)" = true ] && return 0
		sleep 0.1
	done
	fail "$1-agent did not start"
}

gateway() { docker network inspect -f '{{(index .IPAM.Config 0).Gateway}}' "$1"; }

# --- triage: network proxy -----------------------------------------------------------
P=$AR_TMP/triage.json
"$AGENTRUN" render --policy "$P" --format sh -- true >"$AR_TMP/up.sh" || fail "render"
expect_status "triage: up" 0 sh "$AR_TMP/up.sh" up
docker run -d --name lane-origin --network triage-egress ar-lane:1 httpd -f -p 80 -h /www >/dev/null
origin_ip=$(docker inspect -f '{{(index .NetworkSettings.Networks "triage-egress").IPAddress}}' lane-origin)
gw_net=$(gateway triage-net) gw_egress=$(gateway triage-egress)
# the default bridge's gateway is docker0's address
gw_bridge=$(nsenter --net="/proc/$DOCKERD_PID/ns/net" ip -4 -o addr show docker0 | awk '{sub(/\/.*/, "", $4); print $4}')
"$AGENTRUN" render --policy "$P" --format sh -- sh -c "$(probe "$origin_ip" "$gw_net:8080" \
	"$gw_egress:8080" "$gw_bridge:8080")" >"$AR_TMP/triage.sh"
expect_status "triage: run" 0 sh "$AR_TMP/triage.sh" run
out=$(cat "$AR_TMP/out")
for want in ids=1000:1000 CapEff=0000000000000000 NoNewPrivs=1 Seccomp=2 rootfs=ro pids=64 \
	memory=268435456 allowed=200 'noproxy_name=(6|7|28)'; do
	expect_match "triage agent: $want" "^$want\$" "$out"
done
expect_match "triage agent: denied with 403 and the reason" \
	'^denied=.*denied\.example:80 is not in the allow-list.* 403$' "$out"
for ip in "$origin_ip" "$gw_net:8080" "$gw_egress:8080" "$gw_bridge:8080"; do
	expect_match "triage agent: no way to $ip without the proxy" "^direct_$ip=(7|28)\$" "$out"
done
# DNS: docker's embedded resolver answers the names of containers on the agent's own
# network (the proxy) and forwards other names to the daemon's "dns" (192.0.2.53, an
# address of dockerd's own namespace: dockerd.sh) from the agent's own namespace, where the
# internal network without a host address has no path: the query is not answered, and
# nothing reaches the host's resolver.
expect_match "DNS: the agent's query for an outside name gets no answer" '^dns_tried=1$' "$out"
expect_eq "DNS: nothing reached the host's resolver" "" "$(cat "$AR_TMP/dns.log")"
# control: the same service through a gateway of a network made with --internal alone
docker network create --internal lane-plain >/dev/null
code=$(docker run --rm --network lane-plain ar-lane:1 curl -s -m 3 "http://$(gateway lane-plain):8080/" || true)
expect_eq "control: --internal alone reaches the host's service (moby/libnetwork#1151)" "host ok" "$code"
docker network rm lane-plain >/dev/null

expect_status "triage: audit" 0 sh "$AR_TMP/triage.sh" audit
expect_match "audit: the origin allowed and served" '^lane-origin +1 +0 +0 ' "$(cat "$AR_TMP/out")"
expect_match "audit: the denied host" '^denied\.example +0 +0 +1 ' "$(cat "$AR_TMP/out")"

# check on the rendered agent, alive: no drift; its init seen through /proc agrees
run_sleeping triage
expect_status "check --container on the rendered agent" 0 "$AGENTRUN" check -p "$P" -c triage-agent
expect_eq "check --container: the verdict" "triage-agent vs policy triage: 0 drift finding(s)" "$(cat "$AR_TMP/out")"
pid=$(docker inspect -f '{{.State.Pid}}' triage-agent)
expect_status "check --pid on the agent's init" 1 "$AGENTRUN" check -p "$P" --pid "$pid"
# what docker cannot look like from /proc: agentrun run's proxy address, the credential
# directories under the host's /home and /root, the shared namespaces docker's default
# leaves (uts and the network are the container's own)
expect_nomatch "check --pid agrees on what both see" \
	'^DRIFT (user|group|capabilities|no_new_privs|seccomp|read-only rootfs|tmpfs /tmp|kubeconfig mount|mount /logs|pids limit|memory limit|cpu limit|secret in) ' \
	"$(cat "$AR_TMP/out")"
docker rm -f triage-agent >/dev/null

# drifted agents: the rendered argv with one change each, and exactly one finding
"$AGENTRUN" render --policy "$P" --format json -- sleep 120 >"$AR_TMP/plan.json"
# agent_argv NAME PYTHON-EDIT: the rendered agent's `docker run` arguments, detached, named
# NAME, edited by PYTHON-EDIT (over `a`, the argv after `docker run`; drop() and put()).
agent_argv() {
	python3 - "$AR_TMP/plan.json" "$1" "$2" <<'EOF'
import json, sys
plan, name, edit = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
a = [s for s in plan["steps"] if s["label"] == "agent"][0]["argv"][2:]
a.remove("--rm"); a.remove("-i")
a[a.index("--name") + 1] = name
def drop(flag, n=1):
    i = a.index(flag); del a[i:i + 1 + n]
def put(*flags):
    a[0:0] = list(flags)
exec(edit)
print("\n".join(a))
EOF
}

# drift NAME FINDING PYTHON-EDIT [PID-FINDING]: run agent_argv NAME PYTHON-EDIT detached
# as NAME; check --container must report
# exactly FINDING, and check --pid on its init a finding matching PID-FINDING (the same
# drift seen through /proc), when given.
drift() {
	local name=$1 finding=$2 edit=$3 pid_finding=${4:-}
	mapfile -t argv < <(agent_argv "$name" "$edit")
	docker run -d "${argv[@]}" >/dev/null 2>"$AR_TMP/drift.err" || { fail "$name: docker run: $(cat "$AR_TMP/drift.err")"; return; }
	expect_status "drift $name: check --container" 1 "$AGENTRUN" check -p "$P" -c "$name"
	expect_eq "drift $name: exactly its finding" "$finding" \
		"$(sed -n 's/^DRIFT \(.*\) expected .*/\1/p' "$AR_TMP/out" | sort | tr '\n' ';' | sed 's/;$//')"
	expect_nomatch "drift $name: no secret value printed" 'ghp_lane|pwlane' "$(cat "$AR_TMP/out" "$AR_TMP/err")"
	cp "$AR_TMP/out" "$AR_TMP/drift-$name.out"
	expect_status "drift $name: check --container --json" 1 "$AGENTRUN" check -p "$P" -c "$name" --json
	expect_nomatch "drift $name: no secret value in --json" 'ghp_lane|pwlane' "$(cat "$AR_TMP/out")"
	if [ -n "$pid_finding" ]; then
		local pid
		pid=$(docker inspect -f '{{.State.Pid}}' "$name")
		expect_status "drift $name: check --pid" 1 "$AGENTRUN" check -p "$P" --pid "$pid"
		expect_match "drift $name: --pid sees it too" "$pid_finding" "$(cat "$AR_TMP/out")"
		expect_nomatch "drift $name: --pid prints no secret value" 'ghp_lane|pwlane' "$(cat "$AR_TMP/out")"
	fi
	docker rm -f "$name" >/dev/null
}
drift privileged "privileged" 'put("--privileged")' '^DRIFT capabilities CapBnd '
drift cap-add "cap-add" 'put("--cap-add", "NET_ADMIN")' '^DRIFT capabilities CapBnd '
# (--pid compares namespaces with the real host's, and this dockerd's "host" is its own
# namespace: the two cannot agree here, so --pid is not asked)
drift net-host "network mode" 'a[a.index("--network") + 1] = "host"'
drift docker-sock "sensitive mount /var/run/docker.sock" \
	"put('-v', '$AR_TMP/dockerd/docker.sock:/var/run/docker.sock')" '^DRIFT sensitive mount /var/run/docker.sock '
drift secret-env "secret in environment DATABASE_URL;secret in environment GITHUB_TOKEN" \
	'put("-e", "GITHUB_TOKEN=ghp_lane0123456789", "-e", "DATABASE_URL=postgres://u:pwlane@db/x")' \
	'^DRIFT secret in environment DATABASE_URL '
drift user-0 "user" 'a[a.index("--user") + 1] = "0:0"' '^DRIFT user expected a dynamic uid = gid in 61184-65519 \(agentrun run\), the caller.s own \(agentrun run by a user\) or 1000:1000 \(rendered\) actual uid 0 gid 0'
drift bare-uid "user" 'a[a.index("--user") + 1] = "1000"' '^DRIFT group expected 1000 actual 0'
drift rw-root "read-only rootfs" 'a.remove("--read-only")' '^DRIFT read-only rootfs '
drift no-pids "pids limit" 'drop("--pids-limit")' '^DRIFT pids limit expected 64 actual unlimited'
drift seccomp "seccomp" 'put("--security-opt", "seccomp=unconfined")' '^DRIFT seccomp expected filter actual disabled'
# a container that was never started: checked as configured, and said so
mapfile -t created < <(agent_argv lane-created pass)
docker create "${created[@]}" >/dev/null
expect_status "a created container: check --container" 0 "$AGENTRUN" check -p "$P" -c lane-created
expect_match "a created container: the note says it never started" \
	'^NOTE container lane-created has never started \(state created\)' "$(cat "$AR_TMP/out")"
docker rm -f lane-created >/dev/null
expect_match "bare uid: says the group is missing" 'actual 1000 \(no group' "$(cat "$AR_TMP/drift-bare-uid.out")"

expect_status "triage: down" 0 sh "$AR_TMP/triage.sh" down
docker rm -f lane-origin >/dev/null
# a network made without --internal: outbound NAT and the host path, each a finding
docker network create triage-net >/dev/null
drift plain-net "host services reachable through triage-net;network triage-net internal" 'pass'
docker network rm triage-net >/dev/null
expect_eq "down left no container" "" "$(docker ps -aq)"

# --- secrets: the values in the proxy container only, placeholders in the agent ---------
# A TLS origin `lane-tls` (socat, its certificate from a test CA the proxy trusts through
# proxy.upstream_ca) writes down the request head it gets, then answers; the agent sends
# its placeholders, the proxy terminates and puts the real values in.
mkdir -p "$AR_TMP/tls"
bash "$AR_SOURCE_DIR/tests/integration/secrets/mkca.sh" "$AR_TMP/tls" lane-tls || fail "mkca"
chmod 644 "$AR_TMP/tls/ca.pem"
lane_image ar-lane-tls:1 "$(command -v socat)"
cat >"$AR_TMP/tls/handler.sh" <<'EOF'
#!/bin/sh
# one request: its head to stderr (the container's log), then the answer
while IFS= read -r l; do
	echo "$l" >&2
	[ "$l" = "$(printf '\r')" ] && break
done
printf 'HTTP/1.0 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n'
EOF
chmod 755 "$AR_TMP/tls/handler.sh"
K_REAL="pwlane-K-$$-$RANDOM" T_REAL="pwlane-T-$$-$RANDOM"
printf '%s\n' "$T_REAL" >"$AR_TMP/t-token"
chmod 644 "$AR_TMP/t-token" # the proxy reads it as 65534
P=$AR_TMP/lsec.json
printf '{"name": "lsec", "image": "ar-lane:1", "allowed_hosts": ["lane-tls:443"],
 "proxy": {"allow_private": ["172.16.0.0/12"], "upstream_ca": "%s"},
 "secrets": {"K": {"from": "env:LANE_K", "hosts": ["lane-tls:443"]},
             "T": {"from": "file:%s", "hosts": ["lane-tls:443"]}}}' "$AR_TMP/tls/ca.pem" "$AR_TMP/t-token" >"$P"
# shellcheck disable=SC2016 # expanded in the agent
"$AGENTRUN" render --policy "$P" --format sh -- sh -c 'echo "K=$K"; echo "T=$T"
echo "ca=$(grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE")"
echo "tls=$(curl -sS -m 10 -H "Authorization: Bearer $K" -H "X-T: $T" https://lane-tls/s 2>&1)"' >"$AR_TMP/lsec.sh" ||
	fail "render lsec"
expect_eq "secrets: no value in the rendered plan" 0 "$(grep -c -e "$K_REAL" -e "$T_REAL" "$AR_TMP/lsec.sh" || true)"
expect_status "secrets: up (the env: value from the caller's environment)" 0 env LANE_K="$K_REAL" sh "$AR_TMP/lsec.sh" up
docker run -d --name lane-tls --network lsec-egress -v "$AR_TMP/tls:/tls:ro" ar-lane-tls:1 socat \
	OPENSSL-LISTEN:443,reuseaddr,cert=/tls/lane-tls.pem,key=/tls/lane-tls.key,verify=0 SYSTEM:/tls/handler.sh >/dev/null
expect_status "secrets: run" 0 sh "$AR_TMP/lsec.sh" run
out=$(cat "$AR_TMP/out")
expect_match "secrets: the agent's K is a placeholder" '^K=agentrun-secret-K-[0-9a-f]{32}$' "$out"
expect_match "secrets: the agent's T is a placeholder" '^T=agentrun-secret-T-[0-9a-f]{32}$' "$out"
expect_match "secrets: the agent trusts the proxy's roots and CA" '^ca=[1-9][0-9]*$' "$out"
expect_match "secrets: the TLS origin answered through the terminating proxy" '^tls=ok$' "$out"
timeout 20 docker wait lane-tls >/dev/null 2>&1 || true # one connection, then it exits
docker logs lane-tls >"$AR_TMP/lane-tls.log" 2>&1
expect_eq "secrets: the origin got K's real value (env: source)" 1 "$(grep -c "^Authorization: Bearer $K_REAL" "$AR_TMP/lane-tls.log")"
expect_eq "secrets: the origin got T's real value (file: source)" 1 "$(grep -c "^X-T: $T_REAL" "$AR_TMP/lane-tls.log")"
[ "$(grep -c "^X-T" "$AR_TMP/lane-tls.log")" = 1 ] || echo "lane-tls log: $(head -c 2000 "$AR_TMP/lane-tls.log")"
docker rm -f lane-tls >/dev/null
expect_status "secrets: audit" 0 sh "$AR_TMP/lsec.sh" audit
expect_match "secrets: the audit counts the origin" '^lane-tls +' "$(cat "$AR_TMP/out")"
docker cp lsec-proxy:/var/log/agentrun/audit.jsonl "$AR_TMP/lsec-audit" >/dev/null 2>&1 || fail "docker cp the audit"
expect_match "secrets: the audit says what was put in" '"secret":"K,T","secret_action":"injected"' "$(cat "$AR_TMP/lsec-audit")"
expect_eq "secrets: no value in the audit" 0 "$(grep -c -e "$K_REAL" -e "$T_REAL" "$AR_TMP/lsec-audit" || true)"
run_sleeping lsec
docker inspect lsec-agent >"$AR_TMP/lsec-inspect.json"
expect_eq "secrets: no value in the agent container" 0 "$(grep -c -e "$K_REAL" -e "$T_REAL" "$AR_TMP/lsec-inspect.json" || true)"
expect_status "secrets: check --container on the rendered agent" 0 "$AGENTRUN" check -p "$P" -c lsec-agent
docker rm -f lsec-agent >/dev/null
"$AGENTRUN" render --policy "$P" --format json -- sleep 120 >"$AR_TMP/plan.json"
drift lsec-real "secret K" 'a[[i for i, x in enumerate(a) if x.startswith("K=")][0]] = "K=pwlane-real-value"'
expect_status "secrets: down" 0 sh "$AR_TMP/lsec.sh" down
expect_eq "secrets: down removed the CA volume" "" "$(docker volume ls -q -f name=lsec-ca)"
docker volume rm lsec-audit >/dev/null 2>&1 || true

# --- offline: network none -----------------------------------------------------------
P=$AR_TMP/offline.json
"$AGENTRUN" render --policy "$P" --format sh -- sh -c "$(probe)" >"$AR_TMP/offline.sh" || fail "render offline"
expect_status "offline: up" 0 sh "$AR_TMP/offline.sh" up
expect_status "offline: run" 0 sh "$AR_TMP/offline.sh" run
out=$(cat "$AR_TMP/out")
for want in ids=1000:1000 CapEff=0000000000000000 NoNewPrivs=1 Seccomp=2 rootfs=ro pids=64 memory=268435456; do
	expect_match "offline agent: $want" "^$want\$" "$out"
done
expect_status "offline: audit says there is no proxy" 2 sh "$AR_TMP/offline.sh" audit
run_sleeping offline
expect_status "offline: check --container" 0 "$AGENTRUN" check -p "$P" -c offline-agent
expect_status "offline: down" 0 sh "$AR_TMP/offline.sh" down

# What dockerd did to the network it runs in (here its own; on a host, the host's), for
# docs/render.md: forwarding on, a FORWARD policy DROP, its rules, docker0.
in_docker_ns() { nsenter --net="/proc/$DOCKERD_PID/ns/net" "$@"; }
expect_eq "dockerd turned ip_forward on in its namespace" 1 "$(in_docker_ns sysctl -n net.ipv4.ip_forward)"
expect_eq "dockerd set the FORWARD policy to DROP" "-P FORWARD DROP" "$(in_docker_ns iptables -S FORWARD | head -1)"
rules=$(in_docker_ns iptables-save | grep -c '^-A' || true)
nft_lines=$(in_docker_ns nft list ruleset | wc -l)
echo "measured: dockerd's namespace has $rules iptables rules and $nft_lines nft lines"
expect_match "dockerd wrote its iptables rules ($rules)" '^([2-9][0-9]|[0-9]{3,})$' "$rules"
expect_match "dockerd left docker0" 'docker0' "$(in_docker_ns ip -o link show docker0)"
dockerd_stop
host_net_snapshot "$AR_TMP/net-after"
for f in links routes iptables nft forwarding; do
	expect_eq "the host's $f are as found" "" "$(diff -u "$AR_TMP/net-before/$f" "$AR_TMP/net-after/$f")"
done
expect_eq "dockerd's directories are gone" "" "$(ls -d "$AR_TMP/dockerd" 2>/dev/null)"
expect_eq "its cgroups are gone" "" "$(ls -d /sys/fs/cgroup"$DOCKERD_CGROUP" /sys/fs/cgroup/*"$DOCKERD_CGROUP" 2>/dev/null)"

elapsed=$(($(date +%s) - started))
expect_match "the lane took under 5 minutes (${elapsed}s)" '^[0-9]+$' "$([ "$elapsed" -lt 300 ] && echo "$elapsed")"
finish

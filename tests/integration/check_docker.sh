#!/usr/bin/env bash
# agentrun check --inspect / --container: the CLI over saved docker inspect fixtures, a
# fake `docker` on PATH for --container (no daemon needed), exit codes 0/1/2 and the
# messages for bad input, a missing docker and a failing docker.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
A=$AGENTRUN
D=$AR_SOURCE_DIR/tests/unit/check/data
P=$D/policy-agent.json

# --- the over-privileged bastion: every finding, in table order --------------------
expect_status "bastion drifts: exit 1" 1 "$A" check --policy "$P" --inspect "$D/inspect-bastion.json"
expect_eq "bastion: the findings" "read-only rootfs
cap-drop
cap-add
privileged
no-new-privileges
seccomp
apparmor
pid mode
ipc mode
cgroupns mode
devices
group-add
network mode
pids limit
memory limit
cpu limit
memory+swap limit
user
proxy variable HTTP_PROXY
proxy variable HTTPS_PROXY
proxy variable http_proxy
proxy variable https_proxy
env ANTHROPIC_BASE_URL
env KUBECONFIG
tmpfs /tmp
kubeconfig mount
mount /logs
sensitive mount /var/run/docker.sock
sensitive mount /root/.aws
sensitive mount /root/.kube/config
sensitive mount /host
extra mount /var/lib/bastion
secret in environment AWS_ACCESS_KEY_ID
secret in environment AWS_SECRET_ACCESS_KEY
secret in environment GITHUB_TOKEN
secret in environment DB_PASSWORD" "$(sed -n 's/^DRIFT \(.*\) expected .* actual .*/\1/p' "$AR_TMP/out")"
expect_eq "bastion: first finding and its fix" "DRIFT read-only rootfs expected true actual false
  fix: --read-only" "$(head -2 "$AR_TMP/out")"
expect_eq "bastion: summary line" "bastion vs policy agent: 36 drift finding(s)" "$(tail -1 "$AR_TMP/out")"
expect_eq "bastion: every finding has a fix line" 36 "$(grep -c '^  fix: ' "$AR_TMP/out")"
expect_nomatch "bastion: no secret value printed" "wJalrXUtnFEMI|ghp_notAReal|hunter2|AKIAEXAMPLE" "$(cat "$AR_TMP/out")"
expect_eq "bastion: nothing on stderr" "" "$(cat "$AR_TMP/err")"

expect_status "bastion --json: exit 1" 1 "$A" check --policy "$P" --inspect "$D/inspect-bastion.json" --json
expect_eq "bastion --json: subject, policy, count, findings" "bastion agent 36 36 privileged" \
	"$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["subject"], d["policy"], d["drift"], len(d["findings"]), d["findings"][3]["what"])' "$AR_TMP/out")"

# --- a hardened container that follows the policy -----------------------------------
expect_status "hardened: exit 0" 0 "$A" check --policy "$P" --inspect "$D/inspect-hardened.json"
# a saved container inspect says nothing of its network: a note, not drift
note='NOTE network agent-net was not inspected: its --internal setting and the host'"'"'s address on it are not checked (use --container, or save `docker inspect CONTAINER agent-net`)'
expect_eq "hardened: note and verdict" "$note
agent-agent vs policy agent: 0 drift finding(s)" "$(cat "$AR_TMP/out")"
expect_status "hardened, a single object: exit 0" 0 "$A" check --policy "$P" --inspect "$D/inspect-hardened-object.json"
expect_status "hardened on stdin (--inspect -): exit 0" 0 \
	sh -c '"$1" check --policy "$2" --inspect - <"$3"' sh "$A" "$P" "$D/inspect-hardened.json"
expect_eq "stdin: verdict" "agent-agent vs policy agent: 0 drift finding(s)" "$(tail -1 "$AR_TMP/out")"
expect_status "offline container vs offline policy: exit 0" 0 \
	"$A" check --policy "$D/policy-offline.json" --inspect "$D/inspect-offline.json"
expect_status "hardened --json: exit 0" 0 "$A" check --policy "$P" --inspect "$D/inspect-hardened.json" --json
expect_eq "hardened --json" '{"subject": "agent-agent", "policy": "agent", "drift": 0, "findings": [], "notes": ["'"${note#NOTE }"'"]}' "$(cat "$AR_TMP/out")"

# --- --container through a fake docker CLI ------------------------------------------
mkdir -p "$AR_TMP/bin" "$AR_TMP/empty"
cat >"$AR_TMP/bin/docker" <<FAKE
#!/bin/sh
# fake docker: knows one container
if [ "\$*" = "inspect --type container agent-agent" ]; then cat "$D/inspect-hardened.json"; exit 0; fi
if [ "\$*" = "inspect --type container bastion" ]; then cat "$D/inspect-bastion.json"; exit 0; fi
if [ "\$*" = "inspect --type container empty" ]; then echo '[]'; exit 0; fi
if [ "\$*" = "inspect --type network agent-net" ]; then cat "$AR_TMP/net.json"; exit 0; fi
echo '[]'
echo "Error: No such container: \$4" >&2
echo "second line" >&2
exit 1
FAKE
chmod +x "$AR_TMP/bin/docker"
cat >"$AR_TMP/net.json" <<'NET'
[{"Name": "agent-net", "Driver": "bridge", "Internal": true,
  "IPAM": {"Config": [{"Subnet": "172.19.0.0/16", "Gateway": "172.19.0.1"}]},
  "Options": {"com.docker.network.bridge.inhibit_ipv4": "true"}}]
NET
expect_status "--container agent-agent: exit 0" 0 env PATH="$AR_TMP/bin:$PATH" "$A" check --policy "$P" --container agent-agent
expect_eq "--container: verdict (its network inspected too)" "agent-agent vs policy agent: 0 drift finding(s)" "$(cat "$AR_TMP/out")"
# the same network made as docker's manual shows (--internal alone): the host path
sed -i 's/"true"}}]/"false"}}]/' "$AR_TMP/net.json"
expect_status "--container on a network where the host has an address: exit 1" 1 env PATH="$AR_TMP/bin:$PATH" "$A" check -p "$P" -c agent-agent
expect_eq "--container: the host path finding" "DRIFT host services reachable through agent-net expected no actual yes (gateway 172.19.0.1)
  fix: docker network rm agent-net; docker network create --internal -o com.docker.network.bridge.inhibit_ipv4=true agent-net; or run the agent under \`agentrun run\` (no path to the host at all)
agent-agent vs policy agent: 1 drift finding(s)" "$(cat "$AR_TMP/out")"
expect_status "--container bastion: exit 1" 1 env PATH="$AR_TMP/bin:$PATH" "$A" check --policy "$P" --container bastion
expect_eq "--container bastion: summary" "bastion vs policy agent: 36 drift finding(s)" "$(tail -1 "$AR_TMP/out")"
expect_status "--container unknown: exit 2" 2 env PATH="$AR_TMP/bin:$PATH" "$A" check --policy "$P" --container nope
expect_eq "--container unknown: docker's first stderr line" \
	'agentrun: check: --container `nope`: `docker inspect nope` failed (exit 1): Error: No such container: nope' \
	"$(cat "$AR_TMP/err")"
expect_eq "--container unknown: no report on stdout" "" "$(cat "$AR_TMP/out")"
expect_status "--container whose inspect is []: exit 2" 2 env PATH="$AR_TMP/bin:$PATH" "$A" check --policy "$P" --container empty
expect_eq "--container []: message" "agentrun: check: --container: empty: empty array: no container inspected" "$(cat "$AR_TMP/err")"
expect_status "no docker on PATH: exit 2" 2 env PATH="$AR_TMP/empty" "$A" check --policy "$P" --container agent-agent
expect_eq "no docker: message" \
	'agentrun: check: --container `agent-agent`: cannot run `docker`: No such file or directory' \
	"$(cat "$AR_TMP/err")"

# --- bad input: exit 2, one line naming the flag or file ----------------------------
expect_status "--help: exit 0" 0 "$A" check --help
expect_match "--help: usage" "^Usage: agentrun check --name NAME" "$(cat "$AR_TMP/out")"
expect_status "no --policy: exit 2" 2 "$A" check --inspect "$D/inspect-hardened.json"
expect_eq "no --policy: message" 'agentrun: check: missing --policy FILE (only --name finds the policy itself); see `agentrun check --help`' "$(cat "$AR_TMP/err")"
expect_status "no source: exit 2" 2 "$A" check --policy "$P"
expect_eq "no source: message" 'agentrun: check: give what to check: --name NAME or one of --inspect FILE, --container NAME, --pid PID, --bundle DIR, --pod FILE, --manifest FILE; see `agentrun check --help`' "$(cat "$AR_TMP/err")"
expect_status "two sources: exit 2" 2 "$A" check --policy "$P" --inspect "$D/inspect-hardened.json" --pid 1
expect_status "unknown option: exit 2" 2 "$A" check --policy "$P" --frob
expect_eq "unknown option: message" 'agentrun: check: unknown option `--frob`; see `agentrun check --help`' "$(cat "$AR_TMP/err")"
expect_status "missing option value: exit 2" 2 "$A" check --policy "$P" --inspect
expect_eq "missing option value: message" 'agentrun: check: option `--inspect` needs a value (--inspect FILE); see `agentrun check --help`' "$(cat "$AR_TMP/err")"
expect_status "stray argument: exit 2" 2 "$A" check --policy "$P" --pid 1 extra
expect_status "bad --pid: exit 2" 2 "$A" check --policy "$P" --pid 12x
expect_eq "bad --pid: message" 'agentrun: check: --pid `12x`: not a process id (1 to 4194304); see `agentrun check --help`' "$(cat "$AR_TMP/err")"
expect_status "missing inspect file: exit 2" 2 "$A" check --policy "$P" --inspect "$AR_TMP/none.json"
expect_eq "missing inspect file: message" \
	"agentrun: check: --inspect \`$AR_TMP/none.json\`: open \`$AR_TMP/none.json\`: No such file or directory" \
	"$(cat "$AR_TMP/err")"
printf '[{"HostConfig": {"Privileged": "yes"}}]' >"$AR_TMP/bad.json"
expect_status "bad inspect field: exit 2" 2 "$A" check --policy "$P" --inspect "$AR_TMP/bad.json"
expect_eq "bad inspect field: message" \
	"agentrun: check: --inspect: $AR_TMP/bad.json: HostConfig.Privileged: expected true or false" \
	"$(cat "$AR_TMP/err")"
printf 'not json' >"$AR_TMP/nojson.json"
expect_status "not JSON: exit 2" 2 "$A" check --policy "$P" --inspect "$AR_TMP/nojson.json"
expect_match "not JSON: names the file" "nojson.json: invalid JSON at line 1, column 1" "$(cat "$AR_TMP/err")"
printf '{"name": "x", "bogus": 1}' >"$AR_TMP/badpolicy.json"
expect_status "bad policy: exit 2" 2 "$A" check --policy "$AR_TMP/badpolicy.json" --inspect "$D/inspect-hardened.json"
expect_match "bad policy: names file and key" "^agentrun: check: .*badpolicy.json.*bogus" "$(cat "$AR_TMP/err")"

finish

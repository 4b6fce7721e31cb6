#!/usr/bin/env bash
# Secrets the agent never holds (docs/secrets.md), with real clients inside a sandbox:
# curl, python urllib and requests, node's fetch (captured: it ignores HTTPS_PROXY),
# git over https (git http-backend behind the origin), keep-alive, server-sent events
# event by event, a WebSocket echo, a large download, Basic credentials, query strings. A recording
# HTTPS origin with its own test CA (proxy.upstream_ca) must see the real values, the
# sandbox only placeholders; every leak shape is refused and audited by the secret's
# name; a host no secret is for stays a tunnel (its own certificate reaches the
# client); the real value is nowhere in the audit, the log, the state directory, the
# sandbox's processes or files. Then bad input: 125, one line naming the secret,
# nothing left.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"
need_cmd openssl
need_cmd node
need_cmd git
need python3-requests /usr/bin/python3 -c 'import requests'
SD="$AR_SOURCE_DIR/tests/integration/secrets"
echo "127.0.0.1 kube.test.example" >>"$AR_TMP/hosts" # the proxy's /etc/hosts (common.sh)
mkdir -m 755 "$AR_TMP/data" "$AR_TMP/sbout"
chmod 777 "$AR_TMP/sbout"
bash "$SD/mkca.sh" "$AR_TMP/data" api.test.example other.test.example kube.test.example
chmod 644 "$AR_TMP/data"/*
# a repository for git http-backend
git init -q -b main "$AR_TMP/git/repo.git.work"
echo "cloned through the proxy" >"$AR_TMP/git/repo.git.work/README"
git -C "$AR_TMP/git/repo.git.work" add README
git -C "$AR_TMP/git/repo.git.work" -c user.name=t -c user.email=t@t commit -qm init
git clone -q --bare "$AR_TMP/git/repo.git.work" "$AR_TMP/git/repo.git"

A=$(free_port) O=$(free_port) P=$(free_port) K=$(free_port)
origin() { # PORT RECORD [CERT KEY]
	ORIGIN_GIT_ROOT="$AR_TMP/git" python3 "$SD/origin.py" "$@" >"$AR_TMP/origin.$1.log" 2>&1 &
	on_exit "kill $!"
	wait_file_has "$AR_TMP/origin.$1.log" ready
}
origin "$A" "$AR_TMP/rec.tls" "$AR_TMP/data/api.test.example.pem" "$AR_TMP/data/api.test.example.key"
origin "$O" "$AR_TMP/rec.other" "$AR_TMP/data/other.test.example.pem" "$AR_TMP/data/other.test.example.key"
origin "$P" "$AR_TMP/rec.plain"
origin "$K" "$AR_TMP/rec.kube" "$AR_TMP/data/kube.test.example.pem" "$AR_TMP/data/kube.test.example.key"

API_REAL="sk-ant-REAL-$$-$RANDOM$RANDOM"
GH_REAL="ghp_REAL$$x$RANDOM$RANDOM"
KUBE_REAL="kube-REAL-$$-$RANDOM$RANDOM"
printf '%s\n' "$GH_REAL" >"$AR_TMP/gh-token"
# the agent's kubeconfig on the host: the real token, the cluster's own CA
cat >"$AR_TMP/kubeconfig" <<KUBE
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://kube.test.example:$K
    certificate-authority-data: $(base64 -w0 "$AR_TMP/data/ca.pem")
users:
- name: bot
  user:
    token: $KUBE_REAL
contexts:
- name: triage
  context: {cluster: test, user: bot, namespace: triage}
current-context: triage
KUBE
chmod 600 "$AR_TMP/kubeconfig"
# as a user (user_secrets.sh), the user's own files
[ -z "${AR_USER_UID:-}" ] || chown "$AR_USER_UID:$AR_USER_GID" "$AR_TMP/gh-token" "$AR_TMP/kubeconfig"
chmod 600 "$AR_TMP/gh-token"
NAME="sec-$$"
POLICY="$AR_TMP/policy.json"
cat >"$POLICY" <<JSON
{"name": "$NAME",
 "allowed_hosts": ["api.test.example:$A", "other.test.example:$O", "api.test.example:$P",
                   "other.test.example:$P", "kube.test.example:$K"],
 "kubeconfig": "$AR_TMP/kubeconfig",
 "proxy": {"allow_private": ["127.0.0.1"], "upstream_ca": "$AR_TMP/data/ca.pem"},
 "secrets": {
   "API_KEY": {"from": "env:AR_TEST_API_KEY", "hosts": ["api.test.example:$A", "api.test.example:$P"]},
   "GH_TOKEN": {"from": "file:$AR_TMP/gh-token", "hosts": ["api.test.example:$A"]}}}
JSON
# the sandbox resolves names through the DNS stub (node's fetch is captured), not the
# test's /etc/hosts, which the proxy reads
printf '127.0.0.1 localhost\n::1 localhost\n' >"$AR_TMP/sandbox-hosts"
chmod 644 "$AR_TMP/sandbox-hosts"
AUD="$AR_TMP/audit.jsonl" LOG="$AR_TMP/proxy.log"
AR_TEST_API_KEY=$API_REAL "$AGENTRUN" run --policy "$POLICY" --audit "$AUD" --proxy-log "$LOG" \
	--mount "$AR_TMP/sandbox-hosts:/etc/hosts" --mount "$AR_TMP/data:/ar-data" --mount "$AR_TMP/sbout:/ar-out:rw" --mount "$SD:/ar-sd" \
	-- bash /ar-sd/inside.sh "$A" "$O" "$P" /ar-data /ar-out >"$AR_TMP/run.out" 2>"$AR_TMP/run.err" &
RUN=$!
state=$(net_state "$NAME-$RUN") || fail "no state for $NAME-$RUN"
sdir=$(dirname "$state")
wait_file_has "$AR_TMP/sbout/inside.out" "done=1" 2400 || true
# while it runs: the state directory, and the proxy's /proc entries a user could read
cp -r "$sdir" "$AR_TMP/statedir" 2>/dev/null || true
ppid=$(sed -n 's/^proxy_pid=//p' "$state" 2>/dev/null || true)
[ -n "$ppid" ] && expect_eq "the proxy is not dumpable (its /proc files are root's)" "0 !0" \
	"$(stat -c %u "/proc/$ppid/environ") $(awk '/^Uid:/ {print ($2 == 0 ? 0 : "!0")}' "/proc/$ppid/status")"
[ -n "$ppid" ] && cat "/proc/$ppid/environ" "/proc/$ppid/cmdline" >"$AR_TMP/proxy.proc" 2>/dev/null
ps -eo args >"$AR_TMP/ps.out"
# check: the sandbox's placeholders are no drift; a process holding a real value is
"$AGENTRUN" check --policy "$POLICY" --name "$NAME-$RUN" >"$AR_TMP/check.sandbox" 2>&1 || true
AR_TEST_REAL_ENV=1 API_KEY=$API_REAL sleep 30 &
HOLDER=$!
on_exit "kill $HOLDER"
for _ in $(seq 1 100); do # until sleep runs with its environment (not its shell's)
	grep -qa AR_TEST_REAL_ENV=1 "/proc/$HOLDER/environ" 2>/dev/null && break
	sleep 0.05
done
# (as root also in user mode: the binary itself, not the user's wrapper)
"${AR_AGENTRUN_BIN:-$AGENTRUN}" check --policy "$POLICY" --pid "$HOLDER" >"$AR_TMP/check.holder" 2>&1 || true
kill "$HOLDER"
touch "$AR_TMP/sbout/go"
wait "$RUN" || fail "run exited $?: $(cat "$AR_TMP/run.err")"
out=$(cat "$AR_TMP/sbout/inside.out")
val() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }

# --- the sandbox holds placeholders only ---
expect_match "API_KEY is a placeholder" '^agentrun-secret-API_KEY-[0-9a-f]{32}$' "$(val env_api)"
expect_match "GH_TOKEN is a placeholder" '^agentrun-secret-GH_TOKEN-[0-9a-f]{32}$' "$(val env_gh)"
b=$(val ssl_cert_file | cut -d'|' -f1)
expect_eq "the five CA variables name the bundle" "$b|$b|$b|$b|$b" "$(val ssl_cert_file)"
expect_eq "the bundle holds the host's roots and the sandbox CA" \
	"$(($(grep -c 'BEGIN CERTIFICATE' "$b") + 1))" "$(grep -c 'BEGIN CERTIFICATE' "$AR_TMP/sbout/bundle.pem")"

# --- real clients got through, the origin saw the real values ---
for k in curl_bearer curl_basic urllib requests node plain_bound; do
	expect_eq "$k: answered" ok "$(val $k)"
done
expect_eq "git ls-remote over https" 1 "$(val git)"
expect_eq "git clone over https" "cloned through the proxy" "$(val git_clone)"
rec() { python3 - "$1" "$2" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["head"].split(" ")[1].startswith(sys.argv[2]):
        print(e["head"].replace("\r", "").replace("\n", "|"))
PY
}
api_hdr() { rec "$AR_TMP/rec.tls" "$1" | tr '|' '\n' | grep -ic "^$2: $API_REAL\$"; }
expect_match "curl: the origin got the real value in the query" "GET /curl\?key=$API_REAL " "$(rec "$AR_TMP/rec.tls" /curl)"
expect_eq "curl: and in Authorization" 1 "$(rec "$AR_TMP/rec.tls" /curl | tr '|' '\n' | grep -c "^Authorization: Bearer $API_REAL\$")"
basic=$(printf 'x-access-token:%s' "$GH_REAL" | base64 -w0)
expect_eq "Basic: decoded, replaced, encoded" 1 "$(rec "$AR_TMP/rec.tls" /basic | tr '|' '\n' | grep -c "^Authorization: Basic $basic\$")"
for k in urllib requests node; do expect_eq "$k: the origin got the real value" 1 "$(api_hdr "/$k" X-Api-Key)"; done
expect_eq "kubectl with the sandbox's kubeconfig" triage "$(val kubectl)"
expect_eq "the sandbox's kubeconfig holds a placeholder token" 1 "$(val kube_token)"
expect_eq "the API server got the real token" 1 "$(rec "$AR_TMP/rec.kube" /api/v1/namespaces | tr '|' '\n' | grep -c "^Authorization: Bearer $KUBE_REAL\$")"
expect_match "git: the origin got the real token in Basic" "Authorization: Basic $basic" "$(rec "$AR_TMP/rec.tls" /repo.git)"
expect_eq "plain HTTP to the bound host: substituted" 1 "$(rec "$AR_TMP/rec.plain" /plain | tr '|' '\n' | grep -c "^X-Api-Key: $API_REAL\$")"
# transparent capture (curl --noproxy)
expect_eq "captured plain HTTP to the bound host: answered" ok "$(val cap_plain_bound)"
expect_match "captured plain HTTP: the origin got the real value in the query" "GET /capplain\?key=$API_REAL " "$(rec "$AR_TMP/rec.plain" /capplain)"
expect_eq "captured plain HTTP: and in the header" 1 "$(rec "$AR_TMP/rec.plain" /capplain | tr '|' '\n' | grep -c "^X-Api-Key: $API_REAL\$")"
expect_eq "captured TLS to the bound host's port $A: answered" ok "$(val cap_tls_bound)"
expect_eq "captured TLS: the origin got the real value" 1 "$(rec "$AR_TMP/rec.tls" /captls | tr '|' '\n' | grep -c "^Authorization: Bearer $API_REAL\$")"
expect_match "captured TLS: terminated with the sandbox CA's leaf" "agentrun sandbox CA $NAME-$RUN" "$(val cap_issuer_bound)"
for k in cap_leak_header cap_leak_url cap_leak_body cap_leak_unbound_secret; do
	expect_eq "$k: 403" 403 "$(val $k)"
done
expect_eq "captured keep-alive: 200, then 403 on the same connection" "200 1;403 0;" "$(val cap_keepalive)"
expect_eq "keep-alive: three requests on one client connection" "ok,ok,ok same" "$(val keepalive)"
expect_eq "keep-alive: the origin got them" 3 "$(rec "$AR_TMP/rec.tls" /keep | wc -l)"
ts=$(val sse)
expect_match "SSE: four events" '^[0-9]+ [0-9]+ [0-9]+ [0-9]+$' "$ts"
read -r t0 t1 t2 t3 <<<"$ts"
expect_eq "SSE: event by event, not buffered (>= 250 ms apart)" yes \
	"$([ $((t1 - t0)) -ge 250 ] && [ $((t2 - t1)) -ge 250 ] && [ $((t3 - t2)) -ge 250 ] && echo yes || echo "no: $ts")"
expect_eq "WebSocket: echoed through the terminated connection" "echo: hello|echo: again" "$(val ws)"
expect_eq "WebSocket: the upgrade request was substituted" 1 "$(api_hdr /ws X-Api-Key)"
expect_eq "an upload through the terminated connection" ok "$(val upload)"
expect_eq "the origin got all of it" 20971520 "$(python3 -c 'import json, sys
print(sum(json.loads(l)["len"] for l in open(sys.argv[1]) if " /upload " in json.loads(l)["head"]))' "$AR_TMP/rec.tls")"
expect_eq "a download through the terminated connection" $((8 << 20)) "$(val big)"
expect_match "the bound host shows the sandbox CA's leaf" "agentrun sandbox CA $NAME-$RUN" "$(val issuer_bound)"
expect_match "another TLS host stays a tunnel: its own certificate" "agentrun test origin CA" "$(val issuer_other)"
expect_eq "the tunnel works with the origin's CA" ok "$(val tunnel_other)"
expect_match "a pinned client fails clearly" "SSL certificate problem" "$(val pinned)"
expect_match "the audit says why" 'TLS with the client failed \(.*\): a client that does not trust the sandbox CA' "$(cat "$AUD")"
expect_match "a response header with the real value is masked" '^Bearer agentrun-secret-API_KEY-' "$(val leak_header)"

# --- leaks: refused and audited by the secret's name ---
for k in leak_plain_header leak_plain_url leak_plain_body leak_unbound_secret leak_connect leak_denied_host; do
	expect_eq "$k: 403" 403 "$(val $k)"
done
expect_eq "DNS: a placeholder in a name is refused" refused "$(val leak_dns)"
refused() { python3 - "$AUD" "$1" "$2" <<'PY'
import json, sys
n = 0
want, dns = sys.argv[3].replace(" (HTTP)", ""), "DNS" in sys.argv[3]
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("secret") == sys.argv[2] and e.get("secret_action") == "refused" and want in (e.get("reason") or "") and (e["method"] == "DNS") == dns:
        n += 1
print(n)
PY
}
expect_eq "audit: API_KEY in a header, the URL, to a denied host, a CONNECT; captured: a header, the URL, keep-alive (7)" \
	7 "$(refused API_KEY 'which is not one of its hosts (HTTP)')"
expect_eq "audit: GH_TOKEN in a body and to API_KEY's plain host, explicit and captured (4)" 4 "$(refused GH_TOKEN 'which is not one of its hosts (HTTP)')"
expect_match "audit: the DNS name (each query)" '^[1-9]' "$(refused API_KEY 'in a DNS name')"
expect_eq "the origins never saw a placeholder elsewhere" 0 "$(cat "$AR_TMP/rec.other" "$AR_TMP/rec.plain" 2>/dev/null | grep -c 'agentrun-secret-' || true)"
expect_match "the audit names what was injected" '"secret":"API_KEY","secret_action":"injected"' "$(cat "$AUD")"

# --- check ---
expect_nomatch "check --name: the placeholders are no drift" 'secret' "$(cat "$AR_TMP/check.sandbox")"
expect_match "check --pid: a real value where the policy injects it is drift" \
	'DRIFT secret API_KEY expected a placeholder \(agentrun-secret-NAME-\.\.\.\) actual a real value \(not shown\)' \
	"$(cat "$AR_TMP/check.holder")"

# --- the real values are nowhere but at the origin ---
for f in "$AUD" "$LOG" "$AR_TMP/run.out" "$AR_TMP/run.err" "$AR_TMP/sbout/proc.dump" "$AR_TMP/sbout/inside.out" \
	"$AR_TMP/proxy.proc" "$AR_TMP/ps.out" "$AR_TMP/check.sandbox" "$AR_TMP/check.holder"; do
	expect_eq "no real value in $(basename "$f")" 0 "$(grep -c -a -e "$API_REAL" -e "$GH_REAL" -e "$KUBE_REAL" "$f" || true)"
done
expect_eq "no real value in the state directory" 0 "$(grep -r -c -a -e "$API_REAL" -e "$GH_REAL" -e "$KUBE_REAL" "$AR_TMP/statedir" | grep -vc ':0$' || true)"
expect_eq "no real value in the sandbox's files we wrote" 0 "$(grep -r -l -a -e "$API_REAL" -e "$GH_REAL" -e "$KUBE_REAL" "$AR_TMP/sbout" | wc -l)"
expect_eq "the state directory is gone" no "$([ -e "$sdir" ] && echo yes || echo no)"

# --- bad input: 125, one line naming the secret and field, nothing left ---
bad() { # WHAT SECRETS_JSON WANT [ENV...]
	local what=$1 secrets=$2 want=$3
	shift 3
	printf '{"name": "bad-%s", "allowed_hosts": ["api.test.example:%s"], "secrets": %s}\n' "$$" "$A" "$secrets" >"$AR_TMP/bad.json"
	local before
	before=$(ip netns list 2>/dev/null | wc -l)
	expect_status "$what: 125" 125 env "$@" "$AGENTRUN" run --policy "$AR_TMP/bad.json" -- true
	expect_match "$what: names it" "^agentrun: .*$want" "$(cat "$AR_TMP/err")"
	expect_eq "$what: one line" 1 "$(wc -l <"$AR_TMP/err")"
	expect_eq "$what: nothing left" "$before" "$(ls -d "$AR_STATE"/bad-$$-* 2>/dev/null; ip netns list 2>/dev/null | wc -l)"
}
h="[\"api.test.example:$A\"]"
bad "missing env" "{\"K\": {\"from\": \"env:AR_NOPE_$$\", \"hosts\": $h}}" "secrets.K.from: env:AR_NOPE_$$ is not set or empty"
bad "empty env" "{\"K\": {\"from\": \"env:AR_EMPTY\", \"hosts\": $h}}" "secrets.K.from: env:AR_EMPTY is not set or empty" AR_EMPTY=
: >"$AR_TMP/empty"
bad "empty file" "{\"K\": {\"from\": \"file:$AR_TMP/empty\", \"hosts\": $h}}" "secrets.K.from: file:$AR_TMP/empty is empty"
bad "missing file" "{\"K\": {\"from\": \"file:$AR_TMP/none\", \"hosts\": $h}}" "secrets.K.from: file:$AR_TMP/none cannot be read"
bad "host not allowed" "{\"K\": {\"from\": \"env:HOME\", \"hosts\": [\"x.test.example\"]}}" 'secrets.K.hosts\[0\]: "x.test.example" is not in allowed_hosts'
bad "bad name" "{\"K-1\": {\"from\": \"env:HOME\", \"hosts\": $h}}" "secrets.K-1: the name must be a variable name"
# the kubeconfig's server must be allowed; a kubeconfig without a token is refused
printf '{"name": "bad-%s", "allowed_hosts": ["api.test.example:%s"], "kubeconfig": "%s"}\n' "$$" "$A" "$AR_TMP/kubeconfig" >"$AR_TMP/bad.json"
expect_status "kubeconfig server not allowed: 125" 125 "$AGENTRUN" run --policy "$AR_TMP/bad.json" -- true
expect_match "kubeconfig server not allowed: named" "kubeconfig: its server kube.test.example:$K is not in allowed_hosts" "$(cat "$AR_TMP/err")"
sed 's/token: .*/client-certificate-data: eA==/' "$AR_TMP/kubeconfig" >"$AR_TMP/kc-cert"
printf '{"name": "bad-%s", "allowed_hosts": ["kube.test.example:%s"], "kubeconfig": "%s"}\n' "$$" "$K" "$AR_TMP/kc-cert" >"$AR_TMP/bad.json"
expect_status "kubeconfig without a token: 125" 125 "$AGENTRUN" run --policy "$AR_TMP/bad.json" -- true
expect_match "kubeconfig without a token: named" "kubeconfig $AR_TMP/kc-cert: the current context's user has no token" "$(cat "$AR_TMP/err")"
expect_status "agentrun proxy --policy with secrets refuses (it holds no placeholders)" 2 \
	"$AGENTRUN" proxy --listen 127.0.0.1:0 --policy "$POLICY"
expect_match "agentrun proxy: says why" "secrets: a proxy of its own takes them as --secret flags" "$(cat "$AR_TMP/err")"
# a run killed (kill -9) after its CA bundle was made, before its state: gc removes it
true &
dead=$!
wait "$dead"
mkdir -m 700 "$AR_STATE/killed-$$-$dead"
on_exit rm -rf "$AR_STATE/killed-$$-$dead"
: >"$AR_STATE/killed-$$-$dead/ca-bundle.pem"
: >"$AR_STATE/killed-$$-$dead/kubeconfig"
[ -z "${AR_USER_UID:-}" ] || chown -R "$AR_USER_UID:$AR_USER_GID" "$AR_STATE/killed-$$-$dead"
"$AGENTRUN" gc >/dev/null 2>&1 || true
expect_eq "gc: a killed run's CA bundle and kubeconfig are removed" no \
	"$([ -e "$AR_STATE/killed-$$-$dead" ] && echo yes || echo no)"
expect_eq "nothing left of the bad runs" "" "$(ls -d "$AR_STATE"/bad-$$-* 2>/dev/null)"
finish

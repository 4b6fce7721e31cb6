#!/usr/bin/env bash
# Secrets under an OCI runtime (docs/secrets.md): `render --format oci` puts placeholders
# and the CA variables into config.json and the host's roots into the bundle's CA file;
# runc runs it with agentrun's hook, whose detached proxy adopts those placeholders,
# reads the value (file:), appends the sandbox CA to the bundle's CA file before the
# container runs and puts the real value into the container's request to the secret's
# host. `check --bundle` accepts the placeholders; render for docker/k8s gives the agent
# placeholders and never the value; nothing is left after delete. With a kubeconfig, the
# container's is the bundle's own, written by the hook with a placeholder token.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/oci/lib.sh
source "$(dirname "$0")/oci/lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
source "$(dirname "$0")/proxy/common.sh"
need_root
need_cmd runc
oci_need_rootfs_tools

rootfs="$AR_TMP/rootfs"
oci_rootfs "$rootfs"
mkdir -p "$rootfs/etc/agentrun"
oci_hook_wrapper
RT=(runc --root "$AR_TMP/runc")

P=$(free_port)
python3 "$AR_SOURCE_DIR/tests/integration/secrets/origin.py" "$P" "$AR_TMP/rec" >"$AR_TMP/origin.log" 2>&1 &
on_exit "kill $!"
wait_file_has "$AR_TMP/origin.log" ready
REAL="oci-REAL-$$-$RANDOM$RANDOM"
printf '%s\n' "$REAL" >"$AR_TMP/key"
chmod 600 "$AR_TMP/key"
pol="osec$$"
printf '{"name": "%s", "allowed_hosts": ["api.test.example:%s"], "user": "1000",
 "proxy": {"allow_private": ["127.0.0.1"], "transparent": false},
 "secrets": {"API_KEY": {"from": "file:%s", "hosts": ["api.test.example:%s"]}}}' \
	"$pol" "$P" "$AR_TMP/key" "$P" >"$AR_TMP/p.json"

# shellcheck disable=SC2016 # expanded inside the container
INSIDE='echo "env=$API_KEY"
echo "ca_var=$SSL_CERT_FILE"
echo "ca_certs=$(grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE")"
px=${http_proxy#http://}; px=${px%/}
ar-probe http get "${px%:*}" "${px##*:}" "http://api.test.example:'"$P"'/oci?k=$API_KEY"
ar-probe http leak "${px%:*}" "${px##*:}" "http://denied.test.example:'"$P"'/?k=$API_KEY"'
b="$AR_TMP/bundle"
oci_bundle "$AR_TMP/p.json" "$b" "$rootfs" "" /bin/sh -c "$INSIDE" || fail "render"
roots=$(grep -c "BEGIN CERTIFICATE" "$b/agentrun-ca-bundle.pem")
expect_match "render: the host's roots in the bundle's CA file" '^[1-9][0-9]*$' "$roots"
expect_match "render: a placeholder in config.json" '"API_KEY=agentrun-secret-API_KEY-[0-9a-f]{32}"' "$(cat "$b/config.json")"
expect_eq "render: the value is not in the bundle" 0 "$(grep -rc "$REAL" "$b" | grep -vc ':0$' || true)"
expect_status "check --bundle: placeholders are no drift" 0 "$AGENTRUN" check --policy "$AR_TMP/p.json" --bundle "$b"
for f in text k8s; do # docker and Kubernetes: placeholders for the agent, never the value
	expect_status "render --format $f with secrets" 0 "$AGENTRUN" render --policy "$AR_TMP/p.json" --image alpine:3.20 --format "$f" -- true
	expect_match "render --format $f: the agent's placeholder" 'API_KEY=agentrun-secret-API_KEY-[0-9a-f]{32}|value: agentrun-secret-API_KEY-[0-9a-f]{32}' "$(cat "$AR_TMP/out")"
	expect_eq "render --format $f: the value is not in it" 0 "$(grep -c "$REAL" "$AR_TMP/out" || true)"
done

id="secrets-$AR_TAG"
on_exit "${RT[*]}" delete -f "$id"
(cd "$b" && timeout 60 "${RT[@]}" create "$id" </dev/null >"$AR_TMP/out" 2>"$AR_TMP/create.err") ||
	fail "create: $(cat "$AR_TMP/create.err")"
pid=$(oci_rt_pid "$id")
name="$pol-$pid"
on_exit rm -f "/run/agentrun/audit/$name.jsonl"
proxy=$(oci_proxy_field "$name" proxy_pid)
cg=$(oci_proxy_field "$name" proxy_cgroup)
"${RT[@]}" start "$id"
oci_rt_wait_stopped "$id"
"${RT[@]}" delete "$id"
out=$(cat "$AR_TMP/out")
val() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }
expect_match "the container's variable is a placeholder" '^agentrun-secret-API_KEY-[0-9a-f]{32}$' "$(val env)"
expect_eq "the CA variables name the bundle's file" /etc/agentrun/ca-bundle.pem "$(val ca_var)"
expect_eq "the container trusts the host's roots and the sandbox CA" "$((roots + 1))" "$(val ca_certs)"
expect_eq "the hook's proxy put the value in" 200 "$(val get)"
expect_match "the origin got the real value" "GET /oci\\?k=$REAL " "$(cat "$AR_TMP/rec")"
expect_eq "a placeholder elsewhere: 403" 403 "$(val leak)"
expect_match "... audited by the secret's name" '"secret":"API_KEY","secret_action":"refused"' "$(cat "/run/agentrun/audit/$name.jsonl")"
expect_eq "the value is not in the audit" 0 "$(grep -c "$REAL" "/run/agentrun/audit/$name.jsonl" || true)"
expect_eq "after delete nothing is left" "" "$(oci_proxy_gone "$name" "$proxy" "$cg")"

# the hook refuses a bundle whose config.json carries no placeholder (not rendered so)
/usr/bin/python3 - "$b/config.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["process"]["env"] = [e for e in d["process"]["env"] if not e.startswith("API_KEY=")]
json.dump(d, open(sys.argv[1], "w"))
PY
id2="secrets2-$AR_TAG"
on_exit "${RT[*]}" delete -f "$id2"
(cd "$b" && timeout 60 "${RT[@]}" create "$id2" </dev/null >/dev/null 2>"$AR_TMP/create2.err") &&
	fail "create without a placeholder succeeded"
expect_match "no placeholder: the hook says which" "secrets.API_KEY: the environment holds no placeholder for it" "$(cat "$AR_TMP/create2.err")"
"${RT[@]}" delete -f "$id2" 2>/dev/null || true
expect_eq "no placeholder: nothing left" "" "$(ls -d "/run/agentrun/$pol-"* 2>/dev/null)"

# --- a kubeconfig with network proxy: the bundle's own copy, a placeholder token ---
K=$(free_port)
python3 "$AR_SOURCE_DIR/tests/integration/secrets/origin.py" "$K" "$AR_TMP/rec.kube" >"$AR_TMP/kube.log" 2>&1 &
on_exit "kill $!"
wait_file_has "$AR_TMP/kube.log" ready
KREAL="kube-REAL-$$-$RANDOM$RANDOM"
cat >"$AR_TMP/kubeconfig" <<KUBE
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "https://other.test.example:$K", certificate-authority-data: "$(base64 -w0 /etc/ssl/certs/ca-certificates.crt | head -c 0)"}
users:
- name: bot
  user: {token: $KREAL}
contexts:
- name: triage
  context: {cluster: test, user: bot, namespace: triage}
current-context: triage
KUBE
sed -i '/certificate-authority-data: ""/s/, certificate-authority-data: ""//' "$AR_TMP/kubeconfig"
chmod 600 "$AR_TMP/kubeconfig"
kpol="okube$$"
printf '{"name": "%s", "allowed_hosts": ["other.test.example:%s"], "user": "1000",
 "kubeconfig": "%s",
 "proxy": {"allow_private": ["127.0.0.1"], "transparent": false}}' \
	"$kpol" "$K" "$AR_TMP/kubeconfig" >"$AR_TMP/k.json"
# shellcheck disable=SC2016 # expanded inside the container
KINSIDE='echo "kubeconfig=$KUBECONFIG"
t=$(sed -n "s/.*\"token\":[[:space:]]*\"\([^\"]*\)\".*/\1/p" "$KUBECONFIG")
echo "token=$t"
echo "ca_certs=$(grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE")"
echo "kube_ca=$(sed -n "s/.*\"certificate-authority-data\":[[:space:]]*\"\([^\"]*\)\".*/\1/p" "$KUBECONFIG" | base64 -d | grep -c "BEGIN CERTIFICATE")"
px=${http_proxy#http://}; px=${px%/}
ar-probe http api "${px%:*}" "${px##*:}" "http://other.test.example:'"$K"'/api/v1/namespaces?t=$t"'
kb="$AR_TMP/kbundle"
mkdir -p "$rootfs/home/agent/.kube"
oci_bundle "$AR_TMP/k.json" "$kb" "$rootfs" "" /bin/sh -c "$KINSIDE" || fail "render (kubeconfig)"
expect_eq "render: the kubeconfig bound is the bundle's own file" "agentrun-kubeconfig /home/agent/.kube/config" \
	"$(python3 -c 'import json, sys
for m in json.load(open(sys.argv[1]))["mounts"]:
    if m["destination"] == "/home/agent/.kube/config":
        print(m["source"], m["destination"])' "$kb/config.json")"
expect_eq "render: the host kubeconfig is not in the bundle" 0 "$(grep -c "$AR_TMP/kubeconfig" "$kb/config.json" || true)"
expect_status "check --bundle: the kubeconfig copy is no drift" 0 "$AGENTRUN" check --policy "$AR_TMP/k.json" --bundle "$kb"
kid="secrets-kube-$AR_TAG"
on_exit "${RT[*]}" delete -f "$kid"
(cd "$kb" && timeout 60 "${RT[@]}" create "$kid" </dev/null >"$AR_TMP/kout" 2>"$AR_TMP/kcreate.err") ||
	fail "create (kubeconfig): $(cat "$AR_TMP/kcreate.err")"
kname="$kpol-$(oci_rt_pid "$kid")"
on_exit rm -f "/run/agentrun/audit/$kname.jsonl"
"${RT[@]}" start "$kid"
oci_rt_wait_stopped "$kid"
"${RT[@]}" delete "$kid"
out=$(cat "$AR_TMP/kout")
expect_eq "the container's KUBECONFIG" /home/agent/.kube/config "$(val kubeconfig)"
expect_match "its token is a placeholder" '^agentrun-secret-KUBECONFIG_TOKEN-[0-9a-f]{32}$' "$(val token)"
expect_eq "its cluster CA is the sandbox CA (one certificate)" 1 "$(val kube_ca)"
expect_match "the CA bundle holds it too" '^[1-9][0-9]*$' "$(val ca_certs)"
expect_eq "the hook's proxy put the real token in" 200 "$(val api)"
expect_match "the API server got the real token" "GET /api/v1/namespaces\\?t=$KREAL " "$(cat "$AR_TMP/rec.kube")"
expect_eq "the real token is not in the bundle" 0 "$(grep -rc "$KREAL" "$kb" | grep -vc ':0$' || true)"
expect_eq "nor in the container's output" 0 "$(grep -c "$KREAL" "$AR_TMP/kout" || true)"
finish

#!/usr/bin/env bash
# check --manifest and --pod through the CLI: render k8s | check --manifest is clean for
# every shipped profile (YAML and the v1/List), a drifted field gives one finding and
# exit 1, saved pod fixtures, secrets never printed, and bad input is exit 2 with a
# message naming the flag, file and line.
. "$(dirname "$0")/../lib.sh"
cd "$AR_SOURCE_DIR" || exit 1
DATA=tests/unit/check/data/k8s

for f in profiles/*.json tests/integration/k8s/full.json tests/integration/k8s/secrets.json; do
	for fmt in k8s k8s-json; do
		for extra in "" --cilium; do
			# shellcheck disable=SC2086 # $extra is one flag or none
			"$AGENTRUN" render --policy "$f" --format "$fmt" --image alpine:3.20 $extra -- id \
				>"$AR_TMP/m" 2>"$AR_TMP/err" || fail "render $f $fmt: $(cat "$AR_TMP/err")"
			expect_status "$f $fmt $extra: render | check --manifest" 0 \
				"$AGENTRUN" check --policy "$f" --manifest "$AR_TMP/m"
		done
	done
done
"$AGENTRUN" render --policy profiles/triage.json --format k8s >"$AR_TMP/t.yaml"
expect_status "check --manifest - (stdin)" 0 \
	sh -c '"$1" check --policy profiles/triage.json --manifest - <"$2"' _ "$AGENTRUN" "$AR_TMP/t.yaml"

# drift: one sed, one finding
drift() {
	local what=$1 expr=$2 want=$3
	sed "$expr" "$AR_TMP/t.yaml" >"$AR_TMP/d.yaml"
	if cmp -s "$AR_TMP/t.yaml" "$AR_TMP/d.yaml"; then
		fail "$what: the sed changed nothing"
		return
	fi
	expect_status "$what" 1 "$AGENTRUN" check --policy profiles/triage.json --manifest "$AR_TMP/d.yaml"
	expect_eq "$what: one finding" "1" "$(grep -c '^DRIFT' "$AR_TMP/out")"
	expect_match "$what: the finding" "^DRIFT $want" "$(cat "$AR_TMP/out")"
}
# secrets: the rendered placeholders are no drift (above); a real value in their place,
# or the init container made privileged, is (never printed)
"$AGENTRUN" render --policy tests/integration/k8s/secrets.json --format k8s >"$AR_TMP/s.yaml"
sed 's/value: agentrun-secret-GITHUB_TOKEN-[0-9a-f]*/value: ghp_REALVALUE1234/' "$AR_TMP/s.yaml" >"$AR_TMP/sd.yaml"
expect_eq "secrets: the sed replaced the placeholder" 1 "$(grep -c ghp_REALVALUE1234 "$AR_TMP/sd.yaml")"
expect_status "secrets: a real value where the placeholder was: drift" 1 \
	"$AGENTRUN" check --policy tests/integration/k8s/secrets.json --manifest "$AR_TMP/sd.yaml"
expect_eq "secrets: one finding, naming the secret" "DRIFT secret GITHUB_TOKEN expected a placeholder (agentrun-secret-NAME-...) actual a real value (not shown)" \
	"$(grep '^DRIFT' "$AR_TMP/out")"
expect_eq "secrets: the value is not printed" 0 "$(grep -c ghp_REALVALUE1234 "$AR_TMP/out" || true)"
awk '/- name: ca$/ {init = 1} init && /privileged: false/ {sub(/false/, "true"); init = 0} {print}' "$AR_TMP/s.yaml" >"$AR_TMP/sd.yaml"
expect_status "secrets: a privileged CA init container: drift" 1 \
	"$AGENTRUN" check --policy tests/integration/k8s/secrets.json --manifest "$AR_TMP/sd.yaml"
expect_match "secrets: the init container is named" "^DRIFT init container ca privileged" "$(cat "$AR_TMP/out")"

drift "hostPID" 's/hostPID: false/hostPID: true/' "hostPID expected false actual true"
drift "privileged" 's/privileged: false/privileged: true/' "container agent privileged"
drift "memory" '0,/memory: "256Mi"/s//memory: "1Gi"/' "memory limit expected 256Mi actual 1Gi"
drift "runAsUser" 's/runAsUser: 1000/runAsUser: 0/' "container agent runAsUser"
drift "seccomp" 's/type: RuntimeDefault/type: Unconfined/' "container agent seccompProfile"
drift "token" 's/^      automountServiceAccountToken: false/      automountServiceAccountToken: true/' \
	"automountServiceAccountToken"
drift "no NetworkPolicy" 's/^  - Egress$/  - Ingress/' "NetworkPolicy expected"
expect_match "fix is the manifest field" \
	"fix: spec.template.spec.containers\[agent\].securityContext.runAsUser: 1000" \
	"$(sed 's/runAsUser: 1000/runAsUser: 0/' "$AR_TMP/t.yaml" |
		"$AGENTRUN" check --policy profiles/triage.json --manifest - || true)"

# pods
expect_status "--pod compliant" 0 "$AGENTRUN" check --policy profiles/triage.json --pod "$DATA/pod-compliant.json"
expect_status "--pod bastion" 1 "$AGENTRUN" check --policy profiles/triage.json --pod "$DATA/pod-bastion.json"
n=$(grep -c '^DRIFT' "$AR_TMP/out")
if [ "$n" -ge 15 ]; then pass "bastion: $n findings"; else fail "bastion: only $n findings"; fi
expect_nomatch "secret values never printed" 'wJalrXUtnFEMI|ghp_example' "$(cat "$AR_TMP/out")"
expect_match "secret named" "secret in environment GITHUB_TOKEN expected absent actual set" "$(cat "$AR_TMP/out")"
expect_status "--pod bastion --json" 1 "$AGENTRUN" check --policy profiles/triage.json --pod "$DATA/pod-bastion.json" --json
expect_match "json drift count" "\"drift\": $n," "$(cat "$AR_TMP/out")"
expect_nomatch "json: secret values never printed" 'wJalrXUtnFEMI|ghp_example' "$(cat "$AR_TMP/out")"

# bad input: exit 2, one line naming the flag, file and line
printf 'kind: Pod\nspec:\n\tcontainers: []\n' >"$AR_TMP/tab.yaml"
expect_status "tab in YAML" 2 "$AGENTRUN" check --policy profiles/triage.json --manifest "$AR_TMP/tab.yaml"
expect_match "tab message" "^agentrun: check: --manifest: $AR_TMP/tab.yaml:3: a tab" "$(cat "$AR_TMP/err")"
expect_status "--pod on a Job manifest" 2 "$AGENTRUN" check --policy profiles/triage.json --pod "$AR_TMP/t.yaml"
expect_match "no Pod message" "--pod .*: no Pod in the input" "$(cat "$AR_TMP/err")"
echo '{"kind": "Service"}' >"$AR_TMP/svc.json"
expect_status "no workload" 2 "$AGENTRUN" check --policy profiles/triage.json --manifest "$AR_TMP/svc.json"
expect_status "missing file" 2 "$AGENTRUN" check --policy profiles/triage.json --manifest "$AR_TMP/nope.yaml"
expect_status "two subjects" 2 "$AGENTRUN" check --policy profiles/triage.json --pod a --manifest b
expect_match "two subjects message" "give exactly one of --name NAME, --inspect FILE, .* --manifest FILE" "$(cat "$AR_TMP/err")"
expect_status "k8s flag on a docker format" 2 "$AGENTRUN" render --policy profiles/triage.json --cilium
expect_status "bad namespace" 2 "$AGENTRUN" render --policy profiles/triage.json --format k8s --namespace Bad
expect_match "bad namespace message" "^agentrun: render: --namespace .Bad.: not a DNS label" "$(cat "$AR_TMP/err")"
finish

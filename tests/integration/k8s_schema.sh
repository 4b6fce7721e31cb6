#!/usr/bin/env bash
# render --format k8s: every object of every shipped profile (and of a policy using every
# field) validates offline against the Kubernetes OpenAPI schema and, for --cilium,
# Cilium's CRD schema (npm: kubernetes-models, @kubernetes-models/cilium, pinned in
# tests/integration/k8s/package-lock.json, installed once under the build dir); the YAML
# stream is the same objects as the v1/List; the output matches the golden files.
# Set AR_UPDATE_GOLDEN=1 to rewrite the goldens after a deliberate change.
. "$(dirname "$0")/../lib.sh"
need_cmd node
need_cmd npm
K8S_DIR=$AR_SOURCE_DIR/tests/integration/k8s
NODE_DIR=$AR_BUILD_DIR/k8s-node

# npm ci only when the pinned lock changed since the last install.
install_models() {
	mkdir -p "$NODE_DIR"
	if ! cmp -s "$K8S_DIR/package-lock.json" "$NODE_DIR/package-lock.json" ||
		[ ! -d "$NODE_DIR/node_modules/kubernetes-models" ]; then
		cp "$K8S_DIR/package.json" "$K8S_DIR/package-lock.json" "$NODE_DIR/"
		(cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error >"$AR_TMP/npm" 2>&1) ||
			skip "npm ci failed (registry unreachable?): $(tail -3 "$AR_TMP/npm")"
	fi
	cp "$K8S_DIR/validate.mjs" "$NODE_DIR/"
}
install_models

# validate NAME RENDER-ARGS...: render as JSON and YAML, validate both.
validate() {
	local name=$1
	shift
	if ! "$AGENTRUN" render --format k8s-json "$@" >"$AR_TMP/$name.json" 2>"$AR_TMP/err" ||
		! "$AGENTRUN" render --format k8s "$@" >"$AR_TMP/$name.yaml" 2>>"$AR_TMP/err"; then
		fail "$name: render failed: $(cat "$AR_TMP/err")"
		return
	fi
	# placeholders are fresh per rendering (secrets): the same in both for the comparison
	sed -i 's/agentrun-secret-\([A-Za-z0-9_]*\)-[0-9a-f]\{32\}/agentrun-secret-\1-00000000000000000000000000000000/g' \
		"$AR_TMP/$name.json" "$AR_TMP/$name.yaml"
	if node "$NODE_DIR/validate.mjs" "$AR_TMP/$name.json" "$AR_TMP/$name.yaml" >"$AR_TMP/v" 2>&1; then
		pass "$name: $(grep -c '^ok schema' "$AR_TMP/v") objects valid, YAML = List"
	else
		fail "$name: $(grep -v '^ok' "$AR_TMP/v" | head -20)"
	fi
}

cd "$AR_SOURCE_DIR" || exit 1
for f in profiles/*.json; do
	p=$(basename "$f" .json)
	validate "$p" --policy "$f" --image alpine:3.20 -- sh -c 'id'
	validate "$p-cilium" --policy "$f" --image alpine:3.20 --cilium --runtime-class gvisor -- id
done
validate full --policy "$K8S_DIR/full.json" --cilium --namespace agents --no-namespace -- a
validate full-nocilium --policy "$K8S_DIR/full.json"
# secrets: the proxy's Secret volume and flags, the agent's init container and CA volume
validate secrets --policy "$K8S_DIR/secrets.json" --cilium -- a

# The validator can fail: a wrong type, an unknown field, YAML that differs.
sed 's/"runAsUser": 1000/"runAsUser": "1000"/' "$AR_TMP/full.json" >"$AR_TMP/bad1.json"
sed 's/"readOnlyRootFilesystem"/"readOnlyRootFilesystm"/' "$AR_TMP/full.json" >"$AR_TMP/bad2.json"
sed 's/backoffLimit: 0/backoffLimit: 1/' "$AR_TMP/full.yaml" >"$AR_TMP/bad3.yaml"
for bad in "bad1.json full.yaml" "bad2.json full.yaml" "full.json bad3.yaml"; do
	# shellcheck disable=SC2086 # two file names
	set -- $bad
	if node "$NODE_DIR/validate.mjs" "$AR_TMP/$1" "$AR_TMP/$2" >"$AR_TMP/v" 2>&1; then
		fail "validator accepted $1 $2"
	else
		pass "validator refuses $1 $2: $(grep FAIL "$AR_TMP/v" | head -1 | cut -c1-100)"
	fi
done

# Goldens: each shipped profile, and triage with every k8s flag.
golden() {
	local name=$1 file=$K8S_DIR/golden/$1.yaml
	shift
	"$AGENTRUN" render "$@" >"$AR_TMP/g.yaml"
	if [ "${AR_UPDATE_GOLDEN:-0}" = 1 ]; then cp "$AR_TMP/g.yaml" "$file"; fi
	if diff -u "$file" "$AR_TMP/g.yaml" >"$AR_TMP/diff"; then
		pass "golden $name"
	else
		fail "golden $name: $(head -40 "$AR_TMP/diff")"
	fi
}
for f in profiles/*.json; do
	golden "$(basename "$f" .json)" --policy "$f" --format k8s --image alpine:3.20 -- sh -c 'id'
done
golden triage-cilium --policy profiles/triage.json --format k8s --cilium --runtime-class gvisor \
	--namespace agents --no-namespace -- python3 /app/triage.py
finish

#!/usr/bin/env bash
# One agent spec, every back end: each shipped profile (its host paths made real here:
# a kubeconfig, a mount source) goes through render --format json (docker, read back as
# `docker inspect` records it), render --format k8s, render --format oci --bundle and
# `agentrun run`, and `agentrun check` finds no drift in any of them against that same
# policy: --inspect, --manifest, --bundle, --pid and --name. A control per back end (one
# flag left out, one field changed) must be drift, so each comparison sees what it checks.
# Needs root for run (the other back ends run anyway).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd python3
A=$AGENTRUN

# The profiles' host paths, made real: a kubeconfig whose server the profile allows (with
# network: proxy its token becomes a secret: the sandbox gets a placeholder) and a mount.
mkdir -p "$AR_TMP/logs"
cat >"$AR_TMP/kubeconfig" <<'KUBE'
apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "https://cc-lab-control-plane:6443"}
users:
- name: bot
  user: {token: spec-backends-token}
contexts:
- name: lab
  context: {cluster: lab, user: bot}
current-context: lab
KUBE
chmod 600 "$AR_TMP/kubeconfig"
profiles=()
for prof in "$AR_SOURCE_DIR"/profiles/*.json; do
	name=$(basename "$prof" .json)
	sed -e "s|/home/me/.kube/agent-config|$AR_TMP/kubeconfig|" -e "s|\"/srv/logs\"|\"$AR_TMP/logs\"|" \
		"$prof" >"$AR_TMP/$name.json"
	profiles+=("$name")
done
[ "${#profiles[@]}" -ge 2 ] || fail "expected the shipped profiles, found ${profiles[*]}"

for name in "${profiles[@]}"; do
	P=$AR_TMP/$name.json
	# --- docker: the agent's docker run flags, as docker inspect records them --------
	expect_status "$name: render json" 0 "$A" render --policy "$P" --image alpine:3 --format json -- id
	cp "$AR_TMP/out" "$AR_TMP/$name.plan.json"
	python3 "$AR_SOURCE_DIR/tests/integration/argv2inspect.py" "$AR_TMP/$name.plan.json" \
		>"$AR_TMP/$name.inspect.json"
	expect_status "$name: docker: no drift" 0 "$A" check --policy "$P" --inspect "$AR_TMP/$name.inspect.json"
	python3 "$AR_SOURCE_DIR/tests/integration/argv2inspect.py" "$AR_TMP/$name.plan.json" \
		--read-only >"$AR_TMP/$name.rw.json"
	expect_status "$name: docker control (no --read-only): drift" 1 \
		"$A" check --policy "$P" --inspect "$AR_TMP/$name.rw.json"

	# --- kubernetes: the rendered objects, as a manifest --------------------------
	expect_status "$name: render k8s" 0 "$A" render --policy "$P" --image alpine:3 --format k8s -- id
	cp "$AR_TMP/out" "$AR_TMP/$name.yaml"
	expect_status "$name: k8s: no drift" 0 "$A" check --policy "$P" --manifest "$AR_TMP/$name.yaml"
	sed 's/readOnlyRootFilesystem: true/readOnlyRootFilesystem: false/' "$AR_TMP/$name.yaml" >"$AR_TMP/$name.rw.yaml"
	expect_status "$name: k8s control (writable root): drift" 1 \
		"$A" check --policy "$P" --manifest "$AR_TMP/$name.rw.yaml"

	# --- OCI: the bundle's config.json --------------------------------------------
	mkdir -p "$AR_TMP/rootfs-$name"
	expect_status "$name: render oci" 0 "$A" render --policy "$P" --format oci \
		--rootfs "$AR_TMP/rootfs-$name" --bundle "$AR_TMP/b-$name" -- id
	expect_status "$name: oci: no drift" 0 "$A" check --policy "$P" --bundle "$AR_TMP/b-$name"
	sed -i 's/"noNewPrivileges": true/"noNewPrivileges": false/' "$AR_TMP/b-$name/config.json"
	expect_status "$name: oci control (no no_new_privs): drift" 1 \
		"$A" check --policy "$P" --bundle "$AR_TMP/b-$name"

	# --- run: the sandbox itself, read from /proc -----------------------------------
	"$A" run --policy "$P" -- sleep 60 >"$AR_TMP/$name.run.out" 2>"$AR_TMP/$name.run.err" &
	runner=$!
	on_exit "kill -TERM $runner; wait $runner"
	if ! pid=$(descendant "$runner" sleep); then
		fail "$name: the sandboxed sleep did not start: $(head -c 600 "$AR_TMP/$name.run.err")"
		continue
	fi
	expect_status "$name: run: no drift (--pid)" 0 "$A" check --policy "$P" --pid "$pid"
	expect_eq "$name: run: the verdict" "pid $pid vs policy $name: 0 drift finding(s)" "$(cat "$AR_TMP/out")"
	expect_status "$name: run: no drift (--name)" 0 "$A" check --name "$name-$runner"
	# control: a policy asking for other limits and another user is drift
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["user"]="2000"; d["limits"]["pids"]=16; json.dump(d,open(sys.argv[2],"w"))' \
		"$P" "$AR_TMP/$name.strict.json"
	expect_status "$name: run control (user, pids): drift" 1 \
		"$A" check --policy "$AR_TMP/$name.strict.json" --pid "$pid"
	kill -TERM "$runner"
	wait "$runner" 2>/dev/null || true
done
finish

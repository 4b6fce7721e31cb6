#!/usr/bin/env bash
# render --format oci: every shipped profile (and network-none variants) renders a
# config.json that the runtime-spec JSON schema accepts; --bundle writes it atomically;
# --rootfs, --netns and the hooks land where they should; bad flags are clear errors
# that leave nothing behind.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"

SCHEMA=/usr/share/gocode/src/github.com/opencontainers/runtime-spec/schema
[ -f "$SCHEMA/config-schema.json" ] || skip "needs golang-github-opencontainers-specs-dev (the schema)"
/usr/bin/python3 -c 'import jsonschema' 2>/dev/null || skip "needs python3-jsonschema"
validate() { /usr/bin/python3 "$AR_SOURCE_DIR/tests/integration/oci/validate.py" "$1" "$SCHEMA"; }
jget() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

for prof in "$AR_SOURCE_DIR"/profiles/*.json; do
	name=$(basename "$prof" .json)
	b="$AR_TMP/b-$name"
	expect_status "render $name --bundle" 0 "$AGENTRUN" render --policy "$prof" --format oci \
		--bundle "$b" -- /bin/true
	if out=$(validate "$b/config.json"); then pass "$name: config.json valid against the schema"; else
		fail "$name: schema: $out"
	fi
	# stdout and the bundle carry the same document
	"$AGENTRUN" render --policy "$prof" --format oci -- /bin/true >"$AR_TMP/stdout.json"
	expect_eq "$name: stdout = bundle" "" "$(cmp "$AR_TMP/stdout.json" "$b/config.json" 2>&1)"
	expect_eq "$name: hook path" "$(readlink -f "$AGENTRUN")" \
		"$(jget "$b/config.json" 'd["hooks"]["createRuntime"][0]["path"]')"
	expect_eq "$name: hook args" "agentrun hook poststop --policy $(readlink -f "$prof")" \
		"$(jget "$b/config.json" '" ".join(d["hooks"]["poststop"][0]["args"])')"
	expect_eq "$name: annotation" "$(readlink -f "$prof")" \
		"$(jget "$b/config.json" 'd["annotations"]["io.agentrun.policy"]')"
	expect_eq "$name: no capabilities" "0" \
		"$(jget "$b/config.json" 'sum(len(v) for v in d["process"]["capabilities"].values())')"
	expect_eq "$name: sysrq-trigger masked" "True" \
		"$(jget "$b/config.json" '"/proc/sysrq-trigger" in d["linux"]["maskedPaths"]')"
	expect_status "check --bundle $name: no drift" 0 "$AGENTRUN" check --policy "$prof" --bundle "$b"
	expect_eq "check --bundle $name: report" "bundle $b vs policy $name: 0 drift finding(s)" "$(cat "$AR_TMP/out")"
done

# check --bundle through the CLI: one drifted field, one finding, exit 1; --json
b="$AR_TMP/b-offline"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["process"]["noNewPrivileges"]=False
json.dump(d, open(sys.argv[1], "w"))' "$b/config.json"
expect_status "check --bundle: drift" 1 "$AGENTRUN" check --policy "$AR_SOURCE_DIR/profiles/offline.json" --bundle "$b"
expect_eq "check --bundle: the finding" "DRIFT no_new_privs expected true actual false" "$(head -1 "$AR_TMP/out")"
expect_status "check --bundle --json" 1 "$AGENTRUN" check --policy "$AR_SOURCE_DIR/profiles/offline.json" --bundle "$b" --json
expect_eq "check --bundle --json: drift 1" "1" "$(jget "$AR_TMP/out" 'd["drift"]')"
expect_status "check --bundle: missing dir" 2 "$AGENTRUN" check --policy "$AR_SOURCE_DIR/profiles/offline.json" --bundle "$AR_TMP/none"
expect_match "check --bundle: message" "^agentrun: check: --bundle: .*none/config.json" "$(cat "$AR_TMP/err")"
mkdir -p "$AR_TMP/notoci" && echo '[1]' >"$AR_TMP/notoci/config.json"
expect_status "check --bundle: not a config" 2 "$AGENTRUN" check --policy "$AR_SOURCE_DIR/profiles/offline.json" --bundle "$AR_TMP/notoci"
expect_match "check --bundle: not a config message" "not an OCI config" "$(cat "$AR_TMP/err")"

# --rootfs and --netns (a name under /run/agentrun/netns, or a path)
p="$AR_SOURCE_DIR/profiles/offline.json"
mkdir -p "$AR_TMP/r" # an absolute --rootfs must exist (cli_errors.sh)
"$AGENTRUN" render --policy "$p" --format oci --rootfs "$AR_TMP/r" --netns n1 -- sh >"$AR_TMP/n.json"
expect_eq "--rootfs" "$AR_TMP/r" "$(jget "$AR_TMP/n.json" 'd["root"]["path"]')"
expect_eq "--netns NAME" "/run/agentrun/netns/n1" \
	"$(jget "$AR_TMP/n.json" '[n.get("path") for n in d["linux"]["namespaces"] if n["type"]=="network"][0]')"
expect_eq "--netns: no hooks" "False" "$(jget "$AR_TMP/n.json" '"hooks" in d')"
if out=$(validate "$AR_TMP/n.json"); then pass "--netns config valid"; else fail "--netns schema: $out"; fi

# errors: clear, exit 2, nothing written
expect_status "--bundle without --format oci" 2 "$AGENTRUN" render --policy "$p" --bundle "$AR_TMP/x" -- sh
expect_match "--bundle message" "agentrun: render: --bundle needs --format oci" "$(cat "$AR_TMP/err")"
expect_status "--netns bad name" 2 "$AGENTRUN" render --policy "$p" --format oci --netns 'a b' -- sh
expect_match "--netns message" "agentrun: render: --netns \`a b\`" "$(cat "$AR_TMP/err")"
expect_status "--bundle: no command" 2 "$AGENTRUN" render --policy "$p" --format oci --bundle "$AR_TMP/nocmd"
expect_eq "--bundle: no command leaves no config.json" "no" "$([ -e "$AR_TMP/nocmd/config.json" ] && echo yes || echo no)"
expect_status "--bundle: parent missing" 2 "$AGENTRUN" render --policy "$p" --format oci \
	--bundle "$AR_TMP/missing/deeper" -- sh
expect_match "--bundle: message names the dir" "--bundle: create .*missing/deeper" "$(cat "$AR_TMP/err")"
# a bundle that already has a config.json keeps it whole when the new render fails
mkdir -p "$AR_TMP/keep" && echo '{"old": true}' >"$AR_TMP/keep/config.json"
printf '{"name": "x", "network": "none", "seccomp": "%s"}' "$AR_TMP/nope.json" >"$AR_TMP/badsec.json"
expect_status "--bundle: bad seccomp file" 2 "$AGENTRUN" render --policy "$AR_TMP/badsec.json" \
	--format oci --bundle "$AR_TMP/keep" -- sh
expect_eq "--bundle: old config kept" '{"old": true}' "$(cat "$AR_TMP/keep/config.json")"
expect_eq "--bundle: no temp file left" "config.json" "$(ls "$AR_TMP/keep")"
finish

#!/usr/bin/env bash
# Bad input through the CLI (`agentrun render --policy ...`): the exit status and the
# exact `agentrun: ...` message, printed once; help and version exit 0; nothing is left
# behind. Needs no privileges.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

case $AGENTRUN in /*) ;; *) AGENTRUN=$PWD/$AGENTRUN ;; esac
work="$AR_TMP/work"
mkdir -p "$work"
cd "$work" || exit 1

# error_case WHAT EXIT MESSAGE ARGS...: run agentrun ARGS, compare the status, the whole
# stderr (one line) and that nothing went to stdout.
error_case() {
	local what=$1 want=$2 msg=$3
	shift 3
	expect_status "$what" "$want" "$AGENTRUN" "$@"
	expect_eq "$what: message" "$msg" "$(cat "$AR_TMP/err")"
	expect_eq "$what: stdout" "" "$(cat "$AR_TMP/out")"
}

printf '{"name": ' >"$AR_TMP/invalid.json"
printf '{"name": "Bad_Name", "image": "x"}' >"$AR_TMP/badname.json"
printf '{"name": "x", "image": "x", "colour": "blue"}' >"$AR_TMP/unknown.json"
printf '{"name": "x", "image": "x", "limits": {"memory": "12q"}}' >"$AR_TMP/memory.json"
printf '{"name": "x", "allowed_hosts": ["example.com"]}' >"$AR_TMP/noimage.json"
printf '{"name": "ok", "image": "alpine:3"}' >"$AR_TMP/ok.json"

error_case "missing policy file" 2 \
	"agentrun: policy: open \`$AR_TMP/missing.json\`: No such file or directory" \
	render --policy "$AR_TMP/missing.json"
error_case "invalid JSON" 2 "agentrun: $AR_TMP/invalid.json: invalid JSON at line 1, column 9" \
	render --policy "$AR_TMP/invalid.json"
error_case "bad name" 2 \
	"agentrun: $AR_TMP/badname.json: name: must match ^[a-z0-9][a-z0-9-]{0,30}\$" \
	render --policy "$AR_TMP/badname.json"
error_case "unknown key" 2 "agentrun: $AR_TMP/unknown.json: colour: unknown key" \
	render --policy "$AR_TMP/unknown.json"
error_case "bad memory" 2 \
	"agentrun: $AR_TMP/memory.json: limits.memory: cannot parse \"12q\" (use 256m, 1g or bytes)" \
	render --policy "$AR_TMP/memory.json"
error_case "no image" 2 \
	"agentrun: render: $AR_TMP/noimage.json: \`image\` is not set: the docker plan needs an agent image; set \`image\` in the policy or pass --image" \
	render --policy "$AR_TMP/noimage.json"
error_case "unknown flag" 2 \
	"agentrun: render: unknown option \`--bogus\`; see \`agentrun render --help\`" \
	render --policy "$AR_TMP/ok.json" --bogus
error_case "unknown short flag" 2 \
	"agentrun: render: unknown option \`-x\`; see \`agentrun render --help\`" \
	render -x --policy "$AR_TMP/ok.json"
error_case "missing --policy" 2 \
	"agentrun: render: --policy FILE is required; see \`agentrun render --help\`" \
	render -- true
error_case "--policy without a value" 2 \
	"agentrun: render: option \`--policy\` needs a value (--policy FILE); see \`agentrun render --help\`" \
	render --policy
error_case "bad format" 2 \
	"agentrun: render: --format: unknown format \`yaml\` (text, json, sh, oci, k8s, k8s-json); see \`agentrun render --help\`" \
	render --policy "$AR_TMP/ok.json" --format yaml
error_case "oci without a command" 2 \
	"agentrun: render: --format oci needs the command after \`--\`: an OCI bundle has no image default command" \
	render --policy "$AR_TMP/ok.json" --format oci
error_case "--rootfs that does not exist" 2 \
	"agentrun: render: --rootfs \`/nonexistent-$$\`: no such directory; see \`agentrun render --help\`" \
	render --policy "$AR_TMP/ok.json" --format oci --rootfs /nonexistent-$$ -- true
error_case "--rootfs that is a file" 2 \
	"agentrun: render: --rootfs \`/etc/passwd\`: not a directory; see \`agentrun render --help\`" \
	render --policy "$AR_TMP/ok.json" --format oci --rootfs /etc/passwd -- true
error_case "--image with --format oci" 2 \
	"agentrun: render: --image does not apply to --format oci (the bundle's rootfs is the image); see \`agentrun render --help\`" \
	render --policy "$AR_TMP/ok.json" --format oci --image alpine:3 -- true
# issue 13: the newcomer's mistakes are named, and images are docker references
error_case "policy without --policy" 2 \
	"agentrun: render: unexpected argument \`$AR_TMP/ok.json\` (a policy goes after --policy, the command after --); see \`agentrun render --help\`" \
	render "$AR_TMP/ok.json"
error_case "a flag where the proxy image should be" 2 \
	"agentrun: render: --proxy-image: \"--privileged\" is not a docker image reference (NAME[:TAG][@DIGEST], lower-case name such as \"python:3.12-alpine\" or \"registry.example:5000/team/agent\")" \
	render --policy "$AR_TMP/ok.json" --proxy-image --privileged -- true
error_case "a bad --image" 2 \
	"agentrun: render: --image: \"Alpine\" is not a docker image reference (NAME[:TAG][@DIGEST], lower-case name such as \"python:3.12-alpine\" or \"registry.example:5000/team/agent\")" \
	render --policy "$AR_TMP/ok.json" --image Alpine
printf '{"name": "ok", "image": "Alpine:3"}' >"$AR_TMP/upper.json"
error_case "a bad policy image" 2 \
	"agentrun: render: $AR_TMP/upper.json: image: \"Alpine:3\" is not a docker image reference (NAME[:TAG][@DIGEST], lower-case name such as \"python:3.12-alpine\" or \"registry.example:5000/team/agent\")" \
	render --policy "$AR_TMP/upper.json"
# the same short option for the policy everywhere
expect_status "check -p" 2 "$AGENTRUN" check -p "$AR_TMP/ok.json" --inspect "$AR_TMP/invalid.json"
expect_eq "check -p reads the policy; an inspect JSON error says line like a policy's" \
	"agentrun: check: --inspect: $AR_TMP/invalid.json: invalid JSON at line 1, column 9" "$(cat "$AR_TMP/err")"
rm -f "$AR_TMP/upper.json"
error_case "unknown command" 2 \
	"agentrun: unknown command \`rendr\` (did you mean \`render\`?); to run a program, put it after \`--\` (agentrun -- rendr); see \`agentrun --help\`" \
	rendr --policy "$AR_TMP/ok.json"

# help and version: exit 0, on stdout, nothing on stderr
expect_status "agentrun --help" 0 "$AGENTRUN" --help
expect_match "agentrun --help lists render" '^  render +print the policy' "$(grep render "$AR_TMP/out")"
expect_eq "agentrun --help: stderr" "" "$(cat "$AR_TMP/err")"
expect_status "agentrun render --help" 0 "$AGENTRUN" render --help
expect_match "render --help: usage line" '^Usage: agentrun render --policy FILE' "$(head -1 "$AR_TMP/out")"
expect_match "render --help names every format" 'text.*json.*sh.*oci' "$(tr '\n' ' ' <"$AR_TMP/out")"
expect_eq "render --help: stderr" "" "$(cat "$AR_TMP/err")"
expect_status "agentrun version" 0 "$AGENTRUN" version
expect_match "version output" '^agentrun [0-9]+\.[0-9]+\.[0-9]+$' "$(cat "$AR_TMP/out")"

# a good policy still works after all that, and nothing was written anywhere near
expect_status "render ok" 0 "$AGENTRUN" render --policy "$AR_TMP/ok.json" -- true
expect_eq "nothing left in the working directory" "" "$(find "$work" -mindepth 1)"
expect_eq "nothing new beside the policies" \
	"badname.json err invalid.json memory.json noimage.json ok.json out unknown.json work" \
	"$(find "$AR_TMP" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ' | sed 's/ $//')"

finish

#!/usr/bin/env bash
# agentrun review (docs/review.md): every finding kind has a fixture policy that
# triggers it and one that must not (tests/integration/review/fixtures/KIND.yes.json and
# KIND.no.json, an audit beside it as KIND.yes.jsonl when the kind needs evidence);
# every --sarif output validates against the official SARIF 2.1.0 schema (committed,
# offline, Debian's python3-jsonschema); the exit status follows --fail-on; bad input
# exits 2 naming the flag; and a live sandbox: drift from check's own findings when the
# running sandbox and the reviewed policy differ, none when they agree.
# review/sarif-schema-2.1.0.json is the OASIS SARIF TC's schema, byte for byte: repository
# oasis-tcs/sarif-spec, Documents/CommitteeSpecifications/2.1.0/sarif-schema-2.1.0.json at
# commit 3682e9ee648f2f3e11ba1fcd47fc390a0b8f9dab (its $id names the same file under
# Schemata/); the test checks its sha256 so an edit cannot pass unnoticed.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cmd python3
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import jsonschema' 2>/dev/null ||
	skip "python3-jsonschema (Debian) is not installed"
HERE="$(dirname "$0")/review"
SCHEMA="$HERE/sarif-schema-2.1.0.json"
expect_eq "the committed SARIF schema is the official one" \
	80cd7ffb9b62a4162d541aa9170862dd264f6cce0f04c57f1ac9f2337b808958 "$(sha256sum "$SCHEMA" | cut -d' ' -f1)"
DIR="$AR_TMP/d"
mkdir -p "$DIR/repo/.git" "$DIR/out" "$DIR/.aws" "$DIR/ssh-XXXXabcd"
touch "$DIR/ssh-XXXXabcd/agent.4242"
# kubeconfigs whose token lives a year and one that lives 30 minutes (JWTs made here)
python3 - "$DIR" <<'PY'
import base64, json, sys, time
def b64(d):
    return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")
now = int(time.time())
for name, life in (("year", 365 * 86400), ("hour", 1800)):
    tok = b64({"alg": "RS256"}) + "." + b64({"iat": now, "exp": now + life, "sub": "system:serviceaccount:t:agent"}) + ".c2ln"
    open("%s/kube-%s.yaml" % (sys.argv[1], name), "w").write(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n"
        "users:\n- name: agent\n  user:\n    token: %s\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: agent\n"
        "current-context: c\n" % tok)
PY

validate_sarif() { # FILE: the SARIF 2.1.0 schema, and our own shape on top
	/usr/bin/python3 - "$SCHEMA" "$1" <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
v = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
errors = sorted(v.iter_errors(doc), key=lambda e: list(e.path))
if errors:
    print("; ".join("%s: %s" % (list(e.path), e.message) for e in errors[:3]))
    sys.exit(1)
rules = [r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]]
for r in doc["runs"][0]["results"]:
    assert rules[r["ruleIndex"]] == r["ruleId"], r
    assert r["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1, r
print("valid")
PY
}

ids() { python3 -c 'import json,sys; print(" ".join(f["id"] for f in json.load(open(sys.argv[1]))["findings"]))' "$1"; }

have=""
for yes in "$HERE"/fixtures/*.yes.json; do
	kind=$(basename "$yes" .yes.json)
	for side in yes no; do
		src="$HERE/fixtures/$kind.$side.json"
		pol="$AR_TMP/$kind.$side.json"
		sed -e "s|@DIR@|$DIR|g" -e "s|@HOME@|$DIR/home|g" "$src" >"$pol"
		args=(--policy "$pol")
		[ -f "$HERE/fixtures/$kind.$side.jsonl" ] && args+=(--audit "$HERE/fixtures/$kind.$side.jsonl")
		rc=0
		HOME="$DIR/home" SSH_AUTH_SOCK="" "$AGENTRUN" review "${args[@]}" --json >"$AR_TMP/r.json" 2>"$AR_TMP/r.err" || rc=$?
		[ "$rc" -le 1 ] || fail "$kind.$side: exit $rc: $(cat "$AR_TMP/r.err")"
		got=" $(ids "$AR_TMP/r.json") "
		if [ "$side" = yes ]; then
			expect_match "$kind: its fixture triggers it" " $kind " "$got"
		else
			expect_nomatch "$kind: the clean fixture does not" " $kind " "$got"
		fi
		HOME="$DIR/home" SSH_AUTH_SOCK="" "$AGENTRUN" review "${args[@]}" --sarif >"$AR_TMP/r.sarif" 2>/dev/null || true
		expect_eq "$kind.$side: SARIF 2.1.0 valid" valid "$(validate_sarif "$AR_TMP/r.sarif" 2>&1)"
	done
	have="$have $kind"
done
# every kind the tool knows (its SARIF rules) has fixtures, but drift (the live part below)
kinds=$(python3 -c 'import json,sys; print(" ".join(sorted(r["id"] for r in json.load(open(sys.argv[1]))["runs"][0]["tool"]["driver"]["rules"] if r["id"] != "drift")))' "$AR_TMP/r.sarif")
expect_eq "every finding kind has fixtures" "$kinds" "$(echo "$have" | tr ' ' '\n' | sed '/^$/d' | sort | tr '\n' ' ' | sed 's/ $//')"

# text: the finding on its line, evidence and fix; secrets named, never shown
pol="$AR_TMP/secret-in-env.yes.json"
expect_status "a high finding: exit 1 (--fail-on high)" 1 "$AGENTRUN" review --policy "$pol"
expect_match "text: severity, id, file:line (key)" "^HIGH +secret-in-env $pol:1 \(env\.GITHUB_TOKEN\)$" "$(cat "$AR_TMP/out")"
expect_nomatch "the secret's value is never printed" "not-shown" "$(cat "$AR_TMP/out")"
expect_status "--fail-on critical: exit 0" 0 "$AGENTRUN" review --policy "$pol" --fail-on critical
expect_status "a clean policy: exit 0" 0 "$AGENTRUN" review --policy "$AR_TMP/limits-absent.no.json"
expect_eq "a clean policy: no finding" "0 finding(s): 0 critical, 0 high, 0 medium, 0 low" "$(tail -1 "$AR_TMP/out")"
expect_status "SARIF line of a finding in a multi-line file" 1 "$AGENTRUN" review --policy "$AR_TMP/shared-platform-wildcard.yes.json" --sarif
expect_eq "... on the line of allowed_hosts" 2 "$(python3 -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["runs"][0]["results"] if r["ruleId"]=="shared-platform-wildcard"][0]["locations"][0]["physicalLocation"]["region"]["startLine"])' "$AR_TMP/out")"
"$AGENTRUN" review --policy "$pol" --json >"$AR_TMP/a" 2>/dev/null || true
"$AGENTRUN" review --policy "$pol" --json >"$AR_TMP/b" 2>/dev/null || true
expect_eq "deterministic" "" "$(cmp "$AR_TMP/a" "$AR_TMP/b")"

# bad input: 2, one line naming what
expect_status "no --policy" 2 "$AGENTRUN" review
expect_match "... named" "^agentrun: review: missing --policy P" "$(cat "$AR_TMP/err")"
expect_status "a missing policy file" 2 "$AGENTRUN" review --policy "$AR_TMP/nope.json"
expect_match "... named" "nope.json" "$(cat "$AR_TMP/err")"
expect_status "a bad --fail-on" 2 "$AGENTRUN" review --policy "$pol" --fail-on severe
expect_match "... named" "--fail-on .severe." "$(cat "$AR_TMP/err")"
printf 'not json\n' >"$AR_TMP/junk.jsonl"
expect_status "an audit with no entry" 2 "$AGENTRUN" review --policy "$pol" --audit "$AR_TMP/junk.jsonl"
expect_match "... named" "^agentrun: review: --audit .*no audit entries" "$(cat "$AR_TMP/err")"
expect_status "two targets" 2 "$AGENTRUN" review --policy "$pol" --pid 1 --name x
expect_status "--json and --sarif" 2 "$AGENTRUN" review --policy "$pol" --json --sarif

# a live sandbox: drift through check's own findings
need_root
NAME="rv-$$"
LIVE="$AR_TMP/live.json"
cat >"$LIVE" <<JSON
{"name": "$NAME", "allowed_hosts": ["api.test.example:443"], "user": "1000",
 "limits": {"pids": 64, "memory": "256m", "cpus": "1"}, "proxy": {"transparent": false}}
JSON
"$AGENTRUN" run --policy "$LIVE" --audit "$AR_TMP/live.jsonl" -- sleep 30 >"$AR_TMP/run.out" 2>"$AR_TMP/run.err" &
RUN=$!
on_exit "kill -TERM $RUN; wait $RUN"
SB="$NAME-$RUN"
net_state "$SB" >/dev/null || fail "no state for $SB"
sleep 0.3
expect_status "live sandbox, the policy it runs: no drift" 0 "$AGENTRUN" review --policy "$LIVE" --name "$SB" --json
expect_eq "... no drift finding" "" "$(ids "$AR_TMP/out" | tr ' ' '\n' | grep -c drift | grep -v '^0$')"
expect_eq "... the target named" "$SB" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["target"])' "$AR_TMP/out")"
sed 's/"memory": "256m"/"memory": "128m"/' "$LIVE" >"$AR_TMP/other.json"
expect_status "another policy's limit: drift" 1 "$AGENTRUN" review --policy "$AR_TMP/other.json" --name "$SB"
expect_match "... the drift finding, from check" "^HIGH +drift " "$(cat "$AR_TMP/out")"
expect_match "... what check found" "evidence: $SB: memory limit expected 134217728 actual 268435456" "$(cat "$AR_TMP/out")"
expect_status "the live audit as evidence" 0 "$AGENTRUN" review --policy "$LIVE" --audit "$SB" --fail-on medium
expect_match "... the rule, used or not" "^api.test.example:443 +0 .*(unused|no audit)" "$(cat "$AR_TMP/out")"
finish

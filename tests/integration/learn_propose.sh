#!/usr/bin/env bash
# run in learn mode -> audit --propose -> run under the proposal (docs/learn.md): a
# real client script in the sandbox (curl through the proxy, python urllib, curl
# without the proxy through the DNS stub and transparent capture, a POST with a body)
# against local origins; in learn mode a name resolving to a private address outside
# allow_private and an address literal stay refused. The proposal (a diff of the
# policy, applied with patch(1)) allows exactly those names: the same script under it,
# in enforce mode, passes with zero denials, and one more host is refused. Origins on
# the host's 127.0.0.1, reached through proxy.allow_private. The learn policy names the
# origin's port in one rule: transparent capture listens on 80, 443 and the ports rules
# name, fixed at start (docs/network.md).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"
need_cmd ip
need_cmd patch
need_cmd getent

ORIG=$(free_port)
start_origin "$ORIG"
# the proxy's view of the names (its /etc/hosts); the sandbox gets its own, without them
echo "127.0.0.1 a.learn.test post.learn.test dns.learn.test w1.cdn.learn.test w2.cdn.learn.test w3.cdn.learn.test w4.cdn.learn.test extra.learn.test" >>"$AR_TMP/hosts"
echo "127.0.0.2 priv.learn.test" >>"$AR_TMP/hosts"
printf '127.0.0.1 localhost\n' >"$AR_TMP/sandbox-hosts"
mkdir -m 755 "$AR_TMP/bin"
cat >"$AR_TMP/bin/work.sh" <<'SH'
#!/bin/sh
# the agent's work: what the proposal must allow
o=$1
curl -sS -m 10 -o /dev/null -w 'a=%{http_code}\n' "http://a.learn.test:$o/hello"
curl -sS -m 10 -o /dev/null -w 'post=%{http_code}\n' --data-binary @/etc/os-release "http://post.learn.test:$o/echo"
python3 - "$o" <<'PY'
import sys, urllib.request
for i in range(1, 5):
    r = urllib.request.urlopen("http://w%d.cdn.learn.test:%s/hello" % (i, sys.argv[1]), timeout=10)
    print("w%d=%d" % (i, r.status))
PY
echo "dns=$(getent hosts dns.learn.test | cut -d' ' -f1)"
curl -sS -m 10 --noproxy '*' -o /dev/null -w 'captured=%{http_code}\n' "http://dns.learn.test:$o/hello"
SH
cat >"$AR_TMP/bin/probe.sh" <<'SH'
#!/bin/sh
# what learn mode still refuses
o=$1
curl -sS -m 10 -o /dev/null -w 'priv=%{http_code}\n' "http://priv.learn.test:$o/hello"
curl -sS -m 10 -o /dev/null -w 'literal=%{http_code}\n' --noproxy '' "http://127.0.0.1:$o/hello"
SH
chmod 755 "$AR_TMP/bin/"*.sh

NAME="lp-$$"
POLICY="$AR_TMP/policy.json"
cat >"$POLICY" <<JSON
{
  "name": "$NAME",
  "allowed_hosts": ["a.learn.test:$ORIG", "unused.learn.test:$ORIG"],
  "limits": {"pids": 64},
  "proxy": {
    "allow_private": ["127.0.0.1", "10.99.0.0/16"]
  },
  "mode": "learn"
}
JSON
cp "$POLICY" "$AR_TMP/policy.orig"

sandbox() { # AUDIT SCRIPT...: run the scripts in a sandbox of $POLICY
	local audit=$1
	shift
	env -u HTTP_PROXY -u HTTPS_PROXY -u http_proxy -u https_proxy \
		"$AGENTRUN" run --policy "$POLICY" --mount "$AR_TMP/bin:/ar-bin" \
		--mount "$AR_TMP/sandbox-hosts:/etc/hosts" --audit "$audit" --proxy-log "$AR_TMP/proxy.log" \
		-- sh -c 'for s in "$@"; do sh "/ar-bin/$s" '"$ORIG"'; done' _ "$@"
}

sandbox "$AR_TMP/learn.jsonl" work.sh probe.sh >"$AR_TMP/learn.out" 2>"$AR_TMP/learn.err" ||
	fail "learn run exited $?: $(cat "$AR_TMP/learn.err")"
out=$(cat "$AR_TMP/learn.out")
val() { printf '%s\n' "$out" | sed -n "s/^$1=//p"; }
expect_match "the start says learn mode, what it refuses and what to run next" \
	"learn mode: names outside allowed_hosts are let through.*still refused: private and metadata addresses outside proxy.allow_private, address literals.*agentrun audit $NAME-[0-9]+ --propose --policy $POLICY" \
	"$(cat "$AR_TMP/learn.err")"
for k in a post w1 w2 w3 w4 captured; do
	expect_eq "learn: $k let through" 200 "$(val "$k")"
done
expect_match "learn: the DNS stub answered an unlisted name" '^198\.1[89]\.' "$(val dns)"
expect_eq "learn: a name resolving to 127.0.0.2 refused" 403 "$(val priv)"
expect_eq "learn: an address literal refused" 403 "$(val literal)"

# the proposal, against the policy: a diff, applied with patch(1)
"$AGENTRUN" audit "$AR_TMP/learn.jsonl" --propose --policy "$POLICY" >"$AR_TMP/proposal.txt" 2>&1 ||
	fail "audit --propose exited $?: $(cat "$AR_TMP/proposal.txt")"
"$AGENTRUN" audit "$AR_TMP/learn.jsonl" --propose --policy "$POLICY" >"$AR_TMP/proposal2.txt" 2>&1
expect_eq "the same audit, the same proposal byte for byte" "" "$(cmp "$AR_TMP/proposal.txt" "$AR_TMP/proposal2.txt")"
"$AGENTRUN" audit "$AR_TMP/learn.jsonl" --propose --policy "$POLICY" --json >"$AR_TMP/proposal.json" ||
	fail "audit --propose --json"
sed -n '/^--- /,$p' "$AR_TMP/proposal.txt" >"$AR_TMP/proposal.diff"
patch -s "$POLICY" <"$AR_TMP/proposal.diff" || fail "patch: $(cat "$AR_TMP/proposal.diff")"
python3 - "$POLICY" "$AR_TMP/proposal.json" "$ORIG" "$NAME" >"$AR_TMP/check.out" <<'PY' || fail "the proposal: $(cat "$AR_TMP/check.out")"
import json, sys
p = json.load(open(sys.argv[1]))
j = json.load(open(sys.argv[2]))
o, name = sys.argv[3], sys.argv[4]
# the rule the run used stays first; the unused one goes; the rest is added, sorted
want = ["a.learn.test:" + o, "*.cdn.learn.test:" + o, "dns.learn.test:" + o, "post.learn.test:" + o]
assert p["allowed_hosts"] == want, p["allowed_hosts"]
assert j["allowed_hosts"] == want, j
# the user's other fields, in their order; learn mode becomes enforce
assert list(p) == ["name", "allowed_hosts", "limits", "proxy", "mode"], list(p)
assert p["name"] == name and p["limits"] == {"pids": 64} and p["mode"] == "enforce", p
assert p["proxy"]["allow_private"] == ["127.0.0.1"], p["proxy"]
assert j["remove_private"] == ["10.99.0.0/16"], j
hosts = {"a.learn.test", "post.learn.test", "dns.learn.test"} | {"w%d.cdn.learn.test" % i for i in range(1, 5)}
b = p["proxy"]["max_bytes_out"]
assert set(b) == hosts, b
assert all(v >= 4096 for v in b.values()), b
sent = {r["rule"]: r["bytes_out"] for r in j["rules"]}
assert b["post.learn.test"] >= 2 * sent["post.learn.test:" + o], (b, sent)
assert [r["names"] for r in j["rules"] if r["rule"].startswith("*.")] == [["w%d.cdn.learn.test" % i for i in range(1, 5)]], j["rules"]
assert [r["added"] for r in j["rules"]] == [False, True, True, True], j
assert j["remove"] == ["unused.learn.test:" + o], j
print("ok")
PY
expect_eq "the proposal allows exactly what the run did" ok "$(cat "$AR_TMP/check.out")"

# enforce, under the proposal: the same work, zero denials
sandbox "$AR_TMP/enforce.jsonl" work.sh >"$AR_TMP/enforce.out" 2>"$AR_TMP/enforce.err" ||
	fail "enforce run exited $?: $(cat "$AR_TMP/enforce.err")"
expect_nomatch "enforce: no learn line" "learn mode" "$(cat "$AR_TMP/enforce.err")"
out=$(cat "$AR_TMP/enforce.out")
for k in a post w1 w2 w3 w4 captured; do
	expect_eq "enforce: $k allowed" 200 "$(val "$k")"
done
denials() { python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(sum(not r["allowed"] for r in rows), sum(bool(r.get("learned")) for r in rows), len(rows))' "$1"; }
read -r den lrn n <<<"$(denials "$AR_TMP/enforce.jsonl")"
expect_eq "enforce: zero denials" 0 "$den"
expect_eq "enforce: nothing learned" 0 "$lrn"
expect_match "enforce: the audit has the requests" '^[1-9][0-9]*$' "$n"

# one more host: refused
cat >"$AR_TMP/bin/extra.sh" <<'SH'
#!/bin/sh
curl -sS -m 10 -o /dev/null -w 'extra=%{http_code}\n' "http://extra.learn.test:$1/hello"
curl -sS -m 10 -o /dev/null -w 'w5=%{http_code}\n' "http://w5.cdn.learn.test:$1/hello"
SH
chmod 755 "$AR_TMP/bin/extra.sh"
sandbox "$AR_TMP/extra.jsonl" work.sh extra.sh >"$AR_TMP/extra.out" 2>"$AR_TMP/extra.err" ||
	fail "extra run exited $?: $(cat "$AR_TMP/extra.err")"
out=$(cat "$AR_TMP/extra.out")
expect_eq "enforce: one more host refused" 403 "$(val extra)"
expect_eq "enforce: the work still passes" 200 "$(val w4)"
read -r den _ _ <<<"$(denials "$AR_TMP/extra.jsonl")"
expect_eq "enforce: exactly the one more host denied (w5 is under the wildcard)" 1 "$den"
expect_eq "no sandbox state left" "" "$(ls -d "$AR_STATE/$NAME"-* 2>/dev/null)"

# bad input: exit 2, one line naming what
expect_status "--propose with a missing policy" 2 "$AGENTRUN" audit "$AR_TMP/learn.jsonl" --propose --policy "$AR_TMP/nope.json"
expect_match "... names it" "^agentrun: audit --propose: .*nope.json" "$(cat "$AR_TMP/err")"
expect_status "--wildcard-min 1" 2 "$AGENTRUN" audit "$AR_TMP/learn.jsonl" --propose --wildcard-min 1
expect_match "... names the flag" "^agentrun: audit: --wildcard-min .1." "$(cat "$AR_TMP/err")"
expect_status "--policy without --propose" 2 "$AGENTRUN" audit "$AR_TMP/learn.jsonl" --policy "$POLICY"
printf 'not an audit\n' >"$AR_TMP/junk.jsonl"
expect_status "--propose of a file with no audit entry" 2 "$AGENTRUN" audit "$AR_TMP/junk.jsonl" --propose
# run never loads libpsl: only the commands that propose or review open it
expect_eq "agentrun does not link libpsl" 0 "$(ldd "${AR_AGENTRUN_BIN:-$AGENTRUN}" | grep -c libpsl || true)"
"$AGENTRUN" run -- sleep 3 &
RUN=$!
sleep 1
expect_eq "a running agentrun has no libpsl mapped" 0 "$(grep -c libpsl "/proc/$RUN/maps" || true)"
wait "$RUN"
finish

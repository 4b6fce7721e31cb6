#!/usr/bin/env bash
# agentrun proxy --learn (docs/learn.md): names outside the list go through and are
# audited "learned": true with the rule that would have allowed them, the method, the
# bytes both ways, the body a POST sent and the origin's status; still refused in learn
# mode: a name resolving to a private address outside --allow-private, an address
# literal, a label over 40 characters, a flood of random-looking names under one parent,
# and a TLS tunnel whose SNI is not its CONNECT host. Without --learn the same requests
# are denied.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"

ORIG=$(free_port)
ECHO=$(free_port)
PL=$(free_port)
PE=$(free_port)
start_origin "$ORIG"
start_echo "$ECHO"
# 127.0.0.1 only: private.test.example (127.0.0.2) stays refused
start_proxy learn "$PL" --learn --allow "www.test.example:$ORIG" --allow-private 127.0.0.1
start_proxy enforce "$PE" --allow "www.test.example:$ORIG" --allow-private 127.0.0.1
expect_match "the start line says learn mode" "learn mode: names outside the list are let through" \
	"$(cat "$AR_TMP/learn.err")"

code() { curl -sS -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$1" "${@:2}" 2>/dev/null; }
expect_eq "a listed name: 200" 200 "$(code "$PL" "http://www.test.example:$ORIG/hello")"
expect_eq "an unlisted name: let through" 200 "$(code "$PL" "http://api.test.example:$ORIG/hello")"
expect_eq "a POST with a body: let through" 200 "$(code "$PL" --data-binary 'twelve bytes' "http://other.test.example:$ORIG/post")"
expect_eq "a name resolving to 127.0.0.2: refused" 403 "$(code "$PL" "http://private.test.example:$ORIG/")"
expect_eq "an address literal: refused" 403 "$(code "$PL" "http://127.0.0.1:$ORIG/")"
long=aaaaaaaaaabbbbbbbbbbccccccccccddddddddddeeeeeeeeee
expect_eq "a 50-character label: refused" 403 "$(code "$PL" "http://$long.test.example:$ORIG/")"
# a flood: random-looking names under one parent, past the limit of 16
flood=0
for i in $(seq 1 18); do
	c=$(code "$PL" "http://q${i}x7k2m9w4zt.deep.www.test.example:$ORIG/")
	[ "$c" = 403 ] && flood=$((flood + 1))
done
expect_eq "random-looking names under one parent: the 17th and 18th refused" 2 "$flood"
# a tunnel to a learned name whose ClientHello names another host: cut (421)
got=$(python3 "$PX_DIR/sni.py" "$PL" "test.example:$ECHO" hello evil.example 2)
expect_eq "learn mode keeps the SNI check" refused "${got%% *}"
got=$(python3 "$PX_DIR/sni.py" "$PL" "test.example:$ECHO" hello test.example 2)
expect_eq "a learned tunnel with its own SNI passes" passed "${got%% *}"
expect_eq "enforce: the unlisted name is denied" 403 "$(code "$PE" "http://api.test.example:$ORIG/hello")"
stop_proxy "$PX_PID"

python3 - "$AR_TMP/learn.audit" "$ORIG" "$ECHO" >"$AR_TMP/check.out" <<'PY' || fail "audit check: $(cat "$AR_TMP/check.out")"
import json, sys
orig, echo = sys.argv[2], sys.argv[3]
rows = [json.loads(l) for l in open(sys.argv[1])]
def one(host, method=None):
    m = [r for r in rows if r["host"] == host and (method is None or r["method"] == method)]
    assert len(m) == 1, (host, m)
    return m[0]
www = one("www.test.example")
assert www["allowed"] and "learned" not in www and www["rule"] == "www.test.example:" + orig, www
api = one("api.test.example")
assert api["allowed"] and api["learned"] is True and api["rule"] == "api.test.example:" + orig, api
assert api["method"] == "GET" and api["status"] == 200 and api["bytes_out"] > 0 and api["bytes_in"] > 0, api
assert api["reason"] == "learned: api.test.example:%s is not in the allow-list" % orig, api
assert "body_bytes" not in api, api
post = one("other.test.example")
assert post["learned"] and post["method"] == "POST" and post["body_bytes"] == 12, post
priv = one("private.test.example")
assert not priv["allowed"] and "learned" not in priv and "a loopback address" in priv["reason"], priv
lit = one("127.0.0.1")
assert not lit["allowed"] and "never learns an address" in lit["reason"], lit
longr = [r for r in rows if r["host"].startswith("aaaaaaaaaa")][0]
assert not longr["allowed"] and "a label of 50 characters" in longr["reason"], longr
fl = [r for r in rows if r["host"].endswith(".deep.www.test.example")]
assert sum(r["allowed"] for r in fl) == 16, fl
assert all("more than 16 distinct random-looking names under deep.www.test.example" in r["reason"]
           for r in fl if not r["allowed"]), fl
sni = [r for r in rows if r["host"] == "test.example"]
assert [r["status"] for r in sni] == [421, 200] and all(r["method"] == "CONNECT" for r in sni), sni
assert sni[1]["learned"] and sni[1]["rule"] == "test.example:" + echo, sni
print("ok")
PY
expect_eq "the learn audit" ok "$(cat "$AR_TMP/check.out")"
finish

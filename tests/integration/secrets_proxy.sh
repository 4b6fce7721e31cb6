#!/usr/bin/env bash
# `agentrun proxy` with --secret flags, as render's docker and Kubernetes proxies run
# it (docs/secrets.md, "Under docker and Kubernetes"): the agent's placeholders given
# with --secret-placeholder, the values read by the proxy from its environment and a
# file, HTTPS to the bound host terminated with a CA the proxy made, the roots and that
# CA written to --ca-bundle and served at GET /agentrun/ca-bundle.pem. A recording
# origin with its own test CA sees the real values; a placeholder to another host is
# refused and audited; the value is nowhere in the proxy's /proc, the audit or the log.
# Then bad input: exit 2, one line naming the flag.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"
need_cmd openssl
SD="$AR_SOURCE_DIR/tests/integration/secrets"
mkdir -m 755 "$AR_TMP/data"
bash "$SD/mkca.sh" "$AR_TMP/data" api.test.example other.test.example
A=$(free_port) O=$(free_port) P=$(free_port) PX=$(free_port)
origin() { # PORT RECORD CERT KEY
	python3 "$SD/origin.py" "$@" >"$AR_TMP/origin.$1.log" 2>&1 &
	on_exit "kill $!"
	wait_file_has "$AR_TMP/origin.$1.log" ready
}
origin "$A" "$AR_TMP/rec.api" "$AR_TMP/data/api.test.example.pem" "$AR_TMP/data/api.test.example.key"
origin "$O" "$AR_TMP/rec.other" "$AR_TMP/data/other.test.example.pem" "$AR_TMP/data/other.test.example.key"
origin "$P" "$AR_TMP/rec.plain"

API_REAL="sk-REAL-$$-$RANDOM$RANDOM"
GH_REAL="ghp_REAL$$x$RANDOM$RANDOM"
printf '%s\n' "$GH_REAL" >"$AR_TMP/gh-token"
chmod 600 "$AR_TMP/gh-token"
hex() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }
PH_API="agentrun-secret-API_KEY-$(hex)" PH_GH="agentrun-secret-GH_TOKEN-$(hex)"
mkdir "$AR_TMP/ca"
AR_TEST_API=$API_REAL "$AGENTRUN" proxy --listen "127.0.0.1:$PX" --dns-files-only \
	--allow "api.test.example:$A" --allow "other.test.example:$O" --allow "other.test.example:$P" --allow-private 127.0.0.1 \
	--secret API_KEY=env:AR_TEST_API --secret-host "API_KEY=api.test.example:$A" \
	--secret-placeholder "API_KEY=$PH_API" \
	--secret "GH_TOKEN=file:$AR_TMP/gh-token" --secret-host "GH_TOKEN=api.test.example:$A" \
	--secret-placeholder "GH_TOKEN=$PH_GH" \
	--upstream-ca "$AR_TMP/data/ca.pem" --ca-bundle "$AR_TMP/ca/ca-bundle.pem" \
	--audit "$AR_TMP/audit" 2>"$AR_TMP/proxy.err" &
PXPID=$!
on_exit "kill $PXPID 2>/dev/null"
for _ in $(seq 1 200); do
	curl -s -o /dev/null "http://127.0.0.1:$PX/" && break
	sleep 0.05
done

# the CA: written before serving, and served to a client of the proxy (an init container)
B="$AR_TMP/ca/ca-bundle.pem"
roots=$(grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt 2>/dev/null || echo 0)
expect_eq "--ca-bundle: the host's roots and the sandbox CA" "$((roots + 1))" "$(grep -c 'BEGIN CERTIFICATE' "$B")"
expect_match "--ca-bundle: readable by the agent's user" '^-rw-r--r--' "$(ls -l "$B")"
expect_eq "--ca-bundle: the last certificate is the sandbox CA" "subject=CN = agentrun sandbox CA proxy-$PXPID" \
	"$(awk '/BEGIN CERT/ {c = ""} {c = c $0 "\n"} END {printf "%s", c}' "$B" | openssl x509 -noout -subject)"
curl -sS -o "$AR_TMP/served.pem" "http://127.0.0.1:$PX/agentrun/ca-bundle.pem"
expect_eq "GET /agentrun/ca-bundle.pem serves the same bundle" "$(sha256sum <"$B")" "$(sha256sum <"$AR_TMP/served.pem")"

# through the proxy, trusting the bundle: the origin gets the real values
px() { curl -sS -m 20 --proxy "http://127.0.0.1:$PX" --cacert "$B" "$@" 2>&1; }
expect_eq "a header with API_KEY's placeholder: answered" ok "$(px -H "Authorization: Bearer $PH_API" "https://api.test.example:$A/bearer")"
expect_eq "Basic with GH_TOKEN's placeholder: answered" ok "$(px -u "x-access-token:$PH_GH" "https://api.test.example:$A/basic")"
rec() { grep -F " $2" "$1" | head -1; }
expect_match "the origin got the real API_KEY" "Authorization: Bearer $API_REAL" "$(rec "$AR_TMP/rec.api" /bearer)"
expect_match "the origin got the real GH_TOKEN (file source) in Basic" \
	"Authorization: Basic $(printf 'x-access-token:%s' "$GH_REAL" | base64 -w0)" "$(rec "$AR_TMP/rec.api" /basic)"
expect_match "terminated with the proxy's CA" "agentrun sandbox CA proxy-$PXPID" \
	"$(openssl s_client -proxy "127.0.0.1:$PX" -connect "api.test.example:$A" -servername api.test.example </dev/null 2>/dev/null | sed -n 's/^issuer=//p')"
# elsewhere: refused, audited by name; another host stays a tunnel
expect_eq "a placeholder to another host: 403" 403 "$(curl -sS -m 20 -o /dev/null -w '%{http_code}' --proxy "http://127.0.0.1:$PX" -H "X-Key: $PH_API" "http://other.test.example:$P/leak" 2>/dev/null)"
expect_eq "another host, no placeholder: a tunnel with its own certificate" ok \
	"$(curl -sS -m 20 --proxy "http://127.0.0.1:$PX" --cacert "$AR_TMP/data/ca.pem" "https://other.test.example:$O/tunnel" 2>&1)"
expect_match "the audit names the secret refused" '"secret":"API_KEY","secret_action":"refused"' "$(cat "$AR_TMP/audit")"
expect_match "the audit names the secrets injected" '"secret":"GH_TOKEN","secret_action":"injected"' "$(cat "$AR_TMP/audit")"
expect_match "the CA request is audited" '"/agentrun/ca-bundle.pem: the roots and the sandbox CA"' "$(cat "$AR_TMP/audit")"
expect_eq "the origin never saw a placeholder" 0 "$(cat "$AR_TMP/rec.api" "$AR_TMP/rec.other" "$AR_TMP/rec.plain" 2>/dev/null | grep -c 'agentrun-secret-' || true)"

# the values: not in the proxy's environment (wiped), audit or log; the proxy not dumpable
cat "/proc/$PXPID/environ" "/proc/$PXPID/cmdline" >"$AR_TMP/proc" 2>/dev/null
expect_eq "the proxy is not dumpable (its /proc files are root's)" 0 "$(stat -c %u "/proc/$PXPID/environ")"
kill "$PXPID"
wait "$PXPID" 2>/dev/null || true
for f in "$AR_TMP/proc" "$AR_TMP/audit" "$AR_TMP/proxy.err"; do
	expect_eq "no real value in $(basename "$f")" 0 "$(grep -c -a -e "$API_REAL" -e "$GH_REAL" "$f" || true)"
done

# bad input: 2, one line naming the flag
bad() { # WHAT WANT ARGS...
	local what=$1 want=$2
	shift 2
	expect_status "$what: 2" 2 env AR_TEST_API=x "$AGENTRUN" proxy --listen 127.0.0.1:0 --allow "api.test.example:$A" "$@"
	expect_match "$what: names it" "^agentrun: .*$want" "$(cat "$AR_TMP/err")"
	expect_eq "$what: one line" 1 "$(wc -l <"$AR_TMP/err")"
}
ok_ph="API_KEY=$PH_API"
bad "no host" "--secret API_KEY: no --secret-host API_KEY=RULE" --secret API_KEY=env:AR_TEST_API --secret-placeholder "$ok_ph"
bad "host not allowed" "--secret-host API_KEY=x.example: not one of the --allow rules" \
	--secret API_KEY=env:AR_TEST_API --secret-host API_KEY=x.example --secret-placeholder "$ok_ph"
bad "no placeholder" "secrets.API_KEY: the environment holds no placeholder for it" \
	--secret API_KEY=env:AR_TEST_API --secret-host "API_KEY=api.test.example:$A"
bad "a malformed placeholder" "secrets.API_KEY: the environment holds no placeholder" \
	--secret API_KEY=env:AR_TEST_API --secret-host "API_KEY=api.test.example:$A" --secret-placeholder API_KEY=agentrun-secret-API_KEY-xyz
bad "bad source" "--secret .API_KEY=home.: the source must be env:VARIABLE or file:/absolute/path" --secret API_KEY=home
bad "bad name" "--secret .A-B=env:X.: expected NAME=SOURCE" --secret A-B=env:X
bad "host before its secret" "--secret-host .K=api.test.example:$A.: no --secret K before it" --secret-host "K=api.test.example:$A"
bad "a missing value" "secrets.API_KEY.from: env:AR_NOPE_$$ is not set or empty" \
	--secret "API_KEY=env:AR_NOPE_$$" --secret-host "API_KEY=api.test.example:$A" --secret-placeholder "$ok_ph"
bad "a placeholder without a secret" "--secret-placeholder .K=x.: no --secret of that name" \
	--secret API_KEY=env:AR_TEST_API --secret-host "API_KEY=api.test.example:$A" --secret-placeholder "$ok_ph" --secret-placeholder K=x
printf '{"name": "p", "allowed_hosts": ["api.test.example:%s"]}\n' "$A" >"$AR_TMP/p.json"
expect_status "--secret with --policy: 2" 2 "$AGENTRUN" proxy --listen 127.0.0.1:0 --policy "$AR_TMP/p.json" \
	--secret API_KEY=env:AR_TEST_API --secret-host "API_KEY=api.test.example:$A"
expect_match "--secret with --policy: says so" "^agentrun: proxy: --secret: not with --policy" "$(cat "$AR_TMP/err")"
finish

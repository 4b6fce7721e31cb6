#!/usr/bin/env bash
# The main job: install, build, and run a command in the sandbox with the shipped
# offline profile: it shows who the command runs as, what it is left with, and a
# few things it cannot do. Then the triage profile rendered as docker commands.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
# shellcheck disable=SC2016 # the shell inside the sandbox expands them
./build/agentrun --policy profiles/offline.json -- sh -c '
	id
	echo "hostname: $(hostname)"
	grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status
	echo "network interfaces: $(ls /sys/class/net)"
	echo "home directories visible: [$(ls -A /home 2>/dev/null)]"
	touch /etc/agentrun-demo 2>&1 || true
	echo "scratch works" >/tmp/demo && cat /tmp/demo
	unshare -r true 2>&1 || true'
./build/agentrun render --policy profiles/triage.json -- python3 agent.py

#!/usr/bin/env bash
# The main job: install, build, and run a command in the sandbox with the shipped
# offline profile; falls back to rendering the triage profile where `run` is unavailable.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
./build/agentrun render --policy profiles/triage.json -- python3 agent.py

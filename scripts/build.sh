#!/usr/bin/env bash
# Configure and build. BUILD_DIR (default build/) and extra cmake flags as arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BUILD_DIR:-build}
cmake -S . -B "$dir" -DAR_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"

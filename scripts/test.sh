#!/usr/bin/env bash
# The whole test suite: install, build (warnings as errors), run the unit tests under
# AddressSanitizer + UBSan, then every test (unit, integration as root, the UML vm lane).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
BUILD_DIR=build-asan scripts/build.sh -DAR_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
ctest --test-dir build-asan -L unit --output-on-failure -j"$(nproc)"
scripts/build.sh
ctest --test-dir build --output-on-failure

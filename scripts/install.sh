#!/usr/bin/env bash
# Build agentrun and install it on PATH: PREFIX/bin/agentrun (PREFIX=/usr/local, which is
# on root's PATH on Debian), its man page PREFIX/share/man/man1/agentrun.1 and the shipped
# policies PREFIX/share/agentrun/profiles/*.json (`--policy offline` finds them). Run from
# a clone, as root for /usr/local:
#   scripts/install.sh                 build (scripts/build.sh) and install
#   PREFIX=$HOME/.local scripts/install.sh
#   scripts/install.sh --no-build      install what BUILD_DIR (build/) already holds
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${PREFIX:-/usr/local}
build=${BUILD_DIR:-build}

case "${1:-}" in
"") scripts/build.sh >/dev/null ;;
--no-build) ;;
*)
	echo "agentrun: install.sh: unknown argument \`$1\` (--no-build or nothing)" >&2
	exit 2
	;;
esac
if [ ! -x "$build/agentrun" ]; then
	echo "agentrun: install.sh: $build/agentrun is missing: run scripts/build.sh first" >&2
	exit 2
fi
cmake --install "$build" --prefix "$prefix" >/dev/null
echo "agentrun: installed $prefix/bin/agentrun, its man page and the profiles in $prefix/share/agentrun/profiles"
case ":$PATH:" in
*":$prefix/bin:"*) ;;
*) echo "agentrun: $prefix/bin is not on PATH: export PATH=\"$prefix/bin:\$PATH\"" >&2 ;;
esac

# shellcheck shell=bash
# Shared by tests/escape/*.sh: tests/lib.sh, root, and the static ar-escape probe
# copied where a sandbox can see it (a bind of a copy, never the build tree).
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
need_root
ESCAPE="$AR_BUILD_DIR/tests/ar-escape"
need "ar-escape (built with the tests: $ESCAPE)" test -x "$ESCAPE"
mkdir -p "$AR_TMP/bin"
cp "$ESCAPE" "$AR_TMP/bin/ar-escape"
chmod 755 "$AR_TMP" "$AR_TMP/bin" "$AR_TMP/bin/ar-escape"
cd /

# inside ATTEMPT [ARG] [-- AGENTRUN OPTIONS]: the attempt in a default sandbox.
inside() {
	local args=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		args+=("$1")
		shift
	done
	[ $# -eq 0 ] || shift
	"$AGENTRUN" --mount "$AR_TMP/bin:/ar-bin" "$@" -- /ar-bin/ar-escape "${args[@]}" </dev/null
}
# outside ATTEMPT [ARG]: the positive control, as the test runner (root).
outside() { "$AR_TMP/bin/ar-escape" "$@" </dev/null; }

# contained ATTEMPT INSIDE [CONTROL]: inside, the attempt gives INSIDE (an errno
# name); outside it gives CONTROL (default ok: the primitive works, so the sandbox is
# what stops it). CONTROL `-` skips the control (no safe way to run it outside).
contained() {
	local attempt=$1 want=$2 control=${3:-ok}
	expect_eq "$attempt: contained" "$want" "$(inside "$attempt" 2>&1)"
	[ "$control" = - ] || expect_eq "$attempt: positive control outside" "$control" "$(outside "$attempt" 2>&1)"
}

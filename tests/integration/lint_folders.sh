#!/usr/bin/env bash
# Lint: the folders of src/ include each other in one direction only. scripts/codemap.py
# derives the include graph between folders (a private header by its path, a public
# one, include/agentrun/H.h, by the folder that defines most of what it declares) and
# fails on a cycle, naming the includes on it: the sandbox, net and cli tangle
# (docs/architecture.md) stays undone. It also fails on a private header shared by
# more than one folder (a relative include that leaves its own folder).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cmd python3
rc=0
out=$(python3 "$AR_SOURCE_DIR/scripts/codemap.py" folders "$AR_SOURCE_DIR/src") || rc=$?
if [ "$rc" = 0 ]; then pass "src/: no include cycle between folders ($(echo "$out" | head -1))"; else
	fail "src/: $out"
fi
reach=$(grep -rn --include='*.c' --include='*.h' '#include "\.\./' "$AR_SOURCE_DIR/src" || true)
if [ -z "$reach" ]; then pass "src/: no folder includes another folder's private header"; else
	fail "src/: a folder reaches into another's private header: $reach"
fi
finish

#!/usr/bin/env bash
# Lint: every C file in the repository is formatted as .clang-format says.
. "$(dirname "$0")/../lib.sh"
need_cmd clang-format
cd "$AR_SOURCE_DIR" || exit 1
mapfile -t files < <(git ls-files '*.c' '*.h')
[ "${#files[@]}" -gt 0 ] || { fail "no C files found"; finish; }
bad=()
for f in "${files[@]}"; do
	clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ "${#bad[@]}" = 0 ]; then pass "clang-format clean on ${#files[@]} files"; else
	fail "not clang-formatted (run clang-format -i): ${bad[*]}"
fi
finish

#!/usr/bin/env bash
# Lint: every shell script in the repository passes shellcheck at warning level.
. "$(dirname "$0")/../lib.sh"
need_cmd shellcheck
cd "$AR_SOURCE_DIR" || exit 1
mapfile -t files < <(git ls-files '*.sh' .ci/run 2>/dev/null || find . -name '*.sh' -not -path './build*')
[ "${#files[@]}" -gt 0 ] || { fail "no scripts found"; finish; }
if shellcheck -x -S warning "${files[@]}" >"$AR_TMP/sc" 2>&1; then
	pass "shellcheck clean on ${#files[@]} scripts"
else
	fail "shellcheck: $(cat "$AR_TMP/sc")"
fi
finish

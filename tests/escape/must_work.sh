#!/usr/bin/env bash
# "Needs root / a kernel feature" cannot hide a lane in CI: the cmocka helper
# (tests/unit/need.h, AR_NEED) skips without AGENTRUN_MUST_WORK and fails with it, and
# so does the shell helper (`need` in tests/lib.sh). Run as uid 65534, where the
# cgroup tests lack root.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need setpriv command -v setpriv
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
cd /
for t in test_cgroup_live test_cgroup_plan; do
	bin="$AR_BUILD_DIR/tests/$t"
	need "$t (built)" test -x "$bin"
	st=0
	AGENTRUN_MUST_WORK=0 as_nobody "$bin" >"$AR_TMP/out" 2>&1 || st=$?
	expect_eq "$t as nobody: skipped (exit 0)" 0 "$st"
	expect_match "$t as nobody: says what it needs" "SKIP: needs root" "$(cat "$AR_TMP/out")"
	st=0
	AGENTRUN_MUST_WORK=1 as_nobody "$bin" >"$AR_TMP/out" 2>&1 || st=$?
	if [ "$st" != 0 ]; then pass "$t as nobody, must work: fails (exit $st)"; else
		fail "$t as nobody, must work: exit 0"
	fi
	expect_match "$t as nobody, must work: says why" "needs root \(AGENTRUN_MUST_WORK=1" "$(cat "$AR_TMP/out")"
done
# the shell helper, in a child bash that sources lib.sh
sh_need() { AGENTRUN_MUST_WORK=$1 bash -c '. "$0"; need "a missing thing" false; echo ran' "$AR_SOURCE_DIR/tests/lib.sh"; }
st=0
out=$(sh_need 0 2>&1) || st=$?
expect_eq "shell need: skip is 77" "77" "$st"
st=0
out=$(sh_need 1 2>&1) || st=$?
expect_eq "shell need, must work: exit 1" "1" "$st"
expect_match "shell need, must work: says so" "FAIL \(must work\): needs a missing thing" "$out"
finish

#!/usr/bin/env bash
# ctest's cleanup of the fixture `ar_user` (tests/CMakeLists.txt): the tests'
# unprivileged user, its home, runtime directory and agentrun state go once the last test
# that ran agentrun as it is done.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
need_root
if ! user_teardown; then
	fail "$AR_USER: not removed (a process of it still runs?)"
fi
if id -u "$AR_USER" >/dev/null 2>&1; then
	fail "$AR_USER still exists"
fi
finish

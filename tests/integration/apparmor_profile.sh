#!/usr/bin/env bash
# profiles/apparmor/agentrun, the profile for hosts with Ubuntu's
# kernel.apparmor_restrict_unprivileged_userns=1: it names the installed binary
# (cmake --install's default /usr/local/bin/agentrun), grants `userns` inside the
# profile, and otherwise parses with Debian's apparmor_parser (3.0, which predates the
# two AppArmor 4.0 lines, `abi <abi/4.0>` and `userns`: those two are checked here by
# text, the rest by the parser; a broken copy fails the parser, so it does check).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_cmd apparmor_parser
P="$AR_SOURCE_DIR/profiles/apparmor/agentrun"
expect_eq "abi 4.0 (userns rules)" 1 "$(grep -cx 'abi <abi/4.0>,' "$P")"
expect_eq "the profile attaches to the installed binary" 1 \
	"$(grep -cE '^profile agentrun /usr/local/bin/agentrun flags=\(unconfined\) \{$' "$P")"
expect_eq "userns granted inside the profile" "  userns," \
	"$(sed -n '/^profile agentrun/,/^}/p' "$P" | grep -x '  userns,')"
# shellcheck disable=SC2016 # the line as written in install.sh
expect_eq "scripts/install.sh installs there by default" 1 \
	"$(grep -cxF 'prefix=${PREFIX:-/usr/local}' "$AR_SOURCE_DIR/scripts/install.sh")"
sed 's|^abi <abi/4.0>,$|abi <abi/3.0>,|; /^  userns,$/d' "$P" >"$AR_TMP/p30"
expect_eq "only the two 4.0 lines set aside" 2 "$(diff "$P" "$AR_TMP/p30" | grep -c '^<')"
expect_status "the rest parses (apparmor_parser -Q -K)" 0 apparmor_parser -Q -K "$AR_TMP/p30"
sed 's|flags=(unconfined) {|flags=(unconfined {|' "$AR_TMP/p30" >"$AR_TMP/broken"
expect_status "control: a broken copy fails the parser" 1 apparmor_parser -Q -K "$AR_TMP/broken"
finish

#!/usr/bin/env bash
# Help, man page and flag errors for every subcommand, read from `agentrun --help`
# (the class, not one case): `CMD --help` and `agentrun help CMD` print the same help
# in one format (Usage, Options with -h last, Exit status); every option the help
# lists is in agentrun.1 and is known to the parser (an option that takes a value,
# given none, says "needs a value" naming itself; a switch given a value refuses
# it); an unknown option says so with the usage exit code, and a near miss gets
# "did you mean". -V and --version print the version. Needs no privileges.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"

A=$AGENTRUN
MAN=${AR_BUILD_DIR:?}/agentrun.1
[ -f "$MAN" ] || fail "no man page at $MAN (the build writes it)"
man_text=$(groff -man -Tutf8 -P-cbou "$MAN" 2>"$AR_TMP/groff" | sed 's/‐/-/g')
expect_eq "agentrun.1: groff has no warnings" "" "$(cat "$AR_TMP/groff")"

expect_status "--help" 0 "$A" --help
cmds=$(sed -n '/^Commands:/,/^$/p' "$AR_TMP/out" | awk 'NF > 1 {print $1}')
expect_match "--help lists run, check, ps" "run.*check.*ps" "$(echo "$cmds" | tr '\n' ' ')"

for c in $cmds; do
	usage_exit=2
	[ "$c" = run ] && usage_exit=125
	expect_status "$c --help" 0 "$A" "$c" --help
	cp "$AR_TMP/out" "$AR_TMP/help.$c"
	expect_eq "$c --help: stderr" "" "$(cat "$AR_TMP/err")"
	expect_match "$c --help: usage line" "^Usage: agentrun (\[run\]|$c)" "$(head -1 "$AR_TMP/help.$c")"
	expect_eq "$c --help: one Options and one Exit status section" "1 1" \
		"$(grep -c '^Options:$' "$AR_TMP/help.$c") $(grep -c '^Exit status: ' "$AR_TMP/help.$c")"
	expect_eq "$c --help: -h, --help last of the options" "  -h, --help              this help" \
		"$(sed -n '/^Options:/,/^$/p' "$AR_TMP/help.$c" | grep -v '^$' | tail -1)"
	expect_status "help $c" 0 "$A" help "$c"
	expect_eq "help $c is $c --help" "$(cat "$AR_TMP/help.$c")" "$(cat "$AR_TMP/out")"
	expect_match "agentrun.1 has $c" "agentrun $c" "$man_text"

	expect_status "$c --no-such-flag" "$usage_exit" "$A" "$c" --no-such-flag
	expect_eq "$c --no-such-flag: message" \
		"agentrun: $c: unknown option \`--no-such-flag\`; see \`agentrun $c --help\`" "$(cat "$AR_TMP/err")"

	# every option of the help: "  -p, --policy FILE  ..." or "      --json  ..."
	sed -n '/^Options:/,/^$/p' "$AR_TMP/help.$c" | grep -E '^  (-[a-zA-Z], |    )--' |
		sed -E 's/^  (-[a-zA-Z], |    )//; s/  .*//' >"$AR_TMP/opts.$c"
	while read -r flag value; do
		[ "$flag" = --help ] && continue
		man_flag=$(printf '%s' "$flag" | sed 's/[.[\*^$]/\\&/g')
		expect_match "agentrun.1 has $c $flag" "$man_flag" "$man_text"
		if [ -n "$value" ]; then
			expect_status "$c $flag without its value" "$usage_exit" "$A" "$c" "$flag"
			expect_eq "$c $flag without its value: message" \
				"agentrun: $c: option \`$flag\` needs a value ($flag $value); see \`agentrun $c --help\`" \
				"$(cat "$AR_TMP/err")"
		else
			expect_status "$c $flag=x (a switch)" "$usage_exit" "$A" "$c" "$flag=x"
			expect_eq "$c $flag=x: message" \
				"agentrun: $c: option \`$flag\` takes no value; see \`agentrun $c --help\`" \
				"$(cat "$AR_TMP/err")"
		fi
	done <"$AR_TMP/opts.$c"
done

# the option tables of the docs are written by hand: every option run and proxy take has
# its row there (docs/sandbox.md, docs/proxy.md)
for pair in run:sandbox proxy:proxy; do
	c=${pair%%:*} doc=${AR_SOURCE_DIR:?}/docs/${pair#*:}.md
	while read -r flag _; do
		grep -qF -- "| \`$flag" "$doc" || fail "$c $flag has no row in docs/${pair#*:}.md's option table"
	done <"$AR_TMP/opts.$c"
done

# the exit statuses each help states are the README's
readme=$(tr '\n' ' ' <"${AR_SOURCE_DIR:?}/README.md")
expect_match "README: net's 1" '`net` 1 when it could not build or remove the netns' "$readme"
expect_match "net --help: its 1" '1 the netns could not be built or removed' "$(tr '\n' ' ' <"$AR_TMP/help.net")"
expect_match "README: hook's 1" '`hook` 1 when it refuses a container' "$readme"
expect_match "hook --help: its 1" '1 refused' "$(cat "$AR_TMP/help.hook")"
expect_match "README: check's" '`check` 0 no drift, 1 drift, 2 bad input' "$readme"
expect_match "check --help: the same" 'Exit status: 0 no drift, 1 drift, 2 bad input' "$(cat "$AR_TMP/help.check")"

# a near miss is named
expect_status "run --memroy" 125 "$A" --memroy 64m -- true
expect_eq "run --memroy: did you mean" \
	"agentrun: run: unknown option \`--memroy\` (did you mean \`--memory\`?); see \`agentrun run --help\`" \
	"$(cat "$AR_TMP/err")"
expect_status "check --polcy" 2 "$A" check --polcy x.json
expect_match "check --polcy: did you mean" "did you mean \`--policy\`" "$(cat "$AR_TMP/err")"
expect_status "chek" 2 "$A" chek --name x
expect_match "chek: did you mean" "unknown command \`chek\` \(did you mean \`check\`\?\)" "$(cat "$AR_TMP/err")"
expect_status "help of an unknown command" 2 "$A" help nope
expect_eq "help nope: message" "agentrun: help: unknown command \`nope\`; see \`agentrun --help\`" "$(cat "$AR_TMP/err")"

# the version, three ways
for v in version -V --version; do
	expect_status "agentrun $v" 0 "$A" $v
	expect_match "agentrun $v: output" '^agentrun [0-9]+\.[0-9]+\.[0-9]+$' "$(cat "$AR_TMP/out")"
done

# check with nothing says what it needs, and --name needs no --policy
expect_status "check with no arguments" 2 "$A" check
expect_eq "check with no arguments: what it needs" \
	"agentrun: check: give --name NAME (a sandbox \`agentrun ps\` lists), or --policy FILE and one of --inspect FILE, --container NAME, --pid PID, --bundle DIR, --pod FILE, --manifest FILE; see \`agentrun check --help\`" \
	"$(cat "$AR_TMP/err")"
expect_status "check --name alone parses" 2 "$A" check --name no-such-sandbox-$$
expect_match "check --name alone: about the sandbox, not --policy" "no-such-sandbox-$$" "$(cat "$AR_TMP/err")"
expect_nomatch "check --name alone: no --policy demanded" "missing --policy" "$(cat "$AR_TMP/err")"

finish

#!/usr/bin/env bash
# scripts/install.sh into a prefix of the test's own (issue 23): the binary, agentrun(1)
# and the shipped profiles; from a directory without the repository, `--policy NAME`
# finds a shipped profile by name (run, render, check), NAME.json too, a file of that
# name in the working directory comes first, and an unknown name says where it looked.
# Needs root for `run` (a dynamic uid).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
prefix=$AR_TMP/prefix
BUILD_DIR=${AR_BUILD_DIR:?} PREFIX=$prefix "${AR_SOURCE_DIR:?}/scripts/install.sh" --no-build \
	>"$AR_TMP/install.out" 2>&1 || fail "install.sh failed: $(cat "$AR_TMP/install.out")"
A=$prefix/bin/agentrun
for f in bin/agentrun share/man/man1/agentrun.1 share/agentrun/profiles/offline.json \
	share/agentrun/profiles/triage.json; do
	[ -e "$prefix/$f" ] && pass "installed $f" || fail "not installed: $f"
done
expect_match "the man page is agentrun(1)" '^\.TH AGENTRUN 1' "$(grep '^\.TH' "$prefix/share/man/man1/agentrun.1")"

elsewhere=$AR_TMP/elsewhere
mkdir -p "$elsewhere"
cd "$elsewhere" || exit 1
expect_status "run --policy offline (a shipped profile, by name)" 0 "$A" --policy offline -- true
expect_status "run --policy offline.json" 0 "$A" --policy offline.json -- true
expect_status "render --policy triage" 0 "$A" render --policy triage -- python3 agent.py
expect_match "render --policy triage: the triage plan" "triage-net" "$(cat "$AR_TMP/out")"
expect_status "check --policy offline --pid (the shell: drift)" 1 "$A" check --policy offline --pid $$
expect_match "check names the profile" "vs policy offline" "$(cat "$AR_TMP/out")"

# a file of that name in the working directory comes first
echo '{"name": "mine", "network": "none"}' >"$elsewhere/offline"
expect_status "a file named offline in the working directory" 0 "$A" render --policy offline --image alpine:3 -- true
expect_match "the file wins" "--name mine-agent" "$(cat "$AR_TMP/out")"
rm -f "$elsewhere/offline"

expect_status "an unknown name" 125 "$A" --policy no-such-profile -- true
expect_eq "an unknown name: where it looked" \
	"agentrun: policy: \`no-such-profile\`: no such file, and no profile of that name in /etc/agentrun/profiles, $prefix/share/agentrun/profiles (agentrun run --help: --policy)" \
	"$(cat "$AR_TMP/err")"
finish

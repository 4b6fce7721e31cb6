#!/usr/bin/env bash
# Hosts that refuse user namespaces to ordinary users: agentrun run by a user exits 125
# before making anything, with one line naming the setting and the fix; the same run
# works where the setting allows it (the positive control), and root is never refused
# (it needs no user namespace). Each setting simulated in namespaces of the test's own:
# - user.max_user_namespaces = 0 for real, in a child user namespace (the kernel then
#   refuses the clone too);
# - kernel.unprivileged_userns_clone = 0 (Debian's old patch) and
#   kernel.apparmor_restrict_unprivileged_userns = 1 (Ubuntu 23.10+), which this kernel
#   lacks: a private mount namespace whose /proc/sys/kernel is a copy holding the file.
#   There the control passes the preflight and stops at the sandbox's /proc: the kernel
#   lets a user namespace mount a proc only where the host's is wholly visible, and
#   this one has a part covered.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
user_setup
need_cmd unshare
LIMIT="python3 $(dirname "$0")/net/netns_limit.py"
UA=(setpriv --reuid "$AR_USER_UID" --regid "$AR_USER_GID" --init-groups
	env XDG_RUNTIME_DIR="$AR_USER_RUNTIME" "$UAGENTRUN" --no-cgroups)
cd /

# the user's states before: what the refusals below leave is compared with these (the
# user's other sandboxes may come and go meanwhile, none of them named "default")
states() { find "$AR_USER_RUNTIME/agentrun" -mindepth 1 -maxdepth 1 -name 'default-*' 2>/dev/null | sort; }
BEFORE=$(states)

# --- user.max_user_namespaces = 0 ---
expect_status "max_user_namespaces 0: 125" 125 $LIMIT --knob max_user_namespaces 0 -- "${UA[@]}" -- true
expect_eq "max_user_namespaces 0: the message" \
	"agentrun: preflight: this host refuses user namespaces to ordinary users (user.max_user_namespaces = 0), which agentrun needs without root; fix: as root: sysctl -w user.max_user_namespaces=15000 (and in /etc/sysctl.d/ to keep it)" \
	"$(cat "$AR_TMP/err")"
expect_status "max_user_namespaces 5: runs (control)" 0 $LIMIT --knob max_user_namespaces 5 -- "${UA[@]}" -- true
expect_eq "no state left by the refusal" "$BEFORE" "$(states)"

# --- the knobs this kernel lacks: a /proc/sys/kernel of the test's own ---
FAKE="$AR_TMP/kernel"
mkdir -p "$FAKE/seccomp"
cp /proc/sys/kernel/seccomp/actions_avail "$FAKE/seccomp/"
PAST="agentrun: /proc: mount proc on /proc: Operation not permitted"
# with_knob FILE VALUE CMD...: CMD where /proc/sys/kernel/FILE reads VALUE
with_knob() {
	local file=$1 value=$2
	shift 2
	rm -f "$FAKE"/*_userns*
	echo "$value" >"$FAKE/$file"
	chmod -R a+rX "$FAKE"
	unshare -m --propagation private sh -c 'mount --bind "$0" /proc/sys/kernel && exec "$@"' "$FAKE" "$@"
}
expect_status "unprivileged_userns_clone 0: 125" 125 with_knob unprivileged_userns_clone 0 "${UA[@]}" -- true
expect_eq "unprivileged_userns_clone 0: the message" \
	"agentrun: preflight: this host refuses user namespaces to ordinary users (kernel.unprivileged_userns_clone = 0), which agentrun needs without root; fix: as root: sysctl -w kernel.unprivileged_userns_clone=1 (and in /etc/sysctl.d/ to keep it)" \
	"$(cat "$AR_TMP/err")"
expect_status "unprivileged_userns_clone 1: control" 125 with_knob unprivileged_userns_clone 1 "${UA[@]}" -- true
expect_eq "unprivileged_userns_clone 1: control, past the preflight" "$PAST" "$(cat "$AR_TMP/err")"
expect_status "apparmor_restrict_unprivileged_userns 1: 125" 125 \
	with_knob apparmor_restrict_unprivileged_userns 1 "${UA[@]}" -- true
expect_eq "apparmor_restrict_unprivileged_userns 1: the message" \
	"agentrun: preflight: this host refuses user namespaces to ordinary users (kernel.apparmor_restrict_unprivileged_userns = 1), which agentrun needs without root; fix: as root: install agentrun's AppArmor profile (install -m 644 profiles/apparmor/agentrun /etc/apparmor.d/agentrun && apparmor_parser -r /etc/apparmor.d/agentrun; docs/rootless.md), or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" \
	"$(cat "$AR_TMP/err")"
expect_status "apparmor_restrict_unprivileged_userns 0: control" 125 \
	with_knob apparmor_restrict_unprivileged_userns 0 "${UA[@]}" -- true
expect_eq "apparmor_restrict_unprivileged_userns 0: control, past the preflight" "$PAST" "$(cat "$AR_TMP/err")"
expect_status "root is not refused (no user namespace)" 0 \
	with_knob apparmor_restrict_unprivileged_userns 1 "$AGENTRUN" --no-cgroups -- true
finish

#!/usr/bin/env bash
# A mount target that does not exist is made in the sandbox's own tmpfs, never on the
# host: below a writable bind of a host directory it is refused (125), and the host
# directory is unchanged afterwards.
# shellcheck source=tests/escape/common.bash
. "$(dirname "$0")/common.bash"
A=$AGENTRUN
W="$AR_TMP/w" O="$AR_TMP/o"
mkdir -p "$W/exists" "$O"
echo data >"$O/f"
chmod 777 "$W"
before=$(find "$W" | sort)

expect_status "a new mount point below a rw bind: 125" 125 \
	"$A" --mount "$W:/ws:rw" --mount "$O:/ws/newmp/deeper" -- true
expect_eq "a new mount point below a rw bind: message" \
	"agentrun: --mount $O:/ws/newmp/deeper: cannot create the mount point /ws/newmp: /ws is a host directory (nothing is created on the host: create it there first, or mount elsewhere)" \
	"$(grep -v '^agentrun: warning: .* belongs to root' "$AR_TMP/err")"
expect_eq "the host directory is unchanged" "$before" "$(find "$W" | sort)"
expect_status "a file mount point below a rw bind: 125" 125 \
	"$A" --mount "$W:/ws:rw" --mount "$O/f:/ws/newfile" -- true
expect_eq "the host directory is still unchanged" "$before" "$(find "$W" | sort)"

# The positive controls: an existing mount point below the rw bind works, and a new
# one in the sandbox's own root tmpfs is made there (not on the host).
expect_eq "an existing mount point below a rw bind" "data" \
	"$("$A" --mount "$W:/ws:rw" --mount "$O:/ws/exists" -- cat /ws/exists/f)"
expect_eq "a new mount point in the root tmpfs" "data" \
	"$("$A" --mount "$O:/newdir/deeper" -- cat /newdir/deeper/f)"
[ ! -e /newdir ] || fail "/newdir appeared on the host"
expect_eq "a new mount point below a policy tmpfs" "data" \
	"$("$A" --tmpfs /scratch --mount "$O:/scratch/a/b" -- cat /scratch/a/b/f)"
expect_eq "the host directory is unchanged at the end" "$before" "$(find "$W" | sort)"
finish

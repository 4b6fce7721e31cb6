#!/usr/bin/env bash
# Read-write mounts as root (issue 23): the sandbox's own uid is mapped onto the owner of
# a read-write mount's source (an idmapped mount), so what it writes belongs to that
# owner on the host, in a directory owned by a test uid (0755) and in a 1777 one of that
# uid; the owner's files are the sandbox's inside. Never onto root: in a root-owned 1777
# directory the files stay the sandbox's uid, and the start says so. The start also says
# when a read-write mount cannot be written (mode 0555) and when a filesystem cannot be
# idmapped (ramfs, in a mount namespace of the test's own), and the write then fails as
# said. Read-only mounts are untouched. Needs root.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd unshare
A=$AGENTRUN
case $A in /*) ;; *) A=$PWD/$A ;; esac
U=$((42000 + $$ % 1000))
G=$((U + 1))
D=$AR_TMP/idmap
mkdir -p "$D/own" "$D/sticky" "$D/rootst" "$D/ro" "$D/ram"
chmod 755 "$AR_TMP" "$D"
chown "$U:$G" "$D/own" "$D/sticky" "$D/ro" "$D/ram"
chmod 755 "$D/own"
chmod 1777 "$D/sticky" "$D/rootst"
chmod 555 "$D/ro"
echo "the owner's" >"$D/own/theirs"
chown "$U:$G" "$D/own/theirs"
chmod 644 "$D/own/theirs"

# a directory the test uid owns: written as the sandbox's uid, stored as the owner's
expect_status "own: writes" 0 "$A" --mount "$D/own:/work:rw" -- sh -c \
	'echo hi >/work/f && mkdir /work/d && echo more >>/work/theirs && stat -c "%u %U" /work/theirs && id -u'
expect_eq "own: no warning" "" "$(cat "$AR_TMP/err")"
sandbox_uid=$(tail -1 "$AR_TMP/out")
expect_match "own: the owner's file is the sandbox's inside" "^$sandbox_uid " "$(head -1 "$AR_TMP/out")"
expect_eq "own: the new file is the owner's on the host" "$U:$G" "$(stat -c %u:%g "$D/own/f")"
expect_eq "own: the new directory too" "$U:$G" "$(stat -c %u:%g "$D/own/d")"
expect_eq "own: the owner's file, written to, stays theirs" "$U:$G
the owner's
more" "$(stat -c %u:%g "$D/own/theirs"; cat "$D/own/theirs")"

# a 1777 directory of the test uid
expect_status "sticky: writes" 0 "$A" --mount "$D/sticky:/w:rw" -- sh -c 'echo hi >/w/f'
expect_eq "sticky: the file is the owner's" "$U:$G" "$(stat -c %u:%g "$D/sticky/f")"

# a root-owned 1777 directory: never mapped onto root, and said
expect_status "root's sticky: writes" 0 "$A" --mount "$D/rootst:/w:rw" -- sh -c 'echo hi >/w/f; id -u'
expect_eq "root's sticky: the file is the sandbox uid's, not root's" "$(tail -1 "$AR_TMP/out")" "$(stat -c %u "$D/rootst/f")"
expect_eq "root's sticky: said at start" \
	"agentrun: warning: --mount $D/rootst:/w:rw: $D/rootst belongs to root, whom the sandbox is never mapped to: what it writes there belongs to its uid $(tail -1 "$AR_TMP/out") on the host" \
	"$(cat "$AR_TMP/err")"

# a read-write mount nobody can write: said at start, and the write fails
expect_status "0555: the write fails (sh: 2)" 2 "$A" --mount "$D/ro:/w:rw" -- sh -c 'echo hi >/w/f'
expect_match "0555: said at start" \
	"^agentrun: warning: --mount $D/ro:/w:rw: $D/ro \(mode 0555\) cannot be written by its owner $U, as whom the sandbox writes there \(idmapped\): the mount is read-write, writes will fail" \
	"$(cat "$AR_TMP/err")"

# read-only: no map, no word
expect_status "read-only: reads" 0 "$A" --mount "$D/own:/work" -- cat /work/theirs
expect_eq "read-only: no warning" "" "$(cat "$AR_TMP/err")"

# a filesystem that cannot be idmapped (ramfs): said, and the write fails as said
expect_status "ramfs: the write fails (sh: 2)" 2 unshare -m --propagation private sh -c \
	'mount -t ramfs ramfs "$1" && chown "$2" "$1" && exec "$3" --mount "$1:/w:rw" -- sh -c "echo hi >/w/f"' \
	sh "$D/ram" "$U:$G" "$A"
expect_match "ramfs: cannot be idmapped, said" \
	"agentrun: warning: --mount $D/ram:/w:rw: $D/ram cannot be idmapped \(Invalid argument: its filesystem does not support it\): what the sandbox writes there belongs to its uid [0-9]+ on the host, not to the owner $U" \
	"$(cat "$AR_TMP/err")"
expect_match "ramfs: and that it cannot be written" "cannot be written by the sandbox's uid [0-9]+" "$(cat "$AR_TMP/err")"

# nothing left: no idmapped mount on the host
expect_eq "no mount of the test's left" "" "$(grep -F "$D" /proc/self/mountinfo || true)"
finish

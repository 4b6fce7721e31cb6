#!/usr/bin/env bash
# Build the agentrun:VERSION image that `agentrun render` runs the proxy from, without a
# registry or a base image: a tree made from the build (agentrun and the libraries it
# loads, the TLS module with OpenSSL and the host's roots for secrets, a passwd naming
# 65534, the audit and CA directories owned by 65534) imported with
# `docker import`, the way a CI without a registry would. The image runs as 65534 with
# agentrun as its entrypoint and on PATH (`docker exec PROXY agentrun audit FILE`).
#   scripts/docker-image.sh              build/agentrun -> agentrun:VERSION
#   scripts/docker-image.sh --tag T      another tag
#   scripts/docker-image.sh --tree DIR   only make the tree (docker/Dockerfile uses it)
# Environment: DOCKER (the docker CLI, default docker), BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
docker=${DOCKER:-docker}
tag="" tree_only=""

usage() {
	echo "agentrun: docker-image.sh: $1 (--tag TAG, --tree DIR)" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--tag) [ $# -ge 2 ] || usage "--tag needs a value"; tag=$2; shift 2 ;;
	--tree) [ $# -ge 2 ] || usage "--tree needs a value"; tree_only=$2; shift 2 ;;
	*) usage "unknown argument \`$1\`" ;;
	esac
done
bin=$build/agentrun
[ -x "$bin" ] || { echo "agentrun: docker-image.sh: $bin is missing: run scripts/build.sh" >&2; exit 2; }
version=$("$bin" version | awk '{print $2}')
tag=${tag:-agentrun:$version}

# make_tree DIR: agentrun, its libraries at their own paths, and the few files it needs.
make_tree() {
	local dir=$1 lib
	mkdir -p "$dir/usr/local/bin" "$dir/etc" "$dir/tmp" "$dir/var/log/agentrun"
	cp "$bin" "$dir/usr/local/bin/agentrun"
	strip "$dir/usr/local/bin/agentrun" 2>/dev/null || true
	# the TLS module for secrets (dlopen()ed only then: ldd of agentrun does not name it)
	# in ../lib/agentrun, with OpenSSL, and the roots the proxy trusts and hands the agent
	local tls=$build/agentrun-tls.so
	if [ -f "$tls" ]; then
		mkdir -p "$dir/usr/local/lib/agentrun" "$dir/etc/ssl/certs"
		cp "$tls" "$dir/usr/local/lib/agentrun/"
		[ ! -f /etc/ssl/certs/ca-certificates.crt ] ||
			cp -L /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/"
	fi
	for lib in $(ldd "$bin" | grep -o '/[^ ]*') $([ ! -f "$tls" ] || ldd "$tls" | grep -o '/[^ ]*'); do
		mkdir -p "$dir$(dirname "$lib")"
		cp -L "$lib" "$dir$lib"
	done
	printf 'root:x:0:0:root:/:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/:/usr/sbin/nologin\n' >"$dir/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
	chmod 1777 "$dir/tmp"
	# a fresh named volume copies this directory, owner included: the proxy writes there
	# (its audit; with secrets, the CA bundle the agent mounts)
	mkdir -p "$dir/run/agentrun/ca"
	chown 65534:65534 "$dir/var/log/agentrun" "$dir/run/agentrun/ca"
}

if [ -n "$tree_only" ]; then
	make_tree "$tree_only"
	exit 0
fi
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
make_tree "$tree"
tar -C "$tree" --numeric-owner -c . |
	"$docker" import \
		-c 'USER 65534:65534' \
		-c 'ENV PATH=/usr/local/bin' \
		-c 'WORKDIR /' \
		-c 'ENTRYPOINT ["/usr/local/bin/agentrun"]' \
		-c "LABEL org.opencontainers.image.title=agentrun org.opencontainers.image.version=$version" \
		- "$tag" >/dev/null
echo "agentrun: built image $tag"

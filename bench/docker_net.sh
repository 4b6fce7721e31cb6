#!/usr/bin/env bash
# bench/docker_net.sh — CONNECT throughput through the docker-plus-squid setup agentrun
# replaces, next to agentrun's own path, in one run (not a test; ratios):
#   docker: an --internal network, the agent's container and a squid container on it;
#     the agent sends BYTES through squid (CONNECT) to a sink on the squid container's
#     loopback
#   agentrun: a sandbox with network: proxy sends BYTES through the veth and its proxy
#     to a sink on the host's loopback (the proxy's side), as bench/net.sh does
# Rounds alternate the two (docker, agentrun, docker, ...); medians of RUNS each.
# dockerd is Debian's docker.io, started inside a network and mount namespace of this run
# only (tests/docker/dockerd.sh: no change to the host's network); the images are made
# here from the host's files (busybox, squid and its libraries, ar-blast): no registry.
# Needs a build in build/ (scripts/build.sh), docker.io, squid, busybox; root.
set -euo pipefail
cd "$(dirname "$0")/.."
export AGENTRUN=${AGENTRUN:-$PWD/build/agentrun}
export AR_BUILD_DIR=${AR_BUILD_DIR:-$PWD/build} AR_SOURCE_DIR=$PWD
BLAST=${BLAST:-$PWD/build/bench/ar-blast}
BYTES=${BYTES:-268435456}
RUNS=${RUNS:-3}
for t in "$AGENTRUN" "$BLAST"; do [ -x "$t" ] || { echo "bench: build first ($t missing)" >&2; exit 2; }; done
for c in squid busybox python3 unshare nsenter; do
	command -v $c >/dev/null || { echo "bench: needs $c (scripts/install-deps.sh --bench)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "bench: dockerd and network: proxy need root" >&2; exit 2; }
# shellcheck source=tests/lib.sh
. tests/lib.sh
# shellcheck source=tests/docker/dockerd.sh
. tests/docker/dockerd.sh
[ -x "$AR_DOCKER" ] && [ -x "$AR_DOCKERD" ] || { echo "bench: needs Debian's docker.io" >&2; exit 2; }
set -o pipefail
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

dockerd_start || { echo "bench: dockerd did not start" >&2; exit 1; }

# The image: busybox as sh, squid with its libraries, error templates and mime table, a
# configuration for one CONNECT proxy without a cache, and ar-blast for both ends.
tree=$AR_TMP/tree
mkdir -p "$tree/bin" "$tree/etc/squid" "$tree/tmp" "$tree/var/run" "$tree/usr/share"
cp "$(command -v busybox)" "$tree/bin/busybox"
for a in sh sleep cat; do ln -sf busybox "$tree/bin/$a"; done
mkdir -p "$tree/usr/lib/squid"
cp /usr/lib/squid/unlinkd "$tree/usr/lib/squid/" # squid starts it even without a disk cache
for f in "$(command -v squid)" "$BLAST" /usr/lib/squid/unlinkd; do
	[ "$f" = /usr/lib/squid/unlinkd ] || cp "$f" "$tree/bin/"
	for lib in $(ldd "$f" | grep -o '/[^ ]*'); do
		mkdir -p "$tree$(dirname "$lib")"
		cp -L "$lib" "$tree$lib"
	done
done
cp -rL /usr/share/squid "$tree/usr/share/squid" 2>/dev/null || true
cp -r /usr/share/squid-langpack/templates "$tree/usr/share/squid-templates"
printf 'root:x:0:0::/:/bin/sh\nproxy:x:13:13::/:/bin/sh\n' >"$tree/etc/passwd"
printf 'root:x:0:\nproxy:x:13:\n' >"$tree/etc/group"
cat >"$tree/etc/squid/squid.conf" <<'SQUID'
http_port 3128
http_access allow all
cache deny all
access_log none
cache_store_log none
cache_log /tmp/cache.log
pid_filename none
coredump_dir /tmp
error_directory /usr/share/squid-templates
max_filedescriptors 4096
shutdown_lifetime 1 seconds
SQUID
chmod 1777 "$tree/tmp"
tar -C "$tree" --numeric-owner -c . | docker import -c 'ENV PATH=/bin' - ar-bench-squid:1 >/dev/null

net=ar-bench-$$
docker network create --internal "$net" >/dev/null
on_exit "docker network rm $net"
docker run -d --name "ar-bench-squid-$$" --network "$net" ar-bench-squid:1 \
	sh -c 'ar-blast sink 9000 & exec squid -N -f /etc/squid/squid.conf' >/dev/null
squid_ip=$(docker inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "ar-bench-squid-$$")
client() { # client N: N sends through squid from a fresh container on the internal network
	docker run --rm --network "$net" -e AR_BLAST_PROXY_HOST="$squid_ip" ar-bench-squid:1 \
		sh -c 'for _ in $(seq 1 "$1"); do ar-blast send 9000 "$2" 3128; done' _ "$1" "$BYTES"
}
for _ in $(seq 1 100); do client 1 >/dev/null 2>&1 && break; sleep 0.2; done
client 1 >/dev/null || { echo "bench: no transfer through the squid container ($squid_ip): $(docker logs "ar-bench-squid-$$" 2>&1 | tail -5)" >&2; exit 1; }

# agentrun's side: a sink on the host's loopback, a sandbox that sends through its proxy
sink=$(free_port)
"$BLAST" sink "$sink" &
on_exit "kill $!"
wait_port "$sink"
mkdir -m 755 "$AR_TMP/bin"
cp "$BLAST" "$AR_TMP/bin/"
chmod 755 "$AR_TMP"
cat >"$AR_TMP/proxy.json" <<JSON
{"name": "bench-dnet", "allowed_hosts": ["127.0.0.1:$sink"], "proxy": {"allow_private": ["127.0.0.1"]}}
JSON
sandbox() {
	# shellcheck disable=SC2016 # expanded inside the sandbox
	"$AGENTRUN" --policy "$AR_TMP/proxy.json" --mount "$AR_TMP/bin:/ar-bench" --proxy-log /dev/null \
		--audit /dev/null -- sh -c 'h=${HTTP_PROXY#http://}
			AR_BLAST_PROXY_HOST=${h%:*} /ar-bench/ar-blast send "$1" "$2" "${h##*:}"' _ "$sink" "$BYTES"
}

echo "== CONNECT throughput, $BYTES bytes, $RUNS alternating rounds, median (Gbit/s); $(docker version -f 'docker {{.Server.Version}}'), $(squid -v | head -1 | awk '{print "squid " $4}')"
for _ in $(seq 1 "$RUNS"); do
	client 1 | awk '{print $3}' >>"$AR_TMP/t.docker"
	sandbox | awk '{print $3}' >>"$AR_TMP/t.agentrun"
done
d=$(median <"$AR_TMP/t.docker")
a=$(median <"$AR_TMP/t.agentrun")
printf '  %-52s %6s\n' "docker --internal network + squid container" "$d" \
	"agentrun: sandbox -> veth -> its proxy" "$a"
echo "  agentrun/docker+squid $(ratio "$a" "$d")"
finish

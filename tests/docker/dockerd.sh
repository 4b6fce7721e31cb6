# shellcheck shell=bash
# A private dockerd for the docker lane, sourced by tests/docker/*.sh after tests/lib.sh.
#
# dockerd rewrites the network of the namespace it runs in (ip_forward, iptables and nft
# rules, docker0, bridges) and forwards containers' DNS to that namespace's resolver, so
# it runs only inside a network and mount namespace of its own: its own loopback, no
# route anywhere, "dns": ["192.0.2.53"], an address of that namespace's own loopback link
# (nothing answers there; docker drops a loopback server and would fall back to 8.8.8.8),
# a tmpfs over /run (containerd's shim sockets, docker's plugin directory), an overlay
# over /etc whose upper layer is temporary (docker writes /etc/docker/key.json and has
# no flag to put it elsewhere) and every other path (--data-root, --exec-root,
# --pidfile, the socket) in a temporary directory. Containers' cgroups go under $AR_TAG-docker below this process's own cgroup.
# Stopped, its processes killed by PID and its directories removed on exit, even on
# failure (dockerd_stop is registered with on_exit).
#
# After dockerd_start: DOCKER_HOST points at it, `docker` on PATH is Debian's
# /usr/bin/docker (API 1.41, matching dockerd), DOCKERD_PID and DOCKERD_NETNS are set.

AR_DOCKER=${AR_DOCKER:-/usr/bin/docker}
AR_DOCKERD=${AR_DOCKERD:-/usr/sbin/dockerd}

# Host network state, one file per view; compared before and after the lane. Interfaces
# and routes of other tests on this machine (named ar-*, see tests/lib.sh's AR_TAG) are
# left out: they come and go while the lane runs.
host_net_snapshot() {
	local out=$1
	mkdir -p "$out"
	ip -o link show | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | grep -v '^ar' | sort >"$out/links"
	{ ip -4 route show table all; ip -6 route show table all; } | grep -v ' dev ar' | sort >"$out/routes"
	{ iptables-save; ip6tables-save; } 2>&1 | grep -v '^#' | sed 's/\[[0-9]*:[0-9]*\]//' >"$out/iptables"
	nft -s list ruleset >"$out/nft" 2>&1
	sysctl -n net.ipv4.ip_forward net.ipv6.conf.all.forwarding >"$out/forwarding"
}

dockerd_start() {
	local dir=$AR_TMP/dockerd
	mkdir -p "$dir/bin" "$dir/etc-upper" "$dir/etc-work"
	ln -sf "$AR_DOCKER" "$dir/bin/docker"
	export PATH="$dir/bin:$PATH"
	export DOCKER_HOST="unix://$dir/docker.sock"
	local own
	# below this process's own cgroup: the memory hierarchy's on v1 and hybrid hosts, else v2
	own=$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup)
	[ -n "$own" ] || own=$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup)
	DOCKERD_CGROUP="${own%/}/$AR_TAG-docker"
	cat >"$dir/daemon.json" <<-EOF
		{"dns": ["192.0.2.53"], "storage-driver": "overlay2", "log-level": "warn"}
	EOF
	cat >"$dir/start.sh" <<-EOF
		set -e
		mount -t tmpfs -o mode=755 tmpfs /run
		mount -t overlay overlay -o lowerdir=/etc,upperdir="$dir/etc-upper",workdir="$dir/etc-work" /etc
		ip link set lo up
		ip addr add 192.0.2.53/32 dev lo
		exec "$AR_DOCKERD" --data-root "$dir/data" --exec-root "$dir/exec" \\
		    --pidfile "$dir/dockerd.pid" -H "$DOCKER_HOST" --config-file "$dir/daemon.json" \\
		    --cgroup-parent "$DOCKERD_CGROUP"
	EOF
	on_exit dockerd_stop
	# unshare execs sh, sh execs dockerd: $! is dockerd
	unshare --net --mount --propagation private sh "$dir/start.sh" >"$dir/dockerd.log" 2>&1 &
	DOCKERD_PID=$!
	local self
	self=$(readlink /proc/self/ns/net)
	# unshare has made the namespace once the link differs from ours
	for _ in $(seq 1 50); do
		DOCKERD_NETNS=$(readlink "/proc/$DOCKERD_PID/ns/net" 2>/dev/null || true)
		[ -n "$DOCKERD_NETNS" ] && [ "$DOCKERD_NETNS" != "$self" ] && break
		DOCKERD_NETNS=""
		sleep 0.02
	done
	[ -n "$DOCKERD_NETNS" ] || { echo "dockerd: no network namespace of its own" >&2; return 1; }
	for _ in $(seq 1 150); do
		docker version >/dev/null 2>&1 && return 0
		kill -0 "$DOCKERD_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "dockerd did not start: $(tail -5 "$dir/dockerd.log")" >&2
	return 1
}

# Every process in dockerd's network namespace: dockerd, containerd, shims, containers
# and whatever the test started there.
netns_pids() {
	local p ns
	# never without a namespace to match: an unreadable link must not match an empty one
	[ -n "${DOCKERD_NETNS:-}" ] && [ "$DOCKERD_NETNS" != "$(readlink /proc/self/ns/net)" ] || return 0
	for p in /proc/[0-9]*; do
		ns=$(readlink "$p/ns/net" 2>/dev/null) || continue
		[ "$ns" = "$DOCKERD_NETNS" ] && echo "${p#/proc/}"
	done
	return 0
}

dockerd_stop() {
	local dir=$AR_TMP/dockerd p
	[ -n "${DOCKERD_PID:-}" ] || return 0
	if kill -0 "$DOCKERD_PID" 2>/dev/null; then
		timeout 30 docker ps -aq 2>/dev/null | xargs -r timeout 30 docker rm -f >/dev/null 2>&1 || true
		kill -TERM "$DOCKERD_PID" 2>/dev/null || true
		for _ in $(seq 1 100); do
			kill -0 "$DOCKERD_PID" 2>/dev/null || break
			sleep 0.1
		done
	fi
	for p in $(netns_pids); do kill -KILL "$p" 2>/dev/null || true; done
	for _ in $(seq 1 50); do
		[ -z "$(netns_pids)" ] && break
		sleep 0.1
	done
	# the namespaces (and the mounts in them) went with their last process
	case ${DOCKERD_CGROUP:-} in
	*/"$AR_TAG-docker") # only ever the cgroup this lane made
		find /sys/fs/cgroup"$DOCKERD_CGROUP" /sys/fs/cgroup/*"$DOCKERD_CGROUP" -depth -type d \
			-exec rmdir {} \; 2>/dev/null || true
		;;
	esac
	rm -rf "$dir"
	DOCKERD_PID=""
}

# lane_image TAG FILE...: an image of busybox-static (as sh and a few applets), the given
# binaries and the libraries they load, imported from a tree (no registry, no base).
lane_image() {
	local tag=$1 tree=$AR_TMP/tree-$1 f lib a
	shift
	mkdir -p "$tree/bin" "$tree/tmp" "$tree/www" "$tree/etc"
	cp "$(command -v busybox)" "$tree/bin/busybox"
	for a in sh cat id grep sleep httpd ls touch echo nslookup wc head tr; do
		ln -sf busybox "$tree/bin/$a"
	done
	for f in "$@"; do
		cp "$f" "$tree/bin/"
		for lib in $(ldd "$f" | grep -o '/[^ ]*'); do
			mkdir -p "$tree$(dirname "$lib")"
			cp -L "$lib" "$tree$lib"
		done
	done
	echo "origin ok" >"$tree/www/index.html"
	echo 'root:x:0:0:root:/:/bin/sh' >"$tree/etc/passwd"
	chmod 1777 "$tree/tmp"
	tar -C "$tree" --numeric-owner -c . | docker import -c 'ENV PATH=/bin' - "$tag" >/dev/null
	rm -rf "$tree"
}

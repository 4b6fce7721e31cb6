#!/usr/bin/env bash
# Install the Debian 12 packages agentrun needs to build and test (run as root).
#   scripts/install-deps.sh          build + test dependencies
#   scripts/install-deps.sh --bench  also the peers the benchmarks compare against
set -euo pipefail

build_pkgs=(build-essential cmake pkg-config
	libseccomp-dev libcap-dev libcjson-dev libnl-3-dev libnl-route-3-dev
	libcmocka-dev libc-ares-dev
	libssl-dev              # OpenSSL 3: TLS for secrets (the proxy terminates bound hosts)
	libpsl-dev publicsuffix # the Public Suffix List: audit --propose's wildcards
)
test_pkgs=(curl git openssl python3 iproute2 util-linux procps user-mode-linux runc
	apparmor # apparmor_parser: tests/integration/apparmor_profile.sh
	shellcheck clang-format busybox-static clang libclang-rt-14-dev
	crun podman runsc golang-github-opencontainers-specs-dev python3-jsonschema
	python3-requests) # secrets_run: a real client inside the sandbox
# render --format k8s is validated against the Kubernetes schemas from npm (docs/k8s.md)
command -v node >/dev/null && command -v npm >/dev/null || test_pkgs+=(nodejs npm)
# the live docker lane (tests/docker/): dockerd runs only inside namespaces the test makes;
# nftables for comparing the host's ruleset before and after
test_pkgs+=(docker.io nftables)
test_pkgs+=(socat) # tests/docker/lane.sh: the TLS origin of the secrets case
# learn_propose.sh applies the diff `audit --propose --policy` prints
test_pkgs+=(patch)
bench_pkgs=(hyperfine bubblewrap tinyproxy squid nginx-light wrk firejail)
bench_pkgs+=(dnsmasq-base) # bench/dns.sh: dnsmasq without its system service
bench_pkgs+=(mitmproxy)    # bench/secrets.sh: the intercepting proxy to compare with
bench_pkgs+=(ripgrep socat) # bench/rootless.sh PEERS=1: what sandbox-runtime (srt) needs

pkgs=("${build_pkgs[@]}" "${test_pkgs[@]}")
if [ "${1:-}" = "--bench" ]; then pkgs+=("${bench_pkgs[@]}"); fi

if [ "$(id -u)" != 0 ]; then
	echo "agentrun: install-deps.sh: run as root (apt-get install)" >&2
	exit 2
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# installing docker.io must not start dockerd in the host's network namespace (it
	# rewrites ip_forward, iptables and adds docker0): no service starts during install
	guard=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		guard=/usr/sbin/policy-rc.d
	fi
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	if [ -n "$guard" ]; then rm -f "$guard"; fi
fi

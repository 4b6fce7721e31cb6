#!/usr/bin/env bash
# net_proxy.sh's cases run by an unprivileged user (tests/lib.sh user mode): the proxy
# topology in namespaces the user owns, every case as under root.
AR_AS_USER=1 exec bash "$(dirname "$0")/net_proxy.sh"

#!/usr/bin/env bash
# net_isolation.sh's cases run by an unprivileged user (tests/lib.sh user mode).
AR_AS_USER=1 exec bash "$(dirname "$0")/net_isolation.sh"

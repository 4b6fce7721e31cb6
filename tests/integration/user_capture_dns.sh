#!/usr/bin/env bash
# capture_dns.sh's cases run by an unprivileged user (tests/lib.sh user mode).
AR_AS_USER=1 exec bash "$(dirname "$0")/capture_dns.sh"

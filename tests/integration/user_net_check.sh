#!/usr/bin/env bash
# net_check.sh's cases run by an unprivileged user (tests/lib.sh user mode): check
# --name and --pid of a user's sandbox, network findings included.
AR_AS_USER=1 exec bash "$(dirname "$0")/net_check.sh"

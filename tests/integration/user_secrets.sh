#!/usr/bin/env bash
# secrets_run.sh's cases run by an unprivileged user (tests/lib.sh user mode): the proxy
# in the user's namespaces reads the values, makes the sandbox CA and terminates HTTPS.
AR_AS_USER=1 exec bash "$(dirname "$0")/secrets_run.sh"

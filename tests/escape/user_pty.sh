#!/usr/bin/env bash
# pty.sh's cases from a sandbox run by an unprivileged user (tests/lib.sh user mode): the
# command's own pty, TIOCSTI into its own input only, the caller's terminal restored.
AR_AS_USER=1 exec bash "$(dirname "$0")/pty.sh"

#!/usr/bin/env bash
# init.sh's attempts from inside a sandbox run by an unprivileged user (tests/lib.sh user
# mode); the positive controls outside stay root's (they show the kernel has the primitive).
AR_AS_USER=1 exec bash "$(dirname "$0")/init.sh"

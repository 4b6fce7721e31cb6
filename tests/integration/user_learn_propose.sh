#!/usr/bin/env bash
# learn_propose.sh's cases run by an unprivileged user (tests/lib.sh user mode): learn
# mode, the proposal and the enforce run under it with the rootless proxy network.
AR_AS_USER=1 exec bash "$(dirname "$0")/learn_propose.sh"

#!/usr/bin/env bash
# hostile_tune_load.sh - tune beside plugins that crash, hang, exit, abort, print or forge a
# handle while loading (entry, create, describe): see hostile_tune.bash.
stages="entry|create|describe"
source "$(dirname "$0")/hostile_tune.bash"

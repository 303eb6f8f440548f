#!/usr/bin/env bash
# hostile_tune_check.sh - tune beside plugins that crash, hang, exit, abort, print or forge a
# handle in check_config (asked while the space is searched, in the device's worker) or in
# destroy: see hostile_tune.bash.
stages="check|destroy"
source "$(dirname "$0")/hostile_tune.bash"

#!/usr/bin/env bash
# hostile_tune_run.sh - tune beside plugins that misbehave in kernel_prepare or kernel_run, or
# lie there (zero-filled output, device time 0 or (uint64)-1000 ns): see hostile_tune.bash.
stages="prepare|run"
source "$(dirname "$0")/hostile_tune.bash"

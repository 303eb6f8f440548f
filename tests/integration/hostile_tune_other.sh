#!/usr/bin/env bash
# hostile_tune_other.sh - `mi-host tune` over {blis-cpu, X} for the plugins that misbehave
# across loads rather than at one entry point (hostile_tune.bash does the work): flaky (passes
# the host's load, crashes in every later one: the device's probes, questions and measurements)
# and thread (a thread started in create and never stopped). blis-cpu is always tuned and the
# hostile device never deployed.
stages="entry|create|describe"
kinds='(flaky|thread)'
source "$(dirname "$0")/hostile_tune.bash"

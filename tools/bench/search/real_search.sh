#!/usr/bin/env bash
# real_search.sh - the search benchmark on real exported models (bench_real.c): blis-cpu, the
# whole kernel space of every node with the device knobs; the reference is the best of all
# methods' runs at 4x the budget, pooled; the table gives each method's measurements to within
# 5% of it at the budget. The table of measured configurations is kept in MI_BENCH_DIR (default
# BUILD/bench-real) and reused: a rerun measures nothing new.
# Usage: tools/bench/search/real_search.sh [BUILD] [SEEDS] [BUDGET] [TASKS]
#   TASKS: comma list of real-ppocr-cls, real-blazeface, real-oww-embed (all by default).
set -euo pipefail
build=${1:-build}
seeds=${2:-1}
budget=${3:-6}
tasks=${4:-}
work=${MI_BENCH_DIR:-$build/bench-real}
models=${MI_MODELS:-$HOME/.cache/metainfer/models}
mkdir -p "$work"
echo "real_search: budget $budget, $seeds seed(s), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)" >&2
MI_BENCH_REAL=1 MI_BENCH_REAL_BUDGET=$budget MI_BENCH_LODO=0 MI_BENCH_LAYERS=0 \
  "$build/bin/bench_search" "$build/plugins" "$models" "$work/table.txt" "$seeds" ${tasks:+"$tasks"}
echo "real_search: done, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)" >&2

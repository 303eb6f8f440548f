#!/usr/bin/env bash
# run.sh - the search benchmark in one command: zoo models, then bench_search on the cached
# table (reused and extended between runs). Usage: tools/bench/search/run.sh [BUILD] [SEEDS] [TASKS]
# TASKS: comma list (resnet-gen1,resnet-gen2,mbv2-gen1,mbv2-gen2,kws-gen1,kws-gen2,resnet-blis); all by default.
# MI_BENCH_RICH=1 adds resnet-rich1/2, mbv2-rich1/2, kws-rich1/2: two layers' precision and SRAM
# tile with the core count free (5,184 points each, exhaustive; docs/benchmarks.md).
# The first run measures the tables and the per-layer tables (minutes); later runs reuse them
# (docs/benchmarks.md).
set -euo pipefail
build=${1:-build}
seeds=${2:-10}
tasks=${3:-}
work=${MI_BENCH_DIR:-$build/bench-search}
mkdir -p "$work"
"$build/bin/mi-zoo" resnet --out "$work/resnet.onnx" --width 0.25 --depth 2 --resolution 32 >/dev/null
"$build/bin/mi-zoo" mobilenetv2 --out "$work/mobilenetv2.onnx" --width 0.25 --depth 2 --resolution 32 >/dev/null
"$build/bin/mi-zoo" kws --out "$work/kws.onnx" --width 0.5 --depth 2 >/dev/null
exec "$build/bin/bench_search" "$build/plugins" "$work" "$work/table.txt" "$seeds" ${tasks:+"$tasks"}

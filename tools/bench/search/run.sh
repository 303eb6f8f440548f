#!/usr/bin/env bash
# run.sh - the search benchmark in one command: zoo models, then bench_search on the cached
# table (reused and extended between runs). Usage: tools/bench/search/run.sh [BUILD] [SEEDS] [TASKS]
# TASKS: comma list (resnet-gen1,resnet-gen2,mbv2-gen1,mbv2-gen2,kws-gen1,kws-gen2,resnet-blis,kws-blis); all by default.
# MI_BENCH_RICH=1 adds resnet-rich1/2, mbv2-rich1/2, kws-rich1/2: two layers' precision and SRAM
# tile with the core count free (5,184 points each, exhaustive; docs/benchmarks.md).
# MI_BENCH_JOINT=1 adds resnetw-prune1/2, resnetw-energy1/2, resnetw-flow1/2, resnetw-fuse1/2 on a
# wider ResNet (resnet-wide.onnx): 3-4 layers' precision and/or pruning (and fusion, BN folding)
# against cores, DVFS or dataflow (3,456-6,912 points each, exhaustive), under an accuracy-drop bound (and an energy bound on the
# energy tasks) that joint search and model-then-hardware both face; it first prints the
# exhaustive joint optimum against model-then-hardware at several bounds. MI_BENCH_JOINT_ACC=X
# sets the methods' accuracy bound (relative L2; default the median over the model sides),
# MI_BENCH_JOINT_ENERGY_Q=Q the energy bound's quantile of the table's energy (default 0.25 on the
# energy tasks, none elsewhere; when set, on every joint task); MI_BENCH_JOINT_ZOO (mi-zoo options), MI_BENCH_JOINT_LAYERS and
# MI_BENCH_JOINT_HW (comma lists) change the model, layers and knobs for experiments (use another
# MI_BENCH_DIR); MI_BENCH_DESCRIBE=1 only checks the joint spaces. docs/benchmarks.md.
# MI_BENCH_PER_SEED=1 prints each seed's misleading run against its cold run on stderr.
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
if [ "${MI_BENCH_JOINT:-}" = 1 ]; then
  "$build/bin/mi-zoo" resnet --out "$work/resnet-wide.onnx" ${MI_BENCH_JOINT_ZOO:---width 1.0 --depth 4 --resolution 32} >/dev/null
fi
exec "$build/bin/bench_search" "$build/plugins" "$work" "$work/table.txt" "$seeds" ${tasks:+"$tasks"}

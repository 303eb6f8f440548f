#!/usr/bin/env bash
# bench_joint_space.sh - the search benchmark's joint tasks (MI_BENCH_JOINT=1, docs/benchmarks.md)
# are built as described: at least three layers with a model side, a hardware side, pruning where
# asked, at most 20,000 configurations each. Seconds: the spaces are built, nothing is measured.
set -u
B=${MI_BUILD:?MI_BUILD is not set}
T=$(mktemp -d /tmp/mi-joint-XXXXXX)
trap 'rm -rf "$T"' EXIT
"$B/bin/mi-zoo" resnet --out "$T/resnet-wide.onnx" --width 1.0 --depth 4 --resolution 32 > /dev/null \
  || { echo "FAIL: mi-zoo" >&2; exit 1; }
MI_BENCH_JOINT=1 MI_BENCH_DESCRIBE=1 "$B/bin/bench_search" "$B/plugins" "$T" "$T/table.txt" 1 \
  resnetw-prune1,resnetw-prune2,resnetw-energy1,resnetw-energy2,resnetw-flow1,resnetw-flow2,resnetw-fuse1,resnetw-fuse2 \
  || { echo "FAIL: bench_search describe" >&2; exit 1; }
echo "bench_joint_space: ok"

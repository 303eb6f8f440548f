#!/bin/bash
# vs_ort.sh - end-to-end latency of every mi-zoo family on blis-cpu:0 (best configuration, via
# mi_session) against ONNX Runtime's default CPU session, same model, input, thread count and run.
# Usage: tools/bench/blis/vs_ort.sh BUILD_DIR [THREADS] [REPEAT]. Prints a table; ratio > 1 means
# blis-cpu is slower than ONNX Runtime.
set -euo pipefail
build=${1:?usage: vs_ort.sh BUILD_DIR [THREADS] [REPEAT]}
threads=${2:-$(nproc)}
repeat=${3:-20}
src=$(cd "$(dirname "$0")/../../.." && pwd)
ort="$src/tools/ort/ort_run.js"
[ -f "$ort" ] || { echo "vs_ort.sh: $ort is missing" >&2; exit 2; }
[ -d "$src/tools/ort/node_modules/onnxruntime-node" ] || { echo "vs_ort.sh: run tools/ort/setup.sh first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; threads=$threads repeat=$repeat"
printf '%-12s %-14s %12s %12s %8s\n' model "blis best" "blis ms" "ort ms" "ratio"
for fam in mobilenetv2 mobilenetv3 resnet transformer mlp kws; do
  mine=$("$build/bin/bench_blis_zoo" "$build" "$fam" "$threads" "$work" "$repeat" 2>"$work/$fam.log") || {
    echo "$fam: bench_blis_zoo failed: $(tail -1 "$work/$fam.log")" >&2; continue; }
  name=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["input"])' "$mine")
  theirs=$(node "$ort" --model "$work/$fam.onnx" --input "$name=$work/$fam.input.npy" \
           --threads "$threads" --repeat "$repeat" --warmup 3 --json 2>"$work/$fam.ort.log") || {
    echo "$fam: ort_run.js failed: $(tail -1 "$work/$fam.ort.log")" >&2; continue; }
  python3 - "$mine" "$theirs" <<'PY'
import json, sys
m = json.loads(sys.argv[1])
t = json.loads(sys.argv[2])
lat = t.get("latency_ms", t.get("latency", t))
o = lat.get("median", lat.get("median_ms")) if isinstance(lat, dict) else None
if o is None:
    print("%-12s cannot read ORT latency from %s" % (m["family"], sys.argv[2][:200]))
else:
    print("%-12s %-14s %12.3f %12.3f %8.2f" % (m["family"], m["best"], m["median_ms"], o, m["median_ms"] / o))
PY
done

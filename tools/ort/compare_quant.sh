#!/bin/bash
# compare_quant.sh - quantized forms of the fetched real models (tools/mi-quantize: dynamic, qdq,
# qop, ONNX Runtime's op patterns) run on ONNX Runtime (ort_run.js), the reference and blis-cpu
# with the same inputs; prints the relative L2 of every output (and its largest difference in
# output steps): reference vs ORT and blis-cpu vs reference, and the com.microsoft ops each
# QOperator file holds (docs/onnx.md, "Quantized models"). A benchmark-style check, not a test.
# usage: tools/ort/compare_quant.sh [BUILD_DIR]   (env MI_MODEL_DIR: the fetch.sh cache)
set -uo pipefail
. "$(dirname "$0")/common.sh" compare_quant.sh mi-quantize "$@"

rel() { # DIR_A DIR_B: relative L2 of B against A per float32 output, and the largest difference in
  # output steps where A's values lie on a grid of at most 256 points (an output a
  # DequantizeLinear writes: the grid's step is its scale, so "1 step" is one code)
  python3 - "$1" "$2" <<'PY'
import math, os, struct, sys
def load(p):
    b = open(p, "rb").read(); hl = struct.unpack("<H", b[8:10])[0]; body = b[10 + hl:]
    return struct.unpack("<%df" % (len(body) // 4), body)
for f in sorted(os.listdir(sys.argv[1])):
    a = load(os.path.join(sys.argv[1], f)); m = os.path.join(sys.argv[2], f)
    if not os.path.exists(m): print(f"{f}: missing", end="  "); continue
    b = load(m); num = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b))); den = math.sqrt(sum(x * x for x in a)) or 1.0
    u = sorted(set(a)); gaps = [v - w for v, w in zip(u[1:], u) if v - w > 0]
    step = min(gaps) if gaps and len(u) <= 256 else 0.0  # only an output of codes has a step:
    if step and any(abs((v - u[0]) / step - round((v - u[0]) / step)) > 1e-3 for v in u): step = 0.0  # a grid
    md = max((abs(x - y) for x, y in zip(a, b)), default=0.0)
    print(f"{f}: {num / den:.3g} (max {md / step:.3g} steps)" if step else f"{f}: {num / den:.3g}", end="  ")
print()
PY
}

# name model calibration-shape gen_inputs-args...
run() {
  local name="$1" model="$2" shape="$3"; shift 3
  [ -f "$model" ] || model="$models/$model"
  [ -f "$model" ] || return 0
  for mode in dynamic qop qdq; do
    local q="$tmp/$name-$mode.onnx" d="$tmp/$name-$mode" args=()
    "$build/bin/mi-quantize" --mode "$mode" --model "$model" ${shape:+--shape "$shape"} --out "$q" >/dev/null 2>"$d.err" ||
      { echo "$name $mode: $(cat "$d.err")"; continue; }
    mkdir -p "$d/in" "$d/ort" "$d/ref" "$d/blis"
    mapfile -t ins < <(node "$here/gen_inputs.js" "$q" "$d/in" "$@" 2>/dev/null)
    for i in "${ins[@]}"; do args+=(--input "$i"); done
    node "$here/ort_run.js" --model "$q" "${args[@]}" --output-dir "$d/ort" >/dev/null 2>&1 || { echo "$name $mode: onnxruntime failed"; continue; }
    "$build/bin/mi-run" --model "$q" --device ref "${args[@]}" --output-dir "$d/ref" >/dev/null || { echo "$name $mode: ref failed"; continue; }
    "$build/bin/mi-run" --model "$q" --device blis-cpu:0 "${args[@]}" --output-dir "$d/blis" >/dev/null || { echo "$name $mode: blis-cpu failed"; continue; }
    echo "$name $mode: ref vs ORT: $(rel "$d/ort" "$d/ref")| blis-cpu vs ref: $(rel "$d/ref" "$d/blis")"
    [ "$mode" = qop ] && echo "  com.microsoft ops: $(grep -ao 'QLinear[A-Za-z]*\|QGemm' "$q" | sort -u | tr '\n' ' ')"
  done
}
run oww-embedding oww_embedding.onnx input_1=3,76,32,1 input_1=3,76,32,1
run oww-melspectrogram oww_melspectrogram.onnx input=1,1280 input=1,1280
run ppocr-v4-det ppocr_v4_det.onnx x=1,3,96,128 --image x=1,3,96,128
run blazeface-front blazeface_front.onnx input:0=1,128,128,3 --image
# zoo models (tools/mi-zoo, default sizes): the Gemm heads (QGemm), kws's AveragePool, the
# transformer's attention Softmax
for z in resnet mobilenetv3 kws mlp transformer; do
  "$build/bin/mi-zoo" "$z" --out "$tmp/zoo-$z.onnx" >/dev/null && run "zoo-$z" "$tmp/zoo-$z.onnx" ""
done
run mlsd-tiny-320 mlsd_tiny_320.onnx input_image_with_alpha:0=1,320,320,4 --image

#!/bin/bash
# compare_4bit.sh - the 4-bit weight-only forms mi-quantize writes (nbits: com.microsoft
# MatMulNBits; qdq4: opset 21's blocked INT4 DequantizeLinear; each asymmetric and --symmetric)
# of the zoo transformer and the fetched models with float MatMul weights, run on ONNX Runtime
# (ort_run.js), the reference and blis-cpu with the same inputs; prints the relative L2 of every
# output: reference vs ORT and blis-cpu vs reference (docs/onnx.md, "4-bit weights"). ORT runs
# twice: at its default optimization level, whose DequantizeLinear + MatMul -> MatMulNBits fusion
# quantizes A to 8 bits (accuracy level 4), and at --opt basic, which runs the graph as written.
# A benchmark-style check, not a test.
# usage: tools/ort/compare_4bit.sh [BUILD_DIR]   (env MI_MODEL_DIR: the fetch.sh cache)
set -uo pipefail
. "$(dirname "$0")/common.sh" compare_4bit.sh mi-quantize "$@"

rel() { # DIR_A DIR_B: relative L2 of B against A, per float32 output
  python3 - "$1" "$2" <<'PY'
import math, os, struct, sys
def load(p):
    b = open(p, "rb").read(); hl = struct.unpack("<H", b[8:10])[0]; body = b[10 + hl:]
    return struct.unpack("<%df" % (len(body) // 4), body)
for f in sorted(os.listdir(sys.argv[1])):
    a = load(os.path.join(sys.argv[1], f)); m = os.path.join(sys.argv[2], f)
    if not os.path.exists(m): print(f"{f}: missing", end="  "); continue
    b = load(m); num = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b))); den = math.sqrt(sum(x * x for x in a)) or 1.0
    print(f"{f}: {num / den:.3g}", end="  ")
print()
PY
}

# name model gen_inputs-args...
run() {
  local name="$1" model="$2"; shift 2
  [ -f "$model" ] || return 0
  for mode in nbits nbits-sym qdq4 qdq4-sym; do
    local q="$tmp/$name-$mode.onnx" d="$tmp/$name-$mode" args=() opt=()
    [[ "$mode" == *-sym ]] && opt=(--symmetric)
    "$build/bin/mi-quantize" --mode "${mode%-sym}" "${opt[@]}" --model "$model" --out "$q" >/dev/null 2>"$d.err" ||
      { echo "$name $mode: $(cat "$d.err")"; continue; }
    mkdir -p "$d/in" "$d/ort" "$d/ortb" "$d/ref" "$d/blis"
    mapfile -t ins < <(node "$here/gen_inputs.js" "$q" "$d/in" "$@" 2>/dev/null)
    for i in "${ins[@]}"; do args+=(--input "$i"); done
    node "$here/ort_run.js" --model "$q" "${args[@]}" --output-dir "$d/ort" >/dev/null 2>"$d.err" ||
      { echo "$name $mode: onnxruntime failed: $(tail -1 "$d.err")"; continue; }
    node "$here/ort_run.js" --opt basic --model "$q" "${args[@]}" --output-dir "$d/ortb" >/dev/null 2>&1 ||
      { echo "$name $mode: onnxruntime --opt basic failed"; continue; }
    "$build/bin/mi-run" --model "$q" --device ref "${args[@]}" --output-dir "$d/ref" >/dev/null || { echo "$name $mode: ref failed"; continue; }
    "$build/bin/mi-run" --model "$q" --device blis-cpu:0 "${args[@]}" --output-dir "$d/blis" >/dev/null || { echo "$name $mode: blis-cpu failed"; continue; }
    echo "$name $mode: ref vs ORT: $(rel "$d/ort" "$d/ref")| vs ORT basic: $(rel "$d/ortb" "$d/ref")| blis-cpu vs ref: $(rel "$d/ref" "$d/blis")"
  done
}
"$build/bin/mi-zoo" transformer --out "$tmp/transformer.onnx" >/dev/null
run zoo-transformer "$tmp/transformer.onnx"
run ppocr-v4-rec "$models/ppocr_v4_rec.onnx" --image x=1,3,48,160
run ppocr-v2-cls "$models/ppocr_v2_cls.onnx" --image x=1,3,48,192

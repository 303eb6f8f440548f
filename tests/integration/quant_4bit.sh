#!/usr/bin/env bash
# quant_4bit.sh - 4-bit weight-only models end to end: mi-quantize writes the zoo transformer's
# MatMulNBits form (asymmetric and symmetric, block 32 and 16) and its opset-21 blocked INT4
# DequantizeLinear form; the files hold those ops and 4-bit tensors, load, run on the reference
# close to the FP32 model, both forms give the same reference output, and on blis-cpu (a
# one-row model: the 4-bit kernel) with no node left to the host, matching the reference; bad
# block sizes exit 2.
set -u
source "$(dirname "$0")/lib.bash"
Q=$B/bin/mi-quantize
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
[ -x "$Q" ] || { echo "FAIL: $Q not built" >&2; exit 1; }
have_blis=0
[ -f "$B/plugins/libmi_blis_cpu.so" ] && have_blis=1

for res in 8 1; do
  m="$T/tf$res.onnx"
  "$ZOO" transformer --width 1 --depth 1 --resolution $res --out "$m" >/dev/null || { bad "mi-zoo transformer"; continue; }
  mkdir -p "$T/fp32-$res"
  "$RUN" --model "$m" --device ref --seed 3 --output-dir "$T/fp32-$res" >/dev/null || bad "FP32 on ref"
  for spec in "nbits MatMulNBits" "nbits-sym MatMulNBits" "nbits-b16 MatMulNBits" "qdq4 DequantizeLinear" "qdq4-sym DequantizeLinear"; do
    read -r mode op <<<"$spec"
    opts=()
    [[ "$mode" == *-sym ]] && opts+=(--symmetric)
    [[ "$mode" == *-b16 ]] && opts+=(--block-size 16)
    base=${mode%%-*}
    q="$T/$mode-$res.onnx"
    "$Q" --mode "$base" "${opts[@]}" --model "$m" --out "$q" > "$T/q.log" 2>&1 || { bad "mi-quantize $mode: $(cat "$T/q.log")"; continue; }
    grep -qa "$op" "$q" || bad "$mode: no $op node in the written model"
    grep -qa "block_size" "$q" || bad "$mode: no block_size attribute"
    d="$T/$mode-$res"
    mkdir -p "$d-ref" "$d-blis"
    "$RUN" --model "$q" --device ref --seed 3 --output-dir "$d-ref" >/dev/null || { bad "$mode on ref"; continue; }
    for f in "$d-ref"/*.npy; do
      e=$(rel_l2 "$f" "$T/fp32-$res/$(basename "$f")")
      under "$e" 0.25 || bad "$mode: 4-bit output $(basename "$f") is $e from the FP32 model's (limit 0.25)"
    done
    [ $have_blis = 1 ] || continue
    "$RUN" --model "$q" --device blis-cpu:0 --seed 3 --output-dir "$d-blis" > "$T/blis.log" 2>&1 || { bad "$mode on blis-cpu: $(tail -2 "$T/blis.log")"; continue; }
    grep -q "fallback nodes: none" "$T/blis.log" || bad "$mode: nodes ran on the host"
    for f in "$d-ref"/*.npy; do
      e=$(rel_l2 "$d-blis/$(basename "$f")" "$f")
      under "$e" 1e-5 || bad "$mode res $res: blis-cpu output $(basename "$f") is $e from the reference's (limit 1e-5)"
    done
  done
  # the two forms hold the same weights: the same reference output
  for f in "$T/nbits-$res-ref"/*.npy; do
    e=$(rel_l2 "$T/qdq4-$res-ref/$(basename "$f")" "$f")
    under "$e" 1e-6 || bad "res $res: the INT4 DequantizeLinear form is $e from the MatMulNBits form"
  done
done
# one row: the MatMuls run on the 4-bit codes, their DequantizeLinear in the same kernel
if [ $have_blis = 1 ]; then
  "$RUN" --model "$T/nbits-1.onnx" --device blis-cpu:0 --seed 3 --profile --repeat 1 --json > "$T/prof.json" 2>"$T/prof.err" || bad "--profile: $(tail -1 "$T/prof.err")"
  python3 - "$T/prof.json" <<'PY' || bad "one row: the MatMuls did not run with their DequantizeLinear"
import json, sys
rows = json.load(open(sys.argv[1]))["profile"]
rows = rows["layers"] if isinstance(rows, dict) else rows
ops = [r["op"] for r in rows]
sys.exit(0 if ops.count("DequantizeLinear+MatMul") >= 4 else 1)
PY
fi
"$Q" --mode nbits --block-size 24 --model "$T/tf1.onnx" --out "$T/x.onnx" 2>/dev/null; [ $? = 2 ] || bad "--block-size 24 should exit 2"
"$Q" --mode nbits --block-size 8 --model "$T/tf1.onnx" --out "$T/x.onnx" 2>/dev/null; [ $? = 2 ] || bad "--block-size 8 should exit 2"
exit $fail

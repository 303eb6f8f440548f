#!/usr/bin/env bash
# quant_models.sh - quantized models end to end: mi-quantize writes the dynamic, QDQ and
# QOperator forms of zoo models (ONNX Runtime's op patterns), they load, hold the ops they should,
# run on the reference and on blis-cpu with no node left to the host, blis-cpu matches the
# reference, and the quantized outputs stay close to the FP32 model's; a quantized tensor that is
# also a graph output is calibrated.
set -u
source "$(dirname "$0")/lib.bash"
Q=$B/bin/mi-quantize
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
[ -x "$Q" ] || { echo "FAIL: $Q not built" >&2; exit 1; }
have_blis=0
[ -f "$B/plugins/libmi_blis_cpu.so" ] && have_blis=1

# rel_l2 A.npy B.npy: relative L2 of A against B (float32 .npy files)
rel_l2() {
  python3 - "$1" "$2" <<'PY'
import math, struct, sys
def load(p):
    b = open(p, "rb").read(); hl = struct.unpack("<H", b[8:10])[0]
    body = b[10 + hl:]; return struct.unpack("<%df" % (len(body) // 4), body)
a, r = load(sys.argv[1]), load(sys.argv[2])
num = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, r))); den = math.sqrt(sum(y * y for y in r)) or 1.0
print("%.3g" % (num / den) if len(a) == len(r) else "inf")
PY
}
under() { python3 -c "import sys; sys.exit(0 if float('$1') <= float('$2') else 1)"; }

"$ZOO" resnet --width 0.5 --depth 2 --resolution 32 --out "$T/resnet.onnx" >/dev/null || bad "mi-zoo resnet"
"$ZOO" transformer --width 0.5 --depth 1 --resolution 8 --out "$T/transformer.onnx" >/dev/null || bad "mi-zoo transformer"
# model mode ops-that-must-appear
for spec in "resnet dynamic DynamicQuantizeLinear ConvInteger" "resnet qop QLinearConv QLinearAdd QLinearGlobalAveragePool" \
            "resnet qdq QuantizeLinear DequantizeLinear" "transformer dynamic MatMulInteger" "transformer qop QLinearMatMul"; do
  read -r m mode ops <<<"$spec"
  q="$T/${m}_$mode.onnx"
  "$Q" --mode "$mode" --model "$T/$m.onnx" --out "$q" > "$T/q.log" 2>&1 || { bad "mi-quantize $m $mode: $(cat "$T/q.log")"; continue; }
  for op in $ops; do grep -qa "$op" "$q" || bad "$m $mode: no $op node in the written model"; done
  mkdir -p "$T/$m-$mode-ref" "$T/$m-$mode-blis" "$T/$m-fp32"
  "$RUN" --model "$T/$m.onnx" --device ref --seed 3 --output-dir "$T/$m-fp32" >/dev/null || bad "$m FP32 on ref"
  "$RUN" --model "$q" --device ref --seed 3 --output-dir "$T/$m-$mode-ref" >/dev/null || { bad "$m $mode on ref"; continue; }
  for f in "$T/$m-$mode-ref"/*.npy; do
    e=$(rel_l2 "$f" "$T/$m-fp32/$(basename "$f")")
    under "$e" 0.15 || bad "$m $mode: quantized output $(basename "$f") is $e from the FP32 model's (limit 0.15)"
  done
  [ $have_blis = 1 ] || continue
  "$RUN" --model "$q" --device blis-cpu:0 --seed 3 --output-dir "$T/$m-$mode-blis" > "$T/blis.log" 2>&1 || { bad "$m $mode on blis-cpu: $(tail -2 "$T/blis.log")"; continue; }
  grep -q "fallback nodes: none" "$T/blis.log" || bad "$m $mode: nodes ran on the host: $(grep fallback "$T/blis.log")"
  for f in "$T/$m-$mode-ref"/*.npy; do
    e=$(rel_l2 "$T/$m-$mode-blis/$(basename "$f")" "$f")
    under "$e" 1e-5 || bad "$m $mode: blis-cpu output $(basename "$f") is $e from the reference's (limit 1e-5)"
  done
  # A QDQ file's DQ -> Conv -> Q runs as one INT8 kernel (the Q/DQ parameters read from the
  # nodes' constants, exec/qdq_params.c): the profile names the lowered layer, no float Conv.
  if [ "$mode" = qdq ]; then
    "$RUN" --model "$q" --device blis-cpu:0 --seed 3 --profile --repeat 1 --json > "$T/prof.json" 2>"$T/prof.err" || bad "$m qdq --profile: $(tail -1 "$T/prof.err")"
    python3 - "$T/prof.json" <<'PY' || bad "$m qdq: the Conv layers did not run as INT8 kernels"
import json, sys
rows = json.load(open(sys.argv[1]))["profile"]
rows = rows["layers"] if isinstance(rows, dict) else rows
ops = [r["op"] for r in rows]
print("ops:", sorted(set(ops)), file=sys.stderr)
sys.exit(0 if "Conv+QuantizeLinear" in ops and "Conv" not in ops else 1)
PY
  fi
done
# A quantized tensor that is a graph output too (a detector's map that a later layer also reads)
# is calibrated where it stands: the QDQ file is written and runs (it was "not calibrated").
mi_wire_py
python3 - "$T" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[1]); from mi_wire import *
w1 = [((i * 7) % 11 - 5) / 10 for i in range(4 * 3 * 3 * 3)]
w2 = [((i * 5) % 7 - 3) / 5 for i in range(4 * 4)]
save("twoout.onnx", model([node("Conv", "c1", ["x", "w1"], ["a"]), node("Relu", "r1", ["a"], ["y1"]),
                           node("Conv", "c2", ["y1", "w2"], ["y2"])],
                          [("x", 1, [1, 3, 8, 8])], [("y1", 1, [1, 4, 6, 6]), ("y2", 1, [1, 4, 6, 6])],
                          inits=ld(5, tensor("w1", [4, 3, 3, 3], w1)) + ld(5, tensor("w2", [4, 4, 1, 1], w2))))
PY
if "$Q" --mode qdq --model "$T/twoout.onnx" --out "$T/twoout_qdq.onnx" > "$T/q.log" 2>&1; then
  "$RUN" --model "$T/twoout_qdq.onnx" --device ref --seed 3 >/dev/null 2>&1 || bad "the QDQ form of twoout.onnx does not run on ref"
else
  bad "mi-quantize of a model whose quantized tensor is a graph output: $(cat "$T/q.log")"
fi
# Bad use exits 2 with one line; a model below opset 10 cannot hold QuantizeLinear.
"$Q" --mode nope --model "$T/resnet.onnx" --out "$T/x.onnx" 2>/dev/null; [ $? = 2 ] || bad "--mode nope should exit 2"
exit $fail

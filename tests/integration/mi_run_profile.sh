# mi_run_profile.sh - mi-run --profile: the per-layer table on blis-cpu:0 (a zoo resnet, fused
# by --config so that a kernel runs several nodes): rows slowest first, shares summing to 1,
# every timed node in one row, convs with GFLOP/s and the other ops with GB/s, a fused kernel
# shown as Conv+..., and the same rows as text.
set -euo pipefail
. "${BASH_SOURCE[0]%/*}/lib.bash"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ZOO" resnet --out "$T/r.onnx" --width 0.5 --depth 2 --resolution 32 > /dev/null
printf 'version: 1\npasses:\n  fold_bn: true\n  fuse: true\n' > "$T/fused.yaml"
"$RUN" --model "$T/r.onnx" --device blis-cpu:0 --profile --repeat 3 --json \
  --config "$T/fused.yaml" > "$T/p.json" || fail "--profile --json"
python3 - "$T/p.json" <<'PY' || fail "profile JSON"
import json, sys
j = json.load(open(sys.argv[1]))
rows = j["profile"]["layers"]
assert rows, "no rows"
ms = [r["ms"] for r in rows]
assert ms == sorted(ms, reverse=True), "not sorted by time"
assert abs(sum(r["share"] for r in rows) - 1) < 1e-6, "shares do not sum to 1"
assert abs(j["profile"]["layers_ms"] - sum(ms)) < 1e-6 * max(1, sum(ms))
convs = [r for r in rows if r["op"].startswith("Conv")]
assert convs and all(r["flops"] > 0 and "gflops" in r for r in convs), convs[:2]
assert any("+" in r["op"] and r["nodes"] > 1 for r in convs), "no fused kernel row"
others = [r for r in rows if not r["op"].startswith(("Conv", "Gemm", "MatMul"))]
assert all("gbytes_per_s" in r for r in others if r["ms"] > 0), others[:2]
for r in rows:
    assert r["variant"] == "default" and r["where"] == "device", r
    assert " -> " in r["shapes"], r["shapes"]
# A node appears in at most one row, and the rows cover every device kernel.
assert len(rows) == j["device_kernels"], (len(rows), j["device_kernels"])
PY
"$RUN" --model "$T/r.onnx" --device blis-cpu:0 --profile --repeat 3 > "$T/p.txt" ||
  fail "--profile text"
grep -q "^per-layer profile (median of 3 runs" "$T/p.txt" || fail "table heading"
grep -Eq "^node +op +shapes +variant +ms +share +rate" "$T/p.txt" || fail "column heading"
grep -Eq "^total .* 100\.0%" "$T/p.txt" || fail "total line"
grep -q "GFLOP/s" "$T/p.txt" || fail "no GFLOP/s column value"
# The quantized forms of the same model do the same multiply-adds: their integer convs
# (ConvInteger, QLinearConv, Conv between Q/DQ) count what the float convs count.
QUANT=$B/bin/mi-quantize
"$RUN" --model "$T/r.onnx" --device blis-cpu:0 --profile --repeat 1 --json > "$T/f.json" ||
  fail "--profile of the FP32 model"
for mode in dynamic qop qdq; do
  "$QUANT" --mode $mode --model "$T/r.onnx" --out "$T/r_$mode.onnx" > /dev/null || fail "quantize $mode"
  "$RUN" --model "$T/r_$mode.onnx" --device blis-cpu:0 --profile --repeat 1 --json > "$T/$mode.json" ||
    fail "--profile of the $mode model"
  python3 - "$T/f.json" "$T/$mode.json" <<'PY' || fail "flops of the $mode model"
import json, sys
def flops(p):
    rows = json.load(open(p))["profile"]["layers"]
    return sum(r.get("flops", 0) for r in rows), {r["op"] for r in rows if r.get("flops", 0) > 0}
f, _ = flops(sys.argv[1])
q, ops = flops(sys.argv[2])
assert f > 0 and abs(q - f) <= 1e-9 * f, (q, f, ops)
PY
done
echo "mi_run_profile: ok"

#!/usr/bin/env bash
# compare_calib_shape.sh - `mi-host compare --calib DIR` without --shape on a model whose input
# dims are dynamic (N, H, W): the calibration's first sample fixes them (1x3x12x12 here), so the
# space is built at that shape, `int8_act` is offered and applied, and the INT8 configuration
# passes the reference check (the reference evaluates each QDQ layer as the integer layer an INT8
# kernel computes). Before, the space was built on the dynamic graph: `int8_act` was not a value
# of any layer's precision, and the default configuration was refused as "shapes are not concrete".
set -euo pipefail
source "$(dirname "$0")/lib.bash"
HOST=$B/bin/mi-host
fail() { echo "compare_calib_shape: $*" >&2; exit 1; }
mi_wire_py
python3 - "$T" <<'PY'
import math, os, struct, sys
sys.path.insert(0, sys.argv[1]); from mi_wire import *
w1 = [math.sin(0.7 * i) * 0.4 for i in range(8 * 3 * 3 * 3)]
b1 = [0.05 * (i - 4) for i in range(8)]
w2 = [math.cos(0.3 * i) * 0.2 for i in range(4 * 8 * 3 * 3)]
nodes = [node("Conv", "conv1", ["x", "w1", "b1"], ["c1"]), node("Relu", "relu1", ["c1"], ["r1"]),
         node("Conv", "conv2", ["r1", "w2"], ["y"])]
inits = ld(5, tensor("w1", [8, 3, 3, 3], w1)) + ld(5, tensor("b1", [8], b1)) + ld(5, tensor("w2", [4, 8, 3, 3], w2))
save("dyn.onnx", model(nodes, [("x", 1, ["N", 3, "H", "W"])], [("y", 1, ["N", 4, "OH", "OW"])], inits=inits))
os.makedirs(os.path.join(sys.argv[1], "calib"))
for k in range(2):
    v = [math.sin(0.1 * i + k) for i in range(3 * 12 * 12)]
    save("calib/%d.npy" % k, npy("<f4", (1, 3, 12, 12), struct.pack("<%df" % len(v), *v)))
PY
printf 'node.conv1.precision: int8_act\nnode.conv2.precision: int8_act\n' >"$T/int8.yaml"
args=(--model "$T/dyn.onnx" --device blis-cpu:0 --min-rounds 2 --max-rounds 2 --budget-s 30 --json)

rc=0
"$HOST" --plugins "$B/plugins" compare "${args[@]}" --default --config "$T/int8.yaml" --calib "$T/calib" \
  >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 0 ] || fail "compare --calib without --shape: exit $rc: $(cat "$T/err") $(head -c 400 "$T/out")"
python3 - "$T/out" <<'PY' || fail "$(head -c 600 "$T/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] and d["rounds"] == 2, d.get("failure")
c = d["configs"]
assert "node.conv1.precision=int8_act" in c[1]["canonical"], c[1]["canonical"]
assert "node.conv2.precision=int8_act" in c[1]["canonical"], c[1]["canonical"]
assert "int8_act" not in c[0]["canonical"], c[0]["canonical"]
assert all(x["median_ms"] > 0 for x in c), c
PY

# An explicit --shape still wins over the sample's (then the sample, 12x12, does not fit: refused).
rc=0
"$HOST" --plugins "$B/plugins" compare "${args[@]}" --default --default --calib "$T/calib" --shape x:1x3x16x16 \
  >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" != 0 ] || fail "a --shape the calibration sample does not have was accepted: $(head -c 400 "$T/out")"
grep -q "does not match input 'x'" "$T/out" || fail "--shape against the sample: $(head -c 400 "$T/out")"

# Without --calib, --shape or --input the dynamic dims are refused up front, naming the options
# (before, the space was built and each worker refused the configuration).
rc=0
"$HOST" --plugins "$B/plugins" compare "${args[@]}" --default --default >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] || fail "a dynamic model without --shape or --calib: exit $rc, want 2"
grep -q "input 'x' has dynamic dim 0: give --shape x=D0xD1x..., --input x=FILE.npy or --calib DIR" "$T/err" ||
  fail "no shape: $(cat "$T/err")"
echo "compare_calib_shape: ok"

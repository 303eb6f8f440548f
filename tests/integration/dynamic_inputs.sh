# dynamic_inputs.sh - a model whose batch dimension is dynamic ('N'): tune without inputs: in the
# recipe takes it as 1 with a one-line note and tunes (it aborted the host before: plugin code
# probed an unresolved shape); mi-host profile and accuracy take --shape NAME=1x3x8x8 (or
# D0,D1,..., or NAME:1x3x8x8) and --input NAME=FILE.npy, and without them profile names the option to give.
set -euo pipefail
source "$(dirname "$0")/lib.bash"
HOST=$B/bin/mi-host
mi_wire_py
python3 - "$T" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[1]); from mi_wire import *
w = [((i * 7) % 11 - 5) / 10 for i in range(4 * 3 * 3 * 3)]
conv = node("Conv", "conv", ["x", "w"], ["c"])
relu = node("Relu", "relu", ["c"], ["y"])
save("dyn.onnx", model([conv, relu], [("x", 1, ["N", 3, 8, 8])], [("y", 1, ["N", 4, 6, 6])],
                       inits=ld(5, tensor("w", [4, 3, 3, 3], w))))
save("x.npy", npy("<f4", (1, 3, 8, 8), struct.pack("<192f", *[i / 192 for i in range(192)])))
PY
cat > "$T/r.yaml" <<'YAML'
version: 1
model: dyn.onnx
pool: [ {plugin: blis-cpu}, {plugin: npu-stub} ]
budget: { measurements: 2, seconds: 60 }
search: { strategy: random, seed: 1 }
measure: { repeats: 5, warmup: 1 }
YAML
rc=0
"$HOST" --plugins "$B/plugins" tune "$T/r.yaml" --out "$T/o" --json >"$T/j" 2>"$T/log" || rc=$?
[ "$rc" = 0 ] || { echo "tune of a dynamic-batch model: exit $rc"; cat "$T/log"; exit 1; }
[ "$(grep -c "note: dyn.onnx: input 'x' has dynamic dimension(s) N, taken as 1: 1x3x8x8" "$T/log")" = 1 ] || { cat "$T/log"; exit 1; }
python3 - "$T/j" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"], d
for run in d["runs"]:
    assert run["ok"] and run["measured"] == 2 and all(t["ok"] for t in run["trials"]), run
PY
# profile: without a shape the error names the option; with --shape (either form) or --input it
# measures.
if "$HOST" --plugins "$B/plugins" profile --model "$T/dyn.onnx" --device npu-stub:0 --db "$T/p.db" 2>"$T/e1"; then
  echo "profile of a dynamic model without a shape succeeded"; exit 1
fi
grep -q "input 'x' has dynamic dim 0 ('N'): give --shape x=" "$T/e1" || { cat "$T/e1"; exit 1; }
for opt in "--shape x=1x3x8x8" "--shape x=2,3,8,8" "--shape x:1x3x8x8" "--input x=$T/x.npy"; do
  # shellcheck disable=SC2086
  "$HOST" --plugins "$B/plugins" profile --model "$T/dyn.onnx" --device npu-stub:0 --db "$T/p.db" \
    --workers 1 --no-fingerprint --json $opt >"$T/pj" 2>"$T/e2" || { echo "profile $opt"; cat "$T/e2"; exit 1; }
  python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/pj"
done
if "$HOST" --plugins "$B/plugins" profile --model "$T/dyn.onnx" --device npu-stub:0 --db "$T/p.db" --shape x=1x4x8x8 2>"$T/e3"; then
  echo "a shape that disagrees with the model was accepted"; exit 1
fi
grep -q "input 'x' (--shape): dim 1 is 4, the model declares 3" "$T/e3" || { cat "$T/e3"; exit 1; }
# accuracy: the same options.
printf 'version: 1\n' > "$T/c.yaml"
for opt in x=1x3x8x8 x:1x3x8x8; do # NAME:D0xD1 as mi-host compare and profile take it
  "$HOST" --plugins "$B/plugins" accuracy --model "$T/dyn.onnx" --config "$T/c.yaml" --shape $opt --json >"$T/aj" 2>"$T/e4" || { cat "$T/e4"; exit 1; }
done
"$HOST" --plugins "$B/plugins" accuracy --model "$T/dyn.onnx" --config "$T/c.yaml" --input "x=$T/x.npy" --json >"$T/aj" 2>"$T/e5" || { cat "$T/e5"; exit 1; }
echo ok

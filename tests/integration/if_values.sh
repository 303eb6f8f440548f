#!/usr/bin/env bash
# if_values.sh - a model whose whole network sits in an If on an input (as Silero VAD's on its
# sample rate `sr`): a recipe's `values: {sr: 16000}` makes sr a constant and the If its then
# branch, so the tune's space has the branch's nodes (before, only device-level knobs: the If
# ran as one host step); the deployment table records the value, mi-run --deployment refuses
# another one with one line naming the input and both values, and mi-run --value gives the
# outputs the reference interpreter gives running the If.
set -euo pipefail
source "$(dirname "$0")/lib.bash"
fail() { echo "if_values: $*" >&2; exit 1; }
mi_wire_py
# y = If(sr == 16000, then: Relu(MatMul(x, W1)), else: MatMul(x, W2)), x [1, 64], W [64, 64].
python3 - "$T" <<'PY'
import struct, sys, random
sys.path.insert(0, sys.argv[1]); from mi_wire import *
rng = random.Random(3)
w1 = [rng.uniform(-0.2, 0.2) for _ in range(64 * 64)]
w2 = [rng.uniform(-0.2, 0.2) for _ in range(64 * 64)]
def graph(nodes, name, outputs, inits=b"", inputs=()):
    g = b"".join(ld(1, n) for n in nodes) + s(2, name) + inits
    return g + b"".join(ld(11, vinfo(*i)) for i in inputs) + b"".join(ld(12, vinfo(*o)) for o in outputs)
def attr_graph(name, g): return ld(5, s(1, name) + ld(6, g) + vi(20, 5))
then = graph([node("MatMul", "mm_then", ["x", "W1"], ["t"]), node("Relu", "relu_then", ["t"], ["y_then"])],
             "then", [("y_then", 1, [1, 64])])
other = graph([node("MatMul", "mm_else", ["x", "W2"], ["y_else"])], "else", [("y_else", 1, [1, 64])])
k = vi(2, 7) + s(8, "k16000") + ld(9, struct.pack("<q", 16000))
inits = ld(5, tensor("W1", [64, 64], w1)) + ld(5, tensor("W2", [64, 64], w2)) + ld(5, k)
top = graph([node("Equal", "eq", ["sr", "k16000"], ["c"]),
             node("If", "if", ["c"], ["y"]) + attr_graph("then_branch", then) + attr_graph("else_branch", other)],
            "g", [("y", 1, [1, 64])], inits, [("x", 1, [1, 64]), ("sr", 7, [])])
save("ifm.onnx", vi(1, 8) + ld(7, top) + ld(8, s(1, "") + vi(2, 13)))
save("x.npy", npy("<f4", (1, 64), struct.pack("<64f", *[rng.uniform(-1, 1) for _ in range(64)])))
for v in (16000, 8000):
    save("sr%d.npy" % v, npy("<i8", (), struct.pack("<q", v)))
PY
mi_blis_recipe 'values: {sr: 16000}' 'inputs: {x: [1, 64]}' 'budget: { measurements: 6 }'
sed -i 's/net.onnx/ifm.onnx/' "$T/recipe.yaml"

# mi-run --value: the If is its then branch, the same outputs as the reference running the If.
"$RUN" --model "$T/ifm.onnx" --device ref --input "x=$T/x.npy" --input "sr=$T/sr16000.npy" --output-dir "$T/ref" >/dev/null
"$RUN" --plugins "$B/plugins" --model "$T/ifm.onnx" --device blis-cpu:0 --input "x=$T/x.npy" --value sr=16000 \
  --output-dir "$T/val" >"$T/val.txt"
grep -q "fallback nodes: none" "$T/val.txt" || fail "the If still runs on the host: $(cat "$T/val.txt")"
python3 - "$T" <<'PY' || fail "mi-run --value differs from the reference running the If"
import math, struct, sys
def load(p):
    b = open(p, "rb").read(); hl = struct.unpack("<H", b[8:10])[0]
    return struct.unpack("<%df" % ((len(b) - 10 - hl) // 4), b[10 + hl:])
a, b = load(sys.argv[1] + "/ref/y.npy"), load(sys.argv[1] + "/val/y.npy")
err = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b))) / math.sqrt(sum(x * x for x in a))
print("rel L2 %.3g" % err); sys.exit(0 if len(a) == len(b) == 64 and err < 1e-5 else 1)
PY

# accuracy --value: a layer of the taken branch is a layer of the model (INT8 weights on mm_then).
printf 'layers:\n  mm_then: {weights: int8}\n' >"$T/q.yaml"
"${H[@]}" accuracy --model "$T/ifm.onnx" --config "$T/q.yaml" --input "x=$T/x.npy" --value sr=16000 \
  --samples 2 --json >"$T/acc.json" 2>"$T/acc.err" || fail "accuracy --value: $(cat "$T/acc.err")"
grep -q '"quantized_layers":1' "$T/acc.json" ||
  fail "accuracy --value did not quantize mm_then: $(head -c 600 "$T/acc.json")"

# tune: the space has the then branch's MatMul and Relu, the else branch's nodes are gone.
(cd "$T" && "${H[@]}" tune recipe.yaml --out out --json >tune.json 2>tune.err) || fail "tune failed: $(tail -3 "$T/tune.err")"
grep -q 'inputs: ".*sr={16000}' "$T/out/deployment.yaml" || fail "the table does not record sr: $(grep inputs "$T/out/deployment.yaml")"
grep -q 'node.mm_then.variant' "$T/out/deployment.yaml" || fail "no node.mm_then in the configuration: $(cat "$T/out/deployment.yaml")"
! grep -q 'mm_else' "$T/out/deployment.yaml" || fail "the else branch is in the configuration"
grep -q 'If node(s) replaced' "$T/tune.err" || fail "tune does not say the If went: $(cat "$T/tune.err")"
python3 - "$T/tune.json" <<'PY' || fail "no layer tasks over the branch: $(cat "$T/tune.json" | head -c 600)"
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
print("space", r["space_size"], "layer tasks", r["layer_tasks"]["tasks"])
sys.exit(0 if r["layer_tasks"]["tasks"] >= 1 else 1)
PY

# compare --config of the table without --value: the table's sr={16000} is applied, so its
# configuration's node.mm_then keys are keys of the compared space.
"${H[@]}" compare --model "$T/ifm.onnx" --device blis-cpu:0 --input "x=$T/x.npy" --config "$T/out/deployment.yaml" \
  --default --min-rounds 2 --max-rounds 2 --budget-s 30 --json >"$T/cmp.json" 2>"$T/cmp.err" ||
  fail "compare --config of the table: $(cat "$T/cmp.err") $(head -c 400 "$T/cmp.json")"
grep -q 'node.mm_then' "$T/cmp.json" || fail "compare did not compare the branch's configuration: $(head -c 400 "$T/cmp.json")"

# An input is a constant or gets data, not both: --value with --input of the same input is
# refused up front by every command that takes both.
for cmd in "compare --default --default" "profile --db $T/h.db" "accuracy --config $T/q.yaml"; do
  rc=0
  # shellcheck disable=SC2086
  "${H[@]}" ${cmd} --model "$T/ifm.onnx" $( [ "${cmd%% *}" = accuracy ] || echo --device blis-cpu:0 ) \
    --input "x=$T/x.npy" --input "sr=$T/sr16000.npy" --value sr=16000 >/dev/null 2>"$T/both.err" || rc=$?
  [ "$rc" = 2 ] && grep -q "value 'sr=16000': that input also has --input" "$T/both.err" ||
    fail "${cmd%% *} with --value and --input of sr: exit $rc: $(cat "$T/both.err")"
done

# the deployment: the same value runs; another one is refused, naming sr and both values.
"$RUN" --deployment "$T/out/deployment.yaml" --plugins "$B/plugins" --input "x=$T/x.npy" \
  --input "sr=$T/sr16000.npy" --repeat 2 >/dev/null || fail "the deployment refused its own value"
set +e
"$RUN" --deployment "$T/out/deployment.yaml" --plugins "$B/plugins" --input "x=$T/x.npy" \
  --input "sr=$T/sr8000.npy" --repeat 2 >"$T/bad.out" 2>"$T/bad.err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "sr=8000 against the deployment's 16000: exit $rc, expected 2"
[ "$(wc -l <"$T/bad.err")" = 1 ] && grep -q "'sr'" "$T/bad.err" && grep -q 16000 "$T/bad.err" && grep -q 8000 "$T/bad.err" ||
  fail "the refusal is not one line naming sr, 16000 and 8000: $(cat "$T/bad.err")"
echo "if_values: ok"

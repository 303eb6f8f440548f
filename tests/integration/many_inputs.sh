#!/usr/bin/env bash
# many_inputs.sh - a model with more inputs than a small fixed table (70 here; a merged
# transformer decoder has 27: every past key and value) goes through every command that takes
# one --shape or --input per input: mi-host compare, profile and accuracy, mi-run and mi-run
# --deployment. Before, compare, profile, accuracy and mi-run --deployment refused a 17th
# option ("at most 16"), and a worker read at most 64 --input files and left the rest random.
set -euo pipefail
source "$(dirname "$0")/lib.bash"
HOST=("$B/bin/mi-host" --plugins "$B/plugins")
fail() { echo "many_inputs: $*" >&2; exit 1; }
N=70
mi_wire_py
# y = x0 + x1 + ... + Cast(x69), each x a [N, 4] with a dynamic batch, x_k's file holding k + 1;
# the last one is int64, which random data cannot fill: a worker that dropped its file fails.
python3 - "$T" "$N" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[1]); from mi_wire import *
n = int(sys.argv[2])
last = "x%d" % (n - 1)
cast = node("Cast", "cast", [last], ["c"]) + ld(5, s(1, "to") + vi(3, 1) + vi(20, 2))
nodes, prev = [cast], "x0"
for k in range(1, n):
    out = "y" if k == n - 1 else "s%d" % k
    nodes.append(node("Add", "add%d" % k, [prev, "c" if k == n - 1 else "x%d" % k], [out]))
    prev = out
ins = [("x%d" % k, 7 if k == n - 1 else 1, ["N", 4]) for k in range(n)]
save("many.onnx", model(nodes, ins, [("y", 1, ["N", 4])]))
for k in range(n - 1):
    save("x%d.npy" % k, npy("<f4", (1, 4), struct.pack("<4f", *([k + 1.0] * 4))))
save(last + ".npy", npy("<i8", (1, 4), struct.pack("<4q", *([n] * 4))))
PY
shapes=() files=()
for ((k = 0; k < N; k++)); do
  files+=(--input "x$k=$T/x$k.npy")
  ((k == N - 1)) || shapes+=(--shape "x$k=1,4")
done
shapes+=(--input "x$((N - 1))=$T/x$((N - 1)).npy")

# mi-run with every input from a file: the sum is 1 + 2 + ... + 70 = 2485 in each element.
"$B/bin/mi-run" --plugins "$B/plugins" --model "$T/many.onnx" --device blis-cpu:0 "${files[@]}" \
  --output-dir "$T/run" >"$T/out" 2>&1 || fail "mi-run: $(tail -3 "$T/out")"
python3 - "$T/run" <<'PY' || fail "mi-run's output"
import glob, struct, sys
f = open(glob.glob(sys.argv[1] + "/y*.npy")[0], "rb").read()
hl = struct.unpack("<H", f[8:10])[0]
vals = struct.unpack("<4f", f[10 + hl:])
assert vals == (2485.0,) * 4, vals
PY

# compare: the shapes from --shape (and the int64 input's file), then all 70 values from --input.
"${HOST[@]}" compare --model "$T/many.onnx" --device blis-cpu:0 "${shapes[@]}" --default --default \
  --min-rounds 2 --max-rounds 2 --budget-s 30 --json >"$T/out" 2>"$T/err" ||
  fail "compare with $((N - 1)) --shape: $(tail -3 "$T/err") $(head -c 300 "$T/out")"
"${HOST[@]}" compare --model "$T/many.onnx" --device blis-cpu:0 "${files[@]}" --default --default \
  --min-rounds 2 --max-rounds 2 --budget-s 30 --json >"$T/out" 2>"$T/err" ||
  fail "compare with $N --input: $(tail -3 "$T/err") $(head -c 300 "$T/out")"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['ok'] and d['rounds'] == 2, d" "$T/out" ||
  fail "compare: $(head -c 300 "$T/out")"

# profile: the per-layer table has the 69 Adds.
"${HOST[@]}" --json profile --model "$T/many.onnx" --device blis-cpu:0 --db "$T/h.db" "${files[@]}" \
  >"$T/out" 2>"$T/err" || fail "profile with $N --input: $(tail -3 "$T/err")"
grep -q "add69" "$T/out" || fail "profile: no row of add69: $(head -c 300 "$T/out")"

# accuracy of the default configuration against the reference: the workers' fixed inputs give
# every sample the same 70 values, so both sides agree exactly.
: >"$T/default.yaml"
"${HOST[@]}" accuracy --model "$T/many.onnx" --config "$T/default.yaml" "${files[@]}" \
  --samples 2 --json >"$T/out" 2>"$T/err" || fail "accuracy with $N --input: $(tail -3 "$T/err")"

# Over 256 options are refused with the bound named, not crashed on.
rc=0
more=("${shapes[@]}" "${shapes[@]}" "${shapes[@]}" "${shapes[@]}")
"${HOST[@]}" compare --model "$T/many.onnx" --device blis-cpu:0 "${more[@]}" --shape x0=1,4 --default \
  >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "at most 256 --shape options" "$T/err" || fail "281 --shape options: exit $rc: $(cat "$T/err")"
echo "many_inputs: ok"

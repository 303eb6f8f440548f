# mi_run_bad_input.sh - every kind of bad input to mi-run gives exactly one line
# "mi-run: ..." on stderr that names the problem, and exit code 2; never a crash.
set -uo pipefail
. "${BASH_SOURCE[0]%/*}/lib.bash"
mi_wire_py
failures=0

python3 - "$T" <<'EOF'
import struct, sys
sys.path.insert(0, sys.argv[1])
from mi_wire import *
good = model([node("Relu", "relu", ["x"], ["y"])], [("x", 1, ["N", 4])], [("y", 1, ["N", 4])])
save("good.onnx", good)
save("truncated.onnx", good[: len(good) // 2])
save("garbage.onnx", bytes((i * 131 + 7) % 256 for i in range(300)))
save("empty.onnx", b"")
save("unsupported.onnx", model([node("FrobnicateV9", "frob", ["x"], ["y"])],
                               [("x", 1, [2, 4])], [("y", 1, [2, 4])]))
save("ok.npy", npy("<f4", (3, 4), bytes(48)))
save("int64.npy", npy("<i8", (3, 4), bytes(96)))
save("rank3.npy", npy("<f4", (1, 3, 4), bytes(48)))
save("dim5.npy", npy("<f4", (3, 5), bytes(60)))
save("short.npy", npy("<f4", (3, 4), bytes(40)))
save("bigendian.npy", npy(">f4", (3, 4), bytes(48)))
save("garbage.npy", b"this is not a numpy file at all")
EOF

# expect_bad "label" "text the message must contain" mi-run args...
expect_bad() {
  local label=$1 want=$2
  shift 2
  "$RUN" "$@" > "$T/out" 2> "$T/err"
  local rc=$? lines
  lines=$(wc -l < "$T/err")
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || ! head -1 "$T/err" | grep -q "^mi-run: " ||
     ! grep -qF -- "$want" "$T/err"; then
    echo "FAIL $label: rc=$rc, $lines stderr line(s), want '$want':" >&2
    cat "$T/err" >&2
    failures=$((failures + 1))
  fi
}

M=$T/good.onnx
expect_bad "no arguments" "--model"
expect_bad "unknown option" "--frobnicate" --frobnicate 3 --model "$M" --device ref
expect_bad "missing device" "--device" --model "$M"
expect_bad "bad repeat" "--repeat" --model "$M" --device ref --repeat zero
expect_bad "missing model file" "$T/nope.onnx" --model "$T/nope.onnx" --device ref
expect_bad "garbage onnx" "garbage.onnx" --model "$T/garbage.onnx" --device ref
expect_bad "truncated onnx" "truncated.onnx" --model "$T/truncated.onnx" --device ref
expect_bad "empty onnx" "empty.onnx" --model "$T/empty.onnx" --device ref
expect_bad "unsupported op" "FrobnicateV9" --model "$T/unsupported.onnx" --device ref
expect_bad "garbage npy" "garbage.npy" --model "$M" --device ref --input x="$T/garbage.npy"
expect_bad "short npy" "short.npy" --model "$M" --device ref --input x="$T/short.npy"
expect_bad "big-endian npy" "big-endian" --model "$M" --device ref --input x="$T/bigendian.npy"
expect_bad "missing npy" "missing.npy" --model "$M" --device ref --input x="$T/missing.npy"
expect_bad "wrong dtype" "int64" --model "$M" --device ref --input x="$T/int64.npy"
expect_bad "wrong rank" "rank" --model "$M" --device ref --input x="$T/rank3.npy"
expect_bad "wrong dim" "dim 1" --model "$M" --device ref --input x="$T/dim5.npy"
expect_bad "unknown input" "'nosuch'" --model "$M" --device ref --input nosuch="$T/ok.npy"
expect_bad "input without =" "NAME=FILE" --model "$M" --device ref --input "$T/ok.npy"
expect_bad "input twice" "twice" --model "$M" --device ref --input x="$T/ok.npy" \
  --input x="$T/ok.npy"
expect_bad "missing --shape" "--shape x=" --model "$M" --device ref
expect_bad "bad --shape" "--shape" --model "$M" --device ref --shape x=3,four
expect_bad "--shape of unknown input" "'z'" --model "$M" --device ref --shape z=3,4
expect_bad "--shape wrong dim" "dim 1" --model "$M" --device ref --shape x=3,5
expect_bad "--shape against a file" "disagrees" --model "$M" --device ref --shape x=2,4 \
  --input x="$T/ok.npy"
expect_bad "unknown plugin dir" "$T/no-plugins" --plugins "$T/no-plugins" --model "$M" \
  --device blis-cpu:0 --input x="$T/ok.npy"
TPL=$B/tests/plugins/template
if [ -d "$TPL" ]; then
  expect_bad "unknown plugin" "nosuch" --plugins "$TPL" --model "$M" --device nosuch:0 \
    --input x="$T/ok.npy"
  expect_bad "unknown device index" "template" --plugins "$TPL" --model "$M" --device template:7 \
    --input x="$T/ok.npy"
  expect_bad "unsupported op on a plugin" "FrobnicateV9" --plugins "$TPL" \
    --model "$T/unsupported.onnx" --device template:0
fi

# The good model with a good input works, so the failures above are about the input.
"$RUN" --model "$M" --device ref --input x="$T/ok.npy" > /dev/null 2> "$T/err" || {
  echo "FAIL good run: $(cat "$T/err")" >&2
  failures=$((failures + 1))
}
if [ "$failures" -ne 0 ]; then
  echo "mi_run_bad_input: $failures failure(s)" >&2
  exit 1
fi
echo "mi_run_bad_input: ok"

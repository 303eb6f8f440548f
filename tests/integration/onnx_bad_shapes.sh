# onnx_bad_shapes.sh - models whose shapes cannot work (static, or only once --shape binds a
# dynamic dim) and ops used with the wrong number of inputs give one line "mi-run: ..." that
# names the node, and exit code 2; never a crash.
set -uo pipefail
. "${BASH_SOURCE[0]%/*}/lib.bash"
mi_wire_py
failures=0

python3 - "$T" <<'EOF2'
import sys
sys.path.insert(0, sys.argv[1])
from mi_wire import *
save("bcast.onnx", model([node("Add", "add_bad", ["a", "b"], ["y"])],
                         [("a", 1, [2, 3]), ("b", 1, [4])], [("y", 1, [])]))
save("bound.onnx", model([node("Add", "add_bound", ["a", "b"], ["y"])],
                         [("a", 1, ["N", 4]), ("b", 1, [3, 4])], [("y", 1, [])]))
save("matmul.onnx", model([node("MatMul", "mm_bad", ["a", "b"], ["y"])],
                          [("a", 1, [2, 3]), ("b", 1, [4, 5])], [("y", 1, [])]))
save("arity.onnx", model([node("Add", "add_one", ["a"], ["y"])], [("a", 1, [2])], [("y", 1, [])]))
EOF2

expect_bad() { # label want-substring args...
  local label="$1" want="$2"; shift 2
  "$RUN" "$@" >"$T/out" 2>"$T/err"
  local rc=$? lines
  lines=$(wc -l <"$T/err")
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -q "^mi-run: " "$T/err" ||
     ! grep -qF -- "$want" "$T/err"; then
    echo "FAIL $label: rc=$rc, $lines stderr line(s), want '$want':" >&2
    cat "$T/err" >&2
    failures=$((failures + 1))
  else
    echo "ok $label: $(cat "$T/err")"
  fi
}

expect_bad "static broadcast" "add_bad" --model "$T/bcast.onnx" --device ref
expect_bad "bound dim breaks broadcast" "add_bound" --model "$T/bound.onnx" --device ref --shape a=5,4
expect_bad "matmul inner dims" "mm_bad" --model "$T/matmul.onnx" --device ref
expect_bad "too few inputs" "add_one" --model "$T/arity.onnx" --device ref
# The same dynamic model runs once the bound dim fits.
if ! "$RUN" --model "$T/bound.onnx" --device ref --shape a=3,4 >/dev/null 2>"$T/err"; then
  echo "FAIL bound dim that fits: $(cat "$T/err")" >&2
  failures=$((failures + 1))
fi
[ "$failures" -eq 0 ]

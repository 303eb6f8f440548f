# mi_run_gap.sh - mi-run --gap: idle time before every run (warm-up and timed), outside the
# timed runs, reported in --json; bad values refused with one line and exit 2.
set -euo pipefail
. "${BASH_SOURCE[0]%/*}/lib.bash"
mi_wire_py
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 - "$T" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import mi_wire
from mi_wire import *
save("relu.onnx", mi_wire.model([node("Relu", "relu", ["x"], ["y"])], [("x", 1, [2, 4])],
                                [("y", 1, [2, 4])], b"", "mi_run_gap"))
PY

# 1 warm-up + 3 timed runs, each after 40 ms idle: the command takes at least 160 ms, the runs
# of a 2x4 Relu well under 40 ms each.
t0=$(date +%s%N)
"$RUN" --model "$T/relu.onnx" --device ref --repeat 3 --warmup 1 --gap 40 --json > "$T/gap.json" ||
  fail "mi-run --gap 40"
t1=$(date +%s%N)
[ $(((t1 - t0) / 1000000)) -ge 160 ] || fail "4 runs after 40 ms idle took $(((t1 - t0) / 1000000)) ms"
python3 - "$T/gap.json" <<'PY' || fail "the --json summary of --gap"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["gap_ms"] == 40, j
assert j["latency_ms"]["repeats"] == 3 and j["latency_ms"]["median"] < 40, j
PY
grep -q "each after 2.5 ms idle" <<<"$("$RUN" --model "$T/relu.onnx" --device ref --repeat 2 --gap 2.5)" ||
  fail "the text summary names the gap"
grep -q '"gap_ms": 0' <<<"$("$RUN" --model "$T/relu.onnx" --device ref --repeat 2 --json)" ||
  fail "gap_ms is 0 without --gap"

for bad in -1 x 1e9 ""; do
  set +e
  "$RUN" --model "$T/relu.onnx" --device ref --gap "$bad" > /dev/null 2> "$T/err"
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "--gap '$bad' exited $rc"
  [ "$(wc -l < "$T/err")" -eq 1 ] && grep -q -- "--gap" "$T/err" || fail "--gap '$bad': $(cat "$T/err")"
done
echo "mi_run_gap: ok"

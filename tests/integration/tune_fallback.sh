# tune_fallback.sh - the fallback device through tune and deployment, on the SDK's template plugin
# (Relu and Add only) with CumSum on blis-cpu:0: a model whose rows carry the stack with the
# fallback device is a warm-start source of the next model tuned on that device (two widths of
# the same graph, one history); deployment.yaml records where the refused nodes ran (`fallback:`)
# and the runtime runs them there (`--fallback ref` too); a fallback device that is not loaded is
# one line naming the table's line, exit 2.
set -euo pipefail
. "${BASH_SOURCE[0]%/*}/lib.bash"
mi_wire_py
fail() { echo "FAIL: $*" >&2; exit 1; }

mi_template_plugin

# x[2,W] -> Relu -> CumSum(axis 1) -> Add(., relu) at W = 16 and 32: two tasks of the same shape class.
python3 - "$T" <<'EOF'
import struct, sys
sys.path.insert(0, sys.argv[1])
from mi_wire import *
for name, w in (("a.onnx", 16), ("b.onnx", 32)):
    axis = vi(2, 7) + s(8, "axis") + ld(9, struct.pack("<q", 1))  # INT64 scalar
    save(name, model([node("Relu", "relu", ["x"], ["r"]), node("CumSum", "cumsum", ["r", "axis"], ["c"]),
                      node("Add", "add", ["c", "r"], ["y"])],
                     [("x", 1, [2, w])], [("y", 1, [2, w])], ld(5, axis)))
EOF
for m in a b; do
  cat > "$T/$m.yaml" <<EOF
version: 1
model: $m.onnx
pool: [ {plugin: template} ]
history: h.db
budget: { measurements: 6, seconds: 60 }
search: { seed: 1 }
measure: { repeats: 5, warmup: 1 }
EOF
  "$B/bin/mi-host" --plugins "$TPL" --plugins "$B/plugins" tune "$T/$m.yaml" --out "$T/out-$m" --no-layer-tasks \
    > "$T/$m.txt" 2> "$T/$m.log" || fail "tune $m: $(tail -3 "$T/$m.log")"
done
# The first model's rows carry the fallback device in their stack ...
n=$("$B/bin/mi-host" history export --db "$T/h.db" | grep -c '"text":"[^"]*;fallback=blis-cpu' || true)
[ "$n" -ge 6 ] || fail "rows with the fallback stack: $n"
grep -q "a.onnx: template:0: cold start" "$T/a.log" || fail "first tune: $(grep -i 'start' "$T/a.log")"
# ... and are the second's source (before: "cold start (no similar task on this software stack").
grep -q "b.onnx: template:0: warm start: [0-9]* of 6 measurements were configurations of 1 similar past task" "$T/b.log" ||
  fail "second tune did not warm-start: $(grep -i 'start' "$T/b.log")"
# deployment.yaml records the fallback device; the runtime opens with it.
grep -qx '  fallback: "blis-cpu:0"' "$T/out-a/deployment.yaml" || fail "no fallback in the table: $(grep -n fallback "$T/out-a/deployment.yaml")"
DRUN=("$RUN" --plugins "$TPL" --plugins "$B/plugins" --repeat 3)
"${DRUN[@]}" --deployment "$T/out-a/deployment.yaml" > /dev/null 2> "$T/da.err" || fail "deployment run: $(cat "$T/da.err")"
grep -q '"event":"open".*"fallback":"blis-cpu:0"' "$T/out-a/decisions.jsonl" || fail "open event: $(head -1 "$T/out-a/decisions.jsonl")"
# Tuned with --fallback ref: the table says so and the runtime keeps the refused node on the reference.
"$B/bin/mi-host" --plugins "$TPL" --plugins "$B/plugins" tune "$T/a.yaml" --out "$T/out-r" --no-layer-tasks --fallback ref \
  > /dev/null 2> "$T/r.log" || fail "tune --fallback ref: $(tail -3 "$T/r.log")"
grep -qx '  fallback: "ref"' "$T/out-r/deployment.yaml" || fail "--fallback ref table: $(grep -n fallback "$T/out-r/deployment.yaml")"
"${DRUN[@]}" --deployment "$T/out-r/deployment.yaml" > /dev/null 2> "$T/dr.err" || fail "deployment run (ref): $(cat "$T/dr.err")"
grep -q '"event":"open".*"fallback":"ref"' "$T/out-r/decisions.jsonl" || fail "open event (ref): $(head -1 "$T/out-r/decisions.jsonl")"
# A fallback device that is not loaded: one line naming the table's line and the device, exit 2.
sed 's#fallback: "blis-cpu:0"#fallback: "nosuch:0"#' "$T/out-a/deployment.yaml" > "$T/out-a/bad.yaml"
st=0
"${DRUN[@]}" --deployment "$T/out-a/bad.yaml" > /dev/null 2> "$T/bad.err" || st=$?
[ "$st" = 2 ] || fail "missing fallback device: exit $st"
[ "$(wc -l < "$T/bad.err")" = 1 ] && grep -q "bad.yaml:[0-9]*: fallback device 'nosuch:0'" "$T/bad.err" ||
  fail "missing fallback device: $(cat "$T/bad.err")"
echo ok

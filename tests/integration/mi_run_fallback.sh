# mi_run_fallback.sh - mi-run and mi-host profile --fallback: the nodes a device refuses run on the first CPU plugin
# (blis-cpu:0) by default, on the reference with --fallback ref; what the fallback refuses too
# runs on the reference; an unknown --fallback device is one line and exit 2. The primary is
# the SDK's template plugin (Relu and Add only).
set -euo pipefail
. "${BASH_SOURCE[0]%/*}/lib.bash"
mi_wire_py
fail() { echo "FAIL: $*" >&2; exit 1; }

mi_template_plugin
PL="$TPL:$B/plugins"

# x[2,16] -> Relu -> CumSum(axis 1) -> Scatter(axis 0: the rows swapped) -> Add(., relu):
# the template runs Relu and Add, blis-cpu runs CumSum, no plugin runs Scatter (the opset 9-10
# spelling of ScatterElements).
python3 - "$T" <<'EOF'
import struct, sys
sys.path.insert(0, sys.argv[1])
from mi_wire import *
axis = vi(2, 7) + s(8, "axis") + ld(9, struct.pack("<q", 1))  # INT64 scalar
lens = vi(1, 2) + vi(1, 16) + vi(2, 7) + s(8, "lens") + ld(9, struct.pack("<32q", *([1] * 16 + [0] * 16)))  # INT64 [2, 16]
save("cs.onnx", model([node("Relu", "relu", ["x"], ["r"]), node("CumSum", "cumsum", ["r", "axis"], ["c"]),
                       node("Scatter", "rev", ["c", "lens", "c"], ["s"]), node("Add", "add", ["s", "r"], ["y"])],
                      [("x", 1, [2, 16])], [("y", 1, [2, 16])], ld(5, axis) + ld(5, lens)))
EOF

"$RUN" --model "$T/cs.onnx" --device ref --output-dir "$T/ref" > /dev/null || fail "ref run"

# Default: CumSum on blis-cpu:0, Scatter on the reference.
"$RUN" --plugins "$PL" --model "$T/cs.onnx" --device template:0 --check --output-dir "$T/def" \
  > "$T/def.txt" 2> "$T/def.err" || fail "default run: $(cat "$T/def.err")"
grep -qx "fallback nodes: 1 on blis-cpu:0 (cumsum), 1 on the reference (rev)" "$T/def.txt" ||
  fail "default fallback line: $(grep fallback "$T/def.txt")"
grep -q "^check: " "$T/def.txt" || fail "--check with the fallback"

# --plugins repeated is the same search path as one DIR:DIR (the last one used to win).
"$RUN" --plugins "$TPL" --plugins "$B/plugins" --model "$T/cs.onnx" --device template:0 --output-dir "$T/two" \
  > "$T/two.txt" 2> "$T/two.err" || fail "two --plugins: $(cat "$T/two.err")"
cmp -s "$T/def/y.npy" "$T/two/y.npy" || fail "two --plugins: output differs from DIR:DIR's"

# --fallback ref: both on the reference, as before the fallback device.
"$RUN" --plugins "$PL" --model "$T/cs.onnx" --device template:0 --fallback ref --json \
  --output-dir "$T/old" > "$T/old.json" 2> "$T/old.err" || fail "--fallback ref: $(cat "$T/old.err")"
cmp -s "$T/ref/y.npy" "$T/old/y.npy" || fail "--fallback ref output differs from ref"
python3 - "$T/old.json" <<'EOF' || fail "--fallback ref JSON"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["fallback_nodes"] == ["cumsum", "rev"], j
assert j["fallback_device"] is None and j["fallback_on_device"] == 0 and j["fallback_on_reference"] == 2, j
EOF

# Named explicitly, with the profile: the same as the default; the outputs the reference's.
"$RUN" --plugins "$PL" --model "$T/cs.onnx" --device template:0 --fallback blis-cpu:0 --json \
  --profile --repeat 2 --output-dir "$T/exp" > "$T/exp.json" 2> "$T/exp.err" ||
  fail "--fallback blis-cpu:0: $(cat "$T/exp.err")"
python3 - "$T/exp.json" "$T/ref/y.npy" "$T/exp/y.npy" "$T/def/y.npy" <<'EOF' || fail "--fallback blis-cpu:0 JSON"
import json, struct, sys
j = json.load(open(sys.argv[1]))
assert j["fallback_device"] == "blis-cpu:0" and j["fallback_on_device"] == 1, j
assert j["fallback_on_reference"] == 1, j
rows = {r["name"]: r for r in j["profile"]["layers"]} if isinstance(j["profile"], dict) else None
assert rows, j["profile"]
assert rows["cumsum"]["where"] == "fallback" and rows["cumsum"]["variant"] == "fallback blis-cpu:0", rows
assert rows["rev"]["where"] == "host", rows
def vals(p):
    b = open(p, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    return struct.unpack("<32f", b[10 + n:])
want = vals(sys.argv[2])
for got in (vals(sys.argv[3]), vals(sys.argv[4])):
    assert max(abs(a - b) for a, b in zip(got, want)) <= 1e-5 * max(1, max(abs(v) for v in want)), (got, want)
EOF
"$RUN" --plugins "$PL" --model "$T/cs.onnx" --device template:0 --profile --repeat 2 \
  > "$T/prof.txt" 2>&1 || fail "--profile text"
grep -q "^cumsum .*fallback blis-cpu:0" "$T/prof.txt" || fail "profile row of cumsum: $(grep cumsum "$T/prof.txt")"

# An unknown fallback device: one line naming it, exit 2, nothing run.
set +e
"$RUN" --plugins "$PL" --model "$T/cs.onnx" --device template:0 --fallback nosuch:0 \
  > "$T/bad.txt" 2> "$T/bad.err"
st=$?
set -e
[ "$st" = 2 ] || fail "--fallback nosuch:0 exited $st"
[ "$(wc -l < "$T/bad.err")" = 1 ] || fail "--fallback nosuch:0: not one line: $(cat "$T/bad.err")"
grep -q "fallback 'nosuch:0'" "$T/bad.err" || fail "the error names the device: $(cat "$T/bad.err")"
[ ! -s "$T/bad.txt" ] || fail "--fallback nosuch:0 printed a summary"
# mi-host profile: the measurement worker gets the same fallback device; --fallback ref and an
# unknown device as in mi-run.
HOST=$B/bin/mi-host
for fb in default ref; do
  a=(); [ $fb = ref ] && a=(--fallback ref)
  "$HOST" --plugins "$TPL" --plugins "$B/plugins" profile --model "$T/cs.onnx" --device template:0 \
    --db "$T/h.db" --no-fingerprint --repeat 5 "${a[@]}" --json > "$T/hp_$fb.json" 2> "$T/hp.err" ||
    fail "mi-host profile ($fb): $(cat "$T/hp.err")"
done
python3 - "$T/hp_default.json" "$T/hp_ref.json" <<'EOF' || fail "mi-host profile JSON"
import json, sys
d, r = (json.load(open(p)) for p in sys.argv[1:3])
where = lambda j: {l["name"]: l["where"] for l in j["layers"]}
assert d["fallback_device"] == "blis-cpu:0" and d["fallback_on_device"] == 1 and d["fallback_on_reference"] == 1, d
assert where(d)["cumsum"] == "fallback" and where(d)["rev"] == "host", where(d)
assert r["fallback_device"] is None and r["fallback_on_reference"] == 2 and where(r)["cumsum"] == "host", r
EOF
set +e
"$HOST" --plugins "$TPL" --plugins "$B/plugins" profile --model "$T/cs.onnx" --device template:0 \
  --db "$T/h.db" --fallback nosuch:0 > "$T/hbad.txt" 2> "$T/hbad.err"
st=$?
set -e
[ "$st" = 2 ] || fail "mi-host profile --fallback nosuch:0 exited $st"
[ "$(wc -l < "$T/hbad.err")" = 1 ] && grep -q "fallback 'nosuch:0'" "$T/hbad.err" ||
  fail "mi-host profile --fallback nosuch:0: $(cat "$T/hbad.err")"
# The default is the first CPU plugin by name whatever the folders' order: with the template's
# folder (a CPU plugin named "template") before blis-cpu's, an npu-stub session still gets
# blis-cpu:0, as a registry that loaded every plugin picks it (the deployment runtime's).
"$RUN" --plugins "$PL" --model "$T/cs.onnx" --device npu-stub:0 --json > "$T/npu.json" \
  2> "$T/npu.err" || fail "npu-stub run: $(cat "$T/npu.err")"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["fallback_device"] == "blis-cpu:0", d' \
  "$T/npu.json" || fail "npu-stub's default fallback with the template's folder first"
# A run of refused nodes goes to the fallback device as one sub-graph: x -> Relu -> Equal(relu, x)
# -> Cast(FLOAT) -> Mul(., relu). blis-cpu takes the Equal only with the Cast that alone reads it
# (no bool tensors): one node at a time it refused both and the reference ran them.
python3 - "$T" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from mi_wire import *
to = ld(5, s(1, "to") + vi(3, 1) + vi(20, 2))  # AttributeProto{name "to", i 1 (FLOAT), type INT}
save("pk.onnx", model([node("Relu", "relu", ["x"], ["r"]), node("Equal", "eq", ["r", "x"], ["e"]),
                       node("Cast", "cast", ["e"], ["c"]) + to, node("Mul", "mul", ["c", "r"], ["y"])],
                      [("x", 1, [1, 2, 8, 8])], [("y", 1, [1, 2, 8, 8])]))
EOF
"$RUN" --model "$T/pk.onnx" --device ref --output-dir "$T/pkref" > /dev/null || fail "peak mask: ref run"
"$RUN" --plugins "$PL" --model "$T/pk.onnx" --device template:0 --output-dir "$T/pk" --profile --repeat 2 \
  > "$T/pk.txt" 2> "$T/pk.err" || fail "peak mask: $(cat "$T/pk.err")"
grep -qx "fallback nodes: 3 on blis-cpu:0 (eq, cast, mul)" "$T/pk.txt" ||
  fail "peak mask: the group's fallback line: $(grep fallback "$T/pk.txt")"
cmp -s "$T/pkref/y.npy" "$T/pk/y.npy" || fail "peak mask: output differs from the reference"
for n in eq cast mul; do
  grep -q "^$n .*fallback blis-cpu:0" "$T/pk.txt" || fail "peak mask: profile row of $n: $(grep "^$n " "$T/pk.txt")"
done

# The history: a measurement whose session ran nodes on the fallback device names it (plugin,
# version, device) in its software stack, so its rows get a stack of their own; one on the
# reference alone keeps the plain stack.
"$HOST" history export --db "$T/h.db" > "$T/h.jsonl" 2> "$T/hx.err" || fail "history export: $(cat "$T/hx.err")"
python3 - "$T/h.jsonl" <<'EOF' || fail "history stacks"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
fb = [r for r in rows if ";fallback=blis-cpu " in r["stack"]["text"]]
plain = [r for r in rows if "fallback=" not in r["stack"]["text"]]
assert len(fb) == 1 and len(plain) == 1, [r["stack"] for r in rows]
assert fb[0]["stack"]["hash"] != plain[0]["stack"]["hash"], rows
assert fb[0]["stack"]["text"].startswith(plain[0]["stack"]["text"] + ";fallback=blis-cpu "), rows
EOF

# mi-agent takes --fallback with mi-run's meaning; a device that is not there fails at start.
AGENT=$B/bin/mi-agent
grep -q -- "--fallback DEV" <<<"$("$AGENT" --help)" || fail "mi-agent --help lacks --fallback"
set +e
"$AGENT" --db postgresql://127.0.0.1:1/none --plugins "$B/plugins" --fallback nosuch:0 run > /dev/null 2> "$T/ag.err"
st=$?
set -e
[ "$st" != 0 ] && grep -q "fallback 'nosuch:0'" "$T/ag.err" || fail "mi-agent --fallback nosuch:0 ($st): $(cat "$T/ag.err")"
# mi-host tune takes it too, for its workers; checked before anything is tuned.
grep -q -- "--fallback DEV" <<<"$("$HOST" tune --help)" || fail "mi-host tune --help lacks --fallback"
set +e
"$HOST" --plugins "$B/plugins" tune --fallback nosuch:0 "$T/none.yaml" > /dev/null 2> "$T/tu.err"
st=$?
set -e
[ "$st" = 2 ] && grep -q "tune: --fallback 'nosuch:0'" "$T/tu.err" ||
  fail "mi-host tune --fallback nosuch:0 ($st): $(cat "$T/tu.err")"
echo "mi_run_fallback: ok"

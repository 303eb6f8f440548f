# mi_run_basic.sh - mi-run end to end: a zoo model on ref with --output-dir and --json, inputs
# from .npy files checked against values computed here, --shape, seeds, and the template plugin
# with host fallback giving the reference's outputs.
set -euo pipefail
. "${BASH_SOURCE[0]%/*}/lib.bash"
mi_wire_py
fail() { echo "FAIL: $*" >&2; exit 1; }

# Small hand-encoded ONNX models (protobuf wire format), so this test needs no generator.
python3 - "$T" <<'EOF'
import struct, sys
sys.path.insert(0, sys.argv[1])
import mi_wire
from mi_wire import *
def model(nodes, inputs, outputs, inits=b""):
    return mi_wire.model(nodes, inputs, outputs, inits, "mi_run_test")
# x[N,4] -> Relu -> Sigmoid -> "out/prob:0" (a name that is unsafe as a file name)
save("dyn.onnx", model([node("Relu", "relu", ["x"], ["r"]), node("Sigmoid", "sig", ["r"], ["out/prob:0"])],
                       [("x", 1, ["N", 4])], [("out/prob:0", 1, ["N", 4])]))
# x, y [2,8] -> Relu -> Add -> Sigmoid: the template runs Relu and Add, the host runs Sigmoid.
save("ras.onnx", model([node("Relu", "relu", ["x"], ["r"]), node("Add", "add", ["r", "y"], ["a"]),
                        node("Sigmoid", "sig", ["a"], ["s"])],
                       [("x", 1, [2, 8]), ("y", 1, [2, 8])], [("s", 1, [2, 8])]))
vals = [(-1.5 + 0.25 * i) for i in range(12)]
save("x34.npy", npy("<f4", (3, 4), struct.pack("<12f", *vals)))
EOF

grep -q "usage: mi-run" <<<"$("$RUN" --help)" || fail "--help prints the usage"

# A model given as a file: shapes come from the .npy, values are checked against python.
"$RUN" --model "$T/dyn.onnx" --device ref --input x="$T/x34.npy" --output-dir "$T/o1" --json \
  > "$T/o1.json" || fail "dyn.onnx with an input file"
test -f "$T/o1/out_prob_0.npy" || fail "output file name sanitized to out_prob_0.npy"
python3 - "$T" <<'EOF' || fail "dyn.onnx outputs"
import json, math, struct, sys
t = sys.argv[1]
j = json.load(open(f"{t}/o1.json"))
assert j["outputs"] == ["out/prob:0"], j
assert j["device"] == "ref" and j["fallback_nodes"] == [], j
raw = open(f"{t}/o1/out_prob_0.npy", "rb").read()
hl = struct.unpack("<H", raw[8:10])[0]
hdr = raw[10:10 + hl].decode()
assert "'<f4'" in hdr and "(3, 4)" in hdr, hdr
got = struct.unpack("<12f", raw[10 + hl:])
for i, g in enumerate(got):
    x = -1.5 + 0.25 * i
    want = 1 / (1 + math.exp(-max(x, 0.0)))
    assert abs(g - want) < 1e-6, (i, g, want)
EOF

# --shape fixes a dynamic dim; the same seed gives the same random inputs, another seed others.
"$RUN" --model "$T/dyn.onnx" --device ref --shape x=5,4 --output-dir "$T/s1" > /dev/null ||
  fail "--shape"
"$RUN" --model "$T/dyn.onnx" --device ref --shape x=5,4 --output-dir "$T/s2" > /dev/null
"$RUN" --model "$T/dyn.onnx" --device ref --shape x=5,4 --seed 9 --output-dir "$T/s3" > /dev/null
cmp -s "$T/s1/out_prob_0.npy" "$T/s2/out_prob_0.npy" || fail "same seed, different outputs"
if cmp -s "$T/s1/out_prob_0.npy" "$T/s3/out_prob_0.npy"; then fail "seed has no effect"; fi
python3 -c "
import struct,sys
raw=open(sys.argv[1],'rb').read(); hl=struct.unpack('<H',raw[8:10])[0]
assert '(5, 4)' in raw[10:10+hl].decode()" "$T/s1/out_prob_0.npy" || fail "--shape output shape"

# A zoo model on ref: --repeat statistics and the resident memory in the JSON summary, one file per output.
if [ -x "$ZOO" ]; then
  "$ZOO" mlp --out "$T/mlp.onnx" > /dev/null || fail "mi-zoo mlp"
  "$RUN" --model "$T/mlp.onnx" --device ref --output-dir "$T/mlp" --repeat 3 --json \
    > "$T/mlp.json" || fail "mi-run on the zoo mlp"
  python3 - "$T" <<'EOF' || fail "mlp JSON summary"
import json, os, re, sys
t = sys.argv[1]
j = json.load(open(f"{t}/mlp.json"))
assert j["model"].endswith("mlp.onnx") and j["device"] == "ref", j
assert isinstance(j["outputs"], list) and j["outputs"], j
lat = j["latency_ms"]
for k in ("median", "p10", "p90", "cv"):
    assert isinstance(lat[k], (int, float)) and lat[k] >= 0, (k, lat)
assert lat["repeats"] == 3 and lat["p10"] <= lat["median"] <= lat["p90"], lat
assert "device_time_ms" not in j, "the reference path has no device timer"
# the process's resident memory around the session (Linux /proc): a start, and a peak not below it
rss = j["rss"]
assert 0 < rss["before_create_bytes"] <= rss["peak_bytes"], rss
for name in j["outputs"]:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    raw = open(f"{t}/mlp/{safe}.npy", "rb").read()
    assert raw[:6] == b"\x93NUMPY", name
EOF
  # Text summary by default.
  grep -q "latency" <<<"$("$RUN" --model "$T/mlp.onnx" --device ref --repeat 2)" ||
    fail "text summary has the latency line"
else
  echo "note: $ZOO not built; zoo part skipped"
fi

# The template plugin: Relu and Add on the device, Sigmoid on the host; same outputs as ref.
TPL=$B/tests/plugins/template
if [ -d "$TPL" ]; then
  "$RUN" --model "$T/ras.onnx" --device ref --output-dir "$T/ref" > /dev/null || fail "ras on ref"
  "$RUN" --plugins "$TPL" --model "$T/ras.onnx" --device template:0 --output-dir "$T/tpl" \
    --repeat 2 --json > "$T/tpl.json" 2> "$T/tpl.err" || fail "ras on template: $(cat "$T/tpl.err")"
  cmp -s "$T/ref/s.npy" "$T/tpl/s.npy" || fail "template+fallback output differs from ref"
  python3 - "$T/tpl.json" <<'EOF' || fail "template JSON"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["device"] == "template:0" and j["fallback_nodes"] == ["sig"], j
assert j["latency_ms"]["repeats"] == 2, j
EOF
  # --threads on a plugin without that knob: a warning, and the run still succeeds.
  MI_PLUGIN_PATH=$TPL "$RUN" --model "$T/ras.onnx" --device template:0 --threads 2 \
    > /dev/null 2> "$T/thr.err" || fail "--threads on the template"
  grep -q "warning" "$T/thr.err" || fail "--threads without the knob warns"
fi
echo "mi_run_basic: ok"

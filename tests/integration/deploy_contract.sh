# deploy_contract.sh - deployment.yaml is a contract between mi-host tune and mi-run: a model
# named k"w.onnx, a plugin whose version string holds quotes and newlines and whose knob spans
# all of int64 give a table that escapes every string, reads back as written and runs in mi-run
# (tune exits 0 only then); a table whose configuration was cut short or edited is refused by
# its config_id, in one line naming the file, line and column.
set -euo pipefail
source "$(dirname "$0")/lib.bash"
: "${MI_SRC:?}"
HOST=$B/bin/mi-host

# The SDK template, bent three ways: its one knob spans [INT64_MIN, INT64_MAX] (any value runs,
# the kernel clamps it), and its version string tries to add keys to the table.
mkdir -p "$T/plugins"
python3 - "$MI_SRC/sdk/template/template_plugin.c" "$T/hostile.c" <<'PY'
import sys
src = open(sys.argv[1]).read()
def sub(old, new):
    global src
    assert old in src, old
    src = src.replace(old, new)
sub(".value_count = 4, .values = {64, 256, 1024, 4096},",
    ".min = INT64_MIN, .max = INT64_MAX,")
sub("  if (!mi_sdk_knob_allows(&k_knobs[0], chunk))\n",
    "  if (chunk < 1 || chunk > 4096) chunk = 1024;\n  if (0)\n")
sub('.version = "1.0.0",', '.version = "1.0\\"\\nevil: true\\n  - model: \\"x\\" #",')
# A kernel built without the knob (the all-auto default point) spins 2 ms, so the paired check
# confirms a configuration that sets the knob and the table carries a full-range value.
sub("  int64_t chunk; /* the", "  int slow;\n  int64_t chunk; /* the")
sub("  k->chunk = chunk;\n",
    "  k->chunk = chunk;\n"
    "  k->slow = mi_sdk_knob_int(desc, \"chunk\", 1) == 1 && mi_sdk_knob_int(desc, \"chunk\", 2) == 2;\n")
sub("  ctx->last_run_ns = now_ns() - t0;\n",
    "  while (k->slow && now_ns() - t0 < 2000000u) {}\n  ctx->last_run_ns = now_ns() - t0;\n")
open(sys.argv[2], "w").write(src)
PY
cc -std=c11 -O1 -shared -fPIC -fvisibility=hidden -I"$MI_SRC/sdk/include" \
  -o "$T/plugins/libhostile.so" "$T/hostile.c" "$MI_BUILD/lib/libmetainfer_sdk.a" -lm
printf 'name: template\nlibrary: libhostile.so\nabi_major: 1\n' > "$T/plugins/template.mi-plugin"

# x[1,64] -> Relu -> Add(itself) -> y, saved under a name with a double quote.
mi_wire_py
python3 - "$T" <<'PY'
import sys; sys.path.insert(0, sys.argv[1])
from mi_wire import *
save('k"w.onnx', model([node("Relu", "r", ["x"], ["h"]), node("Add", "a", ["h", "h"], ["y"])],
                       [("x", 1, [1, 64])], [("y", 1, [1, 64])]))
PY
cat > "$T/recipe.yaml" <<'YAML'
version: 1
model: 'k"w.onnx'
pool: [ {plugin: template} ]
objectives: [latency]
budget: { measurements: 6, seconds: 60 }
search: { strategy: random, seed: 1 }
measure: { repeats: 5, warmup: 1 }
YAML
"$HOST" --plugins "$T/plugins" tune "$T/recipe.yaml" --out "$T/out" 2>"$T/log" || {
  echo "tune failed"; cat "$T/log"; exit 1; }
D=$T/out/deployment.yaml
python3 - "$D" <<'PY'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
assert set(d) <= {"version", "recipe", "inputs", "deployments", "assignment"}, d.keys()
(e,) = d["deployments"]
assert e["model"] == 'k"w.onnx', e["model"]
assert "1.0\"\nevil: true" in e["stack"], e["stack"]
assert "evil" not in e, e
knobs = [v for k, v in e["chosen"]["configuration"].items() if k.endswith(".knob.chunk")]
assert knobs and all(-2**63 <= int(v) < 2**63 for v in knobs), e["chosen"]
PY
# mi-run reads the table tune wrote and runs its chosen configuration.
"$RUN" --plugins "$T/plugins" --deployment "$D" --repeat 2 --json > "$T/run.json" || {
  echo "mi-run refused the table tune wrote"; exit 1; }
python3 - "$T/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))  # the model's name is escaped in mi-run's JSON too
assert r["model"].endswith('k"w.onnx') and len(r["config_id"]) == 16 and r["runs"] == 2, r
PY

# Refused, with PATH:LINE:COLUMN: a configuration cut short, one edited, one with a key more.
refused() { # NAME PYTHON-EDIT
  python3 - "$D" "$T/$1.yaml" "$2" <<'PY'
import sys
text = open(sys.argv[1]).read()
exec(sys.argv[3])
open(sys.argv[2], "w").write(text)
PY
  if "$RUN" --plugins "$T/plugins" --deployment "$T/$1.yaml" 2>"$T/$1.err" >/dev/null; then
    echo "$1: mi-run ran a damaged table"; exit 1; fi
  [ "$(wc -l < "$T/$1.err")" -eq 1 ] || { echo "$1: not one line"; cat "$T/$1.err"; exit 1; }
  grep -Eq "$1\.yaml:[0-9]+:[0-9]+: config_id [0-9a-f]{16} does not match its configuration" "$T/$1.err" ||
    { echo "$1: wrong message"; cat "$T/$1.err"; exit 1; }
}
# Cut at the end of the chosen configuration's first line: the rest of it is gone.
refused cut 'i = text.index("configuration:"); j = text.index("\n", text.index("\n", i) + 1); text = text[:j + 1]'
refused edited 'import re; text = re.sub(r"(\.knob\.chunk\"?: \")(-?\d+)", lambda m: m.group(1) + str(int(m.group(2)) // 2 + 1), text, count=1)'
refused added 'i = text.index("configuration:"); j = text.index("\n", i); text = text[:j + 1] + "      device.extra: \"1\"\n" + text[j + 1:]'
echo ok

# deploy_other_cwd.sh - mi-run --deployment from another folder than the one mi-host tune ran
# in: the table names its recipe by a path relative to the tune's folder, which means nothing
# there, so the model's dynamic dimensions stayed unresolved, the space offered no conv variant
# and the table's configuration failed as an "unknown key". The table now records the recipe's
# absolute path and the input shapes it was tuned at; without either the runtime says which.
set -euo pipefail
source "$(dirname "$0")/lib.bash"
HOST=$B/bin/mi-host
mi_wire_py
mkdir -p "$T/work/w" "$T/elsewhere"
python3 - "$T/work/w" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[1] + "/../.."); from mi_wire import *
w = [((i * 7) % 11 - 5) / 10 for i in range(4 * 3 * 3 * 3)]
conv = node("Conv", "conv", ["x", "w"], ["c"])
relu = node("Relu", "relu", ["c"], ["y"])
save("dyn.onnx", model([conv, relu], [("x", 1, ["N", 3, "H", "W"])], [("y", 1, ["N", 4, "H2", "W2"])],
                       inits=ld(5, tensor("w", [4, 3, 3, 3], w))))
PY
cat > "$T/work/w/r.yaml" <<'YAML'
version: 1
model: dyn.onnx
inputs: { x: [1, 3, 10, 12] }
pool: [ {plugin: blis-cpu} ]
budget: { measurements: 2, seconds: 60 }
search: { strategy: random, seed: 1 }
measure: { repeats: 5, warmup: 1 }
YAML
# Tuned from $T/work with relative paths, as a user in a project folder would.
(cd "$T/work" && "$HOST" --plugins "$B/plugins" tune w/r.yaml --out w/o 2>"$T/log") || { cat "$T/log"; exit 1; }
D=$T/work/w/o/deployment.yaml
grep -q '^inputs: "\?x:1x3x10x12"\?$' "$D" || { echo "no input shapes in the table:"; cat "$D"; exit 1; }
# From another folder: the tuned configuration runs at the tuned shape.
(cd "$T/elsewhere" && "$RUN" --plugins "$B/plugins" --deployment "$D" --repeat 3 --json >"$T/a.json" 2>"$T/a.err") ||
  { echo "mi-run --deployment from another folder failed:"; cat "$T/a.err"; cat "$D"; exit 1; }
python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
a = json.load(open(t + "/a.json"))
p = json.load(open(t + "/work/w/o/pareto.json"))
assert a["config_id"] == p["runs"][0]["front"][0]["config_id"], (a, p["runs"][0]["front"][0])
PY
# A table whose recipe cannot be found and that records no shapes (as tune wrote them before),
# with the model next to it: one line saying so, not an unknown configuration key.
cp "$T/work/w/dyn.onnx" "$T/elsewhere/"
sed -e '/^inputs:/d' -e 's|^recipe:.*|recipe: w/r.yaml|' "$D" > "$T/elsewhere/old.yaml"
rc=0
(cd "$T/elsewhere" && "$RUN" --plugins "$B/plugins" --deployment old.yaml --repeat 1 >/dev/null 2>"$T/b.err") || rc=$?
[ "$rc" != 0 ] || { echo "a table without shapes or recipe ran"; exit 1; }
grep -q "input 'x' has a dynamic dimension and .*old.yaml gives no input shapes (its recipe w/r.yaml was not found" "$T/b.err" ||
  { echo "unclear error:"; cat "$T/b.err"; exit 1; }
echo "deploy_other_cwd: ok"

# tune_smoke.sh - mi-host tune on a small zoo ResNet with the npu-stub: every output is written,
# the chosen configuration meets the recipe's bounds, and a rerun against the outputs is stable.
set -euo pipefail
B=${MI_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/bin/mi-zoo" resnet --out "$T/net.onnx" --width 0.25 --depth 2 --resolution 32 >/dev/null
cat > "$T/recipe.yaml" <<'YAML'
version: 1
model: net.onnx
pool: [ {plugin: npu-stub} ]
constraints: { latency_ms: 1000, accuracy_drop: 0.05 }
objectives: [latency, energy]
budget: { measurements: 5, seconds: 60 }
search: { strategy: nsga2, seed: 3, population: 3 }
measure: { repeats: 5, warmup: 1 }
YAML
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipe.yaml" --out "$T/out" 2>"$T/log"
for f in deployment.yaml pareto.json report.html pareto-0-npu-stub_0.svg; do
  test -s "$T/out/$f" || { echo "missing $f"; cat "$T/log"; exit 1; }
done
grep -q "joint space of 10^" "$T/log" || { echo "no space size line"; cat "$T/log"; exit 1; }
python3 - "$T/out" <<'PY'
import json, sys, re
d = json.load(open(sys.argv[1] + "/pareto.json"))
run = d["runs"][0]
assert run["ok"] and run["measured"] == 5, run
assert run["front"], "empty front"
for t in run["front"]:
    assert t["ok"] and t["objectives"]["latency"] <= 1000 and t["objectives"]["accuracy_drop"] <= 0.05, t
html = open(sys.argv[1] + "/report.html").read()
assert 'class="pareto"' in html or len(run["front"]) >= 1
assert 'class="chosen"' in html
assert not re.search(r'(src|href)="https?:', html), "report fetches from the network"
dep = open(sys.argv[1] + "/deployment.yaml").read()
assert run["front"][0]["config_id"] in dep and "chosen:" in dep and "node." in dep
PY
# --json prints one JSON object on stdout.
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipe.yaml" --out "$T/out2" --json >"$T/j" 2>/dev/null
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/j"
# A recipe error carries file:line:column.
printf 'version: 1\nmodel: net.onnx\npool: [npu-stub]\nbudget: {measurements: -1}\n' > "$T/bad.yaml"
if "$B/bin/mi-host" --plugins "$B/plugins" tune "$T/bad.yaml" 2>"$T/err"; then echo "bad recipe accepted"; exit 1; fi
grep -q "bad.yaml:4:" "$T/err" || { cat "$T/err"; exit 1; }
echo ok

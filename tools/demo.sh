#!/usr/bin/env bash
# make demo: generate a zoo model, write a recipe for the pool of every plugin that loads on this
# machine, tune it with a small budget (mi-host tune), show the deployment table and where the
# report is, then run the chosen configuration of each device with mi-run. A plugin or device
# that fails is reported and skipped; the demo goes on with the others.
set -uo pipefail
BUILD=${1:-build}
BIN="$BUILD/bin"
PLUGINS="$BUILD/plugins"
OUT="$BUILD/demo"
mkdir -p "$OUT"
say() { printf '\n== %s\n' "$*"; }

say "Plugins in $PLUGINS"
"$BIN/mi-host" --plugins "$PLUGINS" plugins || true

MODEL="$OUT/resnet.onnx"
say "Generating a small ResNet: $MODEL"
"$BIN/mi-zoo" resnet --out "$MODEL" --width 0.25 --depth 2 --resolution 32 --seed 1 || exit 1

devices=$("$BIN/mi-host" --plugins "$PLUGINS" plugins --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
for p in d.get("plugins", []):
    if p.get("devices"):
        print(p["name"])')
[ -n "$devices" ] || { echo "no plugin loads on this machine"; exit 1; }
pool=$(printf '{plugin: %s}, ' $devices); pool="[ ${pool%, } ]"
cat > "$OUT/recipe.yaml" <<YAML
# written by tools/demo.sh for the plugins that load here
version: 1
model: resnet.onnx
pool: $pool
constraints: { latency_ms: 2000, accuracy_drop: 0.05 }
objectives: [latency, accuracy_drop]
budget: { measurements: ${DEMO_BUDGET:-6}, seconds: 90 }
search: { strategy: nsga2, seed: 1, population: 4 }
measure: { repeats: 5, warmup: 1 }
history: history.db
YAML
say "Recipe $OUT/recipe.yaml"
cat "$OUT/recipe.yaml"

say "Tuning (mi-host tune, budget ${DEMO_BUDGET:-6} measurements per device)"
"$BIN/mi-host" --plugins "$PLUGINS" tune "$OUT/recipe.yaml" --out "$OUT/tune" --verify 2 \
  || echo "(mi-host tune reported a problem; the outputs below say which device)"

say "Deployment table ($OUT/tune/deployment.yaml)"
cat "$OUT/tune/deployment.yaml" 2>/dev/null || echo "(no deployment table)"
say "Report: file://$(cd "$OUT/tune" 2>/dev/null && pwd)/report.html (self-contained, works offline)"

# Run each device's chosen configuration: its model-side configuration is applied by mi-run
# through the deployment table where mi-run supports it, else the model runs as generated.
for dev in $(python3 - "$OUT/tune/pareto.json" <<'PY'
import json, sys
try:
    for r in json.load(open(sys.argv[1]))["runs"]:
        if r["ok"] and r["front"]: print(r["device"])
except Exception:
    pass
PY
); do
  say "Running on $dev"
  "$BIN/mi-run" --plugins "$PLUGINS" --model "$MODEL" --device "$dev" --output-dir "$OUT/run-${dev//:/_}" \
    --repeat 3 || echo "(device $dev could not run the model; skipped)"
done
exit 0

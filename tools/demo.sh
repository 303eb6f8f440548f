#!/usr/bin/env bash
# make demo: generate a zoo model, write a recipe for the pool of every plugin that loads on this
# machine, tune it with a small budget (mi-host tune), then run each device's tuned
# configuration from the deployment table (mi-run --deployment). It prints one page: what each
# step did and where its files and full logs are. A plugin or device that fails is reported and
# skipped; the demo goes on with the others.
set -uo pipefail
BUILD=${1:-build}
BIN="$BUILD/bin"
PLUGINS="$BUILD/plugins"
OUT=${DEMO_OUT:-$BUILD/demo}
BUDGET=${DEMO_BUDGET:-6}
mkdir -p "$OUT"
rm -f "$OUT"/*.log
step() { printf '\n%s\n' "$*"; }

echo "Meta Infer demo: $("$BIN/mi-host" --version)"
echo "Everything goes to $OUT/; each step's full output is in $OUT/<step>.log."

# 1. Plugins: one line, the full description is one command away.
echo
"$BIN/mi-host" --plugins "$PLUGINS" plugins > "$OUT/plugins.log" 2>&1
"$BIN/mi-host" --plugins "$PLUGINS" plugins --json > "$OUT/plugins.json" 2>> "$OUT/plugins.log"
devices=$(python3 - "$OUT/plugins.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    sys.exit(0)
loaded = [p for p in d.get("plugins", []) if p.get("devices")]
names = ", ".join("%s (%d device%s)" % (p["name"], len(p["devices"]), "" if len(p["devices"]) == 1 else "s")
                  for p in loaded)
sys.stderr.write("1. Plugins that load here: %s\n" % (names or "none"))
for r in d.get("rejected", []):
    sys.stderr.write("   refused: %s: %s\n" % (r.get("path"), r.get("reason")))
for p in loaded:
    print(p["name"])
PY
)
echo "   (devices, knobs, variants and counters: $BIN/mi-host plugins; also $OUT/plugins.log)"
[ -n "$devices" ] || { echo "no plugin loads on this machine: see $OUT/plugins.log"; exit 1; }

# 2. The model.
MODEL="$OUT/resnet.onnx"
if ! "$BIN/mi-zoo" resnet --out "$MODEL" --width 0.25 --depth 2 --resolution 32 --seed 1 \
    > "$OUT/model.log" 2>&1; then
  cat "$OUT/model.log"
  exit 1
fi
step "2. Model: $MODEL, a small ResNet from the zoo (width 0.25, depth 2, 32x32 input)"

# 3. The recipe.
pool=$(printf '{plugin: %s}, ' $devices); pool="[ ${pool%, } ]"
cat > "$OUT/recipe.yaml" <<YAML
# written by tools/demo.sh for the plugins that load here
version: 1
model: resnet.onnx
pool: $pool
constraints: { latency_ms: 2000, accuracy_drop: 0.05 }
objectives: [latency, accuracy_drop]
budget: { measurements: $BUDGET, seconds: 90 }
search: { strategy: nsga2, seed: 1, population: 4 }
measure: { repeats: 5, warmup: 1 }
history: history.db
YAML
step "3. Recipe: $OUT/recipe.yaml: every device above, latency and accuracy drop,"
echo "   $BUDGET measurements per device"

# 4. Tuning.
step "4. Tuning: mi-host tune $OUT/recipe.yaml --out $OUT/tune --verify 2 (log: $OUT/tune.log)"
start=$SECONDS
"$BIN/mi-host" --plugins "$PLUGINS" tune "$OUT/recipe.yaml" --out "$OUT/tune" --verify 2 \
  > "$OUT/tune.log" 2>&1
tune_rc=$?
python3 - "$OUT/tune/pareto.json" <<'PY'
import json, sys
try:
    runs = json.load(open(sys.argv[1]))["runs"]
except Exception as e:
    print("   no results (%s)" % e)
    sys.exit(0)
print("   %-12s %9s %6s %20s  %s" % ("device", "measured", "front", "best latency (ms)", "verified"))
for r in runs:
    front = r.get("front") or []
    lat = min((f["objectives"]["latency"] for f in front if f.get("ok")), default=None)
    bad = sum(f.get("verify_violations", 0) + f.get("verify_failures", 0) for f in front)
    print("   %-12s %9s %6d %20s  %s" % (
        r["device"], r.get("measured", "?"), len(front),
        "%.4f" % lat if lat is not None else "-",
        ("failed" if not r.get("ok") else "ok" if not bad else "%d problem(s)" % bad)))
PY
echo "   took $((SECONDS - start)) s$([ $tune_rc -ne 0 ] && echo ", exit status $tune_rc: see $OUT/tune.log")"
echo "   deployment table: $OUT/tune/deployment.yaml"
echo "   report:           file://$(cd "$OUT/tune" 2>/dev/null && pwd)/report.html (works offline)"

# 5. The tuned configuration of each device, through the deployment runtime.
step "5. Running each device's tuned configuration: mi-run --deployment $OUT/tune/deployment.yaml"
: > "$OUT/run.log"
ran=0
for dev in $(python3 - "$OUT/tune/pareto.json" <<'PY'
import json, sys
try:
    for r in json.load(open(sys.argv[1]))["runs"]:
        if r["ok"] and r["front"]: print(r["device"])
except Exception:
    pass
PY
); do
  ran=1
  if "$BIN/mi-run" --plugins "$PLUGINS" --deployment "$OUT/tune/deployment.yaml" --device "$dev" \
      --repeat 10 --output-dir "$OUT/run-${dev//:/_}" --json > "$OUT/run-${dev//:/_}.json" \
      2>> "$OUT/run.log"; then
    python3 - "$OUT/run-${dev//:/_}.json" "$OUT/run-${dev//:/_}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("   %-12s configuration %s: median %.4f ms over %d runs (%s clock; tuned: %.4f ms)"
      % (r["device"], r["config_id"], r["latency_ms"]["median"], r["runs"], r["clock"],
         r["reference_ms"]))
PY
  else
    echo "   $dev: could not run (see $OUT/run.log); skipped"
  fi
done
[ $ran -eq 1 ] || echo "   no device has a tuned configuration (see $OUT/tune.log)"
echo "   outputs: $OUT/run-<device>/*.npy"
exit 0

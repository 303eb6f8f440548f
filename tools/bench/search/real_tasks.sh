#!/usr/bin/env bash
# real_tasks.sh - layer tasks on real models (docs/tuning.md, "Layer tasks"): per model, a tune
# on blis-cpu with layer tasks and one with --no-layer-tasks (the whole cross product), each from
# an empty history; then both deployments against the default in paired rounds (mi-host compare);
# then the layer-task tune again with a new output folder on the first run's history (tasks
# reused). Prints one block per model: the space line, measurements, the paired ratios, the load.
# Usage: tools/bench/search/real_tasks.sh [BUILD] [MODEL:INPUT:SHAPE ...]
#   e.g. ppocr_v2_cls:x:1x3x48x192 (the default). MI_BENCH_BUDGET (default 16) measurements.
set -euo pipefail
build=${1:-build}
shift || true
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(ppocr_v2_cls:x:1x3x48x192)
budget=${MI_BENCH_BUDGET:-16}
dir=${MI_MODELS:-$HOME/.cache/metainfer/models}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
H=("$build/bin/mi-host" --plugins "$build/plugins")
for spec in "${models[@]}"; do
  IFS=: read -r name input shape <<<"$spec"
  model="$dir/$name.onnx"
  [ -f "$model" ] || { echo "$model: not fetched (tools/models/fetch.sh)" >&2; exit 1; }
  for mode in tasks whole; do
    cat >"$work/$name-$mode.yaml" <<YAML
version: 1
model: $model
inputs: { $input: [${shape//x/, }] }
pool: [ {plugin: blis-cpu} ]
constraints: { accuracy_drop: 0.01 }
objectives: [latency]
budget: { measurements: $budget, seconds: 600 }
search: { seed: 1 }
history: $work/$name-$mode.db
YAML
  done
  echo "== $name ($shape), budget $budget, load $(cut -d' ' -f1-3 /proc/loadavg)"
  t0=$(date +%s)
  "${H[@]}" tune "$work/$name-tasks.yaml" --out "$work/$name-tasks" 2>&1 | grep -E ': space:|tuned|no significant' | sed 's/^tune: [^ ]*: /  tasks: /'
  t1=$(date +%s)
  "${H[@]}" tune "$work/$name-whole.yaml" --out "$work/$name-whole" --no-layer-tasks 2>&1 | grep -E ': joint space|tuned|no significant|check' | sed 's/^tune: [^ ]*: /  whole: /'
  t2=$(date +%s)
  echo "  wall: layer tasks $((t1 - t0)) s, whole cross product $((t2 - t1)) s"
  for mode in tasks whole; do
    echo "  measurements ($mode): $(sqlite3 "$work/$name-$mode.db" 'SELECT count(*) FROM measurements') in the history"
  done
  "${H[@]}" compare --model "$model" --device blis-cpu:0 --shape "$input:$shape" --default \
    --config "$work/$name-tasks/deployment.yaml" --config "$work/$name-whole/deployment.yaml" \
    --min-rounds 5 --max-rounds 15 --json >"$work/cmp.json" 2>/dev/null || true
  python3 - "$work/cmp.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("  compare: no result (%s)" % e); sys.exit(0)
names = ["default", "layer tasks", "whole cross product"]
for n, c in zip(names, d.get("configs", [])):
    lo, hi = c["ci95"]
    print("  %-20s median %.3f ms  ratio to default %.3f (95%% CI %.3f-%.3f)  %s"
          % (n, c["median_ms"], c["ratio"], lo, hi, c["verdict"]))
ld = [x for x in d.get("load", []) if isinstance(x, (int, float))]
print("  paired rounds: %d; 1-minute load at the rounds %s; %s of them loaded (above %s CPUs)"
      % (d.get("rounds", 0), "%.1f-%.1f" % (min(ld), max(ld)) if ld else "?", d.get("loaded", "?"), d.get("cpus", "?")))
PY
  # The same model again, new output folder, the first run's history: every task is reused.
  "${H[@]}" tune "$work/$name-tasks.yaml" --out "$work/$name-again" 2>&1 | grep -E ': space:' | sed 's/^tune: [^ ]*: /  again: /'
done

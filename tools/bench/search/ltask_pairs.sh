#!/usr/bin/env bash
# ltask_pairs.sh - the nearest-task warm start on a pair of real models (docs/tuning.md, "Layer
# tasks"): FIRST tuned on blis-cpu into an empty history, then SECOND with that history, then
# SECOND cold into an empty history; prints each tune's layer-task line, then SECOND's two
# deployments against the default in paired rounds (mi-host compare).
# Usage: tools/bench/search/ltask_pairs.sh BUILD FIRST:INPUT:SHAPE SECOND:INPUT:SHAPE
#   (INPUT:SHAPE may be empty, "name::", for a model whose input shape is fixed.)
#   MI_BENCH_BUDGET (default 16) measurements per tune; MI_BENCH_KEEP=DIR keeps the recipes,
#   histories, deployments and logs there instead of a removed temporary folder.
set -euo pipefail
build=${1:?BUILD}
first=${2:?FIRST}
second=${3:?SECOND}
budget=${MI_BENCH_BUDGET:-16}
dir=${MI_MODELS:-$HOME/.cache/metainfer/models}
if [ -n "${MI_BENCH_KEEP:-}" ]; then
  work=$MI_BENCH_KEEP
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
H=("$build/bin/mi-host" --plugins "$build/plugins")
recipe() { # NAME:INPUT:SHAPE HISTORY OUT
  local name input shape
  IFS=: read -r name input shape <<<"$1"
  [ -f "$dir/$name.onnx" ] || { echo "$dir/$name.onnx: not fetched (tools/models/fetch.sh)" >&2; exit 1; }
  {
    echo "version: 1"
    echo "model: $dir/$name.onnx"
    [ -z "$input" ] || echo "inputs: { $input: [${shape//x/, }] }"
    echo "pool: [ {plugin: blis-cpu} ]"
    echo "constraints: { accuracy_drop: 0.01 }"
    echo "objectives: [latency]"
    echo "budget: { measurements: $budget, seconds: 600 }"
    echo "search: { seed: 1 }"
    echo "history: $2"
  } >"$3"
}
tune() { # LABEL RECIPE OUT
  local t0=$(date +%s)
  "${H[@]}" tune "$2" --out "$3" >"$3.log" 2>&1 || { echo "  $1: tune failed"; tail -5 "$3.log"; return 1; }
  grep -E ': space:|tuned|no significant|deploying' "$3.log" | sed "s/^tune: [^ ]*: /  $1: /"
  echo "  $1: $(($(date +%s) - t0)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
}
recipe "$first" "$work/h.db" "$work/first.yaml"
recipe "$second" "$work/h.db" "$work/second.yaml"
recipe "$second" "$work/cold.db" "$work/cold.yaml"
echo "== ${first%%:*} -> ${second%%:*}, blis-cpu, budget $budget, load $(cut -d' ' -f1-3 /proc/loadavg)"
tune first "$work/first.yaml" "$work/first"
tune "second after first" "$work/second.yaml" "$work/second"
tune "second cold" "$work/cold.yaml" "$work/cold"
IFS=: read -r name input shape <<<"$second"
"${H[@]}" compare --model "$dir/$name.onnx" --device blis-cpu:0 ${input:+--shape "$input:$shape"} --default \
  --config "$work/second/deployment.yaml" --config "$work/cold/deployment.yaml" \
  --min-rounds 5 --max-rounds 15 --json >"$work/cmp.json" 2>"$work/cmp.err" || { cat "$work/cmp.err"; }
python3 - "$work/cmp.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("  compare: no result (%s)" % e); sys.exit(0)
for n, c in zip(["default", "after first (warm)", "cold"], d.get("configs", [])):
    lo, hi = c["ci95"]
    print("  %-20s median %.3f ms  ratio to default %.3f (95%% CI %.3f-%.3f)  %s"
          % (n, c["median_ms"], c["ratio"], lo, hi, c["verdict"]))
ld = [x for x in d.get("load", []) if isinstance(x, (int, float))]
print("  paired rounds: %d; 1-minute load %s" % (d.get("rounds", 0), "%.1f-%.1f" % (min(ld), max(ld)) if ld else "?"))
PY

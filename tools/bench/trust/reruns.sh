#!/usr/bin/env bash
# reruns.sh - issue 24's two figures on a real model (docs/measurement.md, "Every configuration
# of a round in one worker"): 5 reruns of one recipe with seeds 1-5 and a 6-way paired compare
# of their deployed tables and the default; then 5 repeated paired compares of the default
# against seed 1's table, with the plain medians beside the ratios. Prints the load as it goes.
#   tools/bench/trust/reruns.sh [OUT]        (B=build folder, default ./build)
set -euo pipefail
B=${B:-build}; OUT=${1:-/tmp/mi-trust}
M=${MODEL:-$HOME/.cache/metainfer/models/ppocr_v2_cls.onnx}
SHAPE=${SHAPE:-x:1x3x48x192}
[ -f "$M" ] || { echo "reruns.sh: $M missing (tools/models/fetch.sh)" >&2; exit 2; }
host() { "$B/bin/mi-host" --plugins "$B/plugins" --json "$@"; }
load() { cut -d' ' -f1 /proc/loadavg; }
mkdir -p "$OUT"
cat >"$OUT/recipe.yaml" <<YAML
version: 1
model: $M
inputs: { ${SHAPE%%:*}: [$(echo "${SHAPE#*:}" | sed 's/x/, /g')] }
pool: [ {plugin: blis-cpu} ]
constraints: { accuracy_drop: 0.01 }
objectives: [latency]
budget: { measurements: 12, seconds: 300 }
measure: { repeats: 5, warmup: 1 }
YAML
for s in 1 2 3 4 5; do
  echo "== tune seed $s $(date -u +%T) load $(load)"
  host tune "$OUT/recipe.yaml" --out "$OUT/out$s" --seed "$s" >"$OUT/tune$s.json" 2>"$OUT/tune$s.err"
done
echo "== 6-way compare $(date -u +%T) load $(load)"
host compare --model "$M" --shape "$SHAPE" --device blis-cpu:0 \
  $(for s in 1 2 3 4 5; do echo --config "$OUT/out$s/deployment.yaml"; done) --default --seed 7 \
  >"$OUT/cmp6.json" 2>"$OUT/cmp6.err" || true
for i in 1 2 3 4 5; do
  echo "== compare $i $(date -u +%T) load $(load)"
  host compare --model "$M" --shape "$SHAPE" --device blis-cpu:0 --default \
    --config "$OUT/out1/deployment.yaml" --seed "$i" >"$OUT/cmp$i.json" 2>"$OUT/cmp$i.err" || true
done
python3 - "$OUT" <<'PY'
import json, sys
d = sys.argv[1]
for s in range(1, 6):
    run = json.load(open(f"{d}/tune{s}.json"))["runs"][0]
    v = run.get("vs_default", {})
    print(f"seed {s}: deployed {run['front'][0]['config_id']}, default/chosen {v.get('speedup')} "
          f"CI {v.get('ci95')} rounds {v.get('rounds')} deployed_default {v.get('deployed_default')}")
j = json.load(open(f"{d}/cmp6.json"))
for c in j["configs"]:
    print(f"  {c['source'][-30:]:>30} {c['median_ms']:.3f} ms  ratio {c['ratio']:.4f} "
          f"CI {c['ci95'][0]:.4f}-{c['ci95'][1]:.4f} {c['verdict']}")
rs, m0, m1 = [], [], []
for i in range(1, 6):
    c = json.load(open(f"{d}/cmp{i}.json"))["configs"]
    m0.append(c[0]["median_ms"]); m1.append(c[1]["median_ms"]); rs.append(c[1]["ratio"])
    print(f"compare {i}: default {c[0]['median_ms']:.3f} ms tuned {c[1]['median_ms']:.3f} ms "
          f"ratio {c[1]['ratio']:.3f} CI {c[1]['ci95'][0]:.3f}-{c[1]['ci95'][1]:.3f}")
sp = lambda v: (max(v) / min(v) - 1) * 100
print(f"ratio spread {sp(rs):.2f}%  median spread default {sp(m0):.2f}% tuned {sp(m1):.2f}%")
PY

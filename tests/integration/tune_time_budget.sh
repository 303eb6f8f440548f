# tune_time_budget.sh - a recipe's budget.seconds holds for the whole tune of a (model, device):
# the space's probes, the layer tasks, the search and the paired check share it, and what the
# time left out is reported (pareto.json's "time" and a log line), not skipped silently. With a
# budget far too short for 256 measurements, the tune ends near its seconds (the measurement in
# flight and the paired check's two rounds may pass it) with the search's cut counted.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
mi_small_resnet
mi_blis_recipe 'constraints: { accuracy_drop: 0.05 }' 'budget: { measurements: 256, seconds: 3 }' \
  'search: { seed: 3 }'
"${H[@]}" tune "$T/recipe.yaml" --out "$T/a" 2>"$T/log" || { cat "$T/log"; exit 1; }
grep -q 'the 3 s budget (tune took [0-9]* s) cut' "$T/log" || { echo "no time-cut line:"; cat "$T/log"; exit 1; }
# Jobs the budget stopped are not the device's failures: no quarantine, no failed check_config.
if grep -Eq 'quarantined|check_config failed' "$T/log"; then echo "a budget stop counted against the device:"; cat "$T/log"; exit 1; fi
python3 - "$T" <<'PY'
import json, sys
T = sys.argv[1]
r = json.load(open(T + "/a/pareto.json"))["runs"][0]
assert r["ok"], r
t = r["time"]
assert t["budget_s"] == 3, t
# 256 measurements do not fit in 3 s (10 ms or more each, and the surrogate's rounds): the search's share ran out and says by how many.
assert t["cut"]["search"] > 0, t
lt = r.get("layer_tasks", {})
assert r["measured"] + r["replayed"] + t["cut"]["search"] == 256 - max(lt.get("rounds", 0) - 1, 0), (r["measured"], r["replayed"], t, lt)
# A loaded 2-core machine: the measurement in flight and two paired rounds on top of the 3 s;
# the old tuner ran the search 4 s after its layer-task rounds and gave the check 60 s.
assert 0 < t["used_s"] < 3 + 30, t
print("time", t, "measured", r["measured"], "replayed", r["replayed"], "layer-task rounds", lt.get("rounds"))
PY
echo "tune_time_budget: ok"

# tune_ref_default.sh - a tune whose default configuration is itself over the accuracy bound
# against the reference interpreter (here a bound of 1e-12 under the float sums' own rounding;
# on a real model, one that quantizes its activations at run time) takes the default's own outputs
# on the device as the accuracy reference and says so: the default, what mi-run does, is then
# feasible (drop 0) and deployed or beaten, never "no configuration met the constraints"
# (docs/tuning.md, "The accuracy reference"). No timing is asserted.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
mi_small_resnet
mi_blis_recipe 'budget: { measurements: 3, seconds: 120 }' 'constraints: { accuracy_drop: 1.0e-12 }' \
  'search: { strategy: meta, seed: 3 }'
"${H[@]}" tune "$T/recipe.yaml" --out "$T/tune" --no-layer-tasks 2>"$T/tlog" || { cat "$T/tlog"; exit 1; }
grep -q "differ from the reference interpreter's by .* so accuracy drops in this tune are against the default's outputs" \
  "$T/tlog" || { cat "$T/tlog"; exit 1; }
python3 - "$T/tune" <<'PY'
import json, sys
run = json.load(open(sys.argv[1] + "/pareto.json"))["runs"][0]
t0 = run["trials"][0]
assert t0["ok"] and t0["feasible"] and t0["objectives"]["accuracy_drop"] == 0, t0
assert run["front"], run
dep = open(sys.argv[1] + "/deployment.yaml").read()
assert "no configuration met" not in dep and "configuration:" in dep, dep
PY
echo ok

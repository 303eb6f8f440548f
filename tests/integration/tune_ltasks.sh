# tune_ltasks.sh - mi-host tune's layer tasks on blis-cpu: the first tune measures every task
# (whole-model rounds read back per layer) and stores them in the history's layer-task table,
# which `mi-host history layer-tasks` shows and `history export` carries; a second tune of the
# same recipe into a new folder takes every task from the history and measures none.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
mi_small_resnet
mi_blis_recipe 'constraints: { accuracy_drop: 0.05 }' 'budget: { measurements: 8, seconds: 120 }' \
  'search: { seed: 2 }'
"${H[@]}" tune "$T/recipe.yaml" --out "$T/a" 2>"$T/log1" || { cat "$T/log1"; exit 1; }
line1=$(grep ': space: model-side' "$T/log1") || { echo "no layer-task line:"; cat "$T/log1"; exit 1; }
"${H[@]}" --json history layer-tasks --db "$T/hist.db" > "$T/tasks.json"
"${H[@]}" history export --db "$T/hist.db" > "$T/export.jsonl"
"${H[@]}" tune "$T/recipe.yaml" --out "$T/b" 2>"$T/log2" || { cat "$T/log2"; exit 1; }
line2=$(grep ': space: model-side' "$T/log2") || { echo "no layer-task line:"; cat "$T/log2"; exit 1; }
python3 - "$T" "$line1" "$line2" <<'PY'
import json, re, sys
T, l1, l2 = sys.argv[1:4]
def parse(l):
    m = re.search(r"(\d+) layer tasks on (\d+) nodes .*: (\d+) from the history, (\d+) measured .* with (\d+) layer "
                  r"measurements in (\d+) whole-model runs", l)
    assert m, l
    return [int(x) for x in m.groups()]
n1, nodes1, hist1, meas1, lm1, runs1 = parse(l1)
n2, nodes2, hist2, meas2, lm2, runs2 = parse(l2)
assert n1 > 0 and hist1 == 0 and meas1 == n1 and lm1 >= n1 and runs1 >= 1, l1
assert n2 == n1 and hist2 == n1 and meas2 == 0 and lm2 == 0 and runs2 == 0, l2
tasks = [json.loads(x) for x in open(T + "/tasks.json")]
assert len(tasks) == n1, (len(tasks), n1)
assert all(t["best"] and t["best"].startswith("variant=") and t["seconds"] > 0 for t in tasks), tasks[0]
kinds = [json.loads(x)["kind"] for x in open(T + "/export.jsonl")]
assert kinds.count("layer_task") >= n1 and "measurement" in kinds, kinds[:3]
a = json.load(open(T + "/a/pareto.json"))["runs"][0]
b = json.load(open(T + "/b/pareto.json"))["runs"][0]
assert a["ok"] and b["ok"], (a, b)
la, lb = a["layer_tasks"], b["layer_tasks"]
assert la["tasks"] == n1 and la["from_history"] == 0 and la["layer_measurements"] == lm1, la
assert lb["from_history"] == n1 and lb["rounds"] == 0 and lb["log10_kernel"] > 0, lb
PY
echo "tune_ltasks: ok"

# tune_paired.sh - paired trials (docs/tuning.md, "Paired trials"): a tune on blis-cpu pairs each
# measurement with the default configuration; pareto.json's `paired` says how many and what the
# default read beside them, the log says it, and the history keeps each record's pair. On
# npu-stub (a device that reports its clock and temperature) nothing is paired. Slow phases
# (docs/tuning.md): the first measurement is taken again to settle the default's floor, and a
# retaken measurement is recorded once (its kept take).
set -euo pipefail
source "$(dirname "$0")/lib.bash"
mi_small_resnet
mi_blis_recipe 'budget: { measurements: 8, seconds: 120 }' 'search: { strategy: meta, seed: 1 }'
sed 's/plugin: blis-cpu/plugin: npu-stub/; s/hist.db/npu.db/' "$T/recipe.yaml" > "$T/npu.yaml"
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipe.yaml" --out "$T/cpu" 2>"$T/log1" || { cat "$T/log1"; exit 1; }
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/npu.yaml" --out "$T/npu" 2>"$T/log2" || { cat "$T/log2"; exit 1; }
python3 - "$T" <<'PY'
import json, re, sqlite3, sys
T = sys.argv[1]
log1, log2 = open(T + "/log1").read(), open(T + "/log2").read()
run = json.load(open(T + "/cpu/pareto.json"))["runs"][0]
p = run["paired"]
fresh = sum(1 for t in run["trials"] if t["ok"] and not t["from_history"])
assert p and fresh > 0 and p["measurements"] >= fresh, (p, fresh)
d = p["default_ms"]
assert 0 < d["min"] <= d["first"] <= d["max"], d  # a fresh history: the first paired record was measured
m = re.search(r"paired trials: the default read ([0-9.e+-]+)-([0-9.e+-]+) ms beside the (\d+) measurements", log1)
assert m and int(m.group(3)) == p["measurements"], log1
# 8 measurements of some 0.03 s: the settling (half of 8 x the first's time) outlasts the first
assert p["retaken"] >= 1 and p["retakes"] >= p["retaken"] and p["retake_s"] > 0, p
m = re.search(r"slow phases: (\d+) measurements taken again \((\d+) more takes", log1)
assert m and int(m.group(1)) == p["retaken"] and int(m.group(2)) == p["retakes"], log1
db = sqlite3.connect(T + "/hist.db")
rows = db.execute("SELECT paired_ratio, paired_s FROM measurements WHERE ok = 1").fetchall()
paired = [r for r in rows if r[0] is not None]
assert len(paired) == p["measurements"] and all(r[0] > 0 and r[1] > 0 for r in paired), rows
npu = json.load(open(T + "/npu/pareto.json"))["runs"][0]
assert npu["ok"] and npu["paired"] is None and "paired trials" not in log2 and "slow phases" not in log2, npu.get("paired")
rows = sqlite3.connect(T + "/npu.db").execute("SELECT count(*) FROM measurements WHERE paired_ratio IS NOT NULL").fetchone()
assert rows[0] == 0, rows
PY
echo ok

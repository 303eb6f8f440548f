# tune_resume.sh - mi-host tune measures in crash-isolated workers and records every trial in the
# recipe's history; a rerun against the same history replays them instead of measuring again;
# --verify re-measures the deployment table; a crashing device is quarantined while the other
# device of the pool is still tuned.
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
budget: { measurements: 4, seconds: 60 }
search: { strategy: random, seed: 5 }
measure: { repeats: 5, warmup: 1 }
history: hist.db
YAML
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipe.yaml" --out "$T/a" --verify 5 2>"$T/log1" || { cat "$T/log1"; exit 1; }
"$B/bin/mi-host" history stats --db "$T/hist.db" --json > "$T/s1"
# The same recipe again: everything comes from the history, nothing new is measured for it.
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipe.yaml" --out "$T/b" 2>"$T/log2" || { cat "$T/log2"; exit 1; }
"$B/bin/mi-host" history stats --db "$T/hist.db" --json > "$T/s2"
python3 - "$T" <<'PY'
import json, sys
T = sys.argv[1]
a = json.load(open(T + "/a/pareto.json"))["runs"][0]
b = json.load(open(T + "/b/pareto.json"))["runs"][0]
s1, s2 = json.load(open(T + "/s1")), json.load(open(T + "/s2"))
assert a["ok"] and a["measured"] == 4 and a["replayed"] == 0, a
# 4 trials plus 5 re-measurements of each front configuration, all recorded.
assert s1["measurements"] == 4 + 5 * len(a["front"]), (s1, len(a["front"]))
assert b["replayed"] >= 4, b
ids_a = [t["config_id"] for t in a["trials"]]
ids_b = [t["config_id"] for t in b["trials"] if t["from_history"]]
assert ids_a == ids_b[:4], (ids_a, ids_b)
for x, y in zip(a["trials"], b["trials"]):
    assert x["ok"] == y["ok"] and (not x["ok"] or y["objectives"]["latency"] > 0), (x, y)
# The budget counts replayed trials too, so b, a finished recipe run again, measured nothing.
assert b["measured"] == 0 and s2["measurements"] == s1["measurements"], (s1, s2, b)
for t in a["front"]:
    assert t["verify_violations"] == 0 and t["verify_failures"] == 0, t
PY
grep -q 'verified: "ok"' "$T/a/deployment.yaml" || { cat "$T/a/deployment.yaml"; exit 1; }
# A device that crashes on every run is quarantined; the rest of the pool is still tuned.
sed -i 's/pool: .*/pool: [ {plugin: npu-stub}, {plugin: blis-cpu} ]/; s/history: hist.db//' "$T/recipe.yaml"
MI_NPU_FAULT=crash "$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipe.yaml" --out "$T/c" 2>"$T/log3" || true
python3 - "$T/c/pareto.json" <<'PY'
import json, sys
runs = {r["device"]: r for r in json.load(open(sys.argv[1]))["runs"]}
npu, cpu = runs["npu-stub:0"], runs["blis-cpu:0"]
fails = [t["failure"] for t in npu.get("trials", []) if not t["ok"]]
assert fails and any("crashed" in f for f in fails), npu
assert any("quarantined" in f for f in fails), fails
assert cpu["ok"] and any(t["ok"] for t in cpu["trials"]), cpu
PY
echo ok

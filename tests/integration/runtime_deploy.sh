# runtime_deploy.sh - mi-host tune writes a deployment table; mi-run --deployment runs its chosen
# configuration, reacts to the npu-stub's drift fault, applies stack policies, and the table
# survives a SIGKILL in the middle of a rewrite.
set -euo pipefail
B=${MI_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/bin/mi-zoo" mlp --out "$T/net.onnx" --width 0.5 --depth 3 --resolution 12 >/dev/null
cat > "$T/recipe.yaml" <<'YAML'
version: 1
model: net.onnx
pool: [ {plugin: npu-stub} ]
constraints: { latency_ms: 1000, accuracy_drop: 0.05 }
objectives: [latency, energy]
budget: { measurements: 4, seconds: 60 }
search: { strategy: nsga2, seed: 3, population: 3 }
measure: { repeats: 5, warmup: 1 }
YAML
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipe.yaml" --out "$T/out" 2>"$T/log" || { cat "$T/log"; exit 1; }
D=$T/out/deployment.yaml
RUN=("$B/bin/mi-run" --plugins "$B/plugins" --deployment "$D")

# The chosen configuration runs, on the same configuration id the tuner measured.
"${RUN[@]}" --repeat 20 --json > "$T/a.json"
python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
a = json.load(open(t + "/a.json"))
p = json.load(open(t + "/out/pareto.json"))
assert a["config_id"] == p["runs"][0]["front"][0]["config_id"], (a, p["runs"][0]["front"][0])
assert a["runs"] == 20 and a["alarms"] == 0 and a["switches"] == 0 and not a["stack_mismatch"], a
assert a["clock"] == "device" and a["reference_ms"] > 0, a
log = [json.loads(l) for l in open(t + "/out/decisions.jsonl")]
assert log[0]["event"] == "open" and not any(e["event"] == "config_id_mismatch" for e in log), log
PY

# --profile: the chosen configuration's per-layer table, as mi-run --profile prints it; the monitor
# is off, so a drifting device keeps that one configuration for every profiled run.
MI_NPU_FAULT=drift "${RUN[@]}" --profile --repeat 60 --json > "$T/p.json"
"${RUN[@]}" --profile --repeat 3 > "$T/p.txt"
python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
p = json.load(open(t + "/p.json"))
a = json.load(open(t + "/a.json"))
assert p["runs"] == 60 and p["switches"] == 0 and p["alarms"] == 0 and p["config_id"] == a["config_id"], p
rows = p["profile"]["layers"]
assert rows and p["profile"]["layers_ms"] > 0, p["profile"]
assert all(r["name"] and r["ms"] >= 0 and r["where"] in ("device", "host", "fallback") for r in rows), rows
assert any(r["op"].startswith("Gemm") or r["op"].startswith("MatMul") for r in rows), [r["op"] for r in rows]
txt = open(t + "/p.txt").read()
assert "per-layer profile (median of 3 runs" in txt and "layers " in txt, txt
PY
if "${RUN[@]}" --profile --readapt 2>"$T/err"; then echo "--profile --readapt ran"; exit 1; fi
grep -q "not both" "$T/err" || { cat "$T/err"; exit 1; }

# Drift fault: detected, a switch (or a re-adaptation) logged with its figures.
MI_NPU_FAULT=drift "${RUN[@]}" --repeat 80 --json > "$T/b.json"
python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
b = json.load(open(t + "/b.json"))
assert b["alarms"] >= 1 and b["switches"] >= 1, b
log = [json.loads(l) for l in open(t + "/out/decisions.jsonl")]
drift = [e for e in log if e["event"] == "drift"]
assert drift and drift[0]["median_ms"] > drift[0]["reference_ms"] and drift[0]["run"] <= 40, drift[0]
assert any(e["event"] in ("switch", "readapt") for e in log), log
PY
"${RUN[@]}" --repeat 2 >/dev/null  # the table (maybe rewritten) still loads

# Stack policies on a copy whose stack hash says another stack.
mkdir "$T/other"
sed 's/stack_hash: "[0-9a-f]*"/stack_hash: "00000000deadbeef"/' "$D" > "$T/other/deployment.yaml"
if "$B/bin/mi-run" --plugins "$B/plugins" --deployment "$T/other/deployment.yaml" --stack-policy refuse 2>"$T/err"; then
  echo "refuse policy ran"; exit 1
fi
grep -q "another software stack" "$T/err" || { cat "$T/err"; exit 1; }
"$B/bin/mi-run" --plugins "$B/plugins" --deployment "$T/other/deployment.yaml" --json > "$T/c.json"
grep -q '"stack_mismatch":true' "$T/c.json"
grep -q '00000000deadbeef' "$T/other/deployment.yaml"  # "use" does not rewrite
"$B/bin/mi-run" --plugins "$B/plugins" --deployment "$T/other/deployment.yaml" --stack-policy revalidate --json > "$T/d.json"
! grep -q '00000000deadbeef' "$T/other/deployment.yaml"
"$B/bin/mi-run" --plugins "$B/plugins" --deployment "$T/other/deployment.yaml" --stack-policy refuse --repeat 1 >/dev/null

# SIGKILL at random moments of a re-adaptation (which rewrites the table): it always parses.
for i in 1 2 3 4 5 6 7 8; do
  "${RUN[@]}" --readapt --no-monitor --repeat 1 >/dev/null 2>&1 &
  pid=$!
  sleep "0.0$((i * 7 % 10))"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  "${RUN[@]}" --no-monitor --repeat 1 >/dev/null || { echo "table broken after kill $i"; cat "$D"; exit 1; }
done

# A broken table is refused with file:line:column.
sed 's/^version: 1/version: 7/' "$D" > "$T/bad.yaml"
if "$B/bin/mi-run" --plugins "$B/plugins" --deployment "$T/bad.yaml" 2>"$T/err"; then echo "bad table ran"; exit 1; fi
grep -q "bad.yaml:[0-9]*:[0-9]*: 'version' must be 1" "$T/err" || { cat "$T/err"; exit 1; }
echo ok

# compare.sh - mi-host compare on a zoo model: configurations from --default, --set, a YAML
# mapping and a tuner's deployment.yaml measured in paired rounds; the JSON holds medians, ratios
# whose intervals agree with their verdicts, every round's order and load; the tuner's
# deployment.yaml and pareto.json carry the check against the default. No timing is asserted.
set -euo pipefail
B=${MI_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
H=("$B/bin/mi-host" --plugins "$B/plugins")
"$B/bin/mi-zoo" resnet --out "$T/net.onnx" --width 0.25 --depth 2 --resolution 32 >/dev/null
printf 'configuration:\n  "device.threads": "1"\n' > "$T/one.yaml"
"${H[@]}" compare --model "$T/net.onnx" --device blis-cpu:0 --default --set device.threads=1 \
  --config "$T/one.yaml" --default --set device.threads=2 --min-rounds 3 --max-rounds 3 --json \
  >"$T/j" 2>"$T/log" || { cat "$T/log" "$T/j"; exit 1; }
python3 - "$T/j" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] and d["rounds"] == 3, d
c = d["configs"]
assert len(c) == 3 and c[0]["source"] == "default" and c[1]["source"].endswith("one.yaml"), c
assert "device.threads=1" in c[0]["canonical"] and "device.threads=2" in c[2]["canonical"], c
assert c[0]["ratio"] == 1 and c[0]["ci95"] == [1, 1], c[0]
for x in c:
    assert x["median_ms"] > 0, x
    lo, hi = x["ci95"]
    assert lo <= x["ratio"] <= hi, x
    # under 5 rounds no verdict: 3 rounds on one side of 1 exclude 1 whatever the ratio
    assert x["verdict"] == "no significant difference", x
assert len(d["samples_ms"]) == 3 and all(len(r) == 3 and min(r) > 0 for r in d["samples_ms"])
assert all(sorted(o) == [0, 1, 2] for o in d["order"]), d["order"]
assert len(d["load"]) == 3 and d["cpus"] >= 1 and 0 <= d["loaded"] <= 9, d
PY
# The text form names the reference and the verdicts.
"${H[@]}" compare --model "$T/net.onnx" --device blis-cpu:0 --default --config "$T/one.yaml" \
  --min-rounds 2 --max-rounds 2 >"$T/out" 2>"$T/log" || { cat "$T/log" "$T/out"; exit 1; }
grep -q "(reference)" "$T/out" && grep -q "95% CI" "$T/out" && grep -q "load average" "$T/out" \
  && grep -q "too few rounds for a verdict" "$T/out" \
  || { cat "$T/out"; exit 1; }
# Wrong use: one configuration, an unknown key, a missing file; each one line and exit 2.
set +e
"${H[@]}" compare --model "$T/net.onnx" --device blis-cpu:0 --default 2>"$T/e1"; r1=$?
"${H[@]}" compare --model "$T/net.onnx" --device blis-cpu:0 --default --default --set no.such=1 2>"$T/e2"; r2=$?
"${H[@]}" compare --model "$T/net.onnx" --device blis-cpu:0 --default --config "$T/none.yaml" 2>"$T/e3"; r3=$?
set -e
[ "$r1" = 2 ] && [ "$r2" = 2 ] && [ "$r3" = 2 ] || { echo "exit codes $r1 $r2 $r3"; cat "$T/e1" "$T/e2" "$T/e3"; exit 1; }
grep -q "no.such" "$T/e2" && grep -q "none.yaml" "$T/e3" || { cat "$T/e2" "$T/e3"; exit 1; }
# The tuner measures the default first and checks its choice against it in paired rounds.
cat > "$T/recipe.yaml" <<'YAML'
version: 1
model: net.onnx
pool: [ {plugin: npu-stub} ]
objectives: [latency]
budget: { measurements: 6, seconds: 120 }
search: { seed: 5 }
measure: { repeats: 5, warmup: 1 }
YAML
"${H[@]}" tune "$T/recipe.yaml" --out "$T/tune" 2>"$T/tlog" || { cat "$T/tlog"; exit 1; }
grep -Eq "faster than default \(95% CI|deploying default" "$T/tlog" || { cat "$T/tlog"; exit 1; }
python3 - "$T/tune" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/pareto.json"))
run = d["runs"][0]
t0 = run["trials"][0]
assert t0["ok"], t0
v = run["vs_default"]
assert v["rounds"] >= 2 or v["chose_default"], v
lo, hi = v["ci95"]
assert lo <= v["speedup"] <= hi, v
# Deployed is never a configuration not shown faster than the default.
if not v["chose_default"] and not v["deployed_default"]:
    assert lo > 1, v
if v["deployed_default"]:
    assert run["front"][0]["config_id"] == t0["config_id"], (run["front"][0], t0)
dep = open(sys.argv[1] + "/deployment.yaml").read()
assert "vs_default:" in dep and "speedup:" in dep and "ci95_low:" in dep, dep
PY
# The table stays readable (mi-run parses it strictly), and compare takes it as a configuration.
"${H[@]}" compare --model "$T/net.onnx" --device npu-stub:0 --default --config "$T/tune/deployment.yaml" \
  --min-rounds 2 --max-rounds 2 --json >"$T/j2" 2>"$T/log" || { cat "$T/log" "$T/j2"; exit 1; }
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['ok'] and len(d['configs']) == 2, d" "$T/j2"
echo ok

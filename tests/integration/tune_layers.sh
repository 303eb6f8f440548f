# tune_layers.sh - per-layer rows reach the surrogate-guided search in a real mi-host tune run:
# the model tuned on one npu-stub device leaves per-layer times in the history; tuned again on
# the other device, the search builds its per-layer base model from them and every measurement
# of the run hands its own per-layer times back (docs/meta.md, "Per-layer prediction").
# (--no-layer-tasks: the counts below are of the whole-space search; layer tasks add their own
# whole-model rounds, tests/integration/tune_ltasks.sh.)
set -euo pipefail
B=${MI_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/bin/mi-zoo" resnet --out "$T/net.onnx" --width 0.25 --depth 2 --resolution 32 >/dev/null
cat > "$T/r1.yaml" <<'YAML'
version: 1
model: net.onnx
pool: [ {plugin: npu-stub, device: 0} ]
objectives: [latency]
budget: { measurements: 12, seconds: 120 }
search: { strategy: meta, seed: 1 }
measure: { repeats: 5, warmup: 1 }
history: hist.db
YAML
sed 's/device: 0/device: 1/' "$T/r1.yaml" > "$T/r2.yaml"
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/r1.yaml" --out "$T/a" --no-layer-tasks 2>"$T/log1" || { cat "$T/log1"; exit 1; }
# No history of this model yet: no per-layer model, but the measurements bring their layers.
if grep -q "per-layer model: built" "$T/log1"; then cat "$T/log1"; exit 1; fi
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/r2.yaml" --out "$T/b" --no-layer-tasks 2>"$T/log2" || { cat "$T/log2"; exit 1; }
python3 - "$T" <<'PY'
import json, re, sys
T = sys.argv[1]
log1, log2 = open(T + "/log1").read(), open(T + "/log2").read()
first = json.load(open(T + "/a/pareto.json"))["runs"][0]
ok1 = sum(1 for t in first["trials"] if t["ok"])
m1 = re.search(r"per-layer model: not built .*?; (\d+) of this run's measurements came with per-layer times", log1)
assert ok1 > 0 and m1 and int(m1.group(1)) == ok1, (ok1, log1)
m = re.search(r"per-layer model: built on (\d+) layer rows from (\d+) configurations of this model on other devices; "
              r"(\d+) of this run's measurements came with per-layer times; its weight in the last round ([0-9.]+)", log2)
assert m, log2
rows, configs, trials, w = int(m.group(1)), int(m.group(2)), int(m.group(3)), float(m.group(4))
run = json.load(open(T + "/b/pareto.json"))["runs"][0]
# Every successful configuration of the first run came with its layers (several timed layers
# each), and every successful measurement of this run handed its layers to the search.
ok2 = sum(1 for t in run["trials"] if t["ok"] and not t["from_history"])
assert configs == ok1 and rows >= 3 * configs, (rows, configs, ok1)
assert run["ok"] and trials == ok2 and trials > 0, (trials, ok2)
assert 0.0 <= w <= 1.0, w
PY
echo ok

# tune_default_auto.sh - the tuner's default configuration is what mi-run does without one: the
# first configuration a tune measures names no kernel variant and no node knob for any node (the
# plugin chooses), it runs the same device layers as mi-run's default, written as
# deployment.yaml it runs in mi-run --deployment, and mi-host compare --default is the same
# configuration (docs/tuning.md, "The default configuration"). No timing is asserted.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
mi_small_resnet
# Two measurements: the default first, then one the search picks. The meta strategy is the
# one whose first trial is the default.
mi_blis_recipe 'budget: { measurements: 2, seconds: 120 }' 'search: { strategy: meta, seed: 3 }'
"${H[@]}" tune "$T/recipe.yaml" --out "$T/tune" 2>"$T/tlog" || { cat "$T/tlog"; exit 1; }
sed -e 's/measurements: 2/measurements: 1/' -e 's/hist.db/hist1.db/' "$T/recipe.yaml" >"$T/one.yaml"
"${H[@]}" tune "$T/one.yaml" --out "$T/tune1" 2>"$T/tlog1" || { cat "$T/tlog1"; exit 1; }
"$B/bin/mi-run" --plugins "$B/plugins" --model "$T/net.onnx" --device blis-cpu:0 --profile \
  --repeat 2 --json >"$T/run.json" 2>"$T/rlog" || { cat "$T/rlog"; exit 1; }
python3 - "$T" <<'PY'
import json, sqlite3, sys
T = sys.argv[1]
# The first measured configuration: its hardware text and per-layer rows, from the history.
hw, layers = sqlite3.connect(T + "/hist.db").execute(
    "SELECT c.canonical, m.layers FROM measurements m JOIN configs c ON c.id = m.config_id "
    "ORDER BY m.id LIMIT 1").fetchone()
# "device{...};NODE:VARIANT{knobs};...": every node plugin-chosen ("default"), no node knobs.
named = [e for e in hw.split(";")[1:] if not e.split(":", 1)[1] == "default{}"]
assert hw.startswith("device") and len(hw.split(";")) > 5, hw
assert not named, "the tune's first configuration names variants or knobs: %s" % named[:5]
# The same layers run on the device, grouped the same way, as in mi-run without a configuration,
# whose per-layer variant column says "default" for every plugin-chosen kernel.
run = json.load(open(T + "/run.json"))["profile"]["layers"]
assert run and all(l["variant"] == "default" for l in run if l["where"] == "device"), run
mine = sorted(l["name"] for l in json.loads(layers) if l["where"] == "device")
theirs = sorted(l["name"] for l in run if l["where"] == "device")
assert mine == theirs, (mine, theirs)
PY
# mi-host compare --default is the same configuration: every variant auto, no node knob.
"${H[@]}" compare --model "$T/net.onnx" --device blis-cpu:0 --default --default --set device.threads=1 \
  --min-rounds 2 --max-rounds 2 --json >"$T/c.json" 2>"$T/clog" || { cat "$T/clog"; exit 1; }
python3 - "$T/c.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["configs"]
assert c[0]["source"] == "default", c
assert ".knob." not in c[0]["canonical"], c[0]["canonical"]
variants = [l for l in c[0]["canonical"].splitlines() if l.endswith(".variant=auto")]
assert variants and all(l.endswith("=auto") for l in c[0]["canonical"].splitlines()
                        if ".variant=" in l), c[0]["canonical"]
PY
# With one measurement the tune deploys the default: deployment.yaml names every variant auto,
# and mi-run --deployment runs it.
grep -q '"auto"' "$T/tune1/deployment.yaml" && ! grep -q '\.knob\.' "$T/tune1/deployment.yaml" \
  || { cat "$T/tune1/deployment.yaml"; exit 1; }
"$B/bin/mi-run" --plugins "$B/plugins" --deployment "$T/tune1/deployment.yaml" --no-monitor \
  >"$T/dlog" 2>&1 || { cat "$T/dlog"; exit 1; }

#!/usr/bin/env bash
# tune_wrong_config.sh - a device that computes right at its default knob and wrong at others (a
# broken kernel variant, tests/plugins/hp_plugin.c's wrong-off-default): each wrong configuration
# fails its measurement with "wrong results", the device is not quarantined for them (it has
# computed right), the search uses its whole budget, and what is deployed computes right.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
host="$MI_BUILD/bin/mi-host"
fail() { echo "tune_wrong_config: $*" >&2; exit 1; }

mi_relu_add_model
cat >"$T/recipe.yaml" <<YAML
version: 1
model: ra.onnx
pool: [ {plugin: wrong-off-default} ]
objectives: [latency]
budget: { measurements: 10, seconds: 120 }
search: { strategy: random, seed: 3 }
measure: { repeats: 5, warmup: 1 }
YAML
"$host" --plugins "$MI_BUILD/tests/plugins/honest/wrong-off-default" --json tune "$T/recipe.yaml" \
  --out "$T/out" >"$T/stdout" 2>"$T/log" || fail "tune failed: $(tail -5 "$T/log")"
python3 - "$T/stdout" "$T/out/deployment.yaml" <<'PY' || fail "$(tail -8 "$T/log")"
import json, sys
doc = json.load(open(sys.argv[1]))
run = doc["runs"][0]
trials = run["trials"]
wrong = [t for t in trials if "wrong results" in t.get("failure", "")]
quar = [t for t in trials if "quarantined" in t.get("failure", "")]
assert len(wrong) >= 3, f"expected several wrong configurations, got {len(wrong)} of {len(trials)}"
assert not quar, f"the device was quarantined for configuration faults: {quar[0]['failure']}"
assert run["measured"] == 10, f"the search stopped early: {run['measured']} measured"
assert run["front"] and run["front"][0]["ok"], "nothing deployed"
dep = open(sys.argv[2]).read()
assert '"chunk"' not in dep or 'knob.chunk: "1024"' in dep, "deployed a wrong configuration"
print(f"tune_wrong_config: {len(wrong)} wrong configurations failed, none quarantined, deployed ok")
PY

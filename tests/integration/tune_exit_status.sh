# tune_exit_status.sh - mi-host tune finds its plugins without --plugins, in the host and in the
# measurement workers alike (<exe>/../plugins, as `plugins`, `profile` and mi-run do); a tune in
# which every measurement failed exits non-zero and says why ("ok": false with --json); recipes
# that cannot work are refused before anything runs: repeats beyond the bound, a pool device the
# plugin does not have, a history that cannot be opened; measure.timeout_s and --timeout bound
# each measurement.
set -euo pipefail
B=${MI_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
unset MI_PLUGIN_PATH
"$B/bin/mi-zoo" resnet --out "$T/net.onnx" --width 0.25 --depth 2 --resolution 32 >/dev/null
recipe() { # recipe FILE EXTRA-LINES
  printf 'version: 1\nmodel: net.onnx\npool: [ {plugin: npu-stub} ]\nbudget: { measurements: 3, seconds: 60 }\nsearch: { strategy: random, seed: 5 }\n%b' "$2" > "$T/$1"
}
# 1. No --plugins: the workers find npu-stub where the host did.
recipe r.yaml 'measure: { repeats: 5, warmup: 1 }\n'
"$B/bin/mi-host" tune "$T/r.yaml" --out "$T/a" --json >"$T/a.json" 2>"$T/a.log" || { cat "$T/a.log"; exit 1; }
python3 - "$T/a.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
run = d["runs"][0]
assert d["ok"] is True, d.get("error")
assert run["ok"] and run["measured"] == 3 and all(t["ok"] for t in run["trials"]), run
PY
# 2. Every measurement fails (the device crashes on each run, then is quarantined): exit 1, the
#    reason on stderr and "ok": false with it in the JSON summary.
rc=0
MI_NPU_FAULT=crash "$B/bin/mi-host" tune "$T/r.yaml" --out "$T/b" --json >"$T/b.json" 2>"$T/b.log" || rc=$?
[ "$rc" = 1 ] || { echo "every measurement failed, exit $rc"; cat "$T/b.log"; exit 1; }
grep -q "no configuration was measured successfully on any device; npu-stub:0: .*crashed" "$T/b.log" || { cat "$T/b.log"; exit 1; }
python3 - "$T/b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is False and "crashed" in d["error"], d.get("error")
PY
# 3. Recipes that cannot work: each refused with its line, exit non-zero, nothing measured.
expect_refused() { # NAME EXTRA-LINES PATTERN
  recipe "$1" "$2"
  rc=0
  "$B/bin/mi-host" tune "$T/$1" --out "$T/o-$1" 2>"$T/e-$1" || rc=$?
  [ "$rc" != 0 ] || { echo "$1 accepted"; cat "$T/e-$1"; exit 1; }
  grep -q "$3" "$T/e-$1" || { echo "$1:"; cat "$T/e-$1"; exit 1; }
}
expect_refused rep.yaml 'measure: { repeats: 2000000000 }\n' "rep.yaml:6:.*'measure.repeats' must be at most 10000"
recipe dev.yaml ""
sed -i "s/{plugin: npu-stub}/{plugin: npu-stub, device: 99}/" "$T/dev.yaml"
rc=0; "$B/bin/mi-host" tune "$T/dev.yaml" --out "$T/o-dev" 2>"$T/e-dev" || rc=$?
[ "$rc" != 0 ] && grep -q "dev.yaml:3:.*plugin 'npu-stub' has no device 99" "$T/e-dev" || { echo "device 99: exit $rc"; cat "$T/e-dev"; exit 1; }
expect_refused hist.yaml "history: $T/no/such/folder/h.db\n" "history $T/no/such/folder/h.db"
expect_refused tmo.yaml 'measure: { timeout_s: 0 }\n' "tmo.yaml:6:.*'measure.timeout_s' must be more than 0"
# 4. The per-measurement timeout comes from the recipe, and --timeout overrides it.
recipe hang.yaml 'measure: { repeats: 5, warmup: 1, timeout_s: 0.5 }\n'
MI_NPU_FAULT=hang "$B/bin/mi-host" tune "$T/hang.yaml" --out "$T/h" --json >"$T/h.json" 2>/dev/null || true
grep -q "timed out after 0.5 s" "$T/h.json" || { head -c 2000 "$T/h.json"; exit 1; }
MI_NPU_FAULT=hang "$B/bin/mi-host" tune "$T/hang.yaml" --out "$T/h2" --timeout 0.25 --json >"$T/h2.json" 2>/dev/null || true
grep -q "timed out after 0.2 s\|timed out after 0.3 s" "$T/h2.json" || { head -c 2000 "$T/h2.json"; exit 1; }
echo ok

# tune_history_prune.sh - what a failed tune leaves in the history: refusals of a quarantined
# device are not recorded as measurements (a rerun would replay them instead of measuring);
# `mi-host history prune --failed` drops the failures that were, so the rerun measures; without
# a history key the history lives in the output folder, not next to the recipe; Ctrl-C (SIGINT)
# stops the tune with exit 130 and the count of saved measurements, and the rerun resumes them.
set -euo pipefail
B=${MI_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir "$T/src"
"$B/bin/mi-zoo" resnet --out "$T/src/net.onnx" --width 0.25 --depth 2 --resolution 32 >/dev/null
cat > "$T/src/r.yaml" <<'YAML'
version: 1
model: net.onnx
pool: [ {plugin: npu-stub} ]
budget: { measurements: 6, seconds: 120 }
search: { strategy: random, seed: 5 }
measure: { repeats: 5, warmup: 1 }
YAML
H="$T/out/history.db"
stats() { "$B/bin/mi-host" history stats --db "$H" --json; }
# The device crashes 3 times and is quarantined: once on the default measured ahead for the
# accuracy reference (not a recorded measurement), then twice recorded; the refusals after that
# are not measurements.
MI_NPU_FAULT=crash "$B/bin/mi-host" --plugins "$B/plugins" tune "$T/src/r.yaml" --out "$T/out" 2>"$T/log1" || true
test -f "$H" || { echo "no history in the output folder"; ls "$T/out"; exit 1; }
[ "$(ls "$T/src")" = "$(printf 'net.onnx\nr.yaml')" ] || { echo "files next to the recipe:"; ls "$T/src"; exit 1; }
stats > "$T/s1"
python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['measurements']==2 and s['failed']==2, s" "$T/s1"
# prune drops the failed records; the rerun then measures all six.
"$B/bin/mi-host" history prune --failed --db "$H" > "$T/p"
grep -q "removed 2 records" "$T/p" || { cat "$T/p"; exit 1; }
stats > "$T/s2"
python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['measurements']==0, s" "$T/s2"
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/src/r.yaml" --out "$T/out" --json >"$T/j" 2>"$T/log2"
python3 - "$T/j" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert run["ok"] and run["measured"] == 6 and run["replayed"] == 0, run
PY
# prune by model and by device spec.
grep -q "removed 6 records" <<<"$("$B/bin/mi-host" history prune --model net.onnx --device npu-stub:0 --db "$H")"
if "$B/bin/mi-host" history prune --db "$H" 2>/dev/null; then echo "prune without a selection accepted"; exit 1; fi
# Ctrl-C: SIGINT after the first measurements; exit 130 and the count; the rerun resumes.
rm -rf "$T/out"
sed -i 's/measurements: 6, seconds: 120/measurements: 400, seconds: 600/' "$T/src/r.yaml"
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/src/r.yaml" --out "$T/out" 2>"$T/log3" &
pid=$!
for _ in $(seq 1 3000); do
  grep -q " [2-9]/400 *measured\| [1-9][0-9]/400 *measured" "$T/log3" && break
  sleep 0.02
done
kill -INT "$pid"
rc=0; wait "$pid" || rc=$?
[ "$rc" = 130 ] || { echo "interrupted tune: exit $rc"; cat "$T/log3"; exit 1; }
saved=$(sed -n 's/.*interrupted: \([0-9]*\) measurements saved in .*history.db; rerun the same command to resume.*/\1/p' "$T/log3")
[ -n "$saved" ] || { cat "$T/log3"; exit 1; }
stats > "$T/s4"
python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['measurements']==int(sys.argv[2]) and s['failed']==0, (s, sys.argv[2])" "$T/s4" "$saved"
sed -i 's/measurements: 400, seconds: 600/measurements: 8, seconds: 600/' "$T/src/r.yaml"
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/src/r.yaml" --out "$T/out" --json >"$T/j5" 2>"$T/log5"
python3 - "$T/j5" "$saved" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
saved = int(sys.argv[2])
assert run["ok"] and run["replayed"] == min(saved, 8), (run["replayed"], saved)
PY
echo ok

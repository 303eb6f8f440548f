# hostile_tune.bash - sourced by hostile_tune_load.sh and hostile_tune_run.sh with $stages set
# (not a test itself): `mi-host tune` over a pool of blis-cpu and one hostile plugin (tests/plugins/
# hp_plugin.c: crash, hang, exit, abort, stdout, forged handle at entry, create, describe,
# prepare, run, check (check_config), destroy; wrong output, zero and negative device time at
# run), one run per hostile plugin:
# the host survives, blis-cpu is always tuned, the hostile device is never chosen, its failure
# says why, and --json output stays one JSON object.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
host="$MI_BUILD/bin/mi-host"
hostile="$MI_BUILD/tests/plugins/hostile"
tmp=$T
fail() { echo "hostile_tune: $*" >&2; exit 1; }
# Short deadlines: a hanging plugin is given up on in seconds, not minutes.
export MI_LOAD_TIMEOUT_S=3 MI_WORKER_TIMEOUT_S=4

# y = Relu(x) + x: the ops the SDK template (and so each hostile plugin) runs.
mi_wire_py
python3 - "$tmp" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from mi_wire import *
save("ra.onnx", model([node("Relu", "relu", ["x"], ["r"]), node("Add", "add", ["r", "x"], ["y"])],
                      [("x", 1, [1, 4096])], [("y", 1, [1, 4096])]))
PY

# HOSTILE_CASES="crash-run wrong-run" runs only those (while working on one).
all=$(cd "$hostile" && ls -d */ | tr -d /)
[ "$(echo "$all" | wc -l)" -ge 45 ] || fail "expected 45 hostile plugins, found: $all"
# thread and flaky plugins are run by hostile_tune_other.sh, which sets $kinds.
kinds=${kinds:-'(crash|hang|exit|abort|stdout|forged|wrong|zero-time|neg-time)'}
cases=${HOSTILE_CASES:-$(echo "$all" | grep -E -- "-($stages)\$" | grep -E "^$kinds-")}
[ -n "$cases" ] || fail "no hostile plugin for stages '$stages' and kinds '$kinds'"
for c in $cases; do
  name="hostile-$c"
  # A flaky plugin counts its loads here, one file per case: it passes the first (the host's
  # preflight) and crashes in every later one.
  export HP_COUNT_FILE="$tmp/count-$c"
  rm -f "$HP_COUNT_FILE"
  cat >"$tmp/recipe.yaml" <<YAML
version: 1
model: ra.onnx
pool: [ {plugin: blis-cpu}, {plugin: $name} ]
objectives: [latency]
budget: { measurements: 4, seconds: 60 }
search: { strategy: random, seed: 1 }
measure: { repeats: 5, warmup: 1 }
YAML
  rm -rf "$tmp/out"
  rc=0
  "$host" --plugins "$MI_BUILD/plugins" --plugins "$hostile/$c" tune "$tmp/recipe.yaml" \
    --out "$tmp/out" --json >"$tmp/stdout" 2>"$tmp/log" || rc=$?
  [ "$rc" -lt 128 ] || fail "$c: the host died (exit $rc): $(tail -3 "$tmp/log")"
  python3 - "$tmp/stdout" "$tmp/out/deployment.yaml" "$name" "$c" <<'PY' || fail "$c: $(tail -5 "$tmp/log")"
import json, sys
out, dep, name, case = sys.argv[1:]
try:
    doc = json.load(open(out))
except ValueError as e:
    sys.exit(f"{case}: stdout is not one JSON object ({e}): {open(out).read()[:200]!r}")
runs = {r["device"]: r for r in doc["runs"]}
blis = runs.get("blis-cpu:0")
assert blis and blis["ok"] and blis["measured"] > 0 and blis["front"], f"{case}: blis-cpu not tuned: {blis}"
bad = runs.get(name + ":0")
if case.startswith("thread-"):
    # Its kernels are right and its times true: a leaked thread is no reason to refuse it.
    # What is asserted is that the host ends cleanly and blis-cpu is tuned beside it.
    sys.exit(0)
if bad is not None:
    assert not bad["ok"] or not bad["front"], f"{case}: the hostile device has a front: {bad}"
# The reason is recorded: the device's error, or its failed measurements' failures, name the
# fault (flaky plugins crash in the loads after the host's).
import re
want = {"crash": "crash", "abort": "crash", "hang": "hung|timed out|no answer|timeout",
        "exit": "exit", "stdout": "stdout", "forged": "handle", "wrong": "wrong results",
        "zero": "implausible device time", "neg": "implausible device time",
        "flaky": "crash"}[case.split("-")[0]]
assert bad is not None, f"{case}: no run for the hostile device"
why = " | ".join([bad.get("error") or ""] + [t.get("failure") or "" for t in bad.get("trials", [])])
assert re.search(want, why), f"{case}: the reason does not say '{want}': {why[:300]}"
# check_config is asked in the device's worker: the device fails with what happened there.
if case.endswith("-check"):
    assert bad and not bad["ok"] and "check_config failed in the worker" in bad.get("error", ""), \
        f"{case}: no reason recorded: {bad}"
import re
text = open(dep).read()
# Entries start "- model:" at any indent (the table is written by libyaml's emitter); values
# may be quoted or plain.
head, _, assignment = text.partition("\nassignment:")
dev = re.compile(r'device: "?%s:0"?\s*$' % re.escape(name), re.M)
chosen = [b for b in re.split(r'\n\s*- (?=model:)', head) if dev.search(b)]
assert all("chosen:" not in b for b in chosen), f"{case}: deployment.yaml chose the hostile device"
assert not dev.search(assignment), f"{case}: hostile device assigned"
PY
  echo "hostile_tune: $c: ok"
done
echo "hostile_tune: ok"

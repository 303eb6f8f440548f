#!/usr/bin/env bash
# hostile_profile.sh - `mi-host profile` on each hostile plugin (tests/plugins/hp_plugin.c: the
# SDK template with one thing broken; crash, hang, exit, abort, stdout, forged handle at every
# entry point; wrong outputs, zero and negative device time at run; the flaky and thread kinds).
# profile loads no plugin in its own process: the fingerprint and every measurement run in the
# device's worker under --timeout. For each: the host survives (exit 0 or 1, never a signal or a
# hang), --json stays one JSON object, and a fault the measurement reaches is a failed result
# whose reason names it, recorded in the history with that reason. A lying timer or (with
# --check) wrong outputs are failures too, never a figure.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
host="$MI_BUILD/bin/mi-host"
hostile="$MI_BUILD/tests/plugins/hostile"
fail() { echo "hostile_profile: $*" >&2; exit 1; }
export MI_LOAD_TIMEOUT_S=3

mi_wire_py
python3 - "$T" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from mi_wire import *
save("ra.onnx", model([node("Relu", "relu", ["x"], ["r"]), node("Add", "add", ["r", "x"], ["y"])],
                      [("x", 1, [1, 4096])], [("y", 1, [1, 4096])]))
PY
args=(--model "$T/ra.onnx" --workers 1 --repeat 5 --warmup 1 --min-warmup-ms 0 --median-ci 0 --json)

# HOSTILE_CASES="crash-run wrong-run" runs only those (while working on one).
all=$(cd "$hostile" && ls -d */ | tr -d /)
[ "$(echo "$all" | wc -l)" -ge 49 ] || fail "expected 49 hostile plugins, found: $all"
cases=${HOSTILE_CASES:-$all}
for c in $cases; do
  name="hostile-$c"
  # The device fingerprint (micro-benchmarks, seconds) is plugin code too: taken for the crash
  # kinds, with a deadline it fits in; skipped for the others so a hang costs 5 s.
  case $c in
    crash-*) extra=(--timeout 30) ;;
    *) extra=(--timeout 5 --no-fingerprint) ;;
  esac
  # check_config and destroy are never reached by a measurement that succeeds: profile does
  # not ask check_config, and the worker answers before it unloads.
  case $c in
    *-check|*-destroy|thread-*) want='' ;;
    # The first worker is its first load (it works); the second worker's load crashes.
    flaky-*) want='crash'; extra+=(--workers 2); export HP_COUNT_FILE="$T/count-$c"
             rm -f "$HP_COUNT_FILE" ;;
    crash-*|abort-*) want='crash' ;;
    hang-*) want='hung|timed out|no answer|timeout' ;;
    exit-*) want='exit' ;;
    stdout-*) want='stdout' ;;
    forged-*) want='handle' ;;
    wrong-*) want='wrong results'; extra+=(--check) ;;
    zero_time-*|zero-time-*|neg_time-*|neg-time-*) want='implausible device time' ;;
    *) fail "$c: no expectation for this kind" ;;
  esac
  rm -f "$T/h.db"
  rc=0
  timeout 120 "$host" --plugins "$hostile/$c" profile --device "$name:0" --db "$T/h.db" \
    "${args[@]}" "${extra[@]}" >"$T/out" 2>"$T/err" || rc=$?
  unset HP_COUNT_FILE
  [ "$rc" -lt 124 ] || fail "$c: the host died or hung (exit $rc): $(tail -3 "$T/err")"
  python3 - "$T/out" "$T/h.db" "$c" "$want" "$rc" <<'PY' || fail "$c: $(tail -3 "$T/err")"
import json, re, sqlite3, sys
out, db, case, want, rc = sys.argv[1:]
try:
    doc = json.load(open(out))
except ValueError as e:
    sys.exit(f"{case}: stdout is not one JSON object ({e}): {open(out).read()[:300]!r}")
res = doc["results"]
assert len(res) == 1, f"{case}: {res}"
r = res[0]
recs = sqlite3.connect(db).execute("select ok, failure from measurements").fetchall()
assert len(recs) == 1, f"{case}: {len(recs)} history records, want 1"
if not want:
    assert r["ok"] and rc == "0", f"{case}: a fault profile never reaches failed it: {r}"
    assert recs[0][0] == 1, f"{case}: history says {recs}"
    assert r["latency_ms"]["median"] > 0
    sys.exit(0)
assert not r["ok"] and rc == "1", f"{case}: exit {rc}, result {r}"
why = r["failure"]
assert "\n" not in why and re.search(want, why), f"{case}: '{why}' does not say '{want}'"
assert recs[0][0] == 0 and re.search(want, recs[0][1] or ""), f"{case}: history says {recs}"
print(f"hostile_profile: {case}: ok ({why})")
PY
done
echo "hostile_profile: ok"

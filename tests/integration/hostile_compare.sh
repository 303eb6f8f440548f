#!/usr/bin/env bash
# hostile_compare.sh - `mi-host compare` on a hostile plugin's device (tests/plugins/hp_plugin.c:
# crash, hang, exit, abort, stdout, forged handle at entry, create, describe, prepare, run,
# check_config and destroy): the host survives each, says why in one line (or, with --json, in
# the one JSON object's "failure"), and no plugin code runs in it: the descriptions come from a
# sacrificial worker, the prepare probes and check_config questions from the device's worker.
# Then compare on blis-cpu with every hostile plugin on the path still works.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
host="$MI_BUILD/bin/mi-host"
hostile="$MI_BUILD/tests/plugins/hostile"
fail() { echo "hostile_compare: $*" >&2; exit 1; }
export MI_LOAD_TIMEOUT_S=6

mi_wire_py
python3 - "$T" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from mi_wire import *
save("ra.onnx", model([node("Relu", "relu", ["x"], ["r"]), node("Add", "add", ["r", "x"], ["y"])],
                      [("x", 1, [1, 4096])], [("y", 1, [1, 4096])]))
PY
args=(--model "$T/ra.onnx" --default --default --timeout 3 --min-rounds 2 --max-rounds 2 --budget-s 20)

# HOSTILE_CASES="crash-check" runs only those (while working on one).
all=$(cd "$hostile" && ls -d */ | tr -d / | grep -E '^(crash|hang|exit|abort|stdout|forged)-')
[ "$(echo "$all" | wc -w)" -ge 42 ] || fail "expected 42 hostile plugins, found: $all"
cases=${HOSTILE_CASES:-$all}
for c in $cases; do
  name="hostile-$c"
  case $c in
    crash-*|abort-*) want='crash' ;;
    hang-*) want='hung|timed out|no answer|timeout' ;;
    exit-*) want='exit' ;;
    stdout-*) want='stdout' ;;
    forged-*) want='handle' ;;
  esac
  rc=0
  timeout 120 "$host" --plugins "$hostile/$c" compare --device "$name:0" "${args[@]}" --json \
    >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = 1 ] || [ "$rc" = 2 ] || fail "$c: exit $rc, want 1 or 2 (stderr: $(tail -3 "$T/err"))"
  if [ -s "$T/out" ]; then
    why=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] is False; print(d["failure"])' \
      "$T/out") || fail "$c: stdout is not one JSON object with a failure: $(head -c 300 "$T/out")"
  else
    [ "$(grep -c '^mi-host: compare: ' "$T/err")" = 1 ] || fail "$c: want one 'mi-host: compare:' line: $(cat "$T/err")"
    why=$(grep '^mi-host: compare: ' "$T/err")
  fi
  [ "$(printf '%s' "$why" | wc -l)" = 0 ] || fail "$c: the reason is more than one line: $why"
  printf '%s' "$why" | grep -Eq "$want" || fail "$c: '$why' does not say '$want'"
  echo "hostile_compare: $c: ok ($why)"
done

# The healthy device, with every hostile plugin on the path: compared as usual.
dirs=$(ls -d "$hostile"/*/ | tr '\n' ':')
MI_PLUGIN_PATH=$dirs "$host" --plugins "$MI_BUILD/plugins" compare --device blis-cpu:0 "${args[@]}" \
  --json >"$T/out" 2>"$T/err" || fail "blis-cpu: exit $? ($(tail -3 "$T/err"))"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] is True, d' "$T/out" ||
  fail "blis-cpu: $(head -c 300 "$T/out")"
echo "hostile_compare: ok"

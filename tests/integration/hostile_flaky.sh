#!/usr/bin/env bash
# hostile_flaky.sh - plugins that load once and crash from their second load on (hostile-flaky-
# entry|create|describe, tests/plugins/hp_plugin.c, counting loads in $HP_COUNT_FILE): they pass
# a preflight and then fail. `mi-host plugins` lists them from descriptions read in its one
# sacrificial child per plugin, so it never loads them itself and survives; mi-run, whose own
# load would be a later one, ends in one line naming the plugin and the step.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
host="$MI_BUILD/bin/mi-host"
run="$MI_BUILD/bin/mi-run"
hostile="$MI_BUILD/tests/plugins/hostile"
fail() { echo "hostile_flaky: $*" >&2; exit 1; }
export MI_LOAD_TIMEOUT_S=10

mi_relu_add_model 64

for stage in entry create describe; do
  name="hostile-flaky-$stage"
  export HP_COUNT_FILE="$T/count-$stage"
  rm -f "$HP_COUNT_FILE"
  rc=0
  "$host" --plugins "$hostile/flaky-$stage" --json plugins >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = 0 ] || fail "$name: mi-host plugins exit $rc ($(tail -2 "$T/err"))"
  python3 - "$T/out" "$name" <<'PY' || fail "$name: listing is wrong: $(head -c 300 "$T/out")"
import json, sys
doc = json.load(open(sys.argv[1]))
p = [p for p in doc["plugins"] if p["name"] == sys.argv[2]]
assert p and p[0]["devices"] and p[0]["devices"][0]["variants"], doc
PY
  [ "$(cat "$HP_COUNT_FILE")" = 1 ] || fail "$name: loaded $(cat "$HP_COUNT_FILE") times to be listed, want 1"
  # From now on every load crashes: mi-run's preflight refuses it, in one line.
  rc=0
  "$run" --plugins "$hostile/flaky-$stage" --model "$T/ra.onnx" --device "$name:0" --timeout 10 \
    >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = 1 ] || fail "$name: mi-run exit $rc, want 1 ($(tail -2 "$T/err"))"
  line=$(grep '^mi-run: ' "$T/err" || true)
  case "$line" in *"$name"*"crashed in $stage"*) ;; *) fail "$name: mi-run said '$line'" ;; esac
  [ ! -s "$T/out" ] || fail "$name: mi-run wrote to stdout"
  echo "hostile_flaky: $name: ok"
done
echo "hostile_flaky: ok"

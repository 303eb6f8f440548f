#!/usr/bin/env bash
# hostile_run.sh - mi-run over the hostile plugins (tests/plugins/hp_plugin.c): a plugin that
# crashes, hangs, exits or aborts in entry, create, describe, prepare or run ends mi-run with exit
# status 1 and one line on stderr naming the plugin and the step (the plugin's code runs in a
# guarded child, and each plugin passes the preflight first); what a plugin prints never reaches
# mi-run's stdout, so --json stays one JSON object; forged host handles are refused. A device
# time of 0 or beyond the wall clock ends mi-run in one line; --check catches zero-filled outputs.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
run="$MI_BUILD/bin/mi-run"
hostile="$MI_BUILD/tests/plugins/hostile"
fail() { echo "hostile_run: $*" >&2; exit 1; }
export MI_LOAD_TIMEOUT_S=6

mi_relu_add_model 64

for kind in crash hang exit abort; do
  for stage in entry create describe prepare run; do
    name="hostile-$kind-$stage"
    rc=0
    timeout 60 "$run" --plugins "$hostile/$kind-$stage" --model "$T/ra.onnx" --device "$name:0" \
      --json --timeout 3 >"$T/out" 2>"$T/err" || rc=$?
    [ "$rc" = 1 ] || fail "$name: exit $rc, want 1 (stderr: $(tail -3 "$T/err"))"
    [ ! -s "$T/out" ] || fail "$name: stdout not empty: $(head -c 200 "$T/out")"
    line=$(grep '^mi-run: ' "$T/err" || true)
    [ "$(printf '%s\n' "$line" | grep -c .)" = 1 ] || fail "$name: want one mi-run line: $(cat "$T/err")"
    case $kind in
      crash|abort) want="crashed in $stage" ;;
      hang) want="hung in $stage" ;;
      exit) want="exited with status 7 in $stage" ;;
    esac
    case "$line" in *"$name"*"$want"*) ;; *) fail "$name: '$line' does not name the plugin and '$want'" ;; esac
    echo "hostile_run: $name: ok ($line)"
  done
done

# A run that hangs after many quick ones (mi-run reports a repeated step at most every tenth of
# the deadline): still ended as hung in run, within the deadline of its start.
name=hostile-hang-run
t0=$(date +%s)
rc=0
HP_RUNS_BEFORE_FAULT=3000 timeout 60 "$run" --plugins "$hostile/hang-run" --model "$T/ra.onnx" \
  --device "$name:0" --repeat 100000 --timeout 3 >"$T/out" 2>"$T/err" || rc=$?
took=$(($(date +%s) - t0))
[ "$rc" = 1 ] || fail "$name after 3000 runs: exit $rc, want 1 (stderr: $(tail -3 "$T/err"))"
grep -q "^mi-run: .*$name.*hung in run" "$T/err" || fail "$name after 3000 runs: $(cat "$T/err")"
[ "$took" -lt 30 ] || fail "$name after 3000 runs: ended after $took s with a 3 s deadline"
echo "hostile_run: $name after 3000 runs: ok (${took} s)"

# A plugin that prints while it prepares and runs: the output stays mi-run's, the print is logged.
for stage in prepare run; do
  name="hostile-stdout-$stage"
  "$run" --plugins "$hostile/stdout-$stage" --model "$T/ra.onnx" --device "$name:0" --json \
    --output-dir "$T/o-$stage" >"$T/out" 2>"$T/err" || fail "$name: exit $? ($(tail -3 "$T/err"))"
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/out" ||
    fail "$name: stdout is not one JSON object: $(head -c 300 "$T/out")"
  grep -q "writes to stdout" "$T/err" || fail "$name: the plugin's print is not in the log"
  [ -s "$T/o-$stage/y.npy" ] || fail "$name: no output written"
done

# A plugin that calls every host service with forged and NULL handles while it prepares and
# runs: each call is refused with a line in the log, and mi-run finishes.
for stage in prepare run; do
  name="hostile-forged-$stage"
  "$run" --plugins "$hostile/forged-$stage" --model "$T/ra.onnx" --device "$name:0" --json \
    >"$T/out" 2>"$T/err" || fail "$name: exit $? ($(tail -3 "$T/err"))"
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/out" || fail "$name: bad JSON"
  for svc in log alloc free get_setting; do
    grep -q "host service '$svc' with handle .*call refused" "$T/err" || fail "$name: '$svc' not refused"
  done
done

# Liars: a device time of 0 or beyond the wall clock ends mi-run in one line (exit 1), so the
# figure is never reported; zero-filled outputs pass a plain run (nothing checks them: that
# costs a reference run) and fail --check in one line.
for c in zero-time-run neg-time-run wrong-run; do
  name="hostile-$c"
  opt=()
  [ "$c" = wrong-run ] && opt=(--check)
  rc=0
  "$run" --plugins "$hostile/$c" --model "$T/ra.onnx" --device "$name:0" --json --repeat 3 \
    "${opt[@]}" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = 1 ] || fail "$name: exit $rc, want 1 (stderr: $(tail -3 "$T/err"); stdout: $(head -c 200 "$T/out"))"
  [ ! -s "$T/out" ] || fail "$name: stdout not empty: $(head -c 200 "$T/out")"
  line=$(grep '^mi-run: ' "$T/err" || true)
  [ "$(printf '%s\n' "$line" | grep -c .)" = 1 ] || fail "$name: want one mi-run line: $(cat "$T/err")"
  case $c in
    wrong-run) want="device '$name:0': wrong results: relative L2 error 1 " ;;
    *) want="device '$name:0': implausible device time: " ;;
  esac
  case "$line" in *"$want"*) ;; *) fail "$name: '$line' does not say '$want'" ;; esac
  echo "hostile_run: $name: ok ($line)"
done
"$run" --plugins "$hostile/wrong-run" --model "$T/ra.onnx" --device hostile-wrong-run:0 --json \
  >"$T/out" 2>"$T/err" || fail "wrong-run without --check: exit $? ($(tail -3 "$T/err"))"

# The normal path is unchanged: same outputs on blis-cpu as on the reference.
"$run" --plugins "$MI_BUILD/plugins" --model "$T/ra.onnx" --device blis-cpu:0 --json \
  --output-dir "$T/blis" >"$T/out" 2>"$T/err" || fail "blis-cpu: exit $? ($(tail -3 "$T/err"))"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/out" || fail "blis-cpu: bad JSON"
"$run" --model "$T/ra.onnx" --device ref --output-dir "$T/ref" >/dev/null
cmp -s "$T/blis/y.npy" "$T/ref/y.npy" || fail "blis-cpu output differs from the reference's"
# and --check passes it, with the error in the JSON.
"$run" --plugins "$MI_BUILD/plugins" --model "$T/ra.onnx" --device blis-cpu:0 --json --check \
  >"$T/out" 2>"$T/err" || fail "blis-cpu --check: exit $? ($(tail -3 "$T/err"))"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["check_max_error"] <= 0.05, d' "$T/out" ||
  fail "blis-cpu --check: $(head -c 300 "$T/out")"

# A refused plugin is one line naming it; an unknown one lists what was found.
rc=0
"$run" --plugins "$hostile/crash-create" --model "$T/ra.onnx" --device nosuch:0 >/dev/null 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "no plugin 'nosuch' (found: hostile-crash-create)" "$T/err" ||
  fail "unknown plugin: exit $rc: $(cat "$T/err")"
echo "hostile_run: ok"

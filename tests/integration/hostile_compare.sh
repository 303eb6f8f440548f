#!/usr/bin/env bash
# hostile_compare.sh - `mi-host compare` on a hostile plugin's device (tests/plugins/hp_plugin.c:
# crash, hang, exit, abort, stdout, forged handle at entry, create, describe, prepare, run,
# check_config and destroy): the host survives each, says why in one line (or, with --json, in
# the one JSON object's "failure"), and no plugin code runs in it: the descriptions come from a
# sacrificial worker, the prepare probes and check_config questions from the device's worker.
# Then the liars (wrong outputs, zero and negative device time: the configuration is refused by
# number and name), the flaky plugins and the leaked thread; and compare on blis-cpu with every
# hostile plugin on the path still works.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
host="$MI_BUILD/bin/mi-host"
hostile="$MI_BUILD/tests/plugins/hostile"
fail() { echo "hostile_compare: $*" >&2; exit 1; }
export MI_LOAD_TIMEOUT_S=6

mi_relu_add_model
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

# Liars: compare checks each configuration's outputs against the reference in its first
# measurement and every device time against the wall clock, and refuses the configuration by
# its number and name. The flaky plugins pass the host's load (described in a sacrificial child)
# and crash in every later load (the workers'): one reason, never a host crash. The plugin with
# a leaked thread is compared as usual, and the host ends cleanly (3 times).
liar() { # CASE WANT
  local c=$1 rc=0
  timeout 120 "$host" --plugins "$hostile/$c" compare --device "hostile-$c:0" "${args[@]}" --json \
    >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = 1 ] || fail "$c: exit $rc, want 1 (stderr: $(tail -3 "$T/err"))"
  python3 - "$T/out" "$c" "$2" <<'PY2' || fail "$c: $(head -c 400 "$T/out")"
import json, re, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is False, d
why = d["failure"]
assert "\n" not in why and re.search(sys.argv[3], why), f"{sys.argv[2]}: '{why}'"
assert all("median_ms" not in c for c in d["configs"]) or d["rounds"] == 0, d["configs"]
print(f"hostile_compare: {sys.argv[2]}: ok ({why})")
PY2
}
liar wrong-run '^configuration \[[01]\] \(default\) refused: wrong results: relative L2 error'
liar zero-time-run '^configuration \[[01]\] \(default\) refused: implausible device time: 0 ns'
liar neg-time-run '^configuration \[[01]\] \(default\) refused: implausible device time: '
for stage in entry create describe; do
  export HP_COUNT_FILE="$T/count-$stage"
  rm -f "$HP_COUNT_FILE"
  rc=0
  timeout 120 "$host" --plugins "$hostile/flaky-$stage" compare --device "hostile-flaky-$stage:0" \
    "${args[@]}" --json >"$T/out" 2>"$T/err" || rc=$?
  unset HP_COUNT_FILE
  [ "$rc" = 1 ] || [ "$rc" = 2 ] || fail "flaky-$stage: exit $rc, want 1 or 2 ($(tail -3 "$T/err"))"
  if [ -s "$T/out" ]; then
    why=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] is False; print(d["failure"])' \
      "$T/out") || fail "flaky-$stage: stdout is not one JSON object with a failure: $(head -c 300 "$T/out")"
  else
    [ "$(grep -c '^mi-host: compare: ' "$T/err")" = 1 ] || fail "flaky-$stage: want one 'mi-host: compare:' line: $(cat "$T/err")"
    why=$(grep '^mi-host: compare: ' "$T/err")
  fi
  printf '%s' "$why" | grep -q 'crash' || fail "flaky-$stage: '$why' does not say it crashed"
  echo "hostile_compare: flaky-$stage: ok ($why)"
done
for i in 1 2 3; do
  rc=0
  "$host" --plugins "$hostile/thread-create" compare --device hostile-thread-create:0 "${args[@]}" \
    --json >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = 0 ] || fail "thread-create round $i: exit $rc ($(tail -3 "$T/err"))"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] is True and d["rounds"] == 2, d' \
    "$T/out" || fail "thread-create round $i: $(head -c 300 "$T/out")"
done
echo "hostile_compare: thread-create: ok (3 rounds)"

# The healthy device, with every hostile plugin on the path: compared as usual.
dirs=$(ls -d "$hostile"/*/ | tr '\n' ':')
MI_PLUGIN_PATH=$dirs "$host" --plugins "$MI_BUILD/plugins" compare --device blis-cpu:0 "${args[@]}" \
  --json >"$T/out" 2>"$T/err" || fail "blis-cpu: exit $? ($(tail -3 "$T/err"))"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] is True, d' "$T/out" ||
  fail "blis-cpu: $(head -c 300 "$T/out")"
echo "hostile_compare: ok"

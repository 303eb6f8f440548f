#!/usr/bin/env bash
# device_check.sh - tools/bench/device_check.sh end to end on a zoo model, on whatever OpenCL and
# Vulkan devices the machine has (PoCL and lavapipe on a CPU-only one): its summary lists the
# model for each plugin with a --check error and a time, the conformance lines say passed, and a
# missing --model file is refused with exit 2 and one line. Skipped (77) without such a device.
set -euo pipefail
: "${MI_BUILD:?}" "${MI_SRC:?}"
source "$(dirname "$0")/lib.bash"
fail() { echo "device_check: $*" >&2; exit 1; }

plugins=""
for p in opencl vulkan; do
  "$B/bin/mi-host" --json plugins 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if any(p.get('name') == '$p' and p.get('devices') for p in d.get('plugins', [])) else 1)" &&
    plugins="$plugins $p"
done
[ -n "$plugins" ] || { echo "device_check: no OpenCL or Vulkan device"; exit 77; }

"$ZOO" mlp --out "$T/mlp.onnx" >/dev/null
MI_MODEL_DIR="$T/none" "$MI_SRC/tools/bench/device_check.sh" "$B" "$T/out" --plugins "${plugins# }" \
  --model "$T/mlp.onnx" --tune '' --minutes 3 --repeat 3 --jobs 2 >"$T/log" 2>&1 || fail "exit $?: $(tail -n 3 "$T/log")"
sum="$T/out/summary.md"
[ -s "$sum" ] || fail "no summary.md"
for p in $plugins; do
  grep -q "^conformance $p: .*summary: [0-9]* passed, 0 failed" "$sum" || fail "$p conformance: $(grep "conformance $p" "$sum")"
done
row=$(grep '^| mlp |' "$sum") || fail "no row for mlp: $(cat "$sum")"
# model, one --check error per plugin, one time per plugin and blis-cpu: all numbers
n=$(echo "$row" | tr '|' '\n' | sed 's/^ *//; s/ *$//' | grep -cE '^[0-9.e+-]+( \([0-9.]+\))?$' || true)
want=$(( $(echo $plugins | wc -w) * 2 + 1 ))
[ "$n" -eq "$want" ] || fail "want $want numbers in the mlp row, got $n: $row"

set +e
"$MI_SRC/tools/bench/device_check.sh" "$B" "$T/out2" --model "$T/missing.onnx" >/dev/null 2>"$T/err"
rc=$?
set -e
[ "$rc" -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "missing.onnx" "$T/err" ||
  fail "a missing --model: want exit 2 and one line naming it, got $rc: $(cat "$T/err")"
echo "device_check: ok (${plugins# })"

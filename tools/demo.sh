#!/usr/bin/env bash
# make demo: generate a zoo model, list the plugins that load on this machine, run the model on
# the reference interpreter and on every device, and compare each device's outputs to the
# reference.
set -euo pipefail
BUILD=${1:-build}
BIN="$BUILD/bin"
PLUGINS="$BUILD/plugins"
OUT="$BUILD/demo"
mkdir -p "$OUT"

say() { printf '\n== %s\n' "$*"; }

say "Plugins in $PLUGINS"
"$BIN/mi-host" --plugins "$PLUGINS" plugins || true

MODEL="$OUT/mobilenetv2.onnx"
say "Generating a MobileNetV2-like model: $MODEL"
"$BIN/mi-zoo" mobilenetv2 --out "$MODEL" --width 0.5 --resolution 96 --seed 1

say "Reference interpreter"
"$BIN/mi-run" --plugins "$PLUGINS" --model "$MODEL" --device ref --output-dir "$OUT/ref" --repeat 3

devices=$("$BIN/mi-host" --plugins "$PLUGINS" plugins --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
for p in d.get("plugins", []):
    for i, _ in enumerate(p.get("devices", [])):
        print("%s:%d" % (p["name"], i))')

for dev in $devices; do
  say "Device $dev"
  dir="$OUT/$(echo "$dev" | tr ':' '_')"
  if "$BIN/mi-run" --plugins "$PLUGINS" --model "$MODEL" --device "$dev" --output-dir "$dir" \
      --repeat 5; then
    python3 "$(dirname "$0")/npy_compare.py" "$OUT/ref" "$dir" || true
  else
    echo "(device $dev could not run the model; see the message above)"
  fi
done

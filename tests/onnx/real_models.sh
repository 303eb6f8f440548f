#!/bin/bash
# real_models.sh - every real exported model present in the cache (tools/models/fetch.sh)
# imports and runs on the reference interpreter through mi-run with finite outputs; models
# known to need unsupported control flow (Silero VAD: If) must fail cleanly with exit 2 and
# one line naming the op. Exit 77 (skipped) when no model is present.
set -u
models="${MI_MODEL_DIR:-$HOME/.cache/metainfer/models}"
run="$MI_BUILD/bin/mi-run"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
found=0
fail=0

finite() { # DIR: every .npy there is float32 and finite, and at least one exists
  python3 - "$1" <<'PY'
import math, os, struct, sys
d = sys.argv[1]; files = [f for f in os.listdir(d) if f.endswith(".npy")]
if not files: sys.exit("no outputs written")
for f in files:
    b = open(os.path.join(d, f), "rb").read(); hl = struct.unpack("<H", b[8:10])[0]
    h = b[10:10 + hl].decode("latin1"); body = b[10 + hl:]
    if "'<f4'" not in h: sys.exit(f"{f}: not float32")
    v = struct.unpack("<%df" % (len(body) // 4), body)
    if not v or not all(math.isfinite(x) for x in v): sys.exit(f"{f}: empty or not finite")
    print(f"  {f}: {len(v)} finite values, min {min(v):.4g} max {max(v):.4g}")
PY
}

check_runs() { # NAME FILE [mi-run args...]
  local name="$1" file="$models/$2"; shift 2
  [ -f "$file" ] || return 0
  found=$((found + 1))
  mkdir -p "$tmp/$name"
  if ! "$run" --model "$file" --device ref --output-dir "$tmp/$name" "$@" >"$tmp/$name.log" 2>&1; then
    echo "FAIL $name: mi-run failed: $(tail -n 1 "$tmp/$name.log")"; fail=1; return
  fi
  if ! finite "$tmp/$name"; then echo "FAIL $name: bad outputs"; fail=1; return; fi
  echo "ok   $name"
}

check_refused() { # NAME FILE OP: exit 2, one line on stderr naming OP
  local name="$1" file="$models/$2" op="$3"
  [ -f "$file" ] || return 0
  found=$((found + 1))
  "$run" --model "$file" --device ref >/dev/null 2>"$tmp/$name.err"
  local rc=$?
  if [ "$rc" -ne 2 ] || [ "$(wc -l <"$tmp/$name.err")" -ne 1 ] || ! grep -q "($op" "$tmp/$name.err"; then
    echo "FAIL $name: want exit 2 and one line naming $op, got $rc: $(cat "$tmp/$name.err")"; fail=1; return
  fi
  echo "ok   $name refused cleanly: $(cat "$tmp/$name.err")"
}

check_runs oww-hello-deepa oww_hello_deepa.onnx
check_runs ppocr-v2-cls ppocr_v2_cls.onnx --shape x=1,3,48,192
check_runs ppocr-v4-det ppocr_v4_det.onnx --shape x=1,3,64,96
check_runs ppocr-v4-rec ppocr_v4_rec.onnx --shape x=1,3,48,96
check_refused silero-vad-v4 silero_vad_v4.onnx If
check_refused silero-vad-v5 silero_vad_v5.onnx If

# A truncated real model is a clean parse error too.
if [ -f "$models/ppocr_v2_cls.onnx" ]; then
  head -c 100000 "$models/ppocr_v2_cls.onnx" >"$tmp/trunc.onnx"
  "$run" --model "$tmp/trunc.onnx" --device ref --shape x=1,3,48,192 >/dev/null 2>"$tmp/trunc.err"
  rc=$?
  if [ "$rc" -ne 2 ] || [ "$(wc -l <"$tmp/trunc.err")" -ne 1 ]; then
    echo "FAIL truncated model: exit $rc: $(cat "$tmp/trunc.err")"; fail=1
  else
    echo "ok   truncated model: $(cat "$tmp/trunc.err")"
  fi
fi

if [ "$found" -eq 0 ]; then
  echo "SKIP: no real model in $models (run tools/models/fetch.sh)"
  exit 77
fi
exit $fail

#!/bin/bash
# real_models.sh - every real exported model present in the cache (tools/models/fetch.sh)
# imports and runs on the reference interpreter through mi-run with finite outputs (Silero VAD
# v4-v6 through their If subgraphs and LSTM, at both sample rates, and v6's If-less export, which
# must give v6's outputs; BlazeFace and M-LSD; Moonshine tiny's speech encoder, and its merged
# decoder at a cached step on blis-cpu against the reference); a
# truncated model fails cleanly with exit 2 and one line. Exit 77 (skipped) when no model is
# present.
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
  if ! finite "$tmp/$name" >"$tmp/$name.out"; then
    echo "FAIL $name: bad outputs: $(tail -n 1 "$tmp/$name.out")"; fail=1; return
  fi
  cat "$tmp/$name.out"
  echo "ok   $name"
}

want_count() { # NAME FILE.npy N: the run of NAME (if any) wrote N values to FILE.npy
  [ -f "$tmp/$1.out" ] || return 0
  if ! grep -q "^  $2: $3 finite values" "$tmp/$1.out"; then
    echo "FAIL $1: want $3 values in $2"; fail=1
  fi
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
# openWakeWord's front end: mel spectrogram (PyTorch) and the speech embedding (tf2onnx) with
# a dynamic batch of 2: [2,76,32,1] (NHWC) -> [2,1,1,96].
check_runs oww-melspectrogram oww_melspectrogram.onnx --shape input=1,1280
want_count oww-melspectrogram output.npy 160
check_runs oww-embedding oww_embedding.onnx --shape input_1=2,76,32,1
want_count oww-embedding conv2d_19.npy 192
check_runs ppocr-v2-cls ppocr_v2_cls.onnx --shape x=1,3,48,192
check_runs ppocr-v4-det ppocr_v4_det.onnx --shape x=1,3,64,96
check_runs ppocr-v4-rec ppocr_v4_rec.onnx --shape x=1,3,48,96
# tf2onnx detectors with channels-last inputs: BlazeFace (896 anchors: 16 box values and one
# score each at 128x128 front / 256x256 back) and M-LSD tiny (160x160 maps from 320x320 RGBA).
check_runs blazeface-front blazeface_front.onnx
want_count blazeface-front Identity_2_0.npy 8192
check_runs blazeface-back blazeface_back.onnx
want_count blazeface-back Identity_3_0.npy 6144
check_runs mlsd-tiny-320 mlsd_tiny_320.onnx
want_count mlsd-tiny-320 scores.npy 25600
want_count mlsd-tiny-320 offsets.npy 102400
# Moonshine tiny's quantized speech encoder (rotary positions: Range, Cos and Sin folded from the
# input's shape), 1 s of audio: 40 frames of 288.
check_runs moonshine-tiny-enc moonshine_tiny_enc.onnx --shape input_values=1,16000
want_count moonshine-tiny-enc last_hidden_state.npy 11520
# Silero VAD's sample rate picks the If branch: 16 kHz and 8 kHz windows, zero state.
npy() { # FILE DESCR SHAPE FMT VALUE
  python3 - "$@" <<'PY'
import struct, sys
f, descr, shape, fmt, v = sys.argv[1:6]
dims = [int(x) for x in shape.split(",") if x]
n = 1
for d in dims: n *= d
sh = "()" if not dims else "(%s,)" % dims[0] if len(dims) == 1 else "(%s)" % ", ".join(map(str, dims))
h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, sh)
h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
body = struct.pack("<%d%s" % (n, fmt), *([float(v) if fmt == "f" else int(v)] * n))
open(f, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + body)
PY
}
for sr in 16000 8000; do
  win=$((sr / 16000 * 256 + 256))
  npy "$tmp/x$sr.npy" '<f4' "1,$win" f 0.25
  npy "$tmp/sr$sr.npy" '<i8' "" q "$sr"
  npy "$tmp/h.npy" '<f4' "2,1,64" f 0
  npy "$tmp/s.npy" '<f4' "2,1,128" f 0
  check_runs "silero-vad-v4-$sr" silero_vad_v4.onnx --input "input=$tmp/x$sr.npy" \
    --input "sr=$tmp/sr$sr.npy" --input "h=$tmp/h.npy" --input "c=$tmp/h.npy"
  check_runs "silero-vad-v5-$sr" silero_vad_v5.onnx --input "input=$tmp/x$sr.npy" \
    --input "sr=$tmp/sr$sr.npy" --input "state=$tmp/s.npy"
  check_runs "silero-vad-v6-$sr" silero_vad_v6.onnx --input "input=$tmp/x$sr.npy" \
    --input "sr=$tmp/sr$sr.npy" --input "state=$tmp/s.npy"
  check_runs "silero-vad-v6-ifless-$sr" silero_vad_v6_ifless.onnx --input "input=$tmp/x$sr.npy" \
    --input "sr=$tmp/sr$sr.npy" --input "state=$tmp/s.npy"
done

# Moonshine tiny's merged decoder (one If over the whole decoder) on blis-cpu at a cached step
# (8 positions, 40 encoder frames), checked against the reference interpreter by mi-run --check:
# its self-attention caches come back one position longer, [1,8,9,36], although the create-time
# probe (zero inputs: the uncached branch) saw [1,8,1,36].
if [ -f "$models/moonshine_tiny_dec.onnx" ]; then
  found=$((found + 1))
  npy "$tmp/ids.npy" '<i8' "1,1" q 100
  npy "$tmp/enc.npy" '<f4' "1,40,288" f 0.1
  npy "$tmp/pd.npy" '<f4' "1,8,8,36" f 0.05
  npy "$tmp/pe.npy" '<f4' "1,8,40,36" f 0.05
  npy "$tmp/cached.npy" '|b1' "1" B 1
  dargs=(--input "input_ids=$tmp/ids.npy" --input "encoder_hidden_states=$tmp/enc.npy"
         --input "use_cache_branch=$tmp/cached.npy")
  for l in 0 1 2 3 4 5; do
    for kv in key value; do
      dargs+=(--input "past_key_values.$l.decoder.$kv=$tmp/pd.npy"
              --input "past_key_values.$l.encoder.$kv=$tmp/pe.npy")
    done
  done
  if ! "$run" --model "$models/moonshine_tiny_dec.onnx" --device blis-cpu:0 --check \
      --output-dir "$tmp/dec" "${dargs[@]}" >"$tmp/dec.log" 2>&1; then
    echo "FAIL moonshine-tiny-dec: mi-run on blis-cpu failed: $(tail -n 1 "$tmp/dec.log")"; fail=1
  elif ! head -c 128 "$tmp/dec/present.5.decoder.value.npy" | grep -q "(1, 8, 9, 36)"; then
    echo "FAIL moonshine-tiny-dec: present.5.decoder.value is not [1,8,9,36]"; fail=1
  else
    echo "ok   moonshine-tiny-dec (cached step on blis-cpu: $(grep '^check' "$tmp/dec.log"))"
  fi
fi

# The If-less export holds the v6 weights: on the same 16 kHz window and state its outputs are
# v6's. (Its 8 kHz branch is not v6's: the two files differ there on ONNX Runtime too.)
a="$tmp/silero-vad-v6-16000" b="$tmp/silero-vad-v6-ifless-16000"
if [ -f "$a/output.npy" ] && [ -f "$b/output.npy" ]; then
  if python3 - "$a" "$b" <<'PY'; then echo "ok   silero-vad-v6-ifless-16000 agrees with v6"; else fail=1; fi
import math, struct, sys
def load(p):
    b = open(p, "rb").read()
    hl = struct.unpack("<H", b[8:10])[0]
    return struct.unpack("<%df" % ((len(b) - 10 - hl) // 4), b[10 + hl:])
for f in ("output.npy", "stateN.npy"):
    x, y = load(sys.argv[1] + "/" + f), load(sys.argv[2] + "/" + f)
    rel = math.sqrt(sum((p - q) ** 2 for p, q in zip(x, y))) / (math.sqrt(sum(p * p for p in x)) or 1)
    if len(x) != len(y) or rel > 1e-5:
        sys.exit(f"FAIL silero-vad-v6-ifless {f}: relative L2 {rel:.3g} from v6")
PY
fi

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

#!/bin/bash
# compare.sh - runs zoo models and the fetched real models on Meta Infer's reference
# interpreter (mi-run --device ref) and on ONNX Runtime's CPU provider (ort_run.js) with the
# same inputs, and prints the relative L2 error of every output (target <= 1e-4).
# A benchmark-style check, not a test. Needs tools/ort/setup.sh and a build.
# usage: tools/ort/compare.sh [BUILD_DIR]   (env MI_MODEL_DIR: the fetch.sh cache;
#        MI_COMPARE_ONLY=REGEX: only the comparisons whose name matches, e.g. 'oww|ppocr';
#        MI_COMPARE_DEVICE=DEV: run mi-run on DEV instead of ref, e.g. blis-cpu:0)
set -uo pipefail
. "$(dirname "$0")/common.sh" compare.sh mi-run "$@"

worst=0
fails=0
# name model.onnx [--peaks OUT] [gen_inputs.js args: NAME=D0,D1,... for dynamic dims, --image...]
# --peaks OUT: output OUT keeps only local maxima (x * (x == MaxPool(x)), a detector's built-in
# peak picking); a float tie between neighbours flips an element there whenever two runtimes
# round differently, so OUT passes when 99.5% of its elements agree within 1e-4 of its largest
# value, and its relative L2 is printed for information.
compare() {
  local name="$1" model="$2"; shift 2
  local d="$tmp/$name" args=() peaks=""
  if [ "${1:-}" = --peaks ]; then peaks="$2.npy"; shift 2; fi
  [[ -z "${MI_COMPARE_ONLY:-}" || "$name" =~ ${MI_COMPARE_ONLY} ]] || return 0
  mkdir -p "$d/mi" "$d/ort"
  if ! mapfile -t ins < <(node "$here/gen_inputs.js" "$model" "$d/in" "$@"); then
    echo "$name: cannot make inputs"; fails=$((fails + 1)); return
  fi
  for i in "${ins[@]}"; do args+=(--input "$i"); done
  if ! node "$here/ort_run.js" --model "$model" "${args[@]}" --output-dir "$d/ort" >/dev/null; then
    echo "$name: onnxruntime failed"; fails=$((fails + 1)); return
  fi
  if ! "$build/bin/mi-run" --model "$model" --device "${MI_COMPARE_DEVICE:-ref}" "${args[@]}" --output-dir "$d/mi" >/dev/null; then
    echo "$name: mi-run failed"; fails=$((fails + 1)); return
  fi
  python3 - "$d/ort" "$d/mi" "$name" "$peaks" <<'PY' || fails=$((fails + 1))
import math, os, struct, sys
def load(p):
    b = open(p, "rb").read()
    hl = struct.unpack("<H", b[8:10])[0] if b[6] == 1 else struct.unpack("<I", b[8:12])[0]
    st = 10 if b[6] == 1 else 12
    h = b[st:st + hl].decode("latin1"); body = b[st + hl:]
    for key, fmt, size in (("<f4", "f", 4), ("<i8", "q", 8), ("<i4", "i", 4), ("|b1", "B", 1), ("|u1", "B", 1)):
        if key in h:
            return struct.unpack("<%d%s" % (len(body) // size, fmt), body)
    raise SystemExit(f"{p}: dtype not compared")
ort_dir, mi_dir, name, peaks = sys.argv[1:5]
bad = 0
for f in sorted(os.listdir(ort_dir)):
    a = load(os.path.join(ort_dir, f)); m = os.path.join(mi_dir, f)
    if not os.path.exists(m):
        print(f"{name} {f}: missing from mi-run"); bad = 1; continue
    b = load(m)
    if len(a) != len(b):
        print(f"{name} {f}: {len(a)} vs {len(b)} elements"); bad = 1; continue
    num = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    den = math.sqrt(sum(x * x for x in a)) or 1.0
    rel = num / den
    if f == peaks:
        tol = 1e-4 * max(abs(x) for x in a)
        agree = sum(abs(x - y) <= tol for x, y in zip(a, b)) / len(a)
        print(f"{name} {f}: {len(a)} values, peaks agree {agree:.2%} (relative L2 {rel:.3g}) {'ok' if agree >= 0.995 else 'BELOW 99.5%'}")
        bad |= agree < 0.995
        continue
    print(f"{name} {f}: {len(a)} values, relative L2 {rel:.3g} {'ok' if rel <= 1e-4 else 'ABOVE 1e-4'}")
    bad |= rel > 1e-4
sys.exit(bad)
PY
}

for fam in $("$build/bin/mi-zoo" --list | awk '{print $1}'); do
  [[ -z "${MI_COMPARE_ONLY:-}" || "zoo-$fam" =~ ${MI_COMPARE_ONLY} ]] || continue
  "$build/bin/mi-zoo" "$fam" --out "$tmp/$fam.onnx" >/dev/null 2>&1 || { echo "zoo $fam: mi-zoo failed"; continue; }
  compare "zoo-$fam" "$tmp/$fam.onnx"
done

# Real exported models (tools/models/fetch.sh), with small inputs for their dynamic dims.
real() { [ -f "$models/$2" ] && compare "$1" "$models/$2" "${@:3}"; }
real oww-hello-deepa oww_hello_deepa.onnx
# openWakeWord's front end: mel spectrogram (PyTorch) and speech embedding (tf2onnx, NHWC).
real oww-melspectrogram oww_melspectrogram.onnx input=1,1280
real oww-embedding oww_embedding.onnx input_1=3,76,32,1
real ppocr-v2-cls ppocr_v2_cls.onnx --image x=1,3,48,192
real ppocr-v4-det ppocr_v4_det.onnx --image x=1,3,96,128
real ppocr-v4-rec ppocr_v4_rec.onnx --image x=1,3,48,160
# Silero VAD: If/Loop subgraphs and LSTM; one 32 ms window at 16 kHz with random state.
real silero-vad-v4 silero_vad_v4.onnx input=1,512 h=2,1,64 c=2,1,64 --value sr=16000
real silero-vad-v5 silero_vad_v5.onnx input=1,512 state=2,1,128 --value sr=16000
real silero-vad-v4-8k silero_vad_v4.onnx input=1,256 h=2,1,64 c=2,1,64 --value sr=8000
real silero-vad-v5-8k silero_vad_v5.onnx input=1,256 state=2,1,128 --value sr=8000
real silero-vad-v6 silero_vad_v6.onnx input=1,512 state=2,1,128 --value sr=16000
real silero-vad-v6-8k silero_vad_v6.onnx input=1,256 state=2,1,128 --value sr=8000
# The v6 weights exported without the LSTM op (PyTorch 2.9, opset 18): Gemm/Split/Sigmoid/Tanh.
real silero-vad-v6-ifless silero_vad_v6_ifless.onnx input=1,512 state=2,1,128 --value sr=16000
real silero-vad-v6-ifless-8k silero_vad_v6_ifless.onnx input=1,256 state=2,1,128 --value sr=8000
# tf2onnx detectors with channels-last inputs at their fixed sizes: BlazeFace (face boxes and
# scores) and M-LSD (line segments from an RGBA image).
real blazeface-front blazeface_front.onnx --image
real blazeface-back blazeface_back.onnx --image
real mlsd-tiny-320 mlsd_tiny_320.onnx --peaks scores --image

# Scan from ONNX's own node tests (Debian's libonnx-testdata, when installed): opset 9 and 8.
onnx_td=/usr/share/libonnx-testdata/data/node
for t in test_scan9_sum test_scan_sum; do
  [ -f "$onnx_td/$t/model.onnx" ] && compare "onnx-${t#test_}" "$onnx_td/$t/model.onnx"
done

# Sequence ops from ONNX's simple model tests (libonnx-testdata): lowered at load (docs/onnx.md).
# Not 7 (double inputs, which gen_inputs.js writes as float) nor 8 (split sizes as an input,
# which must add up to the axis: random ones do not).
onnx_simple=/usr/share/libonnx-testdata/data/simple
for k in 1 2 3 4 5 6; do
  m="$onnx_simple/test_sequence_model$k/model.onnx"
  [ -f "$m" ] && compare "onnx-sequence_model$k" "$m"
done

echo "compare.sh: $fails model(s) failed or above 1e-4"
[ "$fails" -eq 0 ]

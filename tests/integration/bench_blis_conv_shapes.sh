#!/usr/bin/env bash
# bench_blis_conv_shapes.sh - tools/bench/blis/bench_blis_conv takes KHxKW kernels and pad=P: the
# 1-D convs of audio models over planes of a few pixels (silero-vad's 1 -> 258 kernel 256 stride
# 128 on 576 samples: 3 outputs; a kernel-3 stride-2 conv on 3 samples: 2) print their output
# shape and time every SIMD level; a kernel past the padded plane and a bad pad are refused.
set -euo pipefail
: "${MI_BUILD:?}"
fail() { echo "bench_blis_conv_shapes: $*" >&2; exit 1; }
b="$MI_BUILD/bin/bench_blis_conv"
[ -x "$b" ] || { echo "bench_blis_conv not built"; exit 77; }

out=$("$b" "$MI_BUILD" 1 1x576 20 1x256 128 1 1 3 pad=0) || fail "1x256 stride 128 exited $?"
grep -q '^conv 1x1x576 -> 20x1x3 k1x256 s128 ' <<<"$out" || fail "1x256 stride 128: $out"
grep -q '^  auto .* GFLOP/s' <<<"$out" || fail "no timing line: $out"

out=$("$b" "$MI_BUILD" 8 1x3 16 1x3 2 1 1 3 pad=1) || fail "1x3 stride 2 pad 1 exited $?"
grep -q '^conv 8x1x3 -> 16x1x2 k1x3 s2 ' <<<"$out" || fail "1x3 stride 2 pad 1: $out"

# the square form and the "same" padding as before: 3x3 on 5x5 stays 5x5
out=$("$b" "$MI_BUILD" 4 5 8 3 1 1 1 3) || fail "3x3 exited $?"
grep -q '^conv 4x5x5 -> 8x5x5 k3x3 s1 ' <<<"$out" || fail "3x3 same padding: $out"

rc=0
"$b" "$MI_BUILD" 1 1x8 4 1x16 1 1 1 3 pad=0 >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a kernel past the plane exited $rc (want 2)"
rc=0
"$b" "$MI_BUILD" 1 1x8 4 1x3 1 1 1 3 pad=-1 >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "pad=-1 exited $rc (want 2)"
echo "bench_blis_conv_shapes: ok"

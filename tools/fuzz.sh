#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS]: builds the libFuzzer targets with clang (build-fuzz/) and runs each
# for SECONDS (default 60) on a copy of its seed corpus. New crashes are left in build-fuzz/.
set -euo pipefail
SECS=${1:-60}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B="$ROOT/build-fuzz"
CC=clang cmake -S "$ROOT" -B "$B" -DMI_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$B" -j"$(nproc)" --target fuzz-onnx fuzz-npy fuzz-manifest
status=0
for t in onnx npy manifest; do
  work="$B/corpus-$t"
  mkdir -p "$work"
  cp -n "$ROOT/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  echo "== fuzz-$t for ${SECS}s"
  if ! (cd "$B" && ASAN_OPTIONS=detect_leaks=1 "$B/bin/fuzz-$t" -max_total_time="$SECS" \
        -max_len=65536 -print_final_stats=1 "$work" 2>&1 | tail -12); then
    status=1
  fi
done
exit $status

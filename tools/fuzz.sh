#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS] [TARGET...]: builds the libFuzzer targets with clang (build-fuzz/) and
# runs each for SECONDS (default 60) on a copy of its seed corpus (tests/fuzz/corpus/<name>).
# Any crash, leak or UBSan report fails the run; the input is left in build-fuzz/artifacts-<name>/.
# MI_FUZZ_CI=1 (what .ci/run uses): seed 1 and a fixed number of executions per target instead
# of a time, on a fresh copy of the seed corpus, so CI's run does the same amount of work on
# any machine and `MI_FUZZ_CI=1 tools/fuzz.sh` runs the same here. libFuzzer's exploration is
# still not bit-for-bit repeatable (two such runs of npy added 902 and 1000 inputs).
# docs/fuzzing.md: targets, figures of the long campaign, how to reproduce a finding.
set -euo pipefail
SECS=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(onnx npy manifest recipe xfconfig history deploy)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${MI_FUZZ_BUILD:-$ROOT/build-fuzz}
# Executions per target in CI mode: about 30-45 s each on the 2-core CI machine (rates measured
# there, docs/fuzzing.md); history is slow because each input opens an SQLite store.
declare -A CI_RUNS=([onnx]=3000000 [npy]=15000000 [manifest]=2500000 [recipe]=1500000
                    [xfconfig]=1200000 [history]=20000 [deploy]=1200000)
CI=${MI_FUZZ_CI:-0}
# UBSan reports must stop the run like ASan ones, or they scroll by unnoticed.
CC=clang cmake -S "$ROOT" -B "$B" -DMI_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS="-fno-sanitize-recover=undefined" >/dev/null
cmake --build "$B" -j"${JOBS:-$(nproc)}" --target "${TARGETS[@]/#/fuzz-}"
status=0
for t in "${TARGETS[@]}"; do
  work="$B/corpus-$t"
  art="$B/artifacts-$t"
  if [ "$CI" = 1 ]; then
    # A fixed budget of executions from the seed corpus alone, seed 1.
    rm -rf "$work"
    limit=(-runs="${CI_RUNS[$t]}" -seed="${MI_FUZZ_SEED:-1}")
    echo "== fuzz-$t for ${CI_RUNS[$t]} executions (seed ${MI_FUZZ_SEED:-1})"
  else
    # -seed: MI_FUZZ_SEED (0, the default, lets libFuzzer pick one).
    limit=(-max_total_time="$SECS" -seed="${MI_FUZZ_SEED:-0}")
    echo "== fuzz-$t for ${SECS}s"
  fi
  mkdir -p "$work" "$art"
  cp -n "$ROOT/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  # -timeout: one input taking 10 s is a hang worth reporting; -rss_limit_mb: a parser that
  # allocates a GiB for a small file is a finding too.
  if ! (cd "$B" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$B/bin/fuzz-$t" "${limit[@]}" -max_len=65536 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art/" "$work" \
        >"$B/fuzz-$t.log" 2>&1); then
    status=1
    echo "fuzz-$t FAILED (log: $B/fuzz-$t.log, input in $art/):"
    grep -E "ERROR|runtime error|SUMMARY" "$B/fuzz-$t.log" | head -5 || true
  fi
  grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)" \
    "$B/fuzz-$t.log" || true
  echo "corpus: $(ls "$work" | wc -l) inputs"
done
exit $status

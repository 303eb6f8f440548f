#!/usr/bin/env bash
# bench_blis_attn_steps.sh - tools/bench/blis/bench_blis_attn times each attention step (Q*K^T
# through a Transpose, Q*K^T given K^T, PV, Softmax) at odd sizes, at 1 and 2 threads, and refuses
# an unknown step or a non-positive size (exit 2).
set -euo pipefail
: "${MI_BUILD:?}"
fail() { echo "bench_blis_attn_steps: $*" >&2; exit 1; }
b="$MI_BUILD/bin/bench_blis_attn"
[ -x "$b" ] || { echo "bench_blis_attn not built"; exit 77; }

for s in qk qk-plain pv; do
  out=$("$b" "$MI_BUILD" "$s" 3 37 45 20 5) || fail "$s exited $?"
  grep -q "^$s H 3 M 37 N 45 K 20 threads 1: min .* us, median .* us, .* GFLOP/s" <<<"$out" ||
    fail "$s: $out"
done
out=$("$b" "$MI_BUILD" softmax 2 13 33 7 5 threads=2) || fail "softmax exited $?"
grep -q '^softmax H 2 M 13 N 33 K 7 threads 2: min .* us, median .* us$' <<<"$out" || fail "softmax: $out"

rc=0
"$b" "$MI_BUILD" attn >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "an unknown step exited $rc (want 2)"
rc=0
"$b" "$MI_BUILD" qk 0 5 5 5 >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a zero size exited $rc (want 2)"
echo "bench_blis_attn_steps: ok"

# mi_run_avx2_record.sh - mi-run --json's avx512_in_timed_runs (the kernel's record of AVX-512
# use, /proc/self/task/*/arch_status): always present (true, false or null), and false for
# blis-cpu capped at AVX2 (MI_BLIS_MAX_SIMD=avx2, glibc's AVX-512 string functions off) on a conv
# net and a transformer at 1 and 2 threads: no kernel the cap should exclude runs. The second
# check needs a CPU with AVX-512 and a kernel that keeps the record; skipped elsewhere.
set -euo pipefail
. "${BASH_SOURCE[0]%/*}/lib.bash"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ZOO" resnet --out "$T/cnn.onnx" --width 0.5 --depth 2 --resolution 64 >/dev/null
"$ZOO" transformer --out "$T/tf.onnx" --width 1 --depth 2 --resolution 32 >/dev/null
field() { python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["avx512_in_timed_runs"]))' "$1"; }

"$RUN" --model "$T/cnn.onnx" --device ref --repeat 2 --json > "$T/ref.json" || fail "mi-run on ref"
case "$(field "$T/ref.json")" in true | false | null) ;; *) fail "avx512_in_timed_runs: $(field "$T/ref.json")" ;; esac

flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
case " $flags " in *" avx512f "*) ;; *) echo "no AVX-512 on this CPU: nothing to cap"; exit 77 ;; esac
[ -r /proc/self/arch_status ] && grep -q AVX512_elapsed_ms /proc/self/arch_status ||
  { echo "the kernel keeps no AVX-512 record (arch_status)"; exit 77; }
# (the list read whole first: grep -q closing the pipe early would fail it under pipefail)
plugins=$("${H[@]}" plugins 2>/dev/null || true)
grep -q '^plugin blis-cpu ' <<<"$plugins" || { echo "no blis-cpu plugin"; exit 77; }

for m in cnn tf; do
  for t in 1 2; do
    MI_BLIS_MAX_SIMD=avx2 GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD \
      "$RUN" --model "$T/$m.onnx" --device blis-cpu:0 --threads $t --repeat 30 --json > "$T/cap.json" ||
      fail "mi-run $m at AVX2, $t thread(s)"
    [ "$(field "$T/cap.json")" = false ] ||
      fail "$m at MI_BLIS_MAX_SIMD=avx2, $t thread(s): the kernel recorded AVX-512 in the timed runs"
  done
done
echo "blis-cpu capped at AVX2: no AVX-512 in the timed runs (conv net, transformer; 1 and 2 threads)"

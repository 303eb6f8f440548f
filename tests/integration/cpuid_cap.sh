#!/usr/bin/env bash
# cpuid_cap.sh - the cpuid_cap preload library (tools/bench/real/cpuid_cap.c, what run.py's
# AVX2-capped ONNX Runtime column runs under) makes cpuid report no AVX-512, AVX-VNNI or AMX, keeps
# AVX2 and FMA, hands every other SIGSEGV to the program's handler or the default action, and
# leaves the process uncapped (saying so) where CPUID faulting is missing. Skipped on a CPU
# without AVX-512 (nothing to cap) or without CPUID faulting (/proc/cpuinfo flag cpuid_fault).
set -euo pipefail
: "${MI_BUILD:?}"
fail() { echo "cpuid_cap: $*" >&2; exit 1; }
CAP=$MI_BUILD/lib/libmi_cpuid_cap.so
PROBE=$MI_BUILD/bin/cpuid_probe
[ -x "$PROBE" ] && [ -f "$CAP" ] || { echo "cpuid_cap: not built (x86-64 Linux only)"; exit 77; }
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
case " $flags " in *" avx512f "*) ;; *) echo "cpuid_cap: this CPU has no AVX-512, nothing to cap"; exit 77 ;; esac

plain=$("$PROBE")
case "$plain" in *"avx512f=1 "*"avx2=1 fma=1") ;; *) fail "without the library the probe reads '$plain', expected avx512f=1" ;; esac

err=$(mktemp)
trap 'rm -f "$err"' EXIT
case " $flags " in
  *" cpuid_fault "*) ;;
  *)
    # No CPUID faulting: the library must say so and the process keeps its features.
    out=$(LD_PRELOAD=$CAP "$PROBE" 2>"$err")
    grep -q "CPUID faulting unavailable" "$err" || fail "no 'CPUID faulting unavailable' line: $(cat "$err")"
    echo "cpuid_cap: this CPU or kernel has no CPUID faulting (cpuid_fault); the library said so"
    exit 77 ;;
esac

capped=$(LD_PRELOAD=$CAP MI_CPUID_CAP_VERBOSE=1 "$PROBE" 2>"$err")
# The flag is listed but the kernel refused (a container's seccomp filter can deny arch_prctl):
# the library said so in its one line; nothing to check on this machine.
if grep -q "CPUID faulting unavailable" "$err"; then
  echo "cpuid_cap: cpuid_fault is listed but turning it on was refused here: $(head -1 "$err")"
  exit 77
fi
[ "$capped" = "avx512f=0 avx512bw=0 avx512vl=0 avx512vnni=0 avx_vnni=0 amx_int8=0 avx2=1 fma=1" ] ||
  fail "under the library the probe reads '$capped'"
grep -q "cpuid instructions capped" "$err" || fail "MI_CPUID_CAP_VERBOSE printed no count: $(cat "$err")"

# The program's own SIGSEGV handler, installed after the library's (as node's), gets a real fault
# while cpuid stays capped.
rc=0
out=$(LD_PRELOAD=$CAP "$PROBE" --chain 2>"$err") || rc=$?
[ "$rc" = 42 ] || fail "--chain exited $rc, expected 42 from its own handler: $out $(cat "$err")"
case "$out" in "avx512f=0 "*"own SIGSEGV handler reached") ;; *) fail "--chain printed '$out'" ;; esac

# With no handler of the program's, a real fault still kills the process with SIGSEGV.
rc=0
(LD_PRELOAD=$CAP exec "$PROBE" --crash) >/dev/null 2>&1 || rc=$?
[ "$rc" = 139 ] || fail "--crash exited $rc under the library, expected 139 (killed by SIGSEGV)"
echo "cpuid_cap: '$plain' -> '$capped'; own handler and default crash kept"

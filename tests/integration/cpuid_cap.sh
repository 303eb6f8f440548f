#!/usr/bin/env bash
# cpuid_cap.sh - the cpuid_cap preload library (tools/bench/real/cpuid_cap.c, what run.py's
# AVX2-capped ONNX Runtime column runs under) makes cpuid report no AVX-512, AVX-VNNI or AMX, keeps
# AVX2 and FMA, hands every other SIGSEGV or SIGILL to the program's handler or the default
# action, and leaves the process uncapped (saying so) where it cannot reach cpuid. Two ways:
# cpuid instructions patched to traps by cpuid_patch.py (checked on a patched copy of the probe;
# needs objdump) and CPUID faulting (checked where /proc/cpuinfo lists cpuid_fault). Skipped on a
# CPU without AVX-512 (nothing to cap).
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
dir=$(mktemp -d)
patched=0
trap 'rm -rf "$err" "$dir"' EXIT
want="avx512f=0 avx512bw=0 avx512vl=0 avx512vnni=0 avx_vnni=0 amx_int8=0 avx2=1 fma=1"

# Patched sites: a copy of the probe with its cpuid instructions turned into ud2.
if command -v objdump >/dev/null && command -v python3 >/dev/null; then
  P=$dir/probe
  python3 "$MI_SRC/tools/bench/real/cpuid_patch.py" "$PROBE" "$P" >"$dir/patch.out" ||
    fail "cpuid_patch.py failed on the probe"
  n=$(grep -vc '^#' "$P.cpuid-sites")
  [ "$n" -ge 3 ] || fail "cpuid_patch.py listed $n sites in the probe, expected its 3 cpuid at least"
  cmp -s "$PROBE" "$P" && fail "the patched probe equals the original"
  # Without the library the first patched site is a ud2: the probe dies of SIGILL.
  rc=0
  (exec "$P") >/dev/null 2>&1 || rc=$?
  [ "$rc" = 132 ] || fail "the patched probe without the library exited $rc, expected 132 (SIGILL)"
  SITES=$P.cpuid-sites
  capped=$(LD_PRELOAD=$CAP MI_CPUID_CAP_SITES=$SITES MI_CPUID_CAP_VERBOSE=1 "$P" 2>"$err")
  [ "$capped" = "$want" ] || fail "patched: under the library the probe reads '$capped' ($(cat "$err"))"
  grep -q "cpuid_cap: [1-9][0-9]* cpuid instructions capped" "$err" || fail "patched: no count: $(cat "$err")"
  # The program's own SIGILL handler, installed after the library's, gets a ud2 of its own.
  rc=0
  out=$(LD_PRELOAD=$CAP MI_CPUID_CAP_SITES=$SITES "$P" --chain-ud2 2>"$err") || rc=$?
  [ "$rc" = 44 ] || fail "patched --chain-ud2 exited $rc, expected 44 from its own handler: $out $(cat "$err")"
  case "$out" in "avx512f=0 "*"own SIGILL handler reached") ;; *) fail "patched --chain-ud2 printed '$out'" ;; esac
  # With no handler of the program's, its own ud2 (not a listed site) still kills it with SIGILL.
  rc=0
  (LD_PRELOAD=$CAP MI_CPUID_CAP_SITES=$SITES exec "$P" --ud2) >/dev/null 2>&1 || rc=$?
  [ "$rc" = 132 ] || fail "patched --ud2 exited $rc under the library, expected 132 (SIGILL)"
  # A list that is not one hex offset a line: one line naming the file and the line, uncapped.
  cp "$P" "$dir/bad"
  printf '# sites\n12f5\nnot-an-offset\n' >"$dir/bad.cpuid-sites"
  out=$(LD_PRELOAD=$CAP MI_CPUID_CAP_SITES=$dir/bad.cpuid-sites "$PROBE" 2>"$err")
  grep -q "bad.cpuid-sites:3: not a hex file offset" "$err" || fail "bad list: stderr '$(cat "$err")'"
  case "$out" in "avx512f=1 "*) ;; *) fail "bad list: the probe read '$out', expected its real CPU" ;; esac
  echo "cpuid_cap: patched sites: $n in the probe; '$capped'; own SIGILL handler and default crash kept"
  patched=1
else
  echo "cpuid_cap: no objdump or python3; patched sites not checked"
fi

case " $flags " in
  *" cpuid_fault "*) ;;
  *)
    # No CPUID faulting: the library must say so and the process keeps its features.
    out=$(LD_PRELOAD=$CAP "$PROBE" 2>"$err")
    grep -q "CPUID faulting unavailable" "$err" || fail "no 'CPUID faulting unavailable' line: $(cat "$err")"
    echo "cpuid_cap: this CPU or kernel has no CPUID faulting (cpuid_fault); the library said so"
    [ "$patched" = 1 ] && exit 0
    exit 77 ;;
esac

capped=$(LD_PRELOAD=$CAP MI_CPUID_CAP_VERBOSE=1 "$PROBE" 2>"$err")
# The flag is listed but the kernel refused (a container's seccomp filter can deny arch_prctl):
# the library said so in its one line; nothing to check on this machine.
if grep -q "CPUID faulting unavailable" "$err"; then
  echo "cpuid_cap: cpuid_fault is listed but turning it on was refused here: $(head -1 "$err")"
  [ "$patched" = 1 ] && exit 0
  exit 77
fi
[ "$capped" = "$want" ] || fail "under the library the probe reads '$capped'"
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

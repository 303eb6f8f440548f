#!/bin/bash
# device_check.sh - the device plugins on whatever devices this machine has (a real GPU where
# there is one; PoCL and lavapipe on a CPU-only machine), in one unattended run:
#   1. the machine and every plugin's devices, knobs and variants (mi-host plugins);
#   2. the conformance rules of each plugin (mi-conform);
#   3. every fetched real model run once on each plugin's device 0 with --check against the
#      reference interpreter (in parallel; correctness only);
#   4. the same models timed one after another on each device and on blis-cpu (mi-run --repeat,
#      device time where the plugin reports it), nothing else running;
#   5. issue 21's tune of the detectors on each plugin (tools/bench/tune_real.sh: budget 40,
#      accuracy_drop 0.01, then mi-host compare of the deployed table against the default),
#      the plugins' tunes side by side.
# Everything lands in OUT (logs, JSON, OUT/summary.md). Steps 4 and 5 fit a deadline (--minutes
# from the start, default 9): the timing stops while 330 s are left for the tunes, and the tunes
# start only with 300 s left; what was skipped is logged in OUT/steps.log.
#
# usage: tools/bench/device_check.sh BUILD OUT [--plugins "opencl vulkan"] [--only REGEX]
#          [--tune REGEX] (models tuned, default 'blazeface_front|ppocr_v4_det'; '' for none)
#          [--jobs N] [--minutes M] [--repeat N] (timed runs a measurement, default 30; 0: no timing)
#          [--model FILE] (also check and time this model, inputs of its declared shapes; repeatable;
#          e.g. an mi-zoo model; its name in the tables is the file's name without .onnx)
# Needs the models in ${MI_MODEL_DIR:-~/.cache/metainfer/models}; python3 for the summary.
set -u
[ $# -ge 2 ] || { sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'; exit 2; }
B=$(realpath "$1")
O=$(realpath -m "$2")
shift 2
PLUGINS="opencl vulkan"; ONLY=.; TUNE='blazeface_front|ppocr_v4_det'; JOBS=$(nproc); MINUTES=9
REPEAT=30; EXTRA=()
while [ $# -gt 0 ]; do
  case $1 in --model|--plugins|--only|--tune|--jobs|--minutes|--repeat)
    [ $# -ge 2 ] || { echo "device_check.sh: $1 needs a value" >&2; exit 2; } ;;
  esac
  case $1 in
    --model) [ -s "$2" ] || { echo "device_check.sh: --model: no file $2" >&2; exit 2; }
             EXTRA+=("$(basename "$2" .onnx)|$(realpath "$2")|"); shift 2 ;;
    --plugins) PLUGINS=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --tune) TUNE=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --minutes) MINUTES=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2
              [[ $REPEAT =~ ^[0-9]+$ ]] || { echo "device_check.sh: --repeat: '$REPEAT' is not a count" >&2; exit 2; } ;;
    *) echo "device_check.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$B/bin/mi-run" ] || { echo "device_check.sh: no $B/bin/mi-run (build first)" >&2; exit 2; }
M=${MI_MODEL_DIR:-$HOME/.cache/metainfer/models}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$O/check" "$O/time"
T0=$(date +%s); END=$(awk -v t="$T0" -v m="$MINUTES" 'BEGIN { printf "%d", t + m * 60 }')
log() { echo "[$(date -u +%T) +$(( $(date +%s) - T0 ))s load $(cut -d' ' -f1 /proc/loadavg)] $*" | tee -a "$O/steps.log"; }
left() { echo $((END - $(date +%s))); }
path_of() { case $1 in /*) echo "$1" ;; *) echo "$M/$1" ;; esac; }

# name | file | mi-run arguments (natural sizes, as tools/bench/real/run.py); SR = Silero's
# int64 sample rate (16000) as a .npy file.
MODELS=(
  "ppocr_v2_cls|ppocr_v2_cls.onnx|--shape x=1,3,48,192"
  "ppocr_v4_det|ppocr_v4_det.onnx|--shape x=1,3,320,320"
  "ppocr_v4_rec|ppocr_v4_rec.onnx|--shape x=1,3,48,320"
  "oww_melspectrogram|oww_melspectrogram.onnx|--shape input=1,1280"
  "oww_embedding|oww_embedding.onnx|--shape input_1=1,76,32,1"
  "oww_hello_deepa|oww_hello_deepa.onnx|"
  "silero_vad_v4|silero_vad_v4.onnx|--shape input=1,512 --shape h=2,1,64 --shape c=2,1,64 --input sr=SR"
  "silero_vad_v5|silero_vad_v5.onnx|--shape input=1,512 --shape state=2,1,128 --input sr=SR"
  "silero_vad_v6|silero_vad_v6.onnx|--shape input=1,512 --shape state=2,1,128 --input sr=SR"
  "blazeface_front|blazeface_front.onnx|"
  "blazeface_back|blazeface_back.onnx|"
  "mlsd_tiny_320|mlsd_tiny_320.onnx|"
  "isnet_quint8|isnet_quint8_1024.onnx|"
  "moonshine_tiny_enc|moonshine_tiny_enc.onnx|--shape input_values=1,80000"
)
# --model files come in EXTRA with their absolute path (path_of leaves those as they are)
python3 -c "
import struct
h = \"{'descr': '<i8', 'fortran_order': False, 'shape': (), }\"
h += ' ' * (63 - (len(h) + 10) % 64) + '\n'
open('$O/sr.npy', 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode() + struct.pack('<q', 16000))"

log "1. machine and plugins"
{
  echo "date: $(date -u '+%F %T UTC')"; echo "kernel: $(uname -sr)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) x $(nproc)"
  echo "cpu flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_vnni|avx512_bf16|amx_tile|amx_int8|amx_bf16)$' | tr '\n' ' ')"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
} >"$O/machine.txt" 2>&1
cat "$O/machine.txt"
"$B/bin/mi-host" --plugins "$B/plugins" plugins >"$O/plugins.txt" 2>&1
"$B/bin/mi-host" --plugins "$B/plugins" --json plugins >"$O/plugins.json" 2>"$O/plugins.err"
grep -i -E "^(plugin|  device|refused)|device [0-9]|: (gpu|cpu|npu)" "$O/plugins.txt" | head -20

log "2. conformance rules"
for p in $PLUGINS; do
  "$B/bin/mi-conform" --plugins "$B/plugins" --plugin "$p" --timeout 120 >"$O/conform-$p.txt" 2>&1 &
done

log "3. every model once with --check on $PLUGINS ($JOBS at a time)"
jobs_list=()
for m in "${MODELS[@]}" "${EXTRA[@]}"; do
  IFS='|' read -r name file args <<<"$m"
  file=$(path_of "$file")
  [[ $name =~ $ONLY ]] && [ -s "$file" ] || continue
  for p in $PLUGINS; do jobs_list+=("$p|$name|$file|${args//SR/$O/sr.npy}"); done
done
printf '%s\n' "${jobs_list[@]}" | xargs -d '\n' -P "$JOBS" -I{} bash -c '
  IFS="|" read -r p name file args <<<"$1"
  # shellcheck disable=SC2086
  timeout 600 "$2/bin/mi-run" --plugins "$2/plugins" --model "$file" --device "$p:0" $args \
    --check --json --timeout 300 >"$3/check/$p-$name.json" 2>"$3/check/$p-$name.err"
  echo "$?" >"$3/check/$p-$name.rc"' _ {} "$B" "$O"
wait
for p in $PLUGINS; do log "   conformance $p: $(tail -n 1 "$O/conform-$p.txt")"; done

# the timing stops in time for the tunes (300 s each, then their comparison) when there are any
STOP=30; [ -n "$TUNE" ] && STOP=330
if [ "$REPEAT" -eq 0 ]; then
  log "4. timing skipped (--repeat 0)"
elif [ "$(left)" -gt $((STOP + 30)) ]; then
  log "4. timing, one model and device at a time (--repeat $REPEAT)"
  for m in "${MODELS[@]}" "${EXTRA[@]}"; do
    IFS='|' read -r name file args <<<"$m"
    file=$(path_of "$file")
    [[ $name =~ $ONLY ]] && [ -s "$file" ] || continue
    for p in $(echo $PLUGINS blis-cpu | tr ' ' '\n' | awk '!seen[$0]++'); do
      [ "$p" = blis-cpu ] || [ "$(cat "$O/check/$p-$name.rc" 2>/dev/null)" = 0 ] || continue
      # shellcheck disable=SC2086
      timeout 120 "$B/bin/mi-run" --plugins "$B/plugins" --model "$file" --device "$p:0" \
        ${args//SR/$O/sr.npy} --repeat "$REPEAT" --json >"$O/time/$p-$name.json" 2>"$O/time/$p-$name.err"
    done
    [ "$(left)" -gt "$STOP" ] || { log "   timing stopped after $name: deadline"; break; }
  done
else
  log "4. timing skipped: $(left) s left"
fi

if [ -n "$TUNE" ] && [ "$(left)" -gt 300 ]; then
  log "5. tunes of '$TUNE' on $PLUGINS, side by side"
  for p in $PLUGINS; do
    MI_CACHE_DIR="$O/tune-$p/cache" "$HERE/tune_real.sh" "$B" "$O/tune-$p" --only "$TUNE" \
      --plugin "$p" >"$O/tune-$p.txt" 2>&1 &
  done
  wait
else
  log "5. tunes skipped ($(left) s left)"
fi

log "summary"
python3 - "$O" "$PLUGINS" <<'PY' | tee "$O/summary.md"
import glob, json, os, sys
O, plugins = sys.argv[1], sys.argv[2].split()
def js(path):
    try:
        return json.load(open(path))
    except Exception:
        return None
print("## machine\n\n```\n" + open(os.path.join(O, "machine.txt")).read().strip() + "\n```\n")
for p in plugins:
    lines = open(os.path.join(O, f"conform-{p}.txt")).read().strip().splitlines()
    bad = [l for l in lines if l.lower().startswith("fail")]
    print(f"conformance {p}: {lines[-1] if lines else 'no output'}" + "".join("\n  " + l for l in bad))
names = sorted({os.path.basename(f)[len(p) + 1:-5] for p in plugins
                for f in glob.glob(os.path.join(O, "check", glob.escape(p) + "-*.json"))})
timed = list(dict.fromkeys(plugins + ["blis-cpu"]))
print("\n| model | " + " | ".join(f"{p}: --check max error" for p in plugins) + " | " +
      " | ".join(f"{p} ms (device ms)" for p in timed) + " |")
print("|" + " --- |" * (1 + len(plugins) + len(timed)))
for n in names:
    row = [n]
    for p in plugins:
        r = js(os.path.join(O, "check", f"{p}-{n}.json"))
        if r and "check_max_error" in r:
            row.append("%.2g" % r["check_max_error"] + (f", {len(r['fallback_nodes'])} on host" if r.get("fallback_nodes") else ""))
        else:
            err = open(os.path.join(O, "check", f"{p}-{n}.err")).read().strip().splitlines()
            row.append("FAIL: " + (err[-1][:80] if err else "rc " + open(os.path.join(O, "check", f"{p}-{n}.rc")).read().strip()))
    for p in timed:
        r = js(os.path.join(O, "time", f"{p}-{n}.json"))
        if r and "latency_ms" in r:
            d = r.get("device_time_ms", {}).get("median")
            row.append("%.3f" % r["latency_ms"]["median"] + (" (%.3f)" % d if d else ""))
        else:
            row.append("-")
    print("| " + " | ".join(row) + " |")
for p in plugins:
    t = os.path.join(O, f"tune-{p}.txt")
    if os.path.exists(t):
        print(f"\n### tunes on {p}\n")
        print("\n".join(l for l in open(t).read().splitlines() if l.startswith("|")))
PY

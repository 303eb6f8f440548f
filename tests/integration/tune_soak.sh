# tune_soak.sh - SIGKILL `mi-host tune` (its whole process group, workers included) ten times at
# seeded random moments, resuming each time with the same command: no recorded measurement is
# lost, the history passes PRAGMA integrity_check, nothing is measured twice, and the final
# front and deployment table equal those of an uninterrupted run with the same seed. Run for
# nsga2 and for the default strategy (meta). npu-stub with noise 0 makes measurements exact.
set -euo pipefail
B=${MI_BUILD:?}
S=${MI_SRC:?}
T=$(mktemp -d)
[ -n "${MI_SOAK_KEEP:-}" ] && echo "keeping $T" || trap 'rm -rf "$T"' EXIT
# A SIGKILLed tune cannot remove its temporary folders (the accuracy reference's, mi-ref-*): keep
# them inside T.
mkdir -p "$T/tmp"
export TMPDIR="$T/tmp"
# A private copy of gen1 without noise and without heating. The plugin instance lives as long as
# the measurement worker, so its temperature carries from one measurement to the next; a resumed
# run measures a different sequence in a fresh worker, and a throttled clock would then change a
# configuration's figures. This small model does not heat enough to throttle; thermal_r 0 makes
# sure of it.
mkdir -p "$T/dev"
sed -e 's/^noise *=.*/noise = 0/' -e 's/^thermal_r *=.*/thermal_r = 0/' \
  "$S/plugins/npu_stub/devices/npu-gen1.conf" > "$T/dev/npu-gen1.conf"
grep -q '^noise = 0$' "$T/dev/npu-gen1.conf" && grep -q '^thermal_r = 0$' "$T/dev/npu-gen1.conf" || {
  echo "npu-gen1.conf has no noise/thermal_r key any more"; exit 1; }
export MI_NPU_DEVICES="$T/dev"
"$B/bin/mi-zoo" resnet --out "$T/net.onnx" --width 0.25 --depth 2 --resolution 32 >/dev/null
recipe() { # DIR STRATEGY-LINE
  mkdir -p "$1"
  cp "$T/net.onnx" "$1/net.onnx"
  cat > "$1/recipe.yaml" <<YAML
version: 1
model: net.onnx
pool: [ {plugin: npu-stub} ]
constraints: { latency_ms: 1000, accuracy_drop: 0.05 }
objectives: [latency, energy, accuracy_drop]
budget: { measurements: ${MI_SOAK_BUDGET:-24}, seconds: 3600 }
search: { $2seed: 11 }
measure: { repeats: 5, warmup: 1 }
history: hist.db
YAML
}
for s in nsga2 meta; do
  line="strategy: $s, "
  [ "$s" = meta ] && line=""   # the default strategy: no strategy key at all
  recipe "$T/$s/ref" "$line"
  recipe "$T/$s/soak" "$line"
done
python3 "$S/tests/soak/soak.py" "$B" "$T" ${MI_SOAK_STRATEGIES:-nsga2 meta}
echo ok

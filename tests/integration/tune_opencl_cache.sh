# tune_opencl_cache.sh - issue 21: a second `mi-host tune` of the same recipe into a new output
# folder compiles no OpenCL program the first one compiled. The opencl plugin writes a program
# binary to MI_CACHE_DIR/opencl (temporary name, then rename: a new inode) only after building it
# from source. The random strategy without layer tasks measures the same configurations in both
# runs whatever the timings, so the second run must leave the folder exactly as the first left
# it: no entry rewritten (same inode) and none added. (A key that changed between processes, e.g.
# with the pid in it, adds entries and fails here.) Skipped (77) without an OpenCL device.
set -euo pipefail
B=${MI_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export MI_CACHE_DIR=$T/cache POCL_CACHE_DIR=${MI_POCL_CACHE:-$T/pocl}
mkdir -p "$POCL_CACHE_DIR"
if ! grep -A2 "^plugin opencl " <<<"$("$B/bin/mi-host" --plugins "$B/plugins" plugins 2>/dev/null)" | grep -q "device 0:"; then
  echo "SKIP: no OpenCL device"
  exit 77
fi
"$B/bin/mi-zoo" resnet --out "$T/net.onnx" --width 0.25 --depth 1 --resolution 16 >/dev/null
cat > "$T/recipe.yaml" <<'YAML'
version: 1
model: net.onnx
pool: [ {plugin: opencl, device: 0} ]
constraints: { accuracy_drop: 0.05 }
objectives: [latency]
budget: { measurements: 3, seconds: 1500 }
search: { strategy: random, seed: 1 }
measure: { repeats: 5, warmup: 1, timeout_s: 400 }
YAML
entries() { find "$MI_CACHE_DIR/opencl" -name '*.bin' -printf '%f %i\n' | sort; }
# A measurement killed at its timeout, or at the tune's time budget, loses the program it was
# compiling, which a later run then compiles: two runs measure the same configurations only when
# the first one ran to its end. With PoCL compiling on a loaded machine (or under a sanitizer
# build) one measurement took over 400 s and one tune over the default 300 s budget, so the first
# run is repeated (into the same cache) until one is not cut short; the runs after a complete one
# must compile nothing.
cut="timed out after|the caller's time budget|budget .* cut"
for try in 1 2 3; do
  "$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipe.yaml" --out "$T/out1" --seed 1 --no-layer-tasks 2>"$T/log1" ||
    { cat "$T/log1"; exit 1; }
  grep -Eq "$cut" "$T/log1" || break
  echo "note: tune $try was cut short, so it is run again on the programs it cached:"; grep -E "$cut" "$T/log1"
  [ "$try" -lt 3 ] || { echo "the first tune was cut short three times"; exit 1; }
  rm -rf "$T/out1"
done
entries >"$T/after1"
n1=$(wc -l <"$T/after1")
[ "$n1" -gt 0 ] || { echo "the first tune left no program binary in $MI_CACHE_DIR/opencl"; exit 1; }
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipe.yaml" --out "$T/out2" --seed 1 --no-layer-tasks 2>"$T/log2" ||
  { cat "$T/log2"; exit 1; }
entries >"$T/after2"
# Lines of the first listing missing from the second: entries rebuilt (new inode) or removed;
# lines only in the second: programs built from source under a new key.
if ! cmp -s "$T/after1" "$T/after2"; then
  echo "the second tune compiled OpenCL programs ($n1 entries after the first run):"
  diff "$T/after1" "$T/after2" || true
  exit 1
fi
echo "ok: $n1 programs compiled by the first tune, none by the second"

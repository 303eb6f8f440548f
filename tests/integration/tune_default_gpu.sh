# tune_default_gpu.sh - issue 21: on opencl and on vulkan the tuner's default configuration is
# what mi-run does without one, on a model with depthwise convolutions. Both plugins refused the
# "auto" (no variant) check_config the space asks for every auto node, so repair moved every node
# of the default point to an explicit variant (on opencl the depthwise convs then ran
# conv.im2col_gemm, not the conv.depthwise the plugin picks), and `compare --config` of a mapping
# naming only model-side keys failed "unknown variant '(null)'". Checked per device: the first
# measurement of a tune names no variant and runs the same device layers with the same variant
# column as `mi-run --profile` without a configuration; compare --default and compare --config of
# a model-side-only mapping both measure every node auto. A device the machine lacks is skipped;
# 77 when neither is there. No timing is asserted.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
mi_gpu_net
printf 'model.fuse: "on"\n' >"$T/fuse.yaml"
ran=0
for dev in opencl vulkan; do
  mi_gpu_dir "$dev" 'budget: { measurements: 1 }' 'search: { strategy: meta, seed: 3 }' || continue
  ran=$((ran + 1))
  D=$T/$dev
  "${H[@]}" tune "$D/recipe.yaml" --out "$D/tune" --no-layer-tasks 2>"$D/tlog" || { cat "$D/tlog"; exit 1; }
  "$RUN" --plugins "$B/plugins" --model "$D/net.onnx" --device "$dev:0" --profile --repeat 1 \
    --json >"$D/run.json" 2>"$D/rlog" || { cat "$D/rlog"; exit 1; }
  "${H[@]}" compare --model "$D/net.onnx" --device "$dev:0" --default --config "$T/fuse.yaml" \
    --min-rounds 2 --max-rounds 2 --json >"$D/c.json" 2>"$D/clog" || { cat "$D/clog"; exit 1; }
  python3 - "$D" "$dev" <<'PY'
import json, sqlite3, sys
D, dev = sys.argv[1], sys.argv[2]
hw, layers = sqlite3.connect(D + "/hist.db").execute(
    "SELECT c.canonical, m.layers FROM measurements m JOIN configs c ON c.id = m.config_id "
    "ORDER BY m.id LIMIT 1").fetchone()
named = [e for e in hw.split(";")[1:] if e.split(":", 1)[1] != "default{}"]
assert not named, "%s: the default point names variants: %s" % (dev, named[:5])
# mi-run's variant column says "default" for a kernel the plugin chose; the history's rows name
# the nodes each device kernel ran, grouped the same way.
run = json.load(open(D + "/run.json"))["profile"]["layers"]
assert all(l["variant"] == "default" for l in run if l["where"] == "device"), run
mine = sorted(l["name"] for l in json.loads(layers) if l["where"] == "device")
theirs = sorted(l["name"] for l in run if l["where"] == "device")
assert any(".dw." in n for n in theirs), theirs  # the depthwise convs run on the device
assert mine == theirs, "%s: default point %s, mi-run %s" % (dev, mine, theirs)
for c in json.load(open(D + "/c.json"))["configs"]:
    v = [l for l in c["canonical"].splitlines() if ".variant=" in l]
    bad = [l for l in v if not l.endswith("=auto")]
    assert v and not bad, "%s: %s names variants: %s" % (dev, c["source"], bad[:5])
print("%s: default point = mi-run's default, %d device layers" % (dev, len(mine)))
PY
done
[ "$ran" -gt 0 ] || { echo "SKIP: no OpenCL or Vulkan device"; exit 77; }

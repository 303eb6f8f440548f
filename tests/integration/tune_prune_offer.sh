# tune_prune_offer.sh - the joint space offers channel pruning only on layers the pruning pass
# can prune: a zoo ResNet's block conv2 feeds the residual Add (the pass skips it), so no
# configuration and no deployment table lists a prune choice for it, while conv1 keeps one.
set -euo pipefail
B=${MI_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/bin/mi-zoo" resnet --out "$T/net.onnx" --width 0.25 --depth 2 --resolution 32 >/dev/null
cat > "$T/r.yaml" <<'YAML'
version: 1
model: net.onnx
pool: [ {plugin: npu-stub} ]
budget: { measurements: 3, seconds: 60 }
search: { strategy: random, seed: 2 }
measure: { repeats: 5, warmup: 1 }
YAML
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/r.yaml" --out "$T/o" 2>"$T/log" || { cat "$T/log"; exit 1; }
grep -q 'conv1.conv.prune' "$T/o/deployment.yaml" || { echo "no prune choice on conv1"; cat "$T/o/deployment.yaml"; exit 1; }
if grep -q 'conv2.conv.prune' "$T/o/deployment.yaml"; then
  echo "a prune choice on a conv that feeds the residual Add:"; grep 'conv2.conv.prune' "$T/o/deployment.yaml"; exit 1
fi
echo ok

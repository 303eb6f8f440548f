#!/usr/bin/env bash
# A recipe whose paths lead outside its folder (.. or absolute) is run, but mi-host says so,
# naming the key and the resolved place; paths inside the folder are not mentioned.
set -euo pipefail
B=$MI_BUILD
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/recipes" "$T/elsewhere"
"$B/bin/mi-zoo" mlp --out "$T/elsewhere/net.onnx" --resolution 8 >/dev/null
cp "$T/elsewhere/net.onnx" "$T/recipes/inside.onnx"
write() { # FILE MODEL HISTORY
  cat > "$1" <<YAML
version: 1
model: $2
pool: [ {plugin: npu-stub} ]
constraints: { latency_ms: 1000 }
objectives: [latency]
budget: { measurements: 1, seconds: 30 }
search: { strategy: random, seed: 1 }
history: $3
YAML
}
write "$T/recipes/out.yaml" ../elsewhere/net.onnx "$T/elsewhere/h.db"
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipes/out.yaml" --out "$T/o1" 2>"$T/e1" >/dev/null ||
  { cat "$T/e1"; exit 1; }
grep -q "note: .*out.yaml: model '.*\.\./elsewhere/net.onnx' is outside the recipe's folder" "$T/e1" ||
  { echo "no note for the model:"; cat "$T/e1"; exit 1; }
grep -q "history '.*elsewhere/h.db' is outside the recipe's folder" "$T/e1" ||
  { echo "no note for the history:"; cat "$T/e1"; exit 1; }
write "$T/recipes/in.yaml" inside.onnx h.db
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipes/in.yaml" --out "$T/o2" 2>"$T/e2" >/dev/null ||
  { cat "$T/e2"; exit 1; }
if grep -q "outside the recipe's folder" "$T/e2"; then
  echo "a path inside the folder was reported:"; cat "$T/e2"; exit 1
fi
echo ok

# mi_run_config.sh - mi-run --config: every configs/examples/transform-*.yaml on a zoo resnet,
# on the reference and on blis-cpu:0 (fused groups, NHWC, QDQ); the passes that ran are listed,
# the JSON carries them, and blis-cpu's outputs match the reference within 1e-5 rel. L2.
set -euo pipefail
B=${MI_BUILD:?MI_BUILD is not set}
S=${MI_SRC:?MI_SRC is not set}
RUN=$B/bin/mi-run
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$B/bin/mi-zoo" resnet --out "$T/r.onnx" --width 0.5 --depth 2 --resolution 32 > /dev/null
n=0
for cfg in "$S"/configs/examples/transform-*.yaml; do
  name=$(basename "$cfg" .yaml)
  for dev in ref blis-cpu:0; do
    "$RUN" --model "$T/r.onnx" --device "$dev" --config "$cfg" --output-dir "$T/$name-$dev" \
      > "$T/$name-$dev.txt" || fail "$name on $dev"
    grep -q "^transform: config hash" "$T/$name-$dev.txt" || fail "$name: no transform line"
    grep -q "^pass fold_bn: 6 BatchNormalization folded" "$T/$name-$dev.txt" ||
      fail "$name on $dev: fold_bn not reported"
  done
  python3 - "$T/$name-ref/logits.npy" "$T/$name-blis-cpu:0/logits.npy" <<'PY' || fail "$name: blis vs ref"
import ast, math, struct, sys
def load(p):
    b = open(p, "rb").read(); hl = struct.unpack("<H", b[8:10])[0]
    d = b[10 + hl:]; return struct.unpack("<%df" % (len(d) // 4), d)
a, b = load(sys.argv[1]), load(sys.argv[2])
num = sum((x - y) ** 2 for x, y in zip(a, b)); den = sum(y * y for y in b)
r = math.sqrt(num / den)
print("rel L2 %.2e" % r)
sys.exit(0 if len(a) == len(b) == 100 and r < 1e-5 else 1)
PY
  n=$((n + 1))
done
[ "$n" -ge 3 ] || fail "expected the three example configurations, found $n"

# What each example turns on shows up as its pass.
grep -q "^pass quantize: " "$T/transform-int8-per-channel-blis-cpu:0.txt" || fail "int8: quantize"
grep -q "^pass prune: " "$T/transform-prune-ref.txt" || fail "prune pass"
m="$T/transform-mixed-blis-cpu:0.txt"
for p in "pass prune" "pass pad_channels (align 8)" "pass quantize" "pass layout nhwc" "pass fuse: 5 groups"; do
  grep -q "^$p" "$m" || fail "mixed on blis-cpu: '$p' missing"
done
grep -q "^pass fuse: skipped" "$T/transform-mixed-ref.txt" || fail "fusion is skipped on ref"
# Fused groups are single kernels: no more than the default session, which fuses the same conv
# chains on its own (a graph with no groups; docs/architecture.md, exec).
k_fused=$(sed -n 's/^device kernels: //p' "$m")
"$RUN" --model "$T/r.onnx" --device blis-cpu:0 > "$T/plain.txt"
k_plain=$(sed -n 's/^device kernels: //p' "$T/plain.txt")
[ "$k_fused" -le "$k_plain" ] || fail "kernels: fused $k_fused, plain $k_plain"
grep -q "^not fused" "$m" && fail "blis-cpu refused a group"

# JSON carries the passes.
"$RUN" --model "$T/r.onnx" --device blis-cpu:0 --config "$S/configs/examples/transform-mixed.yaml" \
  --json > "$T/m.json"
python3 - "$T/m.json" <<'PY' || fail "JSON transform member"
import json, sys
j = json.load(open(sys.argv[1]))
passes = [p["pass"] for p in j["transform"]["passes"]]
assert passes == ["fold_bn", "prune", "pad_channels", "quantize", "layout", "fuse"], passes
assert j["device_kernels"] > 0 and isinstance(j["fallback_nodes"], list), j
PY

# A configuration that does not load is bad input: exit 2 with the file and line.
printf 'passes:\n  fold_bn: maybe\n' > "$T/bad.yaml"
set +e
"$RUN" --model "$T/r.onnx" --device ref --config "$T/bad.yaml" > /dev/null 2> "$T/err.txt"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "bad config exits $rc, want 2"
grep -q "bad.yaml:2" "$T/err.txt" || fail "error names the line: $(cat "$T/err.txt")"
echo "mi_run_config: ok"

# lib.bash - what the integration tests share (sourced; not a test itself): the build's tools, a
# private folder $T removed on exit, mi_wire_py, which writes $T/mi_wire.py: a tiny protobuf/.npy
# writer for hand-encoded models, so these tests need no generator; the hostile-plugin tests'
# model (mi_relu_add_model), the template plugin's folder (mi_template_plugin) and the tune
# tests' model and recipe (mi_small_resnet, mi_blis_recipe), and rel_l2 / under for .npy outputs.
B=${MI_BUILD:?MI_BUILD is not set}
RUN=$B/bin/mi-run
ZOO=$B/bin/mi-zoo
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# A test's python then starts: sys.path.insert(0, sys.argv[1]); from mi_wire import *
mi_wire_py() {
  cat > "$T/mi_wire.py" <<'PY'
import struct, sys
out = sys.argv[1]
def varint(n):
    b = b""
    while True:
        c = n & 0x7f; n >>= 7
        b += bytes([c | (0x80 if n else 0)])
        if not n: return b
def ld(f, data): return varint(f << 3 | 2) + varint(len(data)) + data
def vi(f, n): return varint(f << 3) + varint(n)
def s(f, text): return ld(f, text.encode())
def vinfo(name, elem, dims):
    d = b"".join(ld(1, s(2, x) if isinstance(x, str) else vi(1, x)) for x in dims)
    return s(1, name) + ld(2, ld(1, vi(1, elem) + ld(2, d)))
# TensorProto of a float32 initializer.
def tensor(name, dims, vals):
    return b"".join(vi(1, d) for d in dims) + vi(2, 1) + s(8, name) + ld(9, struct.pack("<%df" % len(vals), *vals))
def node(op, name, ins, outs):
    return b"".join(s(1, i) for i in ins) + b"".join(s(2, o) for o in outs) + s(3, name) + s(4, op)
# ModelProto{ir_version 8, [producer_name], graph, opset_import{"", 13}}.
def model(nodes, inputs, outputs, inits=b"", producer=None):
    g = b"".join(ld(1, n) for n in nodes) + s(2, "g") + inits
    g += b"".join(ld(11, vinfo(*i)) for i in inputs) + b"".join(ld(12, vinfo(*o)) for o in outputs)
    return vi(1, 8) + (s(2, producer) if producer else b"") + ld(7, g) + ld(8, s(1, "") + vi(2, 13))
def save(name, data): open(f"{out}/{name}", "wb").write(data)
def npy(descr, shape, data):
    sh = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, sh)
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + data
PY
}

# TPL: the SDK's template plugin folder (Relu and Add only); the test is skipped (77) without it.
mi_template_plugin() {
  TPL=$B/tests/plugins/template
  [ -d "$TPL" ] || { echo "template plugin not built: skipped"; exit 77; }
}

# $T/ra.onnx: y = Relu(x) + x on a float [1, WIDTH] input (WIDTH $1, default 4096), the model the
# hostile-plugin tests run (one device kernel per node, nothing else to go wrong).
mi_relu_add_model() {
  mi_wire_py
  python3 - "$T" "${1:-4096}" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from mi_wire import *
w = int(sys.argv[2])
save("ra.onnx", model([node("Relu", "relu", ["x"], ["r"]), node("Add", "add", ["r", "x"], ["y"])],
                      [("x", 1, [1, w])], [("y", 1, [1, w])]))
PY
}

# mi-host with the build's plugins, as the tune tests call it.
H=("$B/bin/mi-host" --plugins "$B/plugins")

# $T/net.onnx: the small ResNet the tune tests tune (a measurement takes well under a second).
mi_small_resnet() {
  "$ZOO" resnet --out "$T/net.onnx" --width 0.25 --depth 2 --resolution 32 >/dev/null
}

# $T/recipe.yaml: $T/net.onnx on blis-cpu for latency, history in $T/hist.db, with the budget,
# search and other lines the test gives (one YAML line per argument).
mi_blis_recipe() {
  {
    printf '%s\n' 'version: 1' 'model: net.onnx' 'pool: [ {plugin: blis-cpu} ]' \
      'objectives: [latency]' 'measure: { repeats: 5, warmup: 1 }' 'history: hist.db'
    printf '%s\n' "$@"
  } >"$T/recipe.yaml"
}

# $T/net.onnx: the small MobileNet-style model (depthwise convs) the opencl/vulkan tune tests
# tune, with the kernel caches in $T (exported: every later tool call uses them).
mi_gpu_net() {
  export MI_CACHE_DIR=$T/cache POCL_CACHE_DIR=${MI_POCL_CACHE:-$T/pocl}
  mkdir -p "$POCL_CACHE_DIR"
  "$ZOO" mobilenetv2 --out "$T/net.onnx" --width 0.5 --depth 3 --resolution 32 >/dev/null
}

# mi_gpu_dir DEV: 0 when plugin DEV (opencl, vulkan) has a device 0, after making $T/DEV with a
# copy of $T/net.onnx and $T/DEV/recipe.yaml tuning it there for latency (history hist.db), with
# the budget, search and other lines the test gives after DEV; 1 with a "skipped" line otherwise.
mi_gpu_dir() {
  local dev=$1
  shift
  if ! grep -A2 "^plugin $dev " <<<"$("${H[@]}" plugins 2>/dev/null)" | grep -q "device 0:"; then
    echo "no $dev device: skipped"
    return 1
  fi
  mkdir -p "$T/$dev"
  cp "$T/net.onnx" "$T/$dev/net.onnx"
  printf '%s\n' 'version: 1' 'model: net.onnx' "pool: [ {plugin: $dev, device: 0} ]" \
    'objectives: [latency]' 'measure: { repeats: 5, warmup: 1 }' 'history: hist.db' "$@" \
    >"$T/$dev/recipe.yaml"
}

rel_l2() { # A.npy B.npy: relative L2 of A against B (float32 .npy files; "inf" when sizes differ)
  python3 - "$1" "$2" <<'PY'
import math, struct, sys
def load(p):
    b = open(p, "rb").read(); hl = struct.unpack("<H", b[8:10])[0]
    body = b[10 + hl:]; return struct.unpack("<%df" % (len(body) // 4), body)
a, r = load(sys.argv[1]), load(sys.argv[2])
num = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, r))); den = math.sqrt(sum(y * y for y in r)) or 1.0
print("%.3g" % (num / den) if len(a) == len(r) else "inf")
PY
}
under() { # X LIMIT: whether X <= LIMIT (numbers, as rel_l2 prints them)
  python3 -c "import sys; sys.exit(0 if float('$1') <= float('$2') else 1)"
}

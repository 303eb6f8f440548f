# lib.bash - what the mi-run integration tests share (sourced; not a test itself): the build's
# tools, a private folder $T removed on exit, and mi_wire_py, which writes $T/mi_wire.py: a tiny
# protobuf/.npy writer for hand-encoded models, so these tests need no generator.
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

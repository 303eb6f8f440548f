"""onnx_pb.py - the few protobuf wire-format writers and readers the ONNX Runtime comparison
scripts use to write one-node ONNX models and read a model's tensors without the onnx package
(python3 stdlib only): a length-delimited field, a varint field, a string field, a NodeProto
attribute (string, float, ints or int), an initializer and a value type; a message's fields, a
packed run of varints; the .npy files of their inputs and outputs, and the run of one model
on ONNX Runtime, the reference and blis-cpu."""
import os
import random
import shutil
import struct
import subprocess
import tempfile

# ONNX element types the scripts use, with their .npy descr and struct code
FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, BOOL, UINT32, UINT64 = 1, 2, 3, 4, 5, 6, 7, 9, 12, 13
NPY = {UINT8: ("|u1", "B"), INT8: ("|i1", "b"), BOOL: ("|b1", "B"), INT32: ("<i4", "i"), INT64: ("<i8", "q"),
       FLOAT: ("<f4", "f"), INT16: ("<i2", "h"), UINT16: ("<u2", "H"), UINT32: ("<u4", "I"), UINT64: ("<u8", "Q")}


def varint(n):
    n &= (1 << 64) - 1
    b = b""
    while True:
        c = n & 0x7F
        n >>= 7
        b += bytes([c | (0x80 if n else 0)])
        if not n:
            return b


def ld(f, data): return varint(f << 3 | 2) + varint(len(data)) + data
def vi(f, n): return varint(f << 3) + varint(n)
def st(f, text): return ld(f, text.encode())


def attr(name, v):
    """AttributeProto (NodeProto field 5): a str is STRING, a float FLOAT, a list of floats
    FLOATS, another list INTS, else INT."""
    if isinstance(v, str):
        return ld(5, st(1, name) + ld(4, v.encode()) + vi(20, 3))
    if isinstance(v, float):
        return ld(5, st(1, name) + varint(2 << 3 | 5) + struct.pack("<f", v) + vi(20, 1))
    if isinstance(v, list) and any(isinstance(x, float) for x in v):
        return ld(5, st(1, name) + b"".join(varint(7 << 3 | 5) + struct.pack("<f", x) for x in v) + vi(20, 6))
    if isinstance(v, list):
        return ld(5, st(1, name) + b"".join(vi(8, x) for x in v) + vi(20, 7))
    return ld(5, st(1, name) + vi(3, v) + vi(20, 2))


def read_varint(buf, i):
    """The varint at buf[i:] and the index after it."""
    v, sh = 0, 0
    while True:
        c = buf[i]
        i += 1
        v |= (c & 0x7F) << sh
        sh += 7
        if c < 0x80:
            return v, i


def fields(buf):
    """(field number, wire type, value) of one protobuf message: value bytes for length-delimited."""
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(buf, i)
        elif wt == 2:
            n, i = read_varint(buf, i)
            v = buf[i:i + n]
            i += n
        elif wt == 5:
            v = buf[i:i + 4]
            i += 4
        elif wt == 1:
            v = buf[i:i + 8]
            i += 8
        else:
            raise ValueError("wire type %d" % wt)
        yield f, wt, v


def unpack_varints(b):
    """The values of a packed repeated varint field."""
    out, i = [], 0
    while i < len(b):
        n, i = read_varint(b, i)
        out.append(n)
    return out


def numel(dims):
    """Elements of a shape."""
    n = 1
    for d in dims:
        n *= d
    return n


def tensor(name, dt, dims, vals):
    """An initializer (GraphProto field 5) of element type dt, raw little-endian data."""
    raw = struct.pack("<%d%s" % (len(vals), NPY[dt][1]), *vals)
    return ld(5, b"".join(vi(1, d) for d in dims) + vi(2, dt) + st(8, name) + ld(9, raw))


def vinfo(name, dt, dims):
    """A ValueInfoProto's bytes: name, tensor type dt and fixed dims."""
    d = b"".join(ld(1, vi(1, x)) for x in dims)
    return st(1, name) + ld(2, ld(1, vi(1, dt) + ld(2, d)))


def npy(path, dt, dims, vals):
    """Writes a .npy v1 file of element type dt."""
    sh = "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (NPY[dt][0], sh)
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    data = struct.pack("<%d%s" % (len(vals), NPY[dt][1]), *vals)
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + data)


def load(path):
    """The values of a .npy v1 file of one of NPY's types, as a list."""
    b = open(path, "rb").read()
    hl = struct.unpack("<H", b[8:10])[0]
    h, body = b[10:10 + hl].decode(), b[10 + hl:]
    for descr, code in NPY.values():
        if "'%s'" % descr in h:
            return list(struct.unpack("<%d%s" % (len(body) // struct.calcsize(code), code), body))
    raise ValueError(h)


def run_sides(mi_run, d, args, out="y"):
    """Runs d/m.onnx with args on ONNX Runtime (ort_run.js), the reference and blis-cpu:0 (mi_run),
    each into its own folder under d: {"ort"|"ref"|"blis": values of out.npy, or the last line
    of the side's error}."""
    model, here, outs = os.path.join(d, "m.onnx"), os.path.dirname(os.path.abspath(__file__)), {}
    for dev, cmd in (("ort", ["node", os.path.join(here, "ort_run.js"), "--model", model]),
                     ("ref", [mi_run, "--model", model, "--device", "ref"]),
                     ("blis", [mi_run, "--model", model, "--device", "blis-cpu:0"])):
        od = os.path.join(d, dev)
        os.mkdir(od)
        r = subprocess.run(cmd + args + ["--output-dir", od], capture_output=True, text=True)
        outs[dev] = load(os.path.join(od, out + ".npy")) if r.returncode == 0 else \
            (r.stderr.strip().splitlines() or ["failed"])[-1]
    return outs


def side_diff(a, b):
    """b against a (value lists, or a side's error line): max |diff|, or why there is none."""
    if isinstance(a, str) or isinstance(b, str):
        return a if isinstance(a, str) else b
    if len(a) != len(b):
        return "%d elements, want %d" % (len(b), len(a))
    return "max |diff| %.3g (%d values)" % (max([abs(x - y) for x, y in zip(a, b)] or [0]), len(a))


def compare_cases(build, cases, only, pairs=(("ort", "ref"), ("ref", "blis")), outputs=None, extra=None, keep_dir="",
                  keep_each=False):
    """The compare scripts' loop: each case whose name holds only is written to a folder (c.write(d, rng),
    one rng for all, seeded 1), run by run_sides and printed as one line per output: "NAME:" (or
    "NAME [OUT]:" where outputs(c) lists several) and "  B vs A: max |diff| ..." per pair (A, B),
    then extra(c, d) where given. keep_dir: each case's folder is KEEP_DIR/NAME and stays;
    keep_each: temporary folders stay and are named."""
    rng = random.Random(1)
    run = os.path.join(build, "bin", "mi-run")
    for c in cases:
        if only not in c.name:
            continue
        d = os.path.join(keep_dir, c.name) if keep_dir else tempfile.mkdtemp()
        if keep_dir:
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
        outs = run_sides(run, d, c.write(d, rng))
        for o in outputs(c) if outputs else [None]:
            sides = {k: (v if isinstance(v, str) or o in (None, "y") else load(os.path.join(d, k, o + ".npy")))
                     for k, v in outs.items()}
            line = c.name + (" [%s]:" % o if o else ":")
            for a, b in pairs:
                line += "  %s vs %s: %s" % (b, a, side_diff(sides[a], sides[b]))
            print(line + (extra(c, d) if extra else ""), flush=True)
        if keep_each:
            print("  kept in " + d, flush=True)
        elif not keep_dir:
            shutil.rmtree(d, ignore_errors=True)

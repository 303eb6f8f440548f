"""onnx_pb.py - the few protobuf wire-format writers and readers the ONNX Runtime comparison
scripts use to write one-node ONNX models and read a model's tensors without the onnx package
(python3 stdlib only): a length-delimited field, a varint field, a string field, a NodeProto
attribute (string, float, ints or int); a message's fields, a packed run of varints."""
import struct


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
    """AttributeProto (NodeProto field 5): a str is STRING, a float FLOAT, a list INTS, else INT."""
    if isinstance(v, str):
        return ld(5, st(1, name) + ld(4, v.encode()) + vi(20, 3))
    if isinstance(v, float):
        return ld(5, st(1, name) + varint(2 << 3 | 5) + struct.pack("<f", v) + vi(20, 1))
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

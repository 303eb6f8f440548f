"""onnx_pb.py - the few protobuf wire-format writers the ONNX Runtime comparison scripts use to
write one-node ONNX models without the onnx package (python3 stdlib only): a length-delimited
field, a varint field, a string field and a NodeProto attribute (string, float, ints or int)."""
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

#!/usr/bin/env python3
"""Compare the .npy files of two directories (float32/float16 only): relative L2 error per file."""
import math
import os
import struct
import sys


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    major = data[6]
    if major == 1:
        hlen = struct.unpack("<H", data[8:10])[0]
        start = 10
    else:
        hlen = struct.unpack("<I", data[8:12])[0]
        start = 12
    header = data[start:start + hlen].decode("latin1")
    body = data[start + hlen:]
    if "'<f4'" in header:
        return struct.unpack("<%df" % (len(body) // 4), body)
    if "'<f2'" in header:
        return struct.unpack("<%de" % (len(body) // 2), body)
    raise ValueError(f"{path}: only float32/float16 are compared")


def main():
    ref_dir, dev_dir = sys.argv[1], sys.argv[2]
    for name in sorted(os.listdir(ref_dir)):
        if not name.endswith(".npy"):
            continue
        a = load(os.path.join(ref_dir, name))
        b = load(os.path.join(dev_dir, name))
        if len(a) != len(b):
            print(f"  {name}: size differs ({len(a)} vs {len(b)})")
            return 1
        num = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
        den = math.sqrt(sum(x * x for x in a)) or 1.0
        rel = num / den
        print(f"  {name}: relative L2 error vs reference {rel:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""compare_qops.py - each com.microsoft QOperator op on its own (QLinearSigmoid, QLinearLeakyRelu,
QLinearAveragePool, QLinearConcat, QLinearSoftmax, QLinearWhere, QGemm; UINT8 and INT8, the
attribute variants; and the standard ops such models run on codes, MaxPool and nearest Resize with
the pads / dilations / ceil_mode / auto_pad and coordinate / nearest modes blis-cpu's kernels on
codes take), one-node models with random codes, run on ONNX Runtime (ort_run.js), the
reference and blis-cpu: prints per case how many output elements differ and by how many codes
(docs/onnx.md, "Quantized models"). A check against ONNX Runtime, not a test (needs node and
tools/ort/setup.sh).
usage: tools/ort/compare_qops.py [BUILD_DIR]"""
import os, random, shutil, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MI_BUILD", os.path.join(HERE, "..", "..", "build"))


sys.path.insert(0, HERE)
from onnx_pb import BOOL, FLOAT, INT8, INT32, INT64, NPY, UINT8, attr, ld, load, npy, numel, run_sides, st, tensor, vi, vinfo  # noqa: E402,F401


def codes(rng, dt, n):
    return [rng.randint(0, 255) if dt == UINT8 else rng.randint(-128, 127) for _ in range(n)]


class Case:
    """One node: runtime inputs (name, dtype, dims), constants (name, dtype, dims, values), inputs in
    order ("" for an omitted one), attributes, and the output's dtype."""

    def __init__(self, name, op, runtime, consts, order, attrs, out_dt, domain="com.microsoft"):
        self.name, self.op, self.runtime, self.consts, self.domain = name, op, runtime, consts, domain
        self.order, self.attrs, self.out_dt = order, attrs, out_dt

    def write(self, d, rng):
        n = b"".join(st(1, i) for i in self.order) + st(2, "y") + st(3, self.name) + st(4, self.op)
        n += (st(7, self.domain) if self.domain else b"") + b"".join(attr(k, v) for k, v in self.attrs)
        g = ld(1, n) + st(2, "g") + b"".join(tensor(*c) for c in self.consts)
        g += b"".join(ld(11, vinfo(nm, dt, dims)) for nm, dt, dims in self.runtime) + ld(12, st(1, "y") + ld(2, ld(1, vi(1, self.out_dt))))
        model = vi(1, 8) + ld(7, g) + ld(8, st(1, "") + vi(2, 13)) + ld(8, st(1, "com.microsoft") + vi(2, 1))
        open(os.path.join(d, "m.onnx"), "wb").write(model)
        args = []
        for nm, dt, dims in self.runtime:
            p = os.path.join(d, nm + ".npy")
            vals = [rng.randint(0, 1) for _ in range(numel(dims))] if dt == BOOL else codes(rng, dt, numel(dims))
            npy(p, dt, dims, vals)
            args += ["--input", "%s=%s" % (nm, p)]
        return args


def f32(name, v): return (name, FLOAT, [len(v)] if isinstance(v, list) else [], v if isinstance(v, list) else [v])
def zp(name, dt, v): return (name, dt, [len(v)] if isinstance(v, list) else [], v if isinstance(v, list) else [v])


def cases():
    out = []
    for dt in (UINT8, INT8):
        t = "u8" if dt == UINT8 else "s8"
        z0 = 0 if dt == UINT8 else -128
        un = [("x", dt, [4, 257])]
        for op, attrs in (("QLinearSigmoid", []), ("QLinearLeakyRelu", [("alpha", 0.1)])):
            out.append(Case("%s_%s" % (op, t), op, un, [f32("xs", 0.0625), zp("xz", dt, z0 + 120), f32("ys", 1 / 256.0),
                                                         zp("yz", dt, z0 + 3)], ["x", "xs", "xz", "ys", "yz"], attrs, dt))
        out.append(Case("QLinearLeakyRelu_%s_ties" % t, "QLinearLeakyRelu", un,
                        [f32("xs", 0.5), zp("xz", dt, z0 + 128), f32("ys", 0.25), zp("yz", dt, z0 + 64)],
                        ["x", "xs", "xz", "ys", "yz"], [("alpha", 0.25)], dt))
        for nm, attrs, dims in (("k3s2p1", [("kernel_shape", [3, 3]), ("strides", [2, 2]), ("pads", [1, 1, 1, 1])], [1, 3, 9, 11]),
                                ("incl_ceil", [("kernel_shape", [3, 3]), ("strides", [2, 2]), ("pads", [1, 1, 0, 0]),
                                               ("count_include_pad", 1), ("ceil_mode", 1)], [1, 3, 9, 11]),
                                ("nhwc", [("kernel_shape", [2, 2]), ("strides", [2, 2]), ("channels_last", 1)], [1, 8, 10, 3]),
                                ("global", [("kernel_shape", [5, 6])], [2, 4, 5, 6]),
                                ("1d", [("kernel_shape", [3]), ("pads", [1, 1])], [1, 2, 17])):
            out.append(Case("QLinearAveragePool_%s_%s" % (nm, t), "QLinearAveragePool", [("x", dt, dims)],
                            [f32("xs", 0.03), zp("xz", dt, z0 + 100), f32("ys", 0.02), zp("yz", dt, z0 + 90)],
                            ["x", "xs", "xz", "ys", "yz"], attrs, dt))
        out.append(Case("QLinearConcat_%s" % t, "QLinearConcat", [("a", dt, [2, 3, 5]), ("b", dt, [2, 4, 5]), ("c", dt, [2, 1, 5])],
                        [f32("ys", 0.05), zp("yz", dt, z0 + 128), f32("as", 0.05), zp("az", dt, z0 + 128), f32("bs", 0.025),
                         zp("bz", dt, z0 + 7), f32("cs", 0.2), zp("cz", dt, z0 + 200)],
                        ["ys", "yz", "a", "as", "az", "b", "bs", "bz", "c", "cs", "cz"], [("axis", -2)], dt))
        for nm, attrs, dims in (("o13_last", [("opset", 13), ("axis", -1)], [3, 5, 16]), ("o13_mid", [("opset", 13), ("axis", 1)], [3, 5, 16]),
                                ("o12_flat", [("opset", 12), ("axis", 1)], [3, 5, 16])):
            out.append(Case("QLinearSoftmax_%s_%s" % (nm, t), "QLinearSoftmax", [("x", dt, dims)],
                            [f32("xs", 0.04), zp("xz", dt, z0 + 100), f32("ys", 1 / 256.0), zp("yz", dt, z0)],
                            ["x", "xs", "xz", "ys", "yz"], attrs, dt))
        out.append(Case("QLinearWhere_%s" % t, "QLinearWhere", [("c", BOOL, [2, 1, 4]), ("a", dt, [3, 4]), ("b", dt, [2, 3, 1])],
                        [f32("as", 0.1), zp("az", dt, z0 + 128), f32("bs", 0.05), zp("bz", dt, z0 + 10), f32("zs", 0.1), zp("zz", dt, z0 + 128)],
                        ["c", "a", "as", "az", "b", "bs", "bz", "zs", "zz"], [], dt))
        # Standard ops ONNX Runtime's QOperator models run on codes (its "Direct8Bit" ops, MaxPool, Resize)
        x4 = [("x", dt, [1, 3, 6, 8])]
        seen = {}
        for op, consts, order, attrs in (
                ("MaxPool", [], ["x"], [("kernel_shape", [3, 3]), ("strides", [2, 2]), ("pads", [1, 1, 1, 1])]),
                ("Resize", [("sc", FLOAT, [4], [1.0, 1.0, 2.0, 2.0])], ["x", "", "sc"], [("mode", "nearest")]),
                # the attribute variants blis-cpu's kernels on codes take (blis_qpool.c, blis_qresize.c)
                ("MaxPool", [], ["x"], [("kernel_shape", [2, 2]), ("strides", [2, 2])]),
                ("MaxPool", [], ["x"], [("kernel_shape", [3, 3]), ("strides", [2, 2]), ("dilations", [2, 2]),
                                        ("pads", [1, 0, 2, 1]), ("ceil_mode", 1)]),
                ("MaxPool", [], ["x"], [("kernel_shape", [3, 3]), ("strides", [2, 2]), ("auto_pad", "SAME_UPPER")]),
                ("Resize", [("sz", INT64, [4], [1, 3, 11, 13])], ["x", "", "", "sz"], [("mode", "nearest")]),
                ("Resize", [("sc", FLOAT, [4], [1.0, 1.0, 0.5, 0.6])], ["x", "", "sc"],
                 [("mode", "nearest"), ("coordinate_transformation_mode", "align_corners"), ("nearest_mode", "round_prefer_ceil")]),
                ("Resize", [("sc", FLOAT, [4], [1.0, 1.0, 3.0, 1.5])], ["x", "", "sc"],
                 [("mode", "nearest"), ("coordinate_transformation_mode", "asymmetric"), ("nearest_mode", "floor")]),
                ("Resize", [("sc", FLOAT, [4], [1.0, 1.0, 2.0, 3.0])], ["x", "", "sc"],
                 [("mode", "nearest"), ("coordinate_transformation_mode", "pytorch_half_pixel"), ("nearest_mode", "ceil")]),
                ("Resize", [("sc", FLOAT, [4], [1.0, 1.0, 3.0, 1.5])], ["x", "", "sc"],
                 [("mode", "nearest"), ("coordinate_transformation_mode", "tf_half_pixel_for_nn"), ("nearest_mode", "round_prefer_ceil")]),
                ("Transpose", [], ["x"], [("perm", [0, 2, 3, 1])]),
                ("Reshape", [("sh", INT64, [2], [3, -1])], ["x", "sh"], []),
                ("Flatten", [], ["x"], [("axis", 2)]),
                ("Pad", [("p", INT64, [8], [0, 0, 1, 2, 0, 0, 2, 1]), ("v", dt, [], [z0 + 17])], ["x", "p", "v"], []),
                ("Gather", [("i", INT64, [3], [2, 0, 2])], ["x", "i"], [("axis", 1)]),
                ("Unsqueeze", [("ax", INT64, [1], [0])], ["x", "ax"], [])):
            seen[op] = seen.get(op, 0) + 1  # the second MaxPool is MaxPool2_u8, and so on
            nm = "%s%s_%s" % (op, seen[op] if seen[op] > 1 else "", t)
            out.append(Case(nm, op, x4, consts, order, attrs, dt, domain=""))
    rng = random.Random(5)
    M, K, N = 5, 37, 11
    bias = [rng.randint(-2000, 2000) for _ in range(N)]
    for nm, adt, bdt, tb, per_col, coded, alpha in (("u8u8", UINT8, UINT8, 0, 0, 1, 1.0), ("u8s8_percol_transB", UINT8, INT8, 1, 1, 1, 1.0),
                                                    ("u8s8_float", UINT8, INT8, 1, 1, 0, 1.0), ("s8s8_alpha", INT8, INT8, 0, 0, 1, 0.5)):
        bdims = [N, K] if tb else [K, N]
        bvals = codes(rng, bdt, N * K)
        sb = [0.01 + 0.002 * j for j in range(N)] if per_col else 0.013
        zb = ([rng.randint(0, 255) if bdt == UINT8 else rng.randint(-5, 5) for _ in range(N)] if per_col else (128 if bdt == UINT8 else 0))
        consts = [f32("as", 0.02), zp("az", adt, 128 if adt == UINT8 else 3), ("b", bdt, bdims, bvals), f32("bs", sb), zp("bz", bdt, zb),
                  ("c", INT32, [N], bias)]
        order = ["a", "as", "az", "b", "bs", "bz", "c"]
        if coded:
            consts += [f32("ys", 0.04), zp("yz", adt, 100 if adt == UINT8 else -20)]
            order += ["ys", "yz"]
        out.append(Case("QGemm_" + nm, "QGemm", [("a", adt, [M, K])], consts, order,
                        [("transB", tb)] + ([("alpha", alpha)] if alpha != 1.0 else []), adt if coded else FLOAT))
    return out


def main():
    rng = random.Random(1)
    run = os.path.join(BUILD, "bin", "mi-run")
    for c in cases():
        d = tempfile.mkdtemp()
        args = c.write(d, rng)
        outs = run_sides(run, d, args)
        line = c.name + ":"
        for a, b in (("ort", "ref"), ("ref", "blis")):
            if isinstance(outs[a], str) or isinstance(outs[b], str):
                line += "  %s vs %s: %s" % (b, a, outs[a] if isinstance(outs[a], str) else outs[b])
                continue
            diff = [abs(x - y) for x, y in zip(outs[a], outs[b])]
            nd = sum(1 for x in diff if x)
            line += "  %s vs %s: %d of %d differ%s" % (b, a, nd, len(diff), " (max %g)" % max(diff) if nd else "")
        print(line, flush=True)
        shutil.rmtree(d, ignore_errors=True)


main()

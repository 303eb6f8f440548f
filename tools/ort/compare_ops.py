#!/usr/bin/env python3
"""compare_ops.py - the standard ops added for real exports, each form on its own (Elu, Selu,
Celu, Softsign, Mish, ThresholdedRelu, Shrink, HardSigmoid, CastLike; ReduceL1, ReduceSumSquare,
ReduceLogSum with axes as attribute and input; GroupNormalization in its opset 18 and 21 forms,
LpNormalization, MeanVarianceNormalization;
GatherND with batch_dims; GatherElements (last, first and middle axis, smaller indices, negative
ones, INT32 indices, INT64 and UINT8 data); ScatterElements with every reduction; NonMaxSuppression with both box
encodings, the optional inputs, ties and runtime thresholds; OneHot, Hardmax, Compress, ReverseSequence (constant
and runtime conditions and lengths), TopK (values and indices, ties), ArgMax/ArgMin (ties, both
index choices); the trigonometric
and hyperbolic functions, LRN, ImageScaler, Scatter, GridSample, RoiAlign, DFT, STFT, the
Hann/Hamming/Blackman windows and MelWeightMatrix; EyeLike, BitShift, BitwiseAnd/Or/Xor/Not on
every integer type the framework holds, LpPool and GlobalLpPool, Col2Im, DeformConv, Det, CenterCropPad, MaxRoiPool, TensorScatter, Unique;
the reductions, ArgMax/ArgMin, TopK, CumSum, Clip, Sign, Mod, ScatterElements add, OneHot indices, Range, Unique and EyeLike on each
integer type ONNX allows, each also against a Python formula, `ref vs py`: int_reduce_cases): one-node models with random inputs, run on ONNX Runtime
(ort_run.js), the reference and blis-cpu (ops it does not take run on the host there). Prints per
case the largest absolute difference (ref vs ORT, blis vs ref, blis vs ORT) (integer outputs must be exact) (docs/onnx.md). A check
against ONNX Runtime, not a test (needs node and tools/ort/setup.sh).
usage: tools/ort/compare_ops.py [BUILD_DIR] [CASE-SUBSTRING]"""
import math, os, random, struct, sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MI_BUILD", os.path.join(HERE, "..", "..", "build"))
ONLY = sys.argv[2] if len(sys.argv) > 2 else ""
sys.path.insert(0, HERE)
from onnx_pb import BOOL, FLOAT, INT8, INT16, INT32, INT64, NPY, UINT8, UINT16, UINT32, UINT64, attr, compare_cases, ld, load, npy, numel, side_diff, st, tensor, vi, vinfo  # noqa: E402,F401


class Case:
    """One node: runtime inputs (name, dtype, dims, generator), constants (name, dtype, dims,
    values), inputs in order ("" for an omitted one), attributes, the output's dtype, the opset."""

    def __init__(self, name, op, opset, runtime, consts, order, attrs, out_dt=FLOAT, outs=("y",)):
        self.name, self.op, self.opset, self.runtime, self.consts = name, op, opset, runtime, consts
        self.order, self.attrs, self.out_dt, self.outs = order, attrs, out_dt, outs

    def write(self, d, rng):
        # the node's outputs: `outs`, of which "y" (of out_dt) is the graph's output
        n = b"".join(st(1, i) for i in self.order) + b"".join(st(2, o) for o in self.outs) + st(3, self.name) + st(4, self.op)
        n += b"".join(attr(k, v) for k, v in self.attrs)
        g = ld(1, n) + st(2, "g") + b"".join(tensor(*c) for c in self.consts)
        g += b"".join(ld(11, vinfo(nm, dt, dims)) for nm, dt, dims, _ in self.runtime)
        g += ld(12, st(1, "y") + ld(2, ld(1, vi(1, self.out_dt))))
        open(os.path.join(d, "m.onnx"), "wb").write(vi(1, 8) + ld(7, g) + ld(8, st(1, "") + vi(2, self.opset)))
        args = []
        for nm, dt, dims, gen in self.runtime:
            p = os.path.join(d, nm + ".npy")
            npy(p, dt, dims, [gen(rng) for _ in range(numel(dims))])
            args += ["--input", "%s=%s" % (nm, p)]
        return args


def normal(r): return r.gauss(0, 3)
def positive(r): return r.uniform(0.05, 4)
def small_int(r): return r.randint(-50, 50)
def coord(r): return r.uniform(0, 10)


RANGES = {INT8: (-128, 127), UINT8: (0, 255), INT16: (-2 ** 15, 2 ** 15 - 1), UINT16: (0, 2 ** 16 - 1),
          INT32: (-2 ** 31, 2 ** 31 - 1), UINT32: (0, 2 ** 32 - 1), INT64: (-2 ** 63, 2 ** 63 - 1), UINT64: (0, 2 ** 64 - 1)}
TNAME = {FLOAT: "float", INT8: "int8", UINT8: "uint8", INT16: "int16", UINT16: "uint16", INT32: "int32", UINT32: "uint32",
         INT64: "int64", UINT64: "uint64", BOOL: "bool"}


def full(dt):
    """Random values over the whole range of integer type dt."""
    lo, hi = RANGES[dt]
    return lambda r: r.randint(lo, hi)


def tensor_attr(name, tv):
    """A TENSOR attribute of one value: tv is (element type, value)."""
    dt, v = tv
    t = vi(1, 1) + vi(2, dt) + ld(9, struct.pack("<" + NPY[dt][1], v))
    return ld(5, st(1, name) + ld(5, t) + vi(20, 4))


class Chain(Case):
    """A few nodes in a row: `nodes` (op, inputs, outputs, attributes) with the runtime inputs and
    constants of Case; the last node's output is y."""

    def __init__(self, name, opset, runtime, consts, nodes, out_dt):
        Case.__init__(self, name, nodes[-1][0], opset, runtime, consts, [], [], out_dt)
        self.nodes = nodes

    def write(self, d, rng):
        body = b""
        for k, (op, ins, outs, attrs) in enumerate(self.nodes):
            n = b"".join(st(1, i) for i in ins) + b"".join(st(2, o) for o in outs) + st(3, "n%d" % k) + st(4, op)
            body += ld(1, n + b"".join(tensor_attr(a, v) if isinstance(v, tuple) else attr(a, v) for a, v in attrs))
        g = body + st(2, "g") + b"".join(tensor(*c) for c in self.consts)
        g += b"".join(ld(11, vinfo(nm, dt, dims)) for nm, dt, dims, _ in self.runtime)
        g += ld(12, st(1, "y") + ld(2, ld(1, vi(1, self.out_dt))))
        open(os.path.join(d, "m.onnx"), "wb").write(vi(1, 8) + ld(7, g) + ld(8, st(1, "") + vi(2, self.opset)))
        args = []
        for nm, dt, dims, gen in self.runtime:
            p = os.path.join(d, nm + ".npy")
            npy(p, dt, dims, [gen(rng) for _ in range(numel(dims))])
            args += ["--input", "%s=%s" % (nm, p)]
        return args


def int_types():
    """INT16, UINT16, UINT32 and UINT64 (held exactly since they were added): Cast to and from
    float, INT32 and INT64; Add/Sub/Mul wrapping, Div, Max/Min and the comparisons; the moves
    (Transpose, Concat, Slice, Gather, Reshape, Where, Identity); an INT16 PCM input scaled to
    float; ConstantOfShape of each type."""
    out = []
    new = (INT16, UINT16, UINT32, UINT64)
    for t in new:
        tn = TNAME[t]
        for o in (FLOAT, INT32, INT64):
            out.append(Case("Cast_%s_to_%s" % (tn, TNAME[o]), "Cast", 13, [("x", t, [4, 33], full(t))], [], ["x"], [("to", o)], o))
            # from float: values inside the target's range (out of it C++ leaves the cast undefined)
            lo, hi = RANGES[t]
            lo, hi = max(lo, -3e4 if o == FLOAT else lo), min(hi, 6e4 if o == FLOAT else hi)
            src = (lambda r, lo=lo, hi=hi: r.uniform(lo, hi)) if o == FLOAT else full(o)
            out.append(Case("Cast_%s_to_%s" % (TNAME[o], tn), "Cast", 13, [("x", o, [4, 33], src)], [], ["x"], [("to", t)], t))
        for o in new + (INT8, UINT8):
            if o != t:
                out.append(Case("Cast_%s_to_%s" % (tn, TNAME[o]), "Cast", 13, [("x", t, [2, 40], full(t))], [], ["x"], [("to", o)], o))
        # Add/Sub/Mul/Div take the 8- and 16-bit types from opset 14
        for op in ("Add", "Sub", "Mul", "Max", "Min"):
            out.append(Case("%s_%s" % (op, tn), op, 14 if op in ("Add", "Sub", "Mul") else 13, [("a", t, [3, 1, 9], full(t)), ("b", t, [4, 9], full(t))], [], ["a", "b"], [], t))
        nz = (lambda r, t=t: r.randint(1, RANGES[t][1]) * (r.choice((1, -1)) if RANGES[t][0] < 0 else 1))
        out.append(Case("Div_" + tn, "Div", 14, [("a", t, [3, 9], full(t)), ("b", t, [3, 9], nz)], [], ["a", "b"], [], t))
        for op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"):
            out.append(Case("%s_%s" % (op, tn), op, 16, [("a", t, [3, 9], full(t))], [("b", t, [9], [RANGES[t][0], RANGES[t][1], 0, 1, 7, 7, 7, 7, 7])],
                            ["a", "b"], [], BOOL))
        out.append(Case("Identity_" + tn, "Identity", 13, [("x", t, [5, 7], full(t))], [], ["x"], [], t))
        out.append(Case("Transpose_" + tn, "Transpose", 13, [("x", t, [2, 3, 5], full(t))], [], ["x"], [("perm", [2, 0, 1])], t))
        out.append(Case("Concat_" + tn, "Concat", 13, [("a", t, [2, 3], full(t)), ("b", t, [2, 5], full(t))], [], ["a", "b"], [("axis", 1)], t))
        out.append(Case("Slice_" + tn, "Slice", 13, [("x", t, [6, 8], full(t))], [("s", INT64, [2], [1, 7]), ("e", INT64, [2], [5, 1]),
                        ("ax", INT64, [2], [0, 1]), ("st", INT64, [2], [2, -2])], ["x", "s", "e", "ax", "st"], [], t))
        out.append(Case("Gather_" + tn, "Gather", 13, [("x", t, [6, 4], full(t))], [("i", INT64, [5], [5, 0, -1, 2, 2])], ["x", "i"],
                        [("axis", 0)], t))
        out.append(Case("Reshape_" + tn, "Reshape", 14, [("x", t, [6, 4], full(t))], [("s", INT64, [3], [2, -1, 3])], ["x", "s"], [], t))
        out.append(Case("Where_" + tn, "Where", 16, [("c", BOOL, [3, 5], lambda r: r.randint(0, 1)), ("x", t, [3, 5], full(t)),
                        ("y2", t, [5], full(t))], [], ["c", "x", "y2"], [], t))
        # ConstantOfShape's value tensor of the type
        v = RANGES[t][1] - 1
        out.append(Chain("ConstantOfShape_" + tn, 20, [("x", t, [2, 3], full(t))], [("sh", INT64, [2], [2, 3])],
                         [("ConstantOfShape", ["sh"], ["c"], [("value", (t, v))]), ("Add", ["c", "x"], ["y"], [])], t))
    for t in (INT16, UINT16):
        tn = TNAME[t]
        out.append(Case("Neg_int16" if t == INT16 else "Abs_uint16", "Neg" if t == INT16 else "Abs", 13,
                        [("x", t, [4, 9], full(t))], [], ["x"], [], t))
    out.append(Case("Abs_int16", "Abs", 13, [("x", INT16, [4, 9], full(INT16))], [], ["x"], [], INT16))
    # 16-bit PCM in, float features out: Cast(FLOAT) -> Mul(1/32768) -> Abs -> ReduceMean
    pcm = [("pcm", INT16, [2, 1600], full(INT16))]
    out.append(Chain("pcm_int16_scale", 13, pcm, [("k", FLOAT, [], [1.0 / 32768])],
                     [("Cast", ["pcm"], ["f"], [("to", FLOAT)]), ("Mul", ["f", "k"], ["s"], []),
                      ("Relu", ["s"], ["r"], []), ("ReduceMean", ["r"], ["y"], [("axes", [1])])], FLOAT))
    out.append(Chain("pcm_int16_scale_frames", 13, pcm, [("k", FLOAT, [], [1.0 / 32768]), ("sh", INT64, [3], [2, 10, 160])],
                     [("Cast", ["pcm"], ["f"], [("to", FLOAT)]), ("Mul", ["f", "k"], ["s"], []),
                      ("Reshape", ["s", "sh"], ["y"], [])], FLOAT))
    # post-processing: float scores -> quantized INT16 output
    out.append(Chain("float_to_int16_out", 13, [("x", FLOAT, [3, 50], normal)], [("k", FLOAT, [], [1000.0])],
                     [("Mul", ["x", "k"], ["m"], []), ("Cast", ["m"], ["y"], [("to", INT16)])], INT16))
    # Shape arithmetic in UINT64
    out.append(Chain("shape_uint64", 13, [("x", FLOAT, [3, 5, 7], normal)], [("one", UINT64, [], [1])],
                     [("Shape", ["x"], ["s"], []), ("Cast", ["s"], ["u"], [("to", UINT64)]), ("Add", ["u", "one"], ["y"], [])], UINT64))
    return out


def sat(v, dt):
    """v clamped to integer type dt's range."""
    lo, hi = RANGES[dt]
    return max(lo, min(hi, v))


def trunc_div(a, b):
    """a / b truncated toward zero, exactly."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def py_reduce(vals, dims, axes, fn):
    """fn over each group of vals (row-major, shape dims) that the axes reduce, in output order."""
    axes = sorted(a % len(dims) for a in axes)
    keep = [d for d in range(len(dims)) if d not in axes]
    groups = {}
    for i, v in enumerate(vals):
        idx, r = [], i
        for d in reversed(dims):
            idx.append(r % d)
            r //= d
        idx.reverse()
        groups.setdefault(tuple(idx[d] for d in keep), []).append(v)
    return [fn(groups[k]) for k in sorted(groups)]


def py_int_reduce(op, dt, lse_real):
    """The integer reductions as the reference computes them: exact, saturated to dt; L2, LogSum and
    LogSumExp through a double, truncated; LogSumExp of INT32/INT64 as ONNX Runtime's kernel (each
    exp(x - max) truncated: the values equal to the max count 1 each), of UINT32/UINT64 as ONNX's
    function body (in double)."""
    def tr(v):
        return 0 if v != v else sat(int(v) if abs(v) < 2 ** 200 else (RANGES[dt][1] if v > 0 else RANGES[dt][0]), dt)
    if op == "ReduceSum":
        return lambda g: sat(sum(g), dt)
    if op == "ReduceMean":
        return lambda g: sat(trunc_div(sum(g), len(g)), dt)
    if op == "ReduceMax":
        return max
    if op == "ReduceMin":
        return min
    if op == "ReduceProd":
        return lambda g: sat(math.prod(g), dt)
    if op == "ReduceL1":
        return lambda g: sat(sum(abs(v) for v in g), dt)
    if op == "ReduceSumSquare":
        return lambda g: sat(sum(v * v for v in g), dt)
    if op == "ReduceL2":
        return lambda g: tr(math.sqrt(float(sum(v * v for v in g))))
    if op == "ReduceLogSum":
        return lambda g: tr(math.log(float(sum(g))))
    if lse_real:
        return lambda g: tr(math.log(sum(math.exp(float(v)) for v in g)))
    return lambda g: tr(math.log(g.count(max(g))) + float(max(g)))


def int_reduce_cases():
    """Every reduction, ArgMax/ArgMin, TopK and CumSum on every integer type ONNX allows for it,
    each with a Python formula (case.py) beside ONNX Runtime, which lacks most of these kernels;
    INT16/UINT16 reductions (and INT8/UINT8 ones but ReduceMax/ReduceMin), which ONNX does not
    define, refused on both sides."""
    out = []
    four = (INT32, INT64, UINT32, UINT64)
    dims = [3, 4, 5]
    # value ranges where ONNX Runtime's double sums are exact (it saturates like the reference)
    def gen_for(op, t):
        lo, hi = RANGES[t]
        if op in ("ReduceProd",):
            return lambda r: r.randint(max(lo, -1500), min(hi, 1500))
        if op in ("ReduceL2", "ReduceSumSquare"):
            return lambda r: r.randint(max(lo, -2 ** 20), min(hi, 2 ** 20))
        if op == "ReduceLogSum":
            return lambda r: r.randint(1, 5000)
        if op == "ReduceLogSumExp":
            return lambda r: r.randint(max(lo, -3), 3 if lo < 0 else 8)
        if op == "ReduceMean":
            return lambda r: r.randint(max(lo, -50), 50)
        if t in (INT64, UINT64):
            return lambda r: r.randint(max(lo, -2 ** 48), 2 ** 48)
        return full(t)
    for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
               "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"):
        types = four + ((INT8, UINT8) if op in ("ReduceMax", "ReduceMin") else ())
        for t in types:
            tn = TNAME[t]
            for nm, opset, axes, keep in (("axis1", 13, [1], 1), ("axes0,2_keep0", 18, [0, 2], 0)):
                ax_in = opset >= 18 or op == "ReduceSum"
                consts = [("ax", INT64, [len(axes)], axes)] if ax_in else []
                attrs = ([] if ax_in else [("axes", axes)]) + [("keepdims", keep)]
                c = Case("%s_%s_%s" % (op, tn, nm), op, opset, [("x", t, dims, gen_for(op, t))], consts,
                         ["x", "ax"] if ax_in else ["x"], attrs, t)
                c.py = (lambda ins, op=op, t=t, axes=axes: py_reduce(ins["x"][0], ins["x"][1], axes,
                                                                     py_int_reduce(op, t, t in (UINT32, UINT64))))
                out.append(c)
    # saturation past the type (ONNX Runtime: INT32/INT64 only) and a whole-tensor reduction
    for t in four:
        tn = TNAME[t]
        for op in ("ReduceSum", "ReduceProd", "ReduceSumSquare", "ReduceL1"):
            c = Case("%s_%s_saturates" % (op, tn), op, 18, [("x", t, [2, 6], full(t) if t in (INT32, UINT32) else
                                                                (lambda r, t=t: r.randint(RANGES[t][1] // 4, RANGES[t][1])))],
                     [("ax", INT64, [1], [1])], ["x", "ax"], [], t)
            c.py = (lambda ins, op=op, t=t: py_reduce(ins["x"][0], ins["x"][1], [1], py_int_reduce(op, t, False)))
            out.append(c)
        c = Case("ReduceMean_%s_all_keep0" % tn, "ReduceMean", 18, [("x", t, [4, 7], gen_for("ReduceMean", t))], [], ["x"],
                 [("keepdims", 0)], t)
        c.py = (lambda ins, t=t: [trunc_div(sum(ins["x"][0]), len(ins["x"][0]))])
        out.append(c)
    for t in (INT16, UINT16):
        for op in ("ReduceSum", "ReduceMax"):
            out.append(Case("%s_%s_refused" % (op, TNAME[t]), op, 18, [("x", t, dims, full(t))], [], ["x"], [], t))
    out.append(Case("ReduceSum_int8_refused", "ReduceSum", 13, [("x", INT8, dims, full(INT8))], [], ["x"], [], INT8))
    alltypes = (INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64)
    for t in alltypes:
        tn = TNAME[t]
        tied = (lambda r, t=t: r.choice((RANGES[t][0], RANGES[t][1], 0, 1, RANGES[t][1] - 1)))
        for op in ("ArgMax", "ArgMin"):
            for nm, gen, axis, last in (("full", full(t), 1, 0), ("ties_last", tied, 2, 1), ("ties_first", tied, 0, 0)):
                c = Case("%s_%s_%s" % (op, tn, nm), op, 13, [("x", t, dims, gen)], [], ["x"],
                         [("axis", axis), ("select_last_index", last)], INT64)

                def argpy(ins, op=op, axis=axis, last=last):
                    def pick(g):
                        best = max(g) if op == "ArgMax" else min(g)
                        return len(g) - 1 - g[::-1].index(best) if last else g.index(best)
                    return py_reduce(ins["x"][0], ins["x"][1], [axis], pick)
                c.py = argpy
                out.append(c)
        for nm, gen, largest in (("largest", full(t), 1), ("smallest_ties", tied, 0)):
            for o in ("values", "indices"):
                c = Case("TopK_%s_%s_%s" % (tn, nm, o), "TopK", 11, [("x", t, [3, 9], gen)], [("k", INT64, [1], [4])], ["x", "k"],
                         [("largest", largest)], t if o == "values" else INT64, ("y", "i") if o == "values" else ("v", "y"))

                def topkpy(ins, largest=largest, o=o):
                    vals, res = ins["x"][0], []
                    for row in range(3):
                        g = vals[row * 9:(row + 1) * 9]
                        order = sorted(range(9), key=lambda i: ((-g[i] if largest else g[i]), i))[:4]
                        res += [g[i] for i in order] if o == "values" else order
                    return res
                c.py = topkpy
                out.append(c)
    for t in four:
        tn = TNAME[t]
        for nm, attrs in (("axis1", []), ("exclusive_reverse", [("exclusive", 1), ("reverse", 1)])):
            c = Case("CumSum_%s_%s" % (tn, nm), "CumSum", 14, [("x", t, [3, 6], full(t))], [("a", INT64, [], [1])], ["x", "a"], attrs, t)

            def cspy(ins, t=t, attrs=attrs):
                vals, res, w = ins["x"][0], [], 8 * struct.calcsize(NPY[t][1])
                ex = bool(attrs)
                for row in range(3):
                    g = vals[row * 6:(row + 1) * 6]
                    g2 = g[::-1] if ex else g
                    acc, r = 0, []
                    for v in g2:
                        if not ex:
                            acc += v
                        r.append(acc)
                        if ex:
                            acc += v
                    r = r[::-1] if ex else r
                    for v in r:
                        v &= (1 << w) - 1
                        res.append(v - (1 << w) if RANGES[t][0] < 0 and v >= 1 << (w - 1) else v)
                return res
            c.py = cspy
            out.append(c)
    # Clip, Sign, Mod (both modes) and ScatterElements' add reduction on every integer type
    for t in alltypes:
        tn, (lo, hi) = TNAME[t], RANGES[t]
        b = sorted((lo + (hi - lo) // 3, lo + 2 * (hi - lo) // 3))
        c = Case("Clip_" + tn, "Clip", 13, [("x", t, [4, 9], full(t))], [("lo", t, [], [b[0]]), ("hi", t, [], [b[1]])],
                 ["x", "lo", "hi"], [], t)
        c.py = (lambda ins, b=b: [min(max(v, b[0]), b[1]) for v in ins["x"][0]])
        out.append(c)
        c = Case("Clip_%s_max_only" % tn, "Clip", 13, [("x", t, [4, 9], full(t))], [("hi", t, [], [b[1]])], ["x", "", "hi"], [], t)
        c.py = (lambda ins, b=b: [min(v, b[1]) for v in ins["x"][0]])
        out.append(c)
        c = Case("Sign_" + tn, "Sign", 13, [("x", t, [4, 9], lambda r, t=t: r.choice((0, RANGES[t][0], RANGES[t][1], 1, r.randint(*RANGES[t]))))],
                 [], ["x"], [], t)
        c.py = (lambda ins: [(v > 0) - (v < 0) for v in ins["x"][0]])
        out.append(c)
        nz = (lambda r, t=t: r.choice((1, -1) if RANGES[t][0] < 0 else (1,)) * r.randint(1, min(RANGES[t][1], 1000)))
        for fm in (0, 1):
            # ONNX Runtime's fmod = 1 goes through double: 64-bit dividends within 2^53, where it is exact
            ga = (lambda r, lo=lo: r.randint(max(lo, -2 ** 53), 2 ** 53)) if fm and t in (INT64, UINT64) else full(t)
            c = Case("Mod_%s_fmod%d" % (tn, fm), "Mod", 13, [("a", t, [3, 9], ga), ("b", t, [3, 9], nz)], [], ["a", "b"],
                     [("fmod", fm)], t)
            c.py = (lambda ins, fm=fm: [a - b * trunc_div(a, b) if fm else a % b
                                        for a, b in zip(ins["a"][0], ins["b"][0])])
            out.append(c)
        c = Case("ScatterElements_add_%s" % tn, "ScatterElements", 16, [("x", t, [4, 5], full(t)), ("u", t, [2, 5], full(t))],
                 [("i", INT64, [2, 5], [0, 1, 1, 3, 0, 0, 1, 1, 3, 0])], ["x", "i", "u"], [("reduction", "add")], t)

        def scpy(ins, t=t):
            x, u, idx = list(ins["x"][0]), ins["u"][0], [0, 1, 1, 3, 0, 0, 1, 1, 3, 0]
            w = 8 * struct.calcsize(NPY[t][1])
            for p, (k, v) in enumerate(zip(idx, u)):
                j = k * 5 + p % 5
                r = (x[j] + v) & ((1 << w) - 1)
                x[j] = r - (1 << w) if RANGES[t][0] < 0 and r >= 1 << (w - 1) else r
            return x
        c.py = scpy
        out.append(c)
    # Range on INT16; OneHot with indices of each integer type (negative ones count from depth)
    c = Case("Range_int16", "Range", 11, [], [("s", INT16, [], [-300]), ("l", INT16, [], [32000]), ("d", INT16, [], [997])],
             ["s", "l", "d"], [], INT16)
    c.py = (lambda ins: list(range(-300, 32000, 997)))
    out.append(c)
    for t in alltypes:
        lo = -3 if RANGES[t][0] < 0 else 0
        c = Case("OneHot_indices_" + TNAME[t], "OneHot", 11, [("i", t, [3, 4], lambda r, lo=lo: r.randint(lo, 5))],
                 [("d", INT64, [], [4]), ("v", FLOAT, [2], [-1.0, 3.0])], ["i", "d", "v"], [])
        c.py = (lambda ins: [3.0 if (k + 4 if k < 0 else k) == j else -1.0 for k in ins["i"][0] for j in range(4)])
        out.append(c)
    # Unique (sorted values) of each integer type, the extremes among them
    for t in alltypes:
        lo, hi = RANGES[t]
        c = Case("Unique_values_" + TNAME[t], "Unique", 11, [("x", t, [20], lambda r, lo=lo, hi=hi: r.choice((lo, hi, 0, 1, hi - 1)))],
                 [], ["x"], [], t, ("y", "i", "inv", "cnt"))
        c.py = (lambda ins: sorted(set(ins["x"][0])))
        out.append(c)
    # EyeLike into each integer type (the dtype attribute) and of each type's input
    for t in alltypes:
        c = Case("EyeLike_to_" + TNAME[t], "EyeLike", 9, [("x", FLOAT, [3, 5], normal)], [], ["x"], [("k", 1), ("dtype", t)], t)
        c.py = (lambda ins: [1 if j == i + 1 else 0 for i in range(3) for j in range(5)])
        out.append(c)
        c = Case("EyeLike_of_" + TNAME[t], "EyeLike", 22, [("x", t, [4, 3], full(t))], [], ["x"], [("k", -1)], t)
        c.py = (lambda ins: [1 if j == i - 1 else 0 for i in range(4) for j in range(3)])
        out.append(c)
    return out


def py_extra(c, d):
    """The reference's output against the case's Python formula, where it has one."""
    if not hasattr(c, "py"):
        return ""
    ins = {}
    for nm, dt, dims, _ in c.runtime:
        ins[nm] = (load(os.path.join(d, nm + ".npy")), dims)
    f = os.path.join(d, "ref", "y.npy")
    return "  ref vs py: %s" % side_diff(c.py(ins), load(f) if os.path.exists(f) else "no ref output")


def cases():
    out = int_types()
    x = [("x", FLOAT, [3, 257], normal)]
    for op, opset, attrs in (("Elu", 13, []), ("Elu", 13, [("alpha", 0.3)]), ("Selu", 13, []),
                             ("Selu", 13, [("alpha", 1.5), ("gamma", 2.0)]), ("Celu", 12, []),
                             ("Celu", 12, [("alpha", 2.0)]), ("Softsign", 13, []), ("Mish", 18, []),
                             ("ThresholdedRelu", 10, []), ("ThresholdedRelu", 10, [("alpha", 0.7)]),
                             ("Shrink", 9, []), ("Shrink", 9, [("lambd", 1.0), ("bias", 0.5)]),
                             ("HardSigmoid", 7, []), ("HardSigmoid", 13, [("alpha", 0.3), ("beta", 0.4)])):
        nm = op + "".join("_%s%g" % a for a in attrs)
        out.append(Case(nm, op, opset, x, [], ["x"], attrs))
    for dt, tn in ((INT64, "int64"), (INT32, "int32")):
        out.append(Case("CastLike_float_%s" % tn, "CastLike", 15, x, [("like", dt, [], [0])], ["x", "like"], [], dt))
    out.append(Case("CastLike_int64_float", "CastLike", 15, [("x", INT64, [3, 50], small_int)],
                    [("like", FLOAT, [], [0.0])], ["x", "like"], []))
    x3 = [("x", FLOAT, [3, 4, 5], normal)]
    p3 = [("x", FLOAT, [3, 4, 5], positive)]
    i3 = [("x", INT64, [3, 4, 5], small_int)]
    for op in ("ReduceL1", "ReduceSumSquare", "ReduceLogSum"):
        xin = p3 if op == "ReduceLogSum" else x3
        out.append(Case(op + "_13_axes1", op, 13, xin, [], ["x"], [("axes", [1])]))
        out.append(Case(op + "_13_all_keep0", op, 13, xin, [], ["x"], [("keepdims", 0)]))
        out.append(Case(op + "_18_axes0,-1_keep0", op, 18, xin, [("ax", INT64, [2], [0, -1])], ["x", "ax"], [("keepdims", 0)]))
        out.append(Case(op + "_18_noop_empty", op, 18, xin, [], ["x"], [("noop_with_empty_axes", 1)]))
        if op != "ReduceLogSum":
            out.append(Case(op + "_18_int64", op, 18, i3, [("ax", INT64, [1], [2])], ["x", "ax"], [], INT64))
    rng = random.Random(3)
    g4 = [("x", FLOAT, [2, 6, 5, 7], normal)]
    for opset, groups, nsb in ((18, 3, 3), (18, 6, 6), (21, 3, 6), (21, 2, 6), (21, 1, 6)):
        sc = [rng.uniform(0.5, 2) for _ in range(nsb)]
        bi = [rng.uniform(-1, 1) for _ in range(nsb)]
        out.append(Case("GroupNormalization_%d_g%d" % (opset, groups), "GroupNormalization", opset, g4,
                        [("s", FLOAT, [nsb], sc), ("b", FLOAT, [nsb], bi)], ["x", "s", "b"],
                        [("num_groups", groups), ("epsilon", 1e-3)]))
    for nm, attrs in (("p2", []), ("p1_axis0", [("p", 1), ("axis", 0)]), ("p2_axis1", [("axis", 1)])):
        out.append(Case("LpNormalization_" + nm, "LpNormalization", 13, x3, [], ["x"], attrs))
    for nm, opset, attrs in (("default_9", 9, []), ("default_13", 13, []), ("axes1,3", 13, [("axes", [1, 3])])):
        out.append(Case("MeanVarianceNormalization_" + nm, "MeanVarianceNormalization", opset, g4, [], ["x"], attrs))
    d3 = [("x", FLOAT, [3, 4, 5], normal)]
    for nm, dims, vals, bd in (("k2", [2, 2], [0, 1, 2, -1], 0), ("k1", [2, 3, 1], [0, 2, 1, 1, -3, 2], 0),
                               ("k3", [4, 3], [0, 0, 0, 2, 3, 4, 1, -1, 2, 0, 3, 1], 0),
                               ("batch1_k2", [3, 2, 2], [0, 1, 3, 4, 1, 1, 2, 2, 0, 0, 3, -1], 1),
                               ("batch1_k1", [3, 1], [2, 0, 3], 1)):
        out.append(Case("GatherND_" + nm, "GatherND", 13, d3, [("i", INT64, dims, vals)], ["x", "i"],
                        [("batch_dims", bd)] if bd else []))
    for nm, dt, xd, idims, axis, idt in (("axis-1", FLOAT, [3, 5, 40], [3, 5, 17], -1, INT64),
                                         ("axis0_small", FLOAT, [6, 7], [4, 5], 0, INT64),
                                         ("axis1_int32_indices", FLOAT, [2, 7, 5, 9], [2, 3, 4, 6], 1, INT32),
                                         ("int64_axis2", INT64, [2, 4, 30], [2, 4, 30], 2, INT64),
                                         ("uint8_axis1", UINT8, [2, 9, 20], [2, 5, 20], 1, INT64)):
        ln, gr = xd[axis], random.Random(5)  # an rng of its own: the later cases keep their values
        gen = normal if dt == FLOAT else (small_int if dt == INT64 else (lambda r: r.randint(0, 255)))
        out.append(Case("GatherElements_" + nm, "GatherElements", 13, [("x", dt, xd, gen)],
                        [("i", idt, idims, [gr.randint(-ln, ln - 1) for _ in range(numel(idims))])], ["x", "i"],
                        [("axis", axis)], dt))
    out.append(Case("GatherND_int64_k2", "GatherND", 13, i3, [("i", INT64, [2, 2], [0, 1, 2, -1])], ["x", "i"], [], INT64))
    d45 = [("x", FLOAT, [4, 5], normal), ("u", FLOAT, [2, 5], normal)]
    uniq = [0, 1, 2, 3, 0, 3, 2, 1, 0, 1]  # no column names a row twice
    dup = [0, 1, 1, 3, 0, 0, 1, 1, 3, 0]
    for nm, opset, ind, attrs in (("axis0", 11, uniq, []), ("axis0_13", 13, uniq, []), ("add", 16, dup, [("reduction", "add")]),
                                  ("mul", 16, dup, [("reduction", "mul")]), ("max", 18, dup, [("reduction", "max")]),
                                  ("min", 18, dup, [("reduction", "min")])):
        out.append(Case("ScatterElements_" + nm, "ScatterElements", opset, d45, [("i", INT64, [2, 5], ind)], ["x", "i", "u"], attrs))
    out.append(Case("ScatterElements_axis1_neg", "ScatterElements", 13, [("x", FLOAT, [4, 5], normal), ("u", FLOAT, [4, 2], normal)],
                    [("i", INT64, [4, 2], [-1, 0, 2, 3, 4, 1, -5, -2])], ["x", "i", "u"], [("axis", 1)]))
    out.append(Case("ScatterElements_int64_add", "ScatterElements", 16, [("x", INT64, [4, 5], small_int), ("u", INT64, [2, 5], small_int)],
                    [("i", INT64, [2, 5], dup)], ["x", "i", "u"], [("reduction", "add")], INT64))
    oh = [("i", INT64, [3, 4], lambda r: r.randint(-5, 5))]
    for nm, opset, attrs in (("11", 11, []), ("11_axis1", 11, [("axis", 1)]), ("9_axis0", 9, [("axis", 0)])):
        out.append(Case("OneHot_" + nm, "OneHot", opset, oh, [("d", INT64, [], [4]), ("v", FLOAT, [2], [-1.0, 3.0])],
                        ["i", "d", "v"], attrs))
    for nm, opset, attrs in (("13", 13, []), ("13_axis1", 13, [("axis", 1)]), ("11_axis1", 11, [("axis", 1)])):
        out.append(Case("Hardmax_" + nm, "Hardmax", opset, x3, [], ["x"], attrs))
    for nm, n, attrs in (("axis1", 4, [("axis", 1)]), ("axis-1_short", 3, [("axis", -1)]), ("flat", 37, [])):
        out.append(Case("Compress_" + nm, "Compress", 11, x3, [("c", BOOL, [n], [rng.randint(0, 1) for _ in range(n)])],
                        ["x", "c"], attrs))
    out.append(Case("ReverseSequence_time_major", "ReverseSequence", 10, [("x", FLOAT, [5, 3, 4], normal)],
                    [("l", INT64, [3], [5, 2, 1])], ["x", "l"], []))
    out.append(Case("ReverseSequence_batch_major", "ReverseSequence", 10, [("x", FLOAT, [3, 5, 4], normal)],
                    [("l", INT64, [3], [1, 5, 3])], ["x", "l"], [("batch_axis", 0), ("time_axis", 1)]))
    out.append(Case("Compress_runtime_cond", "Compress", 11, x3 + [("c", BOOL, [3], lambda r: r.randint(0, 1))], [],
                    ["x", "c"], [("axis", 0)]))
    out.append(Case("Compress_runtime_flat", "Compress", 11, x3 + [("c", BOOL, [50], lambda r: r.randint(0, 1))], [],
                    ["x", "c"], []))
    out.append(Case("ReverseSequence_runtime_lens", "ReverseSequence", 10,
                    [("x", FLOAT, [6, 4, 3], normal), ("l", INT64, [4], lambda r: r.randint(0, 6))], [], ["x", "l"], []))
    # many equal values: lower index first (sorted = 0 leaves the order open: ONNX Runtime's is
    # not the input order the reference gives, so it is not compared)
    tied = lambda r: float(r.randint(-3, 3))
    for nm, opset, dims, consts, order, attrs in (
            ("11_last", 11, [3, 40], [("k", INT64, [1], [5])], ["x", "k"], []),
            ("11_axis0_smallest", 11, [7, 6], [("k", INT64, [1], [3])], ["x", "k"], [("axis", 0), ("largest", 0)]),
            ("10_mid", 10, [2, 9, 5], [("k", INT64, [1], [4])], ["x", "k"], [("axis", 1)]),
            ("9_attr", 9, [3, 12], [], ["x"], [("k", 4)])):
        for gen_nm, gen in (("", normal), ("_ties", tied)):
            rt = [("x", FLOAT, dims, gen)]
            out.append(Case("TopK_" + nm + gen_nm, "TopK", opset, rt, consts, order, attrs, FLOAT, ("y", "i")))
            out.append(Case("TopK_" + nm + gen_nm + "_indices", "TopK", opset, rt, consts, order, attrs, INT64, ("v", "y")))
    for op in ("ArgMax", "ArgMin"):
        for nm, opset, dims, attrs in (("axis1_seg", 13, [1, 21, 9, 13], [("axis", 1)]),
                                       ("last_nokeep", 13, [3, 40], [("axis", -1), ("keepdims", 0)]),
                                       ("axis0_ties_last", 12, [6, 5, 7], [("select_last_index", 1)])):
            out.append(Case("%s_%s" % (op, nm), op, opset, [("x", FLOAT, dims, tied)], [], ["x"], attrs, INT64))
        out.append(Case("%s_axis1_ties_first" % op, op, 13, [("x", FLOAT, [4, 33, 5], tied)], [], ["x"], [("axis", 1)], INT64))
    bx = [("boxes", FLOAT, [2, 60, 4], coord), ("scores", FLOAT, [2, 3, 60], lambda r: r.random())]
    mo, iou, sth = ("mo", INT64, [1], [8]), ("iou", FLOAT, [1], [0.3]), ("st", FLOAT, [1], [0.4])
    for nm, opset, consts, order, attrs in (("all_inputs", 11, [mo, iou, sth], ["boxes", "scores", "mo", "iou", "st"], []),
                                            ("center", 11, [mo, iou, sth], ["boxes", "scores", "mo", "iou", "st"], [("center_point_box", 1)]),
                                            ("no_score_thr", 10, [mo, iou], ["boxes", "scores", "mo", "iou"], []),
                                            ("iou0", 11, [mo], ["boxes", "scores", "mo"], []),
                                            ("omitted_iou", 11, [mo, sth], ["boxes", "scores", "mo", "", "st"], []),
                                            ("no_max", 11, [], ["boxes", "scores"], [])):
        out.append(Case("NonMaxSuppression_" + nm, "NonMaxSuppression", opset, bx, consts, order, attrs, INT64))
    # scores in quarters: ties, kept in lower box index order; runtime thresholds
    tb = [("boxes", FLOAT, [1, 80, 4], coord), ("scores", FLOAT, [1, 4, 80], lambda r: r.randint(0, 4) / 4.0)]
    out.append(Case("NonMaxSuppression_ties", "NonMaxSuppression", 11, tb, [mo, iou, ("st", FLOAT, [1], [0.2])],
                    ["boxes", "scores", "mo", "iou", "st"], [], INT64))
    out.append(Case("NonMaxSuppression_runtime_params", "NonMaxSuppression", 11,
                    bx + [("mo", INT64, [1], lambda r: 5), ("iou", FLOAT, [1], lambda r: 0.45), ("st", FLOAT, [1], lambda r: 0.3)],
                    [], ["boxes", "scores", "mo", "iou", "st"], [], INT64))
    out.append(Case("NonMaxSuppression_all_suppressed", "NonMaxSuppression", 11, bx, [mo, iou, ("st", FLOAT, [1], [2.0])],
                    ["boxes", "scores", "mo", "iou", "st"], [], INT64))
    out += vision_cases(rng)
    return out + int_reduce_cases()  # last: the earlier cases keep their inputs


def vision_cases(rng):
    """The trigonometric and hyperbolic functions, LRN, GridSample (every mode and padding, both
    opset spellings, 5-D) and RoiAlign (avg and max, both coordinate modes, sampling ratios)."""
    out = []
    for op, opset, lo, hi in (("Cos", 7, -4, 4), ("Sin", 7, -4, 4), ("Tan", 7, -1.4, 1.4), ("Asin", 7, -0.99, 0.99),
                              ("Acos", 7, -0.99, 0.99), ("Atan", 7, -5, 5), ("Sinh", 9, -4, 4), ("Cosh", 9, -4, 4),
                              ("Asinh", 9, -5, 5), ("Acosh", 9, 1, 6), ("Atanh", 9, -0.99, 0.99)):
        out.append(Case(op, op, opset, [("x", FLOAT, [3, 257], lambda r, lo=lo, hi=hi: r.uniform(lo, hi))], [], ["x"], []))
    lx = [("x", FLOAT, [2, 10, 7, 9], normal)]
    for nm, attrs in (("size5", [("size", 5)]), ("size5_alpha", [("size", 5), ("alpha", 0.05)]),
                      ("size3_beta", [("size", 3), ("alpha", 0.02), ("beta", 0.6), ("bias", 2.0)]),
                      ("size4", [("size", 4), ("alpha", 0.03)]), ("size1", [("size", 1), ("alpha", 0.1)])):
        out.append(Case("LRN_" + nm, "LRN", 13, lx, [], ["x"], attrs))
    out.append(Case("ImageScaler", "ImageScaler", 9, [("x", FLOAT, [2, 3, 5, 4], normal)], [], ["x"],
                    [("scale", 0.7), ("bias", [0.5, -1.0, 2.0])]))
    out.append(Case("Scatter_10_axis1", "Scatter", 10, [("x", FLOAT, [4, 5], normal), ("u", FLOAT, [4, 2], normal)],
                    [("i", INT64, [4, 2], [1, 0, 2, 3, 4, 1, 0, 2])], ["x", "i", "u"], [("axis", 1)]))
    grid = lambda r: r.uniform(-1.3, 1.3)
    g4 = [("x", FLOAT, [2, 3, 6, 7], normal), ("g", FLOAT, [2, 5, 4, 2], grid)]
    for opset, modes in ((16, ("bilinear", "nearest", "bicubic")), (20, ("linear", "nearest", "cubic"))):
        for mode in modes:
            for pad in ("zeros", "border", "reflection"):
                for align in (0, 1):
                    nm = "GridSample_%d_%s_%s_a%d" % (opset, mode, pad, align)
                    out.append(Case(nm, "GridSample", opset, g4, [], ["x", "g"],
                                    [("mode", mode), ("padding_mode", pad), ("align_corners", align)]))
    g5 = [("x", FLOAT, [1, 2, 4, 5, 6], normal), ("g", FLOAT, [1, 3, 4, 5, 3], grid)]
    for mode in ("linear", "nearest"):
        for pad in ("zeros", "border", "reflection"):
            out.append(Case("GridSample_5d_%s_%s" % (mode, pad), "GridSample", 20, g5, [], ["x", "g"],
                            [("mode", mode), ("padding_mode", pad), ("align_corners", 0)]))
    boxes = []
    for _ in range(5):
        x1, y1 = rng.uniform(-2, 9), rng.uniform(-2, 7)
        boxes += [x1, y1, x1 + rng.uniform(0.5, 8), y1 + rng.uniform(0.5, 7)]
    rx = [("x", FLOAT, [2, 3, 10, 12], normal)]
    rc = [("rois", FLOAT, [5, 4], boxes), ("bi", INT64, [5], [0, 1, 1, 0, 1])]
    for nm, opset, attrs in (("10_avg", 10, []), ("10_max", 10, [("mode", "max")]),
                             ("16_half_pixel", 16, []), ("16_output_half_pixel", 16, [("coordinate_transformation_mode", "output_half_pixel")]),
                             ("16_max", 16, [("mode", "max")]), ("16_ratio2", 16, [("sampling_ratio", 2)]),
                             ("16_scale", 16, [("spatial_scale", 0.5), ("sampling_ratio", 3)])):
        out.append(Case("RoiAlign_" + nm, "RoiAlign", opset, rx, rc, ["x", "rois", "bi"],
                        [("output_height", 3), ("output_width", 4)] + attrs))
    # rois and batch indices at run time, some partly or wholly outside the image
    corner = []  # x1, y1 anywhere around the image, x2, y2 beyond them (ONNX Runtime refuses inverted rois)

    def roi_coord(r):
        corner.append(r.uniform(-6, 12) if len(corner) % 4 < 2 else corner[-2] + r.uniform(0.3, 9))
        return corner[-1]
    rr = [("x", FLOAT, [2, 5, 9, 11], normal), ("rois", FLOAT, [6, 4], roi_coord),
          ("bi", INT64, [6], lambda r: r.randint(0, 1))]
    for nm, opset, attrs in (("runtime_avg", 16, []), ("runtime_max", 16, [("mode", "max")]),
                             ("runtime_10", 10, [("sampling_ratio", 2), ("spatial_scale", 0.8)])):
        out.append(Case("RoiAlign_" + nm, "RoiAlign", opset, rr, [], ["x", "rois", "bi"],
                        [("output_height", 4), ("output_width", 3)] + attrs))
    px = [("x", FLOAT, [2, 3, 7, 9], normal)]
    for nm, attrs in (("k2", [("kernel_shape", [2, 2]), ("strides", [2, 2])]),
                      ("k3_pad_col", [("kernel_shape", [3, 3]), ("pads", [1, 1, 1, 1]), ("storage_order", 1)]),
                      ("k3_dil", [("kernel_shape", [3, 2]), ("dilations", [2, 1]), ("strides", [1, 2])])):
        out.append(Case("MaxPool_indices_" + nm, "MaxPool", 12, px, [], ["x"], attrs, INT64, ("v", "y")))
    # MaxUnpool of a 2x2 / stride 2 MaxPool's values and indices (unique: 4 x 4 planes of 2 x 3)
    idx = []
    for pl in range(6):
        for oy in range(2):
            for ox in range(2):
                idx.append(pl * 16 + (2 * oy + rng.randint(0, 1)) * 4 + 2 * ox + rng.randint(0, 1))
    for nm, consts, order, attrs in (("k2", [("i", INT64, [2, 3, 2, 2], idx)], ["x", "i"], [("kernel_shape", [2, 2]), ("strides", [2, 2])]),
                                     ("shape", [("i", INT64, [2, 3, 2, 2], idx), ("s", INT64, [4], [2, 3, 5, 5])], ["x", "i", "s"],
                                      [("kernel_shape", [2, 2]), ("strides", [2, 2])])):
        out.append(Case("MaxUnpool_" + nm, "MaxUnpool", 11, [("x", FLOAT, [2, 3, 2, 2], normal)], consts, order, attrs))
    th = [("t", FLOAT, [2, 2, 3], normal)]
    for nm, size, align in (("2d", [2, 3, 5, 7], 0), ("2d_aligned", [2, 3, 5, 7], 1), ("2d_one_row", [2, 3, 1, 6], 1)):
        out.append(Case("AffineGrid_" + nm, "AffineGrid", 20, th, [("s", INT64, [4], size)], ["t", "s"], [("align_corners", align)]))
    out.append(Case("AffineGrid_3d", "AffineGrid", 20, [("t", FLOAT, [2, 3, 4], normal)], [("s", INT64, [5], [2, 1, 3, 4, 5])],
                    ["t", "s"], [("align_corners", 0)]))
    return out + signal_cases() + small_cases(rng)


def signal_cases():
    """DFT (opset 17 and 20 forms), STFT, the three windows and MelWeightMatrix."""
    out = []
    real, cplx = [("x", FLOAT, [2, 16, 1], normal)], [("x", FLOAT, [2, 12, 2], normal)]
    for nm, xin, consts, order, attrs in (("real", real, [], ["x"], []), ("onesided", real, [], ["x"], [("onesided", 1)]),
                                          ("complex", cplx, [], ["x"], []), ("inverse", cplx, [], ["x"], [("inverse", 1)]),
                                          ("pad20", real, [("n", INT64, [], [20])], ["x", "n"], []),
                                          ("trunc10_onesided", real, [("n", INT64, [], [10])], ["x", "n"], [("onesided", 1)]),
                                          ("rank4_axis2", [("x", FLOAT, [2, 5, 6, 1], normal)], [], ["x"], [("axis", 2)])):
        out.append(Case("DFT_17_" + nm, "DFT", 17, xin, consts, order, attrs))
    for nm, xin, consts, order, attrs in (("default_axis", real, [], ["x"], []),
                                          ("axis1_len", [("x", FLOAT, [2, 5, 6, 1], normal)], [("n", INT64, [], [8]), ("a", INT64, [], [1])],
                                           ["x", "n", "a"], [("onesided", 1)]),
                                          ("axis_only", cplx, [("a", INT64, [], [1])], ["x", "", "a"], [("inverse", 1)])):
        out.append(Case("DFT_20_" + nm, "DFT", 20, xin, consts, order, attrs))
    sig = [("x", FLOAT, [2, 200, 1], normal)]
    hann = [0.5 - 0.5 * math.cos(2 * math.pi * k / 32) for k in range(32)]
    for nm, consts, order, attrs in (("window", [("s", INT64, [], [10]), ("w", FLOAT, [32], hann)], ["x", "s", "w"], []),
                                     ("frame_length", [("s", INT64, [], [7]), ("l", INT64, [], [16])], ["x", "s", "", "l"], []),
                                     ("twosided", [("s", INT64, [], [10]), ("w", FLOAT, [32], hann)], ["x", "s", "w"], [("onesided", 0)])):
        out.append(Case("STFT_" + nm, "STFT", 17, sig, consts, order, attrs))
    for op in ("HannWindow", "HammingWindow", "BlackmanWindow"):
        for periodic in (1, 0):
            out.append(Case("%s_p%d" % (op, periodic), op, 17, [], [("n", INT64, [], [16])], ["n"], [("periodic", periodic)]))
    mel = [("m", INT64, [], [10]), ("d", INT64, [], [64]), ("r", INT64, [], [16000]), ("lo", FLOAT, [], [20.0]), ("hi", FLOAT, [], [8000.0])]
    out.append(Case("MelWeightMatrix", "MelWeightMatrix", 17, [], mel, ["m", "d", "r", "lo", "hi"], []))
    return out


def small_cases(rng):
    """EyeLike (ONNX Runtime has no UINT8 or BOOL EyeLike: the unit tests check those),
    BitShift and the Bitwise ops, LpPool / GlobalLpPool (opsets 7, 11, 18: p, pads,
    strides, auto_pad, dilations, ceil_mode), Col2Im (2-D and 3-D), DeformConv (offsets, mask,
    bias, groups, offset groups, strides, pads, dilations; opsets 19 and 22)."""
    out = []
    for nm, opset, dt, dims, attrs, out_dt in (("f32", 9, FLOAT, [4, 6], [], FLOAT),
                                              ("k2_int64", 9, FLOAT, [4, 6], [("k", 2), ("dtype", INT64)], INT64),
                                              ("k-1_int32", 22, INT32, [5, 3], [("k", -1)], INT32),
                                              ("k-7_int64", 22, INT64, [5, 3], [("k", -7)], INT64),
                                              ("int32_to_f32", 22, INT32, [3, 4], [("k", 1), ("dtype", FLOAT)], FLOAT)):
        gen = normal if dt == FLOAT else (lambda r: r.randint(0, 9))
        out.append(Case("EyeLike_" + nm, "EyeLike", opset, [("x", dt, dims, gen)], [], ["x"], attrs, out_dt))
    ranges = RANGES
    for dt, tn in ((INT8, "int8"), (UINT8, "uint8"), (INT16, "int16"), (UINT16, "uint16"), (INT32, "int32"),
                   (UINT32, "uint32"), (INT64, "int64"), (UINT64, "uint64")):
        lo, hi = ranges[dt]
        gen = lambda r, lo=lo, hi=hi: r.randint(lo, hi)
        for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
            out.append(Case("%s_%s" % (op, tn), op, 18, [("a", dt, [3, 1, 5], gen), ("b", dt, [4, 5], gen)], [],
                            ["a", "b"], [], dt))
        out.append(Case("BitwiseNot_" + tn, "BitwiseNot", 18, [("a", dt, [3, 7], gen)], [], ["a"], [], dt))
    for dt, tn, w in ((UINT16, "uint16", 16), (UINT32, "uint32", 32), (UINT64, "uint64", 64)):
        for d in ("LEFT", "RIGHT"):
            out.append(Case("BitShift_%s_%s" % (tn, d), "BitShift", 11, [("a", dt, [3, 8], full(dt))],
                            [("s", dt, [8], [0, 1, 3, 7, w // 2, w - 3, w - 1, 5])], ["a", "s"], [("direction", d)], dt))
    for d in ("LEFT", "RIGHT"):
        out.append(Case("BitShift_uint8_" + d, "BitShift", 11, [("a", UINT8, [3, 8], lambda r: r.randint(0, 255))],
                        [("s", UINT8, [8], list(range(8)))], ["a", "s"], [("direction", d)], UINT8))
        # shifts by the width and more: 0, as ONNX Runtime gives
        out.append(Case("BitShift_uint8_wide_" + d, "BitShift", 11, [("a", UINT8, [3, 8], lambda r: r.randint(1, 255))],
                        [("s", UINT8, [8], [8, 9, 31, 32, 33, 200, 255, 7])], ["a", "s"], [("direction", d)], UINT8))
    px = [("x", FLOAT, [2, 3, 9, 10], normal)]
    # (opset 7 holds LpPool-2, GlobalLpPool-2 and MaxRoiPool-1: the loader takes opsets 7..25)
    for nm, opset, attrs in (("7_p2_k3", 7, [("kernel_shape", [3, 3])]),
                             ("7_p1_pads_strides", 7, [("kernel_shape", [3, 2]), ("p", 1), ("pads", [1, 0, 1, 1]), ("strides", [2, 2])]),
                             ("11_p3_same_upper", 11, [("kernel_shape", [3, 3]), ("p", 3), ("auto_pad", "SAME_UPPER"), ("strides", [2, 2])]),
                             ("11_same_lower", 11, [("kernel_shape", [2, 2]), ("auto_pad", "SAME_LOWER")]),
                             ("18_dilations", 18, [("kernel_shape", [2, 3]), ("dilations", [2, 2])]),
                             ("18_ceil", 18, [("kernel_shape", [3, 3]), ("strides", [2, 2]), ("ceil_mode", 1)]),
                             ("18_ceil_pads_p4", 18, [("kernel_shape", [2, 2]), ("strides", [3, 3]), ("pads", [1, 1, 0, 0]),
                                                      ("ceil_mode", 1), ("p", 4)])):
        out.append(Case("LpPool_" + nm, "LpPool", opset, px, [], ["x"], attrs))
    out.append(Case("LpPool_18_1d", "LpPool", 18, [("x", FLOAT, [2, 3, 11], normal)], [], ["x"],
                    [("kernel_shape", [3]), ("strides", [2]), ("pads", [1, 1])]))
    for p in (2, 3):
        out.append(Case("GlobalLpPool_p%d" % p, "GlobalLpPool", 7, px, [], ["x"], [("p", p)]))
    for nm, img, blk, attrs in (("default", [5, 6], [3, 3], []),
                                ("strides_pads_dil", [7, 8], [2, 3], [("strides", [2, 1]), ("pads", [1, 0, 1, 2]), ("dilations", [2, 1])]),
                                ("3d", [4, 5, 3], [2, 2, 2], [("strides", [1, 2, 1])])):
        attr_of = dict(attrs)
        st_, pd, dl = attr_of.get("strides", [1] * len(img)), attr_of.get("pads", [0] * 2 * len(img)), attr_of.get("dilations", [1] * len(img))
        L, K = 1, 1
        for i in range(len(img)):
            L *= (img[i] + pd[i] + pd[len(img) + i] - (dl[i] * (blk[i] - 1) + 1)) // st_[i] + 1
            K *= blk[i]
        out.append(Case("Col2Im_" + nm, "Col2Im", 18, [("x", FLOAT, [2, 2 * K, L], normal)],
                        [("i", INT64, [len(img)], img), ("b", INT64, [len(blk)], blk)], ["x", "i", "b"], attrs))
    off = lambda r: r.gauss(0, 1.5)
    mk = lambda r: r.uniform(0, 1)
    for nm, opset, C, M, hw, ohw, og, attrs, bias, mask in (
            ("19_plain", 19, 4, 6, (7, 8), (5, 6), 1, [], False, False),
            ("19_bias_mask", 19, 4, 6, (7, 8), (5, 6), 1, [], True, True),
            ("22_groups", 22, 4, 6, (7, 8), (5, 6), 2, [("group", 2), ("offset_group", 2)], True, True),
            ("22_stride_pad_dil", 22, 3, 4, (9, 10), (4, 5), 3, [("strides", [2, 2]), ("pads", [1, 1, 2, 1]), ("dilations", [2, 1]),
                                                                 ("offset_group", 3)], False, True),
            ("22_kshape", 22, 2, 3, (6, 6), (4, 4), 1, [("kernel_shape", [3, 3])], True, False)):
        g = dict(attrs).get("group", 1)
        rt = [("x", FLOAT, [2, C, hw[0], hw[1]], normal), ("o", FLOAT, [2, og * 18, ohw[0], ohw[1]], off)]
        consts = [("w", FLOAT, [M, C // g, 3, 3], [rng.gauss(0, 0.5) for _ in range(M * (C // g) * 9)])]
        order = ["x", "w", "o"]
        if bias or mask:
            consts.append(("b", FLOAT, [M], [rng.gauss(0, 1) for _ in range(M)]))
            order.append("b" if bias else "")
            if not bias:
                consts.pop()
        if mask:
            rt.append(("m", FLOAT, [2, og * 9, ohw[0], ohw[1]], mk))
            order.append("m")
        out.append(Case("DeformConv_" + nm, "DeformConv", opset, rt, consts, order, attrs))
    out.append(Case("Det_3x3", "Det", 11, [("x", FLOAT, [2, 4, 3, 3], normal)], [], ["x"], []))
    out.append(Case("Det_5x5", "Det", 11, [("x", FLOAT, [3, 5, 5], normal)], [], ["x"], []))
    cx = [("x", FLOAT, [2, 3, 7, 6], normal)]
    for nm, shape, attrs in (("crop_pad", [2, 3, 4, 9], []), ("axes_odd", [5, 3], [("axes", [2, 3])]),
                             ("neg_axis", [10], [("axes", [-2])])):
        out.append(Case("CenterCropPad_" + nm, "CenterCropPad", 18, cx, [("s", INT64, [len(shape)], shape)], ["x", "s"], attrs))
    rois = [0, 1.2, 0.7, 7.6, 8.1, 1, 0, 0, 11, 9, 1, 3.5, 2.5, 4.4, 3.3, 0, -2, -1, 4, 5, 1, 6, 4, 30, 20]
    for nm, attrs in (("2x2", [("pooled_shape", [2, 2])]), ("3x4_scale", [("pooled_shape", [3, 4]), ("spatial_scale", 0.5)])):
        out.append(Case("MaxRoiPool_" + nm, "MaxRoiPool", 7, [("x", FLOAT, [2, 3, 10, 12], normal)],
                        [("r", FLOAT, [5, 5], rois)], ["x", "r"], attrs))
    kv = [("past", FLOAT, [2, 3, 8, 4], normal), ("u", FLOAT, [2, 3, 3, 4], normal)]
    for nm, consts, order, attrs in (("no_indices", [], ["past", "u"], []),
                                     ("linear", [("w", INT64, [2], [5, 1])], ["past", "u", "w"], []),
                                     ("circular", [("w", INT64, [2], [6, 7])], ["past", "u", "w"], [("mode", "circular")])):
        out.append(Case("TensorScatter_" + nm, "TensorScatter", 24, kv, consts, order, attrs))
    # Unique: each output in turn as the graph's y (the others stay node outputs)
    pick = lambda vals: (lambda r: r.choice(vals))
    rows = [[1, 2, 3], [0, 5, 1], [1, 2, 3], [7, 7, 7], [0, 5, 1], [1, 2, 3]]
    for nm, xin, consts, attrs in (("flat", [("x", INT64, [3, 7], pick([4, -1, 0, 9, 2]))], [], []),
                                   ("flat_unsorted", [("x", INT64, [3, 7], pick([4, -1, 0, 9, 2]))], [], [("sorted", 0)]),
                                   ("float", [("x", FLOAT, [20], pick([0.5, -1.0, 2.0, 0.0]))], [], [])):
        for o, dt in (("y", xin[0][1]), ("i", INT64), ("inv", INT64), ("cnt", INT64)):
            outs = tuple("y" if k == o else "u" if k == "y" else k for k in ("y", "i", "inv", "cnt"))
            out.append(Case("Unique_%s_%s" % (nm, "values" if o == "y" else o), "Unique", 11, xin, consts, ["x"], attrs, dt, outs))
    flat_rows = [v for r in rows for v in r]
    for nm, attrs in (("axis0", [("axis", 0)]), ("axis0_unsorted", [("axis", 0), ("sorted", 0)])):
        for o in ("y", "i", "inv", "cnt"):
            outs = tuple("y" if k == o else "u" if k == "y" else k for k in ("y", "i", "inv", "cnt"))
            out.append(Case("Unique_%s_%s" % (nm, "values" if o == "y" else o), "Unique", 11, [],
                            [("x", INT64, [6, 3], flat_rows)], ["x"], attrs, INT64, outs))
    cols = [v for r in ([1.0, 2.0, 1.0, 3.0, 2.0, 1.0], [4.0, 5.0, 4.0, 6.0, 5.0, 0.0]) for v in r]
    out.append(Case("Unique_axis-1_values", "Unique", 11, [], [("x", FLOAT, [2, 6], cols)], ["x"], [("axis", -1)], FLOAT,
                    ("y", "i", "inv", "cnt")))
    out.append(Case("TensorScatter_axis1", "TensorScatter", 24, [("past", FLOAT, [2, 6, 5], normal), ("u", FLOAT, [2, 2, 5], normal)],
                    [("w", INT64, [2], [0, 4])], ["past", "u", "w"], [("axis", 1)]))
    return out


def main():
    compare_cases(BUILD, cases(), ONLY, pairs=(("ort", "ref"), ("ref", "blis"), ("ort", "blis")), extra=py_extra)


main()

#!/usr/bin/env python3
"""compare_seq.py - models with ONNX sequence and optional ops, as exporters write them
(torch.split / chunk / unbind with SequenceAt, ConcatFromSequence stacking or concatenating,
SequenceConstruct / Insert / Erase / Length, Optional (read in an If's branch too), torch.jit's list built in a Loop and
stacked, concatenated, indexed, counted or read by a second loop after it, a Loop over the rows of a tensor read at position `iter`, a
row at a position computed at run time, the row count known and not known at load), which the loader lowers to tensor ops (graph/seq_lower.c,
seq_loop.c): random inputs, run on ONNX Runtime (ort_run.js), the reference and blis-cpu. Prints
per case the largest absolute difference (ref vs ORT, blis vs ref, blis vs ORT) (docs/onnx.md).
A check against ONNX Runtime, not a test (needs node and tools/ort/setup.sh).
usage: tools/ort/compare_seq.py [BUILD_DIR] [CASE-SUBSTRING]"""
import os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MI_BUILD", os.path.join(HERE, "..", "..", "build"))
ONLY = sys.argv[2] if len(sys.argv) > 2 else ""
sys.path.insert(0, HERE)
from onnx_pb import BOOL, FLOAT, INT64, attr, compare_cases, ld, npy, numel, st, tensor, vi, vinfo  # noqa: E402


def node(op, ins, outs, attrs=(), name=None, body=None):
    """A NodeProto's bytes; body: a Loop's body (GraphProto bytes) as its GRAPH attribute."""
    n = b"".join(st(1, i) for i in ins) + b"".join(st(2, o) for o in outs) + st(3, name or outs[0]) + st(4, op)
    n += b"".join(attr(k, v) for k, v in attrs)
    if body is not None:
        n += ld(5, st(1, "body") + ld(6, body) + vi(20, 5))
    return n


def seq_vinfo(name, dt):
    """A ValueInfoProto's bytes typed sequence(tensor(dt))."""
    return st(1, name) + ld(2, ld(4, ld(1, ld(1, vi(1, dt)))))


def scalar_vinfo(name, dt):
    return st(1, name) + ld(2, ld(1, vi(1, dt) + ld(2, b"")))


def vinfo_dyn(name, dt, dims):
    """vinfo() with the first dim symbolic ("N"): its size is not known at load."""
    d = ld(1, st(2, "N")) + b"".join(ld(1, vi(1, x)) for x in dims[1:])
    return st(1, name) + ld(2, ld(1, vi(1, dt) + ld(2, d)))


class Case:
    """A graph: nodes (node() bytes), constants (tensor() arguments), float runtime inputs
    (name, dims), output y of out_dt, opset; dyn: the inputs' first dim symbolic."""

    def __init__(self, name, opset, runtime, consts, nodes, out_dt=FLOAT, dyn=False):
        self.name, self.opset, self.runtime, self.consts, self.nodes, self.out_dt = name, opset, runtime, consts, nodes, out_dt
        self.dyn = dyn

    def write(self, d, rng):
        g = b"".join(ld(1, n) for n in self.nodes) + st(2, "g") + b"".join(tensor(*c) for c in self.consts)
        g += b"".join(ld(11, (vinfo_dyn if self.dyn else vinfo)(nm, FLOAT, dims)) for nm, dims in self.runtime)
        g += ld(12, st(1, "y") + ld(2, ld(1, vi(1, self.out_dt))))
        open(os.path.join(d, "m.onnx"), "wb").write(vi(1, 8) + ld(7, g) + ld(8, st(1, "") + vi(2, self.opset)))
        args = []
        for nm, dims in self.runtime:
            p = os.path.join(d, nm + ".npy")
            npy(p, FLOAT, dims, [rng.gauss(0, 2) for _ in range(numel(dims))])
            args += ["--input", "%s=%s" % (nm, p)]
        return args


def loop_body():
    """y_i = x * i + x appended to the carried list per iteration i (x captured)."""
    b = ld(1, node("Cast", ["iter"], ["itf"], [("to", FLOAT)]))
    b += ld(1, node("Mul", ["x", "itf"], ["xi"]))
    b += ld(1, node("Add", ["xi", "x"], ["elem"]))
    b += ld(1, node("SequenceInsert", ["seq_in", "elem"], ["seq_out"]))
    b += ld(1, node("Identity", ["cond_in"], ["cond_out"]))
    b += st(2, "body") + ld(11, scalar_vinfo("iter", INT64)) + ld(11, scalar_vinfo("cond_in", BOOL))
    b += ld(11, seq_vinfo("seq_in", FLOAT)) + ld(12, scalar_vinfo("cond_out", BOOL)) + ld(12, seq_vinfo("seq_out", FLOAT))
    return b


def sum_body():
    """acc_out = acc_in + element iter of the captured sequence s."""
    b = ld(1, node("SequenceAt", ["s", "iter"], ["r"]))
    b += ld(1, node("Add", ["acc_in", "r"], ["acc_out"]))
    b += ld(1, node("Identity", ["cond_in"], ["cond_out"]))
    b += st(2, "body") + ld(11, scalar_vinfo("iter", INT64)) + ld(11, scalar_vinfo("cond_in", BOOL))
    b += ld(11, st(1, "acc_in")) + ld(12, scalar_vinfo("cond_out", BOOL)) + ld(12, st(1, "acc_out"))
    return b


def cases():
    out = []
    for opset in (11, 13, 18):
        out.append(Case("split_at_o%d" % opset, opset, [("x", [4, 10])],
                        [("sizes", INT64, [3], [3, 5, 2]), ("p", INT64, [], [-2])],
                        [node("SplitToSequence", ["x", "sizes"], ["s"], [("axis", 1)]), node("SequenceAt", ["s", "p"], ["y"])]))
        out.append(Case("unbind_stack_o%d" % opset, opset, [("x", [5, 3, 2])], [],
                        [node("SplitToSequence", ["x"], ["s"], [("axis", 1), ("keepdims", 0)]),
                         node("ConcatFromSequence", ["s"], ["y"], [("axis", -1), ("new_axis", 1)])]))
    out.append(Case("chunk_erase_cat", 13, [("x", [7, 4])], [("c", INT64, [], [3]), ("p", INT64, [], [0])],
                    [node("Relu", ["x"], ["r"]), node("SplitToSequence", ["r", "c"], ["s"]),
                     node("SequenceErase", ["s", "p"], ["e"]), node("ConcatFromSequence", ["e"], ["y"], [("axis", 0)])]))
    out.append(Case("construct_insert_cat", 16, [("a", [2, 3]), ("b", [2, 3])], [("p", INT64, [], [1])],
                    [node("SequenceConstruct", ["a", "b"], ["s"]), node("Neg", ["a"], ["na"]),
                     node("SequenceInsert", ["s", "na", "p"], ["s2"]), node("Identity", ["s2"], ["s3"]),
                     node("ConcatFromSequence", ["s3"], ["y"], [("axis", 1)])]))
    out.append(Case("length", 13, [("x", [6, 5])], [("c", INT64, [], [4])],
                    [node("SplitToSequence", ["x", "c"], ["s"], [("axis", 1)]), node("SequenceLength", ["s"], ["y"])],
                    out_dt=INT64))
    out.append(Case("optional_get", 18, [("x", [3, 4])], [],
                    [node("Optional", ["x"], ["o"]), node("OptionalGetElement", ["o"], ["g"]), node("Sigmoid", ["g"], ["y"])]))
    then_b = ld(1, node("OptionalGetElement", ["o"], ["ov"])) + ld(1, node("Mul", ["ov", "ov"], ["yb"])) + st(2, "then")
    then_b += ld(12, st(1, "yb"))
    else_b = ld(1, node("Neg", ["x"], ["yb"])) + st(2, "else") + ld(12, st(1, "yb"))
    branch = node("If", ["h"], ["y"], name="branch")
    branch += ld(5, st(1, "then_branch") + ld(6, then_b) + vi(20, 5)) + ld(5, st(1, "else_branch") + ld(6, else_b) + vi(20, 5))
    out.append(Case("optional_if", 18, [("x", [3, 4])], [],
                    [node("Optional", ["x"], ["o"]), node("OptionalHasElement", ["o"], ["h"]), branch]))
    out.append(Case("optional_has", 18, [("x", [3, 4])], [],
                    [node("Optional", ["x"], ["o"]), node("OptionalHasElement", ["o"], ["y"])], out_dt=BOOL))
    for form, attrs in (("stack", [("axis", 0), ("new_axis", 1)]), ("cat", [("axis", 0)])):
        out.append(Case("loop_list_" + form, 13, [("x", [3, 5])], [("M", INT64, [], [4]), ("cond", BOOL, [], [1])],
                        [node("SequenceEmpty", [], ["s0"], [("dtype", FLOAT)], name="empty"),
                         node("Loop", ["M", "cond", "s0"], ["s"], name="build", body=loop_body()),
                         node("ConcatFromSequence", ["s"], ["y"], attrs)]))
    build = [node("SequenceEmpty", [], ["s0"], [("dtype", FLOAT)], name="empty"),
             node("Loop", ["M", "cond", "s0"], ["s"], name="build", body=loop_body())]
    lc = [("M", INT64, [], [4]), ("cond", BOOL, [], [1]), ("pm1", INT64, [], [-1]), ("acc0", FLOAT, [5], [0.0] * 5)]
    out.append(Case("loop_list_last", 13, [("x", [3, 5])], lc, build + [node("SequenceAt", ["s", "pm1"], ["y"])]))
    out.append(Case("loop_list_len", 13, [("x", [3, 5])], lc, build + [node("SequenceLength", ["s"], ["y"])], out_dt=INT64))
    # the list read row by row by a second loop (its body captures the list); rows of [3, 5]: the
    # elements are [3, 5], so the second loop sums them
    out.append(Case("loop_list_then_loop", 13, [("x", [3, 5])], [("M", INT64, [], [4]), ("cond", BOOL, [], [1]),
                                                                   ("acc0", FLOAT, [3, 5], [0.0] * 15)],
                    build + [node("SequenceLength", ["s"], ["n"]),
                             node("Loop", ["n", "cond", "acc0"], ["y"], name="sum_rows", body=sum_body())]))
    for dyn in (False, True):
        sfx = "_dyn" if dyn else ""
        out.append(Case("unbind_loop_sum" + sfx, 13, [("x", [5, 3])], [("cond", BOOL, [], [1]), ("acc0", FLOAT, [3], [0.0] * 3)],
                        [node("SplitToSequence", ["x"], ["s"], [("keepdims", 0)]), node("SequenceLength", ["s"], ["n"]),
                         node("Loop", ["n", "cond", "acc0"], ["y"], name="sum_rows", body=sum_body())], dyn=dyn))
        for keep in (0, 1):
            out.append(Case("at_runtime_pos_k%d%s" % (keep, sfx), 13, [("x", [6, 3])], [("c0", INT64, [], [0])],
                            [node("Gather", ["x", "c0"], ["col0"], [("axis", 1)]),
                             node("ArgMax", ["col0"], ["p"], [("axis", 0), ("keepdims", 0)]),
                             node("SplitToSequence", ["x"], ["s"], [("keepdims", keep)]), node("SequenceAt", ["s", "p"], ["y"])],
                            dyn=dyn))
    return out


def main():
    compare_cases(BUILD, cases(), ONLY, pairs=(("ort", "ref"), ("ref", "blis"), ("ort", "blis")))


main()

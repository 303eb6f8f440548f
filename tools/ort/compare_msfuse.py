#!/usr/bin/env python3
"""compare_msfuse.py - ONNX Runtime's transformer-optimizer fused ops and the newest ONNX norms,
each form on its own: com.microsoft SkipLayerNormalization (skip [B,S,H], [1,S,H], [S,H]; beta,
bias; the input_skip_bias_sum output; 2-D input), SkipSimplifiedLayerNormalization, FastGelu,
BiasGelu, Gelu, QuickGelu, BiasAdd, EmbedLayerNormalization, FusedMatMul; the default-domain
SimplifiedLayerNormalization; ONNX
RMSNormalization (opset 23) and Swish (opset 24); then a small BERT-like encoder written with the
fused ops (SkipLayerNormalization, FastGelu and BiasGelu between MatMuls,
SkipSimplifiedLayerNormalization). One model each with random inputs, run on ONNX Runtime
(ort_run.js), the reference and blis-cpu (the loader lowers the fused ops to standard ones,
docs/onnx.md). Prints per case and output the largest absolute difference. A check against ONNX
Runtime, not a test (needs node and tools/ort/setup.sh).
usage: tools/ort/compare_msfuse.py [BUILD_DIR] [CASE-SUBSTRING]
MSFUSE_BERT=S,H,F sets the BERT-like graph's sequence, hidden and MLP sizes (default 16,64,256).
With MSFUSE_KEEP=1 each case's folder (m.onnx, its inputs, each side's outputs) is kept and named."""
import os, random, sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MI_BUILD", os.path.join(HERE, "..", "..", "build"))
ONLY = sys.argv[2] if len(sys.argv) > 2 else ""
sys.path.insert(0, HERE)
from onnx_pb import FLOAT, INT32, attr, compare_cases, ld, npy, numel, st, tensor, vi, vinfo  # noqa: E402

MS = "com.microsoft"


def node(op, ins, outs, name, attrs=(), domain=""):
    n = b"".join(st(1, i) for i in ins) + b"".join(st(2, o) for o in outs) + st(3, name) + st(4, op)
    n += b"".join(attr(k, v) for k, v in attrs)
    return ld(1, n + (st(7, domain) if domain else b""))


def model(nodes, consts, runtime, outs, opset):
    g = b"".join(nodes) + st(2, "g") + b"".join(tensor(*c) for c in consts)
    g += b"".join(ld(11, vinfo(r[0], r[2] if len(r) > 2 else FLOAT, r[1])) for r in runtime)
    g += b"".join(ld(12, st(1, o) + ld(2, ld(1, vi(1, INT32 if o == "mi" else FLOAT)))) for o in outs)  # mi: mask_index
    return vi(1, 8) + ld(7, g) + ld(8, st(1, "") + vi(2, opset)) + ld(8, st(1, MS) + vi(2, 1))


class Case:
    """One model: nodes, constants (name, FLOAT, dims, values), runtime inputs (name, dims), the
    graph outputs compared, the default-domain opset."""

    def __init__(self, name, nodes, consts, runtime, outs, opset=17):
        self.name, self.nodes, self.consts, self.runtime, self.outs, self.opset = name, nodes, consts, runtime, outs, opset

    def write(self, d, rng):
        open(os.path.join(d, "m.onnx"), "wb").write(model(self.nodes, self.consts, self.runtime, self.outs, self.opset))
        args = []
        for r in self.runtime:  # (name, dims[, dtype, generator])
            nm, dims = r[0], r[1]
            p = os.path.join(d, nm + ".npy")
            gen = r[3] if len(r) > 3 else (lambda q: q.gauss(0, 1.5))
            npy(p, r[2] if len(r) > 2 else FLOAT, dims, [gen(rng) for _ in range(numel(dims))])
            args += ["--input", "%s=%s" % (nm, p)]
        return args


def vals(rng, n, lo=-1.0, hi=1.0): return [rng.uniform(lo, hi) for _ in range(n)]


def one(name, op, ins, attrs, runtime, consts, domain=MS, outs=("y",), opset=17):
    return Case(name, [node(op, ins, list(outs), "n", attrs, domain)], consts, runtime, [o for o in outs if o], opset)


def cases():
    rng = random.Random(5)
    out = []
    B, S, H = 2, 8, 64
    x = ("x", [B, S, H])
    g, b, bias = ("g", FLOAT, [H], vals(rng, H, 0.5, 1.5)), ("b", FLOAT, [H], vals(rng, H)), ("bias", FLOAT, [H], vals(rng, H))
    for nm, skip_dims in (("skipBSH", [B, S, H]), ("skip1SH", [1, S, H]), ("skipSH", [S, H])):
        sk = ("skip", skip_dims)
        out.append(one("SkipLayerNormalization_%s_beta_bias" % nm, "SkipLayerNormalization", ["x", "skip", "g", "b", "bias"],
                       [("epsilon", 1e-5)], [x, sk], [g, b, bias]))
    sk = ("skip", [B, S, H])
    out.append(one("SkipLayerNormalization_gamma_only_default_eps", "SkipLayerNormalization", ["x", "skip", "g"], [], [x, sk], [g]))
    out.append(one("SkipLayerNormalization_bias_no_beta", "SkipLayerNormalization", ["x", "skip", "g", "", "bias"],
                   [("epsilon", 1e-6)], [x, sk], [g, bias]))
    out.append(one("SkipLayerNormalization_sum_output", "SkipLayerNormalization", ["x", "skip", "g", "b", "bias"],
                   [("epsilon", 1e-5)], [x, sk], [g, b, bias], outs=("y", "", "", "s")))
    out.append(one("SkipLayerNormalization_2d", "SkipLayerNormalization", ["x", "skip", "g", "b"], [("epsilon", 1e-5)],
                   [("x", [S, H]), ("skip", [S, H])], [g, b]))
    out.append(one("SkipSimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization", ["x", "skip", "g"],
                   [("epsilon", 1e-6)], [x, sk], [g]))
    out.append(one("SkipSimplifiedLayerNormalization_bias_sum_skipSH", "SkipSimplifiedLayerNormalization",
                   ["x", "skip", "g", "bias"], [("epsilon", 1e-6)], [x, ("skip", [S, H])], [g, bias], outs=("y", "", "", "s")))
    out.append(one("SimplifiedLayerNormalization_axis-1", "SimplifiedLayerNormalization", ["x", "g"], [("epsilon", 1e-6)],
                   [x], [g], domain=""))
    g2 = ("g", FLOAT, [S, H], vals(rng, S * H, 0.5, 1.5))
    out.append(one("SimplifiedLayerNormalization_axis1", "SimplifiedLayerNormalization", ["x", "g"], [("axis", 1)],
                   [x], [g2], domain=""))
    out.append(one("RMSNormalization_23_axis-1", "RMSNormalization", ["x", "g"], [], [x], [g], domain="", opset=23))
    out.append(one("RMSNormalization_23_axis-2_eps", "RMSNormalization", ["x", "g"], [("axis", -2), ("epsilon", 1e-3)],
                   [x], [g2], domain="", opset=23))
    xb = [("x", [B, S, 256])]
    b256 = ("bias", FLOAT, [256], vals(rng, 256))
    out.append(one("FastGelu_bias", "FastGelu", ["x", "bias"], [], xb, [b256]))
    out.append(one("FastGelu", "FastGelu", ["x"], [], xb, []))
    out.append(one("BiasGelu", "BiasGelu", ["x", "bias"], [], xb, [b256]))
    out.append(one("Gelu_ms", "Gelu", ["x"], [], xb, []))
    out.append(one("QuickGelu_default", "QuickGelu", ["x"], [], xb, []))
    out.append(one("QuickGelu_alpha1", "QuickGelu", ["x"], [("alpha", 1.0)], xb, []))
    out.append(one("QuickGelu_alpha0.5", "QuickGelu", ["x"], [("alpha", 0.5)], xb, []))
    out.append(one("Swish_24", "Swish", ["x"], [], xb, [], domain="", opset=24))
    out.append(one("Swish_24_alpha0.5", "Swish", ["x"], [("alpha", 0.5)], xb, [], domain="", opset=24))
    out.append(one("BiasAdd", "BiasAdd", ["x", "bias", "skip"], [], [("x", [B, S, 256]), ("skip", [B, S, 256])], [b256]))
    for ta in (0, 1):
        for tb in (0, 1):
            a = ("a", [2, 3, 8, 5] if ta else [2, 3, 5, 8])
            bb = ("bb", [3, 6, 8] if tb else [3, 8, 6])
            out.append(one("FusedMatMul_transA%d_transB%d_alpha0.125" % (ta, tb), "FusedMatMul", ["a", "bb"],
                           [("alpha", 0.125), ("transA", ta), ("transB", tb)], [a, bb], []))
    out.append(one("FusedMatMul_const_B_transB", "FusedMatMul", ["a", "w"], [("transB", 1)], [("a", [4, 16, 64])],
                   [("w", FLOAT, [32, 64], vals(rng, 32 * 64))]))
    out.append(one("TransposeMatMul_transA1_transB1", "TransposeMatMul", ["a", "bb"], [("transA", 1), ("transB", 1)],
                   [("a", [2, 3, 8, 5]), ("bb", [3, 6, 8])], []))
    V, P, B2, S2 = 100, 32, 2, 12
    ids = ("ids", [B2, S2], INT32, lambda q: q.randint(0, V - 1))
    seg = ("seg", [B2, S2], INT32, lambda q: q.randint(0, 1))
    mask = ("mask", [B2, S2], INT32, lambda q: q.choice([0, 1, 1, 1, 2]))
    pos = ("pos", [1, S2], INT32, lambda q: q.randint(0, P - 1))
    tabs = [("we", FLOAT, [V, H], vals(rng, V * H)), ("pe", FLOAT, [P, H], vals(rng, P * H)),
            ("se", FLOAT, [2, H], vals(rng, 2 * H)), g, b]
    out.append(one("EmbedLayerNormalization_bert_mask", "EmbedLayerNormalization",
                   ["ids", "seg", "we", "pe", "se", "g", "b", "mask"], [("epsilon", 1e-12)], [ids, seg, mask], tabs,
                   outs=("y", "mi", "es")))
    out.append(one("EmbedLayerNormalization_distil_position_ids", "EmbedLayerNormalization",
                   ["ids", "", "we", "pe", "", "g", "b", "", "pos"], [("epsilon", 1e-5)], [ids, pos],
                   [tabs[0], tabs[1], g, b], outs=("y", "mi")))
    out.append(one("EmbedLayerNormalization_no_mask_index_zeros", "EmbedLayerNormalization",
                   ["ids", "seg", "we", "pe", "se", "g", "b"], [("epsilon", 1e-12)], [ids, seg], tabs, outs=("y", "mi")))
    out.append(bert(rng))
    return out


def bert(rng):
    """EmbedLayerNormalization, then two encoder layers as ONNX Runtime's optimizer writes them,
    attention left out: a linear (FusedMatMul, transposed weight, alpha 0.5)
    mixing, SkipLayerNormalization, MatMul -> FastGelu (bias) -> MatMul, SkipLayerNormalization
    (bias); the second layer's MLP with BiasGelu, its last norm SkipSimplifiedLayerNormalization."""
    # MSFUSE_BERT=S,H,F sizes it (default 16,64,256: a check; 128,384,1536 is MiniLM-L6's layer)
    S, H, F = (int(v) for v in os.environ.get("MSFUSE_BERT", "16,64,256").split(","))
    V = 200
    consts = [("we", FLOAT, [V, H], vals(rng, V * H)), ("pe", FLOAT, [S, H], vals(rng, S * H)),
              ("se", FLOAT, [2, H], vals(rng, 2 * H)), ("eg", FLOAT, [H], vals(rng, H, 0.5, 1.5)),
              ("eb", FLOAT, [H], vals(rng, H))]
    nodes = [node("EmbedLayerNormalization", ["ids", "seg", "we", "pe", "se", "eg", "eb"], ["x", "mi"], "embed",
                  [("epsilon", 1e-12)], MS)]
    cur = "x"
    for L in range(2):
        p = "l%d_" % L
        for nm, dims, lo, hi in (("wo", [H, H], -0.15, 0.15), ("w1", [H, F], -0.15, 0.15), ("w2", [F, H], -0.08, 0.08),
                                 ("g1", [H], 0.5, 1.5), ("b1", [H], -0.5, 0.5), ("g2", [H], 0.5, 1.5), ("b2", [H], -0.5, 0.5),
                                 ("bo", [H], -0.5, 0.5), ("bf", [F], -0.5, 0.5), ("bh", [H], -0.5, 0.5)):
            consts.append((p + nm, FLOAT, dims, vals(rng, numel(dims), lo, hi)))
        nodes.append(node("FusedMatMul", [cur, p + "wo"], [p + "mix"], p + "mix", [("transB", 1), ("alpha", 0.5)], MS))
        nodes.append(node("SkipLayerNormalization", [p + "mix", cur, p + "g1", p + "b1", p + "bo"], [p + "ln1"], p + "ln1",
                          [("epsilon", 1e-12)], MS))
        nodes.append(node("MatMul", [p + "ln1", p + "w1"], [p + "up"], p + "up"))
        nodes.append(node("FastGelu" if L == 0 else "BiasGelu", [p + "up", p + "bf"], [p + "act"], p + "act", [], MS))
        nodes.append(node("MatMul", [p + "act", p + "w2"], [p + "down"], p + "down"))
        if L == 0:
            nodes.append(node("SkipLayerNormalization", [p + "down", p + "ln1", p + "g2", p + "b2", p + "bh"], [p + "out"],
                              p + "ln2", [("epsilon", 1e-12)], MS))
        else:
            nodes.append(node("SkipSimplifiedLayerNormalization", [p + "down", p + "ln1", p + "g2", p + "bh"], ["y"],
                              p + "ln2", [("epsilon", 1e-6)], MS))
        cur = p + "out"
    return Case("bert_like_2_layers", nodes, consts,
                [("ids", [1, S], INT32, lambda q: q.randint(0, V - 1)), ("seg", [1, S], INT32, lambda q: q.randint(0, 1))],
                ["y"])


def main():
    compare_cases(BUILD, cases(), ONLY, outputs=lambda c: c.outs, keep_each=os.environ.get("MSFUSE_KEEP") == "1")


main()

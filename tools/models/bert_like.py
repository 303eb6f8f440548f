#!/usr/bin/env python3
"""bert_like.py - writes a BERT-family text encoder the way torch.onnx (opset 14) exports Hugging
Face's BertModel, at all-MiniLM-L6-v2's shapes, with seeded random weights: a stand-in for a
sentence embedder, since no package of the npm registry reachable here ships one (docs/onnx.md).

The graph, node for node as the TorchScript exporter writes it:
- int64 inputs input_ids, attention_mask, token_type_ids [batch, sequence] (symbolic dims);
- embeddings: Gather of the word table [V, H] by input_ids, of the token-type table [2, H] by
  token_type_ids, Add, position ids sliced from a [1, 512] int64 constant by the sequence length
  (Shape -> Gather -> Unsqueeze -> Slice), Gather of the position table, Add, LayerNorm;
- LayerNorm spelled out as opset 14 has no LayerNormalization: ReduceMean, Sub, Pow 2,
  ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta;
- the extended attention mask: Unsqueeze, Unsqueeze, Cast to float, Sub from 1, Mul by the float
  minimum;
- each layer: Q, K, V as MatMul + Add, each reshaped to [B, S, heads, H / heads] with a shape built
  from Shape/Gather/Unsqueeze/Concat, Transposed (K to [B, heads, d, S]), MatMul, Div by sqrt(d),
  Add mask, Softmax(-1), MatMul, Transpose, Reshape back (the same shape chain), the output
  projection MatMul + Add, residual Add, LayerNorm; the MLP MatMul + Add, GELU as Div sqrt 2,
  Erf, Add 1, Mul, Mul 0.5; MatMul + Add, residual Add, LayerNorm;
- one output, last_hidden_state [batch, sequence, H].

usage: tools/models/bert_like.py OUT.onnx [--layers 6] [--hidden 384] [--heads 12] [--mlp 1536]
                                 [--vocab 30522] [--seed 1]
The default shapes are all-MiniLM-L6-v2's (22.7 M parameters, a 91 MB float32 file). Weights are
uniform with a 1/sqrt(fan-in) scale (so activations stay O(1) through the layers), LayerNorm
gains near 1; they are not trained, so only speed and agreement with ONNX Runtime mean anything.
python3's standard library only (tools/ort/onnx_pb.py's protobuf writers)."""
import argparse
import array
import math
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ort"))
from onnx_pb import FLOAT, INT64, attr, ld, st, vi  # noqa: E402


class Graph:
    def __init__(self, rng):
        self.rng, self.nodes, self.inits, self.n = rng, [], [], 0

    def node(self, op, ins, attrs=(), outs=1):
        self.n += 1
        names = ["%s_%d" % (op.lower(), self.n) + ("" if k == 0 else "_%d" % k) for k in range(outs)]
        b = b"".join(st(1, i) for i in ins) + b"".join(st(2, o) for o in names)
        b += st(3, "/%s_%d" % (op, self.n)) + st(4, op) + b"".join(attr(k, v) for k, v in attrs)
        self.nodes.append(ld(1, b))
        return names[0] if outs == 1 else names

    def init(self, name, dt, dims, data):
        """An initializer of raw bytes `data` (an array of the element type)."""
        self.inits.append(ld(5, b"".join(vi(1, d) for d in dims) + vi(2, dt) + st(8, name) + ld(9, data.tobytes())))
        return name

    def const_i64(self, name, vals, dims=None):
        return self.init(name, INT64, [len(vals)] if dims is None else dims, array.array("q", vals))

    def const_f(self, name, v):
        return self.init(name, FLOAT, [], array.array("f", [v]))

    def weight(self, name, dims, scale, centre=0.0):
        n = 1
        for d in dims:
            n *= d
        u = self.rng.random
        return self.init(name, FLOAT, dims, array.array("f", (centre + scale * (2.0 * u() - 1.0) for _ in range(n))))


def value_info(name, dt, dims):
    """A ValueInfoProto with int dims and symbolic (str) ones."""
    d = b"".join(ld(1, st(2, x) if isinstance(x, str) else vi(1, x)) for x in dims)
    return st(1, name) + ld(2, ld(1, vi(1, dt) + ld(2, d)))


def layer_norm(g, x, p, h):
    mean = g.node("ReduceMean", [x], [("axes", [-1]), ("keepdims", 1)])
    c = g.node("Sub", [x, mean])
    var = g.node("ReduceMean", [g.node("Pow", [c, "two"])], [("axes", [-1]), ("keepdims", 1)])
    std = g.node("Sqrt", [g.node("Add", [var, "eps"])])
    y = g.node("Div", [c, std])
    y = g.node("Mul", [y, g.weight(p + ".weight", [h], 0.1, 1.0)])
    return g.node("Add", [y, g.weight(p + ".bias", [h], 0.05)])


def linear(g, x, p, fin, fout):
    y = g.node("MatMul", [x, g.weight(p + ".weight_t", [fin, fout], math.sqrt(3.0 / fin))])
    return g.node("Add", [g.weight(p + ".bias", [fout], 0.02), y])  # the exporter puts the bias first


def heads_shape(g, x, tail):
    """Concat(B, S, *tail) from Shape(x), as the exporter builds a view's size."""
    s = g.node("Shape", [x])
    b = g.node("Unsqueeze", [g.node("Gather", [s, "i0"], [("axis", 0)]), "ax0"])
    q = g.node("Unsqueeze", [g.node("Gather", [s, "i1"], [("axis", 0)]), "ax0"])
    return g.node("Concat", [b, q] + tail, [("axis", 0)])


def build(a):
    rng = random.Random(a.seed)
    g = Graph(rng)
    H, NH, F, V = a.hidden, a.heads, a.mlp, a.vocab
    D = H // NH
    g.const_f("two", 2.0)
    g.const_f("eps", 1e-12)
    g.const_f("one", 1.0)
    g.const_f("fmin", -3.4028234663852886e38)
    g.const_f("sqrt_d", math.sqrt(D))
    g.const_f("sqrt2", math.sqrt(2.0))
    g.const_f("half", 0.5)
    g.const_i64("i0", [0], [])
    g.const_i64("i1", [1], [])
    g.const_i64("ax0", [0])
    g.const_i64("ax1", [1])
    g.const_i64("ax2", [2])
    g.const_i64("nh", [NH])
    g.const_i64("dh", [D])
    g.const_i64("hid", [H])
    g.const_i64("position_ids", list(range(512)), [1, 512])

    # embeddings
    words = g.node("Gather", [g.weight("embeddings.word_embeddings.weight", [V, H], 0.5), "input_ids"])
    types = g.node("Gather", [g.weight("embeddings.token_type_embeddings.weight", [2, H], 0.5), "token_type_ids"])
    x = g.node("Add", [words, types])
    seq = g.node("Unsqueeze", [g.node("Gather", [g.node("Shape", ["input_ids"]), "i1"], [("axis", 0)]), "ax0"])
    pos_ids = g.node("Slice", ["position_ids", "ax0", seq, "ax1"])  # starts 0, ends S, axes 1
    pos = g.node("Gather", [g.weight("embeddings.position_embeddings.weight", [512, H], 0.5), pos_ids])
    x = layer_norm(g, g.node("Add", [x, pos]), "embeddings.LayerNorm", H)

    # the extended attention mask [B, 1, 1, S]: (1 - mask) * float minimum
    m = g.node("Unsqueeze", [g.node("Unsqueeze", ["attention_mask", "ax1"]), "ax2"])
    m = g.node("Cast", [m], [("to", FLOAT)])
    mask = g.node("Mul", [g.node("Sub", ["one", m]), "fmin"])

    for L in range(a.layers):
        p = "encoder.layer.%d." % L
        hs = []
        for part in ("query", "key", "value"):
            t = linear(g, x, p + "attention.self." + part, H, H)
            t = g.node("Reshape", [t, heads_shape(g, t, ["nh", "dh"])])
            hs.append(g.node("Transpose", [t], [("perm", [0, 2, 3, 1] if part == "key" else [0, 2, 1, 3])]))
        s = g.node("Div", [g.node("MatMul", [hs[0], hs[1]]), "sqrt_d"])
        prob = g.node("Softmax", [g.node("Add", [s, mask])], [("axis", -1)])
        ctx = g.node("Transpose", [g.node("MatMul", [prob, hs[2]])], [("perm", [0, 2, 1, 3])])
        ctx = g.node("Reshape", [ctx, heads_shape(g, ctx, ["hid"])])
        o = linear(g, ctx, p + "attention.output.dense", H, H)
        x = layer_norm(g, g.node("Add", [o, x]), p + "attention.output.LayerNorm", H)
        u = linear(g, x, p + "intermediate.dense", H, F)
        e = g.node("Add", [g.node("Erf", [g.node("Div", [u, "sqrt2"])]), "one"])
        u = g.node("Mul", [g.node("Mul", [u, e]), "half"])
        o = linear(g, u, p + "output.dense", F, H)
        x = layer_norm(g, g.node("Add", [o, x]), p + "output.LayerNorm", H)
    g.nodes.append(ld(1, st(1, x) + st(2, "last_hidden_state") + st(3, "/Identity_out") + st(4, "Identity")))

    gr = b"".join(g.nodes) + st(2, "main_graph") + b"".join(g.inits)
    for nm in ("input_ids", "attention_mask", "token_type_ids"):
        gr += ld(11, value_info(nm, INT64, ["batch_size", "sequence_length"]))
    gr += ld(12, value_info("last_hidden_state", FLOAT, ["batch_size", "sequence_length", H]))
    return vi(1, 8) + st(2, "pytorch") + st(3, "2.1.0") + ld(7, gr) + ld(8, st(1, "") + vi(2, 14))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--mlp", type=int, default=1536)
    ap.add_argument("--vocab", type=int, default=30522)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.hidden % a.heads:
        sys.exit("bert_like.py: --hidden must be a multiple of --heads")
    b = build(a)
    tmp = a.out + ".part"
    open(tmp, "wb").write(b)
    os.replace(tmp, a.out)
    print("%s %d" % (a.out, len(b)))


if __name__ == "__main__":
    main()

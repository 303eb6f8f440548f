#!/usr/bin/env python3
"""compare_attn.py - com.microsoft Attention (ONNX Runtime's fused BERT self-attention) and
MultiHeadAttention in every form the loader lowers to standard ops. Attention: no mask, mask_index as key lengths [B], ends and starts
[2B], a 2D [B, T] (one with a batch masked whole) and a 3D [B, S, T] mask (given at run time and as an initializer),
mask_filter_value, scale, unidirectional, no bias, qkv_hidden_sizes with a wider V,
attention_bias of full and broadcast shape, past -> present and present alone, and a BERT-small
size; MultiHeadAttention: self and cross attention (L != S, Dv != D), no bias, key_padding_mask
[B], [B, T], [B, S, T], unidirectional, attention_bias, past_key / past_value -> present_key /
present_value, key and value given as heads [B, N, L, h]. One-node models with random inputs, run on ONNX Runtime (ort_run.js), the reference and
blis-cpu; prints per case the largest absolute difference of the output (and of present) (docs/onnx.md).
A check against ONNX Runtime, not a test (needs node and tools/ort/setup.sh).
usage: tools/ort/compare_attn.py [BUILD_DIR] [CASE-SUBSTRING] [KEEP_DIR]
(KEEP_DIR: each case's model and inputs are kept in KEEP_DIR/CASE, for timing runs)"""
import math, os, random, sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MI_BUILD", os.path.join(HERE, "..", "..", "build"))
ONLY = sys.argv[2] if len(sys.argv) > 2 else ""
KEEP = sys.argv[3] if len(sys.argv) > 3 else ""
sys.path.insert(0, HERE)
from onnx_pb import BOOL, FLOAT, INT32, INT64, attr, compare_cases, ld, load, npy, numel, side_diff, st, tensor, vi, vinfo  # noqa: E402

# opset imports: the default domain at 17 and com.microsoft at 1
MS_OPSETS = ld(8, st(1, "") + vi(2, 17)) + ld(8, st(1, "com.microsoft") + vi(2, 1))


def write_model(d, g, opsets, runtime):
    """d/m.onnx (GraphProto bytes g, opset imports opsets) and each runtime input (name, dtype,
    dims, values) as d/NAME.npy; the mi-run / ort_run.js arguments that feed them."""
    open(os.path.join(d, "m.onnx"), "wb").write(vi(1, 8) + ld(7, g) + opsets)
    args = []
    for nm, dt, dims, vals in runtime:
        p = os.path.join(d, nm + ".npy")
        npy(p, dt, dims, vals)
        args += ["--input", "%s=%s" % (nm, p)]
    return args


class Case:
    """One Attention node: B, S, hidden, heads, (q, k, v) hidden sizes, and its options."""

    def __init__(self, name, b, s, hin, heads, qkv=None, bias=True, mask=None, mask_const=False, unidir=0,
                 past=0, abias=None, present=False, attrs=()):
        self.name, self.b, self.s, self.hin, self.heads = name, b, s, hin, heads
        self.qkv = qkv or (hin, hin, hin)
        self.bias, self.mask, self.mask_const, self.unidir = bias, mask, mask_const, unidir
        self.past, self.abias, self.present, self.attrs = past, abias, present, list(attrs)

    def mask_values(self, rng):
        b, s, t = self.b, self.s, self.s + self.past
        if self.mask == "len":
            return [b], [rng.randint(1, t) for _ in range(b)]
        if self.mask == "start":
            ends = [rng.randint(1, t) for _ in range(b)]
            return [2 * b], ends + [rng.randint(0, e - 1) for e in ends]
        dims = [b, t] if self.mask.startswith("2d") else [b, s, t]
        vals = [int(rng.random() > 0.25) for _ in range(numel(dims))]
        if self.mask == "2d_row0":  # batch 0 masked whole: its scores next to -10000 keep 3 decimals
            vals[:t] = [0] * t
        return dims, vals

    def write(self, d, rng):
        b, s, t, hd = self.b, self.s, self.s + self.past, self.qkv[0] // self.heads
        wc = sum(self.qkv)
        sc = 1.0 / self.hin ** 0.5  # projections of about unit size, as in a trained model
        consts = [("w", FLOAT, [self.hin, wc], [rng.uniform(-sc, sc) for _ in range(self.hin * wc)])]
        runtime = [("x", FLOAT, [b, s, self.hin], [rng.gauss(0, 1) for _ in range(b * s * self.hin)])]
        slots = {"x": "x", "w": "w"}  # input slots by name, written in the op's order
        if self.bias:
            consts.append(("bias", FLOAT, [wc], [rng.uniform(-0.5, 0.5) for _ in range(wc)]))
            slots["bias"] = "bias"
        if self.mask:
            dims, vals = self.mask_values(rng)
            (consts if self.mask_const else runtime).append(("mask", INT32, dims, vals))
            slots["mask"] = "mask"
        if self.past:
            pd = [2, b, self.heads, self.past, hd]
            runtime.append(("past", FLOAT, pd, [rng.gauss(0, 1) for _ in range(numel(pd))]))
            slots["past"] = "past"
        if self.abias:
            ad = [b, self.heads, s, t] if self.abias == "full" else [1, 1, s, t]
            runtime.append(("abias", FLOAT, ad, [rng.gauss(0, 1) for _ in range(numel(ad))]))
            slots["abias"] = "abias"
        order = [slots.get(k, "") for k in ("x", "w", "bias", "mask", "past", "abias")]
        while order and order[-1] == "":
            order.pop()
        outs = ["y", "present"] if self.present else ["y"]
        n = b"".join(st(1, i) for i in order) + b"".join(st(2, o) for o in outs) + st(3, self.name)
        n += st(4, "Attention") + st(7, "com.microsoft") + attr("num_heads", self.heads)
        if self.qkv != (self.hin, self.hin, self.hin):
            n += attr("qkv_hidden_sizes", list(self.qkv))
        if self.unidir:
            n += attr("unidirectional", 1)
        n += b"".join(attr(k, v) for k, v in self.attrs)
        g = ld(1, n) + st(2, "g") + b"".join(tensor(*c) for c in consts)
        g += b"".join(ld(11, vinfo(nm, dt, dims)) for nm, dt, dims, _ in runtime)
        g += ld(12, vinfo("y", FLOAT, [b, s, self.qkv[2]]))
        if self.present:
            g += ld(12, vinfo("present", FLOAT, [2, b, self.heads, t, hd]))
        return write_model(d, g, MS_OPSETS, runtime)


class Mha:
    """One MultiHeadAttention node: B, S (query), L (key), D, Dv, heads, and its options; kv4: key
    and value given as heads [B, N, L, h]."""

    def __init__(self, name, b, s, l, d, dv, heads, bias=True, mask=None, abias=None, past=0, present=False,
                 unidir=0, kv4=False, attrs=()):
        self.name, self.b, self.s, self.l, self.d, self.dv, self.heads = name, b, s, l, d, dv, heads
        self.bias, self.mask, self.abias, self.past, self.present = bias, mask, abias, past, present
        self.unidir, self.kv4, self.attrs = unidir, kv4, list(attrs)

    def write(self, d, rng):
        b, s, l, n, t = self.b, self.s, self.l, self.heads, self.l + self.past
        h, hv = self.d // n, self.dv // n
        def arr(name, dims, scale=1.0):
            return (name, FLOAT, dims, [rng.gauss(0, scale) for _ in range(numel(dims))])
        runtime = [arr("q", [b, s, self.d])]
        runtime += [arr("k", [b, n, l, h]), arr("v", [b, n, l, hv])] if self.kv4 else \
            [arr("k", [b, l, self.d]), arr("v", [b, l, self.dv])]
        consts, slots = [], {"q": "q", "k": "k", "v": "v"}
        if self.bias:
            consts.append(("bias", FLOAT, [2 * self.d + self.dv], [rng.uniform(-0.5, 0.5) for _ in range(2 * self.d + self.dv)]))
            slots["bias"] = "bias"
        if self.mask:
            if self.mask == "len":
                dims, vals = [b], [rng.randint(1, t) for _ in range(b)]
            else:
                dims = [b, t] if self.mask == "2d" else [b, s, t]
                vals = [int(rng.random() > 0.25) for _ in range(numel(dims))]
            runtime.append(("mask", INT32, dims, vals))
            slots["mask"] = "mask"
        if self.abias:
            runtime.append(arr("abias", [b, n, s, t] if self.abias == "full" else [1, 1, s, t]))
            slots["abias"] = "abias"
        if self.past:
            runtime += [arr("past_k", [b, n, self.past, h]), arr("past_v", [b, n, self.past, hv])]
            slots["pk"], slots["pv"] = "past_k", "past_v"
        order = [slots.get(k, "") for k in ("q", "k", "v", "bias", "mask", "abias", "pk", "pv")]
        while order and order[-1] == "":
            order.pop()
        outs = ["y", "present_key", "present_value"] if self.present else ["y"]
        nd = b"".join(st(1, i) for i in order) + b"".join(st(2, o) for o in outs) + st(3, self.name)
        nd += st(4, "MultiHeadAttention") + st(7, "com.microsoft") + attr("num_heads", n)
        if self.unidir:
            nd += attr("unidirectional", 1)
        nd += b"".join(attr(k, v) for k, v in self.attrs)
        g = ld(1, nd) + st(2, "g") + b"".join(tensor(*c) for c in consts)
        g += b"".join(ld(11, vinfo(nm, dt, dims)) for nm, dt, dims, _ in runtime)
        g += ld(12, vinfo("y", FLOAT, [b, s, self.dv]))
        if self.present:
            g += ld(12, vinfo("present_key", FLOAT, [b, n, t, h])) + ld(12, vinfo("present_value", FLOAT, [b, n, t, hv]))
        return write_model(d, g, MS_OPSETS, runtime)


class OnnxAttn:
    """One ONNX Attention (opset 23) node: B, S, L, q / kv heads, head sizes; rank 3 or 4 Q, K, V;
    mask "bool" / "float" of the given shape (None: [B, Nq, S, T]), causal, past, present, the
    qk_matmul_output mode (None: not wanted)."""

    def __init__(self, name, b, s, l, nq, nkv, h, hv, rank=3, mask=None, mask_dims=None, causal=0, past=0,
                 present=False, qk=None, attrs=()):
        self.name, self.b, self.s, self.l, self.nq, self.nkv, self.h, self.hv = name, b, s, l, nq, nkv, h, hv
        self.rank, self.mask, self.mask_dims, self.causal, self.past = rank, mask, mask_dims, causal, past
        self.present, self.qk, self.attrs = present, qk, list(attrs)

    def write(self, d, rng):
        b, s, l, nq, nkv, h, hv, t = self.b, self.s, self.l, self.nq, self.nkv, self.h, self.hv, self.l + self.past
        def arr(name, dims):
            return (name, FLOAT, dims, [rng.gauss(0, 1) for _ in range(numel(dims))])
        if self.rank == 3:
            runtime = [arr("q", [b, s, nq * h]), arr("k", [b, l, nkv * h]), arr("v", [b, l, nkv * hv])]
        else:
            runtime = [arr("q", [b, nq, s, h]), arr("k", [b, nkv, l, h]), arr("v", [b, nkv, l, hv])]
        order = ["q", "k", "v"]
        if self.mask or self.past:
            order.append("mask" if self.mask else "")
        if self.mask:
            md = self.mask_dims or [b, nq, s, t]
            if self.mask == "bool":
                vals = [int(rng.random() > 0.25) for _ in range(numel(md))]
                for r in range(0, numel(md), md[-1]):  # a key kept on every row
                    vals[r] = 1
                runtime.append(("mask", BOOL, md, vals))
            else:
                runtime.append(arr("mask", md))
        if self.past:
            runtime += [arr("past_k", [b, nkv, self.past, h]), arr("past_v", [b, nkv, self.past, hv])]
            order += ["past_k", "past_v"]
        outs = ["y"] + (["present_key", "present_value"] if self.present or self.qk is not None else [])
        if self.qk is not None:
            outs.append("qk")
        nd = b"".join(st(1, i) for i in order) + b"".join(st(2, o) for o in outs) + st(3, self.name) + st(4, "Attention")
        if self.rank == 3:
            nd += attr("q_num_heads", nq) + attr("kv_num_heads", nkv)
        if self.causal:
            nd += attr("is_causal", 1)
        if self.qk is not None:
            nd += attr("qk_matmul_output_mode", self.qk)
        nd += b"".join(attr(k, v) for k, v in self.attrs)
        g = ld(1, nd) + st(2, "g") + b"".join(ld(11, vinfo(nm, dt, dims)) for nm, dt, dims, _ in runtime)
        g += ld(12, vinfo("y", FLOAT, [b, s, nq * hv] if self.rank == 3 else [b, nq, s, hv]))
        if len(outs) > 1:
            g += ld(12, vinfo("present_key", FLOAT, [b, nkv, t, h])) + ld(12, vinfo("present_value", FLOAT, [b, nkv, t, hv]))
        if self.qk is not None:
            g += ld(12, vinfo("qk", FLOAT, [b, nq, s, t]))
        return write_model(d, g, ld(8, st(1, "") + vi(2, 23)), runtime)


class Rotary:
    """One RotaryEmbedding node (ms: com.microsoft's, inputs X, position_ids, cos, sin; else ONNX's
    opset 23, X, cos, sin, position_ids): B, S, N, H, rotated dims r, rank 3 or 4 X; pos "ids"
    [B, S], "offset" [1] (com.microsoft), None (ONNX: caches [B, S, r / 2])."""

    def __init__(self, name, ms, b, s, n, h, r, rank=3, pos="ids", interleaved=0, heads_attr=True, rdim_attr=False):
        self.name, self.ms, self.b, self.s, self.n, self.h, self.r = name, ms, b, s, n, h, r
        self.rank, self.pos, self.interleaved, self.heads_attr, self.rdim_attr = rank, pos, interleaved, heads_attr, rdim_attr

    def write(self, d, rng):
        b, s, n, h, r, maxpos = self.b, self.s, self.n, self.h, self.r, 32
        xd = [b, s, n * h] if self.rank == 3 else [b, n, s, h]
        runtime = [("x", FLOAT, xd, [rng.gauss(0, 1) for _ in range(numel(xd))])]
        cd = [b, s, r // 2] if self.pos is None else [maxpos, r // 2]
        ang = [rng.uniform(0, 6.28) for _ in range(numel(cd))]
        consts = [("cos", FLOAT, cd, [math.cos(a) for a in ang]), ("sin", FLOAT, cd, [math.sin(a) for a in ang])]
        if self.pos == "ids":
            runtime.append(("pos", INT64, [b, s], [rng.randint(0, maxpos - 1) for _ in range(b * s)]))
        elif self.pos == "offset":
            runtime.append(("pos", INT64, [1], [rng.randint(0, maxpos - s)]))
        p = "pos" if self.pos else ""
        order = ["x", p, "cos", "sin"] if self.ms else ["x", "cos", "sin", p]
        while order[-1] == "":
            order.pop()
        nd = b"".join(st(1, i) for i in order) + st(2, "y") + st(3, self.name) + st(4, "RotaryEmbedding")
        if self.ms:
            nd += st(7, "com.microsoft")
        if self.interleaved:
            nd += attr("interleaved", 1)
        if self.rank == 3 and self.heads_attr:
            nd += attr("num_heads", n)
        if self.rdim_attr:
            nd += attr("rotary_embedding_dim", r)
        g = ld(1, nd) + st(2, "g") + b"".join(tensor(*c) for c in consts)
        g += b"".join(ld(11, vinfo(nm, dt, dims)) for nm, dt, dims, _ in runtime) + ld(12, vinfo("y", FLOAT, xd))
        ops = MS_OPSETS if self.ms else ld(8, st(1, "") + vi(2, 23))
        return write_model(d, g, ops, runtime)


class Gqa:
    """One com.microsoft GroupQueryAttention node: B, S, past P, Nq, Nkv, H; packed QKV; seqlens
    ("full": P + S - 1 for every batch, else per batch lengths given), softcap."""

    def __init__(self, name, b, s, past, nq, nkv, h, packed=False, lens=None, rot=0, attrs=()):
        self.name, self.b, self.s, self.past, self.nq, self.nkv, self.h = name, b, s, past, nq, nkv, h
        self.packed, self.lens, self.rot, self.attrs, self.present = packed, lens, rot, list(attrs), True

    def write(self, d, rng):
        b, s, pl, nq, nkv, h = self.b, self.s, self.past, self.nq, self.nkv, self.h
        def arr(name, dims):
            return (name, FLOAT, dims, [rng.gauss(0, 1) for _ in range(numel(dims))])
        runtime = [arr("q", [b, s, (nq + 2 * nkv) * h] if self.packed else [b, s, nq * h])]
        if not self.packed:
            runtime += [arr("k", [b, s, nkv * h]), arr("v", [b, s, nkv * h])]
        if pl:
            runtime += [arr("past_k", [b, nkv, pl, h]), arr("past_v", [b, nkv, pl, h])]
        lens = self.lens or [pl + s - 1] * b
        runtime += [("seqlens_k", INT32, [b], lens), ("total_len", INT32, [], [pl + s])]
        order = ["q", "" if self.packed else "k", "" if self.packed else "v", "past_k" if pl else "",
                 "past_v" if pl else "", "seqlens_k", "total_len"]
        consts = []
        if self.rot:  # caches of 64 positions, do_rotary
            ang = [rng.uniform(0, 6.28) for _ in range(64 * self.rot // 2)]
            consts = [("cos", FLOAT, [64, self.rot // 2], [math.cos(a) for a in ang]),
                      ("sin", FLOAT, [64, self.rot // 2], [math.sin(a) for a in ang])]
            order += ["cos", "sin"]
        nd = b"".join(st(1, i) for i in order) + b"".join(st(2, o) for o in ("y", "present_key", "present_value"))
        nd += st(3, self.name) + st(4, "GroupQueryAttention") + st(7, "com.microsoft")
        nd += attr("num_heads", nq) + attr("kv_num_heads", nkv) + b"".join(attr(k, v) for k, v in self.attrs)
        g = ld(1, nd) + st(2, "g") + b"".join(tensor(*c) for c in consts)
        g += b"".join(ld(11, vinfo(nm, dt, dims)) for nm, dt, dims, _ in runtime)
        g += ld(12, vinfo("y", FLOAT, [b, s, nq * h]))
        g += ld(12, vinfo("present_key", FLOAT, [b, nkv, pl + s, h])) + ld(12, vinfo("present_value", FLOAT, [b, nkv, pl + s, h]))
        return write_model(d, g, MS_OPSETS, runtime)


def cases():
    c = [Case("plain", 2, 5, 16, 2), Case("no_bias", 2, 5, 16, 4, bias=False),
         Case("key_lengths", 2, 5, 16, 4, mask="len"), Case("ends_starts", 2, 5, 16, 4, mask="start"),
         Case("mask_2d", 2, 5, 16, 4, mask="2d"), Case("mask_3d", 2, 5, 16, 4, mask="3d"),
         Case("mask_2d_batch0_masked", 2, 5, 16, 4, mask="2d_row0"),
         Case("mask_2d_const", 3, 4, 8, 2, mask="2d", mask_const=True),
         Case("key_lengths_const", 3, 4, 8, 2, mask="len", mask_const=True),
         Case("mask_filter_scale", 2, 5, 16, 4, mask="2d", attrs=[("mask_filter_value", -500.0), ("scale", 0.3)]),
         Case("unidirectional", 2, 6, 16, 2, unidir=1),
         Case("unidirectional_mask_3d", 2, 6, 16, 2, mask="3d", unidir=1),
         Case("qkv_hidden_sizes", 1, 7, 12, 3, qkv=(12, 12, 24), mask="2d"),
         Case("attention_bias", 2, 5, 16, 2, abias="full"), Case("attention_bias_bcast", 2, 5, 16, 2, abias="bcast"),
         Case("present", 2, 5, 16, 2, present=True),
         Case("past_present", 2, 3, 16, 2, past=4, present=True, mask="2d", unidir=1),
         Case("past_decode", 2, 1, 16, 2, past=6, present=True, mask="len", unidir=1),
         Case("bert_small_b1s128h384", 1, 128, 384, 12, mask="2d")]
    c += [Mha("mha_bert_small_b1s128h384", 1, 128, 128, 384, 384, 12, mask="2d")]
    c += [Mha("mha_plain", 2, 5, 5, 16, 16, 2), Mha("mha_no_bias", 2, 5, 5, 16, 16, 4, bias=False),
          Mha("mha_cross", 2, 4, 7, 16, 24, 4), Mha("mha_key_lengths", 2, 5, 6, 16, 16, 4, mask="len"),
          Mha("mha_mask_2d", 2, 5, 6, 16, 16, 4, mask="2d"), Mha("mha_mask_3d", 2, 5, 6, 16, 16, 4, mask="3d"),
          Mha("mha_filter_scale", 2, 5, 6, 16, 16, 4, mask="2d", attrs=[("mask_filter_value", -500.0), ("scale", 0.3)]),
          Mha("mha_unidirectional", 2, 6, 6, 16, 16, 2, unidir=1),
          Mha("mha_attention_bias", 2, 5, 6, 16, 16, 2, abias="full"),
          Mha("mha_attention_bias_bcast", 2, 5, 6, 16, 16, 2, abias="bcast"),
          Mha("mha_present", 2, 5, 5, 16, 16, 2, present=True),
          Mha("mha_past_present", 2, 3, 3, 16, 16, 2, past=4, present=True, mask="2d"),
          Mha("mha_past_decode_causal", 2, 1, 1, 16, 16, 2, past=6, present=True, unidir=1),
          Mha("mha_kv_heads", 2, 4, 7, 16, 24, 4, bias=False, mask="2d"),
          Mha("mha_kv_heads_present", 2, 4, 7, 16, 16, 4, bias=False, present=True)]
    c += [OnnxAttn("onnx_3d", 2, 5, 5, 4, 4, 4, 4), OnnxAttn("onnx_4d", 2, 5, 5, 4, 4, 4, 4, rank=4),
          OnnxAttn("onnx_cross_hv", 2, 4, 7, 4, 4, 4, 6), OnnxAttn("onnx_gqa", 2, 5, 5, 6, 2, 4, 4),
          OnnxAttn("onnx_mqa_4d", 2, 5, 5, 4, 1, 4, 4, rank=4),
          OnnxAttn("onnx_mask_bool", 2, 5, 6, 4, 4, 4, 4, mask="bool"),
          OnnxAttn("onnx_mask_bool_b1st", 2, 5, 6, 4, 4, 4, 4, mask="bool", mask_dims=[2, 1, 5, 6]),
          OnnxAttn("onnx_mask_float_st", 2, 5, 6, 4, 2, 4, 4, mask="float", mask_dims=[5, 6]),
          OnnxAttn("onnx_causal", 2, 6, 6, 4, 4, 4, 4, causal=1),
          OnnxAttn("onnx_scale_softcap", 2, 5, 5, 4, 4, 4, 4, attrs=[("scale", 0.7), ("softcap", 2.0)]),
          OnnxAttn("onnx_softcap_mask", 2, 5, 5, 4, 4, 4, 4, mask="float", attrs=[("softcap", 1.5)]),
          OnnxAttn("onnx_past_present", 2, 3, 3, 4, 2, 4, 4, past=4, present=True),
          OnnxAttn("onnx_past_causal", 2, 3, 3, 4, 4, 4, 4, past=4, present=True, causal=1),
          OnnxAttn("onnx_present_only", 2, 3, 3, 4, 4, 4, 4, present=True)]
    c += [OnnxAttn("onnx_qk_mode%d" % m, 2, 3, 4, 4, 2, 4, 4, mask="float", qk=m, attrs=[("softcap", 3.0)])
          for m in range(4)]
    c += [Rotary("rot_onnx_4d", 0, 2, 5, 3, 8, 8, rank=4), Rotary("rot_onnx_3d", 0, 2, 5, 3, 8, 8),
          Rotary("rot_onnx_interleaved", 0, 2, 5, 3, 8, 8, rank=4, interleaved=1),
          Rotary("rot_onnx_partial", 0, 2, 5, 3, 8, 4, rdim_attr=True),
          Rotary("rot_onnx_partial_interleaved_4d", 0, 2, 5, 3, 8, 4, rank=4, interleaved=1, rdim_attr=True),
          Rotary("rot_onnx_no_position_ids", 0, 2, 5, 3, 8, 8, pos=None),
          Rotary("rot_ms_3d", 1, 2, 5, 3, 8, 8), Rotary("rot_ms_offset", 1, 2, 5, 3, 8, 8, pos="offset"),
          Rotary("rot_ms_interleaved", 1, 2, 5, 3, 8, 8, interleaved=1),
          Rotary("rot_ms_4d", 1, 2, 5, 3, 8, 8, rank=4), Rotary("rot_ms_4d_offset", 1, 2, 5, 3, 8, 8, rank=4, pos="offset"),
          Rotary("rot_ms_partial", 1, 2, 5, 3, 8, 4, rdim_attr=True),
          Rotary("rot_ms_no_num_heads", 1, 2, 5, 3, 8, 8, heads_attr=False)]
    c += [Gqa("gqa_prompt", 2, 5, 0, 4, 2, 8), Gqa("gqa_decode", 2, 1, 6, 4, 2, 8), Gqa("gqa_mqa_past", 1, 3, 4, 4, 1, 8),
          Gqa("gqa_packed_decode", 2, 1, 5, 6, 2, 8, packed=True), Gqa("gqa_softcap", 1, 4, 3, 4, 2, 8, attrs=[("softcap", 2.0)]),
          Gqa("gqa_scale", 1, 4, 0, 2, 2, 8, attrs=[("scale", 0.2)]),
          Gqa("gqa_prompt_right_padded", 2, 5, 0, 4, 2, 8, lens=[4, 2]),
          Gqa("gqa_rotary_prompt", 2, 5, 0, 4, 2, 16, rot=16, attrs=[("do_rotary", 1)]),
          Gqa("gqa_rotary_decode", 2, 1, 6, 4, 2, 16, rot=16, attrs=[("do_rotary", 1)]),
          Gqa("gqa_rotary_interleaved_partial", 1, 3, 4, 4, 2, 32, rot=16,
              attrs=[("do_rotary", 1), ("rotary_interleaved", 1)]),
          Gqa("gqa_rotary_packed_decode", 2, 1, 5, 6, 2, 16, packed=True, rot=16, attrs=[("do_rotary", 1)]),
          Gqa("gqa_rotary_right_padded", 2, 5, 0, 4, 2, 16, lens=[4, 2], rot=16, attrs=[("do_rotary", 1)]),
          Gqa("gqa_decode_p511_q32_kv8_h64", 1, 1, 511, 32, 8, 64)]  # an LLM decoding step
    return c


def extras(c, d):
    """The present and qk outputs' diffs, where the case has them."""
    names = ["present"] if isinstance(c, Case) else ["present_key", "present_value"]
    names = (names if getattr(c, "present", False) else []) + (["qk"] if getattr(c, "qk", None) is not None else [])
    line = ""
    for extra in names:
        p = {}
        for side in ("ort", "ref", "blis"):
            f = os.path.join(d, side, extra + ".npy")
            p[side] = load(f) if os.path.exists(f) else "no %s.npy" % extra
        line += "  %s: ref vs ort: %s, blis vs ref: %s" % (extra, side_diff(p["ort"], p["ref"]), side_diff(p["ref"], p["blis"]))
    return line


def main():
    compare_cases(BUILD, cases(), ONLY, extra=extras, keep_dir=KEEP)


main()

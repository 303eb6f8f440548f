#!/usr/bin/env python3
"""compare_rnn.py - ONNX GRU (linear_before_reset 0 and 1) and RNN on one-node models (forward,
reverse, bidirectional; layout 0 and 1; with and without B and initial_h; 1 and 50 steps; hidden
64 to 256; random weights of PyTorch's init range), run on ONNX Runtime 1.30 (ort_run.js), the
reference and blis-cpu (a host fallback reported as a failure; ORT refuses layout 1, so it runs
the same weights in layout 0 on the transposed inputs) with the same inputs; prints per model the
max-abs difference and the relative L2 of Y and Y_h: reference vs ORT and blis-cpu vs ORT. Last,
models with an `activations` attribute (PyTorch's RNN writes ["Relu"] or ["Tanh"]), and one that
mi-run refuses (HardSigmoid): its one-line message.
A check against ONNX Runtime, not a test (docs/onnx.md, "GRU and RNN").
usage: tools/ort/compare_rnn.py [BUILD_DIR] [--lstm]
       (--lstm: the same forms of LSTM instead, default activations, no activation models)
       tools/ort/compare_rnn.py --bench-models DIR   (writes the speed models of docs/benchmarks.md,
       "GRU on blis-cpu": 100 steps, batch 1, input 64, linear_before_reset 1, B, hidden 128 and
       256 bidirectional, 256 forward, for tools/bench/real/run.py --model)"""
import json, math, os, random, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else \
    os.environ.get("MI_BUILD", os.path.join(HERE, "..", "..", "build"))

sys.path.insert(0, HERE)
from onnx_pb import FLOAT, attr, ld, load, npy, st, tensor, vi, vinfo  # noqa: E402


def strings_attr(name, vals):
    """A STRINGS AttributeProto (field 9 per string, type 8)."""
    return ld(5, st(1, name) + b"".join(ld(9, v.encode()) for v in vals) + vi(20, 8))


def weights(op, I, H, direction, rng):
    D = 2 if direction == "bidirectional" else 1
    G = {"GRU": 3 * H, "LSTM": 4 * H}.get(op, H)
    s = 1.0 / math.sqrt(H)
    return ([rng.uniform(-s, s) for _ in range(D * G * I)], [rng.uniform(-s, s) for _ in range(D * G * H)],
            [rng.uniform(-s, s) for _ in range(D * 2 * G)])


def model(path, op, S, N, I, H, direction, layout, lbr, bias, init, wrb, opset=14, acts=None):
    """A one-node GRU/RNN/LSTM model: inputs x (and h0), outputs y, y_h. Returns the runtime input dims."""
    D = 2 if direction == "bidirectional" else 1
    G = {"GRU": 3 * H, "LSTM": 4 * H}.get(op, H)
    w, r, b = wrb
    ins = ["x", "W", "R", "B" if bias else ""] + (["", "h0"] if init else [])
    n = b"".join(st(1, i) for i in ins) + st(2, "y") + st(2, "y_h")
    n += st(3, "rnn_node") + st(4, op) + attr("hidden_size", H) + attr("direction", direction)
    if layout:
        n += attr("layout", 1)
    if op == "GRU":
        n += attr("linear_before_reset", lbr)
    if acts:
        n += strings_attr("activations", acts)
    xd = [N, S, I] if layout else [S, N, I]
    hd = [N, D, H] if layout else [D, N, H]
    yd = [N, S, D, H] if layout else [S, D, N, H]
    g = ld(1, n) + st(2, "g") + tensor("W", FLOAT, [D, G, I], w) + tensor("R", FLOAT, [D, G, H], r)
    if bias:
        g += tensor("B", FLOAT, [D, 2 * G], b)
    g += ld(11, vinfo("x", FLOAT, xd)) + (ld(11, vinfo("h0", FLOAT, hd)) if init else b"")
    g += ld(12, vinfo("y", FLOAT, yd)) + ld(12, vinfo("y_h", FLOAT, hd))
    open(path, "wb").write(vi(1, 8) + ld(7, g) + ld(8, st(1, "") + vi(2, opset)))
    return {"x": xd, "h0": hd} if init else {"x": xd}


def compare(a, b):
    num = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    den = math.sqrt(sum(x * x for x in a)) or 1.0
    return max(abs(x - y) for x, y in zip(a, b)), num / den


def transpose3(v, a, b, c, perm):
    """v of dims [a, b, c] (row-major) with its axes permuted by perm."""
    dims = (a, b, c)
    nd = [dims[p] for p in perm]
    out = [0.0] * len(v)
    for i in range(a):
        for j in range(b):
            for k in range(c):
                idx = (i, j, k)
                o = [idx[p] for p in perm]
                out[(o[0] * nd[1] + o[1]) * nd[2] + o[2]] = v[(i * b + j) * c + k]
    return out


def run(d, m, args, ort_model=None, ort_args=None):
    """Outputs of ORT (on ort_model with ort_args when given: ORT runs no layout 1), the reference
    and blis-cpu; a string where a run failed."""
    outs = {}
    mi = os.path.join(BUILD, "bin", "mi-run")
    for dev, cmd in (("ort", ["node", os.path.join(HERE, "ort_run.js"), "--model", ort_model or m]),
                     ("ref", [mi, "--model", m, "--device", "ref"]),
                     ("blis", [mi, "--model", m, "--device", "blis-cpu:0", "--json"])):
        od = os.path.join(d, dev)
        shutil.rmtree(od, ignore_errors=True)
        os.mkdir(od)
        a = ort_args if dev == "ort" and ort_args else args
        p = subprocess.run(cmd + a + ["--output-dir", od], capture_output=True, text=True)
        outs[dev] = {o: load(os.path.join(od, o + ".npy")) for o in ("y", "y_h")} if p.returncode == 0 else \
            (p.stderr.strip().splitlines() or ["failed"])[-1]
        if dev == "blis" and p.returncode == 0:  # a node the device refused ran on the host: say so
            fb = json.loads(p.stdout).get("fallback_nodes")
            if fb:
                outs[dev] = "fell back to the host: %s" % fb
    return outs


def main(ops=("GRU", "RNN")):
    rng = random.Random(11)
    d = tempfile.mkdtemp()
    worst = {"ref": [0.0, 0.0], "blis": [0.0, 0.0]}
    cases = []
    k = 0
    for op in ops:
        for lbr in ((0, 1) if op == "GRU" else (0,)):
            for direction in ("forward", "reverse", "bidirectional"):
                for layout in (0, 1):
                    for S in (1, 50):
                        H = (64, 128, 256)[k % 3]
                        bias = init = (k % 2 == 0)
                        N = 2 if k % 4 in (1, 2) else 1
                        opset = 14 if layout else (7, 14, 21)[k % 3]
                        cases.append((op, S, N, 64, H, direction, layout, lbr, bias, init, opset))
                        k += 1
    for op, S, N, I, H, direction, layout, lbr, bias, init, opset in cases:
        m, m0 = os.path.join(d, "m.onnx"), os.path.join(d, "m0.onnx")
        D = 2 if direction == "bidirectional" else 1
        wrb = weights(op, I, H, direction, rng)
        dims = model(m, op, S, N, I, H, direction, layout, lbr, bias, init, wrb, opset)
        if layout:  # ORT's twin in layout 0: the same weights, inputs transposed
            model(m0, op, S, N, I, H, direction, 0, lbr, bias, init, wrb, opset)
        args, args0 = [], []
        for name, dd in dims.items():
            f, f0 = os.path.join(d, name + ".npy"), os.path.join(d, name + "0.npy")
            v = [rng.gauss(0.0, 1.0) for _ in range(dd[0] * dd[1] * dd[2])]
            npy(f, FLOAT, dd, v)
            npy(f0, FLOAT, [dd[1], dd[0], dd[2]], transpose3(v, dd[0], dd[1], dd[2], (1, 0, 2)))
            args += ["--input", "%s=%s" % (name, f)]
            args0 += ["--input", "%s=%s" % (name, f0)]
        outs = run(d, m, args, m0 if layout else None, args0 if layout else None)
        if layout and not isinstance(outs["ort"], str):  # ORT's [S, D, N, H] and [D, N, H] as layout 1's
            y = outs["ort"]["y"]
            outs["ort"]["y"] = [y[((t * D + dd) * N + n) * H + h] for n in range(N) for t in range(S)
                                for dd in range(D) for h in range(H)]
            outs["ort"]["y_h"] = transpose3(outs["ort"]["y_h"], D, N, H, (1, 0, 2))
        line = "%s%s %s layout %d S%d N%d I%d H%d%s%s opset %d:" % (
            op, " lbr %d" % lbr if op == "GRU" else "", direction, layout, S, N, I, H,
            " B" if bias else "", " h0" if init else "", opset)
        for dev in ("ref", "blis"):
            if isinstance(outs["ort"], str) or isinstance(outs[dev], str):
                line += "  %s: %s" % (dev, outs["ort"] if isinstance(outs["ort"], str) else outs[dev])
                worst[dev] = [math.inf, math.inf]
                continue
            parts = []
            for o in ("y", "y_h"):
                mx, rl = compare(outs["ort"][o], outs[dev][o])
                worst[dev] = [max(worst[dev][0], mx), max(worst[dev][1], rl)]
                parts.append("%s max-abs %.2g rel-L2 %.2g" % (o, mx, rl))
            line += "  %s vs ORT: %s" % (dev, ", ".join(parts))
        print(line, flush=True)
    print("worst over %d models: ref vs ORT max-abs %.3g rel-L2 %.3g; blis-cpu vs ORT max-abs %.3g rel-L2 %.3g" % (
        len(cases), worst["ref"][0], worst["ref"][1], worst["blis"][0], worst["blis"][1]))
    if "LSTM" in ops:
        shutil.rmtree(d, ignore_errors=True)
        return
    # `activations` as exporters write it (PyTorch's RNN: ["Relu"] or ["Tanh"]; ORT takes these
    # names only capitalised, and one per direction), a GRU naming its defaults; then one mi-run
    # refuses (HardSigmoid): its one-line message
    for op, direction, acts, lbr in (("RNN", "forward", ["Relu"], 0), ("RNN", "bidirectional", ["Relu", "Relu"], 0),
                                     ("RNN", "bidirectional", ["Tanh", "Sigmoid"], 0),
                                     ("GRU", "bidirectional", ["Sigmoid", "Tanh", "Sigmoid", "Tanh"], 1),
                                     ("GRU", "forward", ["HardSigmoid", "Tanh"], 1)):
        m = os.path.join(d, "acts.onnx")
        S, I, H = 50, 64, 128
        model(m, op, S, 1, I, H, direction, 0, lbr, 1, 0, weights(op, I, H, direction, rng), 14, acts)
        npy(os.path.join(d, "x.npy"), FLOAT, [S, 1, I], [rng.gauss(0.0, 1.0) for _ in range(S * I)])
        outs = run(d, m, ["--input", "x=" + os.path.join(d, "x.npy")])
        line = "%s %s activations=%s S%d I%d H%d:" % (op, direction, acts, S, I, H)
        for dev in ("ref", "blis"):
            if isinstance(outs["ort"], str) or isinstance(outs[dev], str):
                line += "  %s: %s" % (dev, outs["ort"] if isinstance(outs["ort"], str) else outs[dev])
                continue
            line += "  %s vs ORT: %s" % (dev, ", ".join("%s max-abs %.2g rel-L2 %.2g" % ((o,) + compare(outs["ort"][o], outs[dev][o]))
                                                     for o in ("y", "y_h")))
        print(line, flush=True)
    shutil.rmtree(d, ignore_errors=True)


def bench_models(out):
    rng = random.Random(5)
    os.makedirs(out, exist_ok=True)
    for name, direction, H in (("gru_bi_h128", "bidirectional", 128), ("gru_bi_h256", "bidirectional", 256),
                               ("gru_fw_h256", "forward", 256)):
        model(os.path.join(out, name + ".onnx"), "GRU", 100, 1, 64, H, direction, 0, 1, 1, 0,
              weights("GRU", 64, H, direction, rng), 14)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--bench-models":
        bench_models(sys.argv[2])
    else:
        main(("LSTM",) if "--lstm" in sys.argv else ("GRU", "RNN"))

#!/usr/bin/env python3
"""bench_ops.py - one-node models of the ops blis-cpu took over from the host (DeformConv, LpPool,
Col2Im) at realistic sizes, timed in interleaved rounds on blis-cpu (mi-run --device blis-cpu:0),
the host path (the reference interpreter: mi-run --device ref, what a blis-cpu session ran these
ops on before) and ONNX Runtime (ort_run.js). Each round runs every model on every side once
(--repeat N --warmup 2, the side's median; the reference 3 runs after 1); printed: per model and side the median over rounds
[min-max], and blis-cpu's ratio to each other side, per round, median [min-max]. Needs node and
tools/ort/setup.sh.
usage: tools/ort/bench_ops.py BUILD [--rounds R] [--threads T] [--repeat N] [--only SUBSTRING]"""
import argparse, json, os, random, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from onnx_pb import FLOAT, INT64, attr, ld, npy, numel, st, tensor, vi, vinfo  # noqa: E402


def model(d, name, op, opset, runtime, consts, order, attrs, rng):
    """Writes d/NAME.onnx (one node, output y) and its inputs; returns (model path, --input args)."""
    n = b"".join(st(1, i) for i in order) + st(2, "y") + st(3, name) + st(4, op) + b"".join(attr(k, v) for k, v in attrs)
    g = ld(1, n) + st(2, "g") + b"".join(tensor(*c) for c in consts)
    g += b"".join(ld(11, vinfo(nm, dt, dims)) for nm, dt, dims, _ in runtime) + ld(12, st(1, "y") + ld(2, ld(1, vi(1, FLOAT))))
    path = os.path.join(d, name + ".onnx")
    open(path, "wb").write(vi(1, 8) + ld(7, g) + ld(8, st(1, "") + vi(2, opset)))
    args = []
    for nm, dt, dims, gen in runtime:
        p = os.path.join(d, "%s_%s.npy" % (name, nm))
        npy(p, dt, dims, [gen(rng) for _ in range(numel(dims))])
        args += ["--input", "%s=%s" % (nm, p)]
    return path, args


def models(d):
    rng = random.Random(5)
    g = lambda r: r.gauss(0, 1)
    out = []
    # DeformConv as torchvision's DeformConv2d(64, 64, 3, padding=1) with a modulation mask (DCNv2)
    w = [rng.gauss(0, 0.05) for _ in range(64 * 64 * 9)]
    out.append(("DeformConv 1x64x64x64, 3x3, 64 out, mask", *model(
        d, "deform", "DeformConv", 19,
        [("x", FLOAT, [1, 64, 64, 64], g), ("o", FLOAT, [1, 18, 64, 64], lambda r: r.gauss(0, 2)),
         ("m", FLOAT, [1, 9, 64, 64], lambda r: r.uniform(0, 1))],
        [("w", FLOAT, [64, 64, 3, 3], w), ("b", FLOAT, [64], [rng.gauss(0, 1) for _ in range(64)])],
        ["x", "w", "o", "b", "m"], [("pads", [1, 1, 1, 1])], rng)))
    for p in (2, 3):
        out.append(("LpPool 1x64x56x56, 3x3 stride 2 pads 1, p %d" % p, *model(
            d, "lppool_p%d" % p, "LpPool", 18, [("x", FLOAT, [1, 64, 56, 56], g)], [], ["x"],
            [("kernel_shape", [3, 3]), ("strides", [2, 2]), ("pads", [1, 1, 1, 1]), ("p", p)], rng)))
    out.append(("Col2Im 1x576x4096 to 1x64x64x64, 3x3 block, pads 1", *model(
        d, "col2im", "Col2Im", 18, [("x", FLOAT, [1, 576, 4096], g)],
        [("i", INT64, [2], [64, 64]), ("k", INT64, [2], [3, 3])], ["x", "i", "k"], [("pads", [1, 1, 1, 1])], rng)))
    return out


def timed(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("bench_ops.py: %s failed: %s" % (" ".join(cmd[:4]), r.stderr.strip()[-400:]))
    return json.loads(r.stdout)["latency_ms"]["median"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    mi = os.path.join(a.build, "bin", "mi-run")
    d = tempfile.mkdtemp()
    ms = [m for m in models(d) if a.only in m[0]]
    common = ["--repeat", str(a.repeat), "--warmup", "2", "--json"]
    sides = {
        "blis-cpu": lambda p, args: [mi, "--model", p, "--device", "blis-cpu:0", "--threads", str(a.threads)] + args + common,
        # the reference is slow (DeformConv: seconds a run): 3 runs after 1 warm-up
        "host (ref)": lambda p, args: [mi, "--model", p, "--device", "ref"] + args + ["--repeat", "3", "--warmup", "1",
                                                                                       "--json"],
        "ONNX Runtime": lambda p, args: ["node", os.path.join(HERE, "ort_run.js"), "--model", p, "--threads",
                                         str(a.threads)] + args + common,
    }
    t = {(name, s): [] for name, _, _ in ms for s in sides}
    for r in range(a.rounds):
        for name, p, args in ms:
            for s, cmd in sides.items():
                t[(name, s)].append(timed(cmd(p, args)))
        print("round %d done" % (r + 1), file=sys.stderr, flush=True)
    fmt = lambda v: "%.3f [%.3f-%.3f]" % (statistics.median(v), min(v), max(v))
    print("| op | threads | blis-cpu ms | host (ref) ms | ONNX Runtime ms | blis / host | blis / ORT |")
    print("| --- | ---: | ---: | ---: | ---: | --- | --- |")
    for name, _, _ in ms:
        b, h, o = t[(name, "blis-cpu")], t[(name, "host (ref)")], t[(name, "ONNX Runtime")]
        rh = [x / y for x, y in zip(b, h)]
        ro = [x / y for x, y in zip(b, o)]
        print("| %s | %d | %s | %s | %s | %s | %s |" % (name, a.threads, fmt(b), fmt(h), fmt(o), fmt(rh), fmt(ro)))


main()

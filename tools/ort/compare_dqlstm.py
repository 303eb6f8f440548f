#!/usr/bin/env python3
"""compare_dqlstm.py - com.microsoft DynamicQuantizeLSTM as mi-quantize --mode dynamic writes it
(ONNX Runtime's quantize_dynamic form: INT8 symmetric W and R, per direction or --per-channel per
gate row), on one-LSTM models (forward, reverse, bidirectional; random weights, or Silero VAD v4's
trained LSTM weights when given as .npy files), run on ONNX Runtime 1.30 (ort_run.js), the
reference and blis-cpu with the same inputs; prints the relative L2 of Y, Y_h, Y_c: reference vs
ORT, the float LSTM vs ORT (what the 8-bit weights and activations cost), and blis-cpu vs the
reference (docs/onnx.md, "DynamicQuantizeLSTM"). A check against ONNX Runtime, not a test.
usage: tools/ort/compare_dqlstm.py [BUILD_DIR]"""
import math, os, random, shutil, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MI_BUILD", os.path.join(HERE, "..", "..", "build"))


sys.path.insert(0, HERE)
from onnx_pb import FLOAT, attr, fields, ld, load, npy, st, tensor, unpack_varints, vi, vinfo  # noqa: E402


def lstm_model(path, T, B, I, H, direction, rng):
    D = 2 if direction == "bidirectional" else 1
    s = 1.0 / math.sqrt(H)
    w = [rng.uniform(-s, s) for _ in range(D * 4 * H * I)]
    r = [rng.uniform(-s, s) for _ in range(D * 4 * H * H)]
    b = [rng.uniform(-s, s) for _ in range(D * 8 * H)]
    n = b"".join(st(1, i) for i in ("x", "W", "R", "B")) + b"".join(st(2, o) for o in ("y", "y_h", "y_c"))
    n += st(3, "lstm") + st(4, "LSTM") + attr("hidden_size", H) + attr("direction", direction)
    g = ld(1, n) + st(2, "g") + tensor("W", FLOAT, [D, 4 * H, I], w) + tensor("R", FLOAT, [D, 4 * H, H], r) + tensor("B", FLOAT, [D, 8 * H], b)
    g += ld(11, vinfo("x", FLOAT, [T, B, I]))
    g += ld(12, vinfo("y", FLOAT, [T, D, B, H])) + ld(12, vinfo("y_h", FLOAT, [D, B, H])) + ld(12, vinfo("y_c", FLOAT, [D, B, H]))
    open(path, "wb").write(vi(1, 8) + ld(7, g) + ld(8, st(1, "") + vi(2, 14)))


def floats_of(t):
    """A FLOAT TensorProto's (name, dims, values)."""
    dims, name, raw, fd = [], "", None, []
    for f, wt, v in fields(t):
        if f == 1 and wt == 0:
            dims.append(v)
        elif f == 1:  # packed
            dims.extend(unpack_varints(v))
        elif f == 8:
            name = v.decode()
        elif f == 9:
            raw = v
        elif f == 4:
            fd.extend(struct.unpack("<%df" % (len(v) // 4), v) if wt == 2 else struct.unpack("<f", v))
    vals = list(struct.unpack("<%df" % (len(raw) // 4), raw)) if raw is not None else fd
    return name, dims, vals


def find_lstms(graph, inits, out):
    """The LSTMs of a GraphProto and its subgraphs: (W, R, B) FLOAT arrays with dims, hidden_size."""
    inits = dict(inits)
    nodes = []
    for f, wt, v in fields(graph):
        if f == 5:
            n, d, vals = floats_of(v)
            inits[n] = (d, vals)
        elif f == 1:
            nodes.append(v)
    for nd in nodes:
        ins, op, H = [], "", 0
        for f, wt, v in fields(nd):
            if f == 1:
                ins.append(v.decode())
            elif f == 4:
                op = v.decode()
            elif f == 5:
                an, sub = "", []
                for af, awt, av in fields(v):
                    if af == 1:
                        an = av.decode()
                    elif af == 3:
                        H = av if an == "hidden_size" else H
                    elif af == 6:
                        sub.append(av)
                    elif af == 11:
                        sub.append(av)
                for g in sub:
                    find_lstms(g, inits, out)
        if op == "LSTM" and all(k in inits for k in ins[1:3]):
            out.append((inits[ins[1]], inits[ins[2]], inits.get(ins[3]) if len(ins) > 3 else None, H))
    return out


def lstm_from(path, model):
    """The first LSTM of a fetched model (its trained W, R, B) as a one-LSTM model; its input size."""
    for f, wt, v in fields(open(model, "rb").read()):
        if f == 7:
            found = find_lstms(v, {}, [])
            if not found:
                return None
            (wd, w), (rd, r), b, H = found[0]
            n = b"".join(st(1, i) for i in ("x", "W", "R") + (("B",) if b else ())) + b"".join(st(2, o) for o in ("y", "y_h", "y_c"))
            n += st(3, "lstm") + st(4, "LSTM") + attr("hidden_size", H)
            D, I = wd[0], wd[2]
            g = ld(1, n) + st(2, "g") + tensor("W", FLOAT, wd, w) + tensor("R", FLOAT, rd, r) + (tensor("B", FLOAT, b[0], b[1]) if b else b"")
            g += ld(11, vinfo("x", FLOAT, [64, 1, I]))
            g += ld(12, vinfo("y", FLOAT, [64, D, 1, H])) + ld(12, vinfo("y_h", FLOAT, [D, 1, H])) + ld(12, vinfo("y_c", FLOAT, [D, 1, H]))
            open(path, "wb").write(vi(1, 8) + ld(7, g) + ld(8, st(1, "") + vi(2, 14)))
            return I
    return None


def rel(a, b):
    num = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    den = math.sqrt(sum(x * x for x in a)) or 1.0
    return num / den


def run_all(name, fp32, T, B, I, rng):
    d = tempfile.mkdtemp()
    xin = os.path.join(d, "x.npy")
    npy(xin, FLOAT, [T, B, I], [rng.gauss(0.0, 1.0) for _ in range(T * B * I)])
    args = ["--input", "x=" + xin]
    run = os.path.join(BUILD, "bin", "mi-run")
    for pc in ([], ["--per-channel"]):
        q = os.path.join(d, "q.onnx")
        r = subprocess.run([os.path.join(BUILD, "bin", "mi-quantize"), "--mode", "dynamic", "--model", fp32, "--out", q] + pc,
                           capture_output=True, text=True)
        if r.returncode:
            print("%s: mi-quantize: %s" % (name, r.stderr.strip()))
            continue
        outs = {}
        for dev, cmd in (("ort", ["node", os.path.join(HERE, "ort_run.js"), "--model", q]),
                         ("ref", [run, "--model", q, "--device", "ref"]),
                         ("blis", [run, "--model", q, "--device", "blis-cpu:0"]),
                         ("fp32", [run, "--model", fp32, "--device", "ref"])):
            od = os.path.join(d, dev)
            shutil.rmtree(od, ignore_errors=True)
            os.mkdir(od)
            p = subprocess.run(cmd + args + ["--output-dir", od], capture_output=True, text=True)
            outs[dev] = {o: load(os.path.join(od, o + ".npy")) for o in ("y", "y_h", "y_c")} if p.returncode == 0 else \
                (p.stderr.strip().splitlines() or ["failed"])[-1]
        line = "%s%s:" % (name, " per-channel" if pc else "")
        for a, b, what in (("ort", "ref", "ref vs ORT"), ("ort", "fp32", "float LSTM vs ORT"), ("ref", "blis", "blis-cpu vs ref")):
            if isinstance(outs[a], str) or isinstance(outs[b], str):
                line += "  %s: %s" % (what, outs[a] if isinstance(outs[a], str) else outs[b])
                continue
            line += "  %s: %s" % (what, " ".join("%s %.3g" % (o, rel(outs[a][o], outs[b][o])) for o in ("y", "y_h", "y_c")))
        print(line, flush=True)
    shutil.rmtree(d, ignore_errors=True)


def main():
    rng = random.Random(7)
    d = tempfile.mkdtemp()
    for direction, T, B, I, H in (("forward", 30, 2, 16, 32), ("reverse", 12, 3, 8, 16), ("bidirectional", 25, 1, 64, 64)):
        m = os.path.join(d, "%s.onnx" % direction)
        lstm_model(m, T, B, I, H, direction, rng)
        run_all("LSTM %s T%d B%d I%d H%d" % (direction, T, B, I, H), m, T, B, I, rng)
    # Silero VAD's LSTM (inside its If branches, which mi-quantize cannot write back): its trained
    # weights lifted into a one-LSTM model, 64 steps of unit-variance inputs
    models = os.environ.get("MI_MODEL_DIR", os.path.expanduser("~/.cache/metainfer/models"))
    for v in ("silero_vad_v4", "silero_vad_v5"):
        src = os.path.join(models, v + ".onnx")
        m = os.path.join(d, v + ".onnx")
        I = lstm_from(m, src) if os.path.exists(src) else None
        if I:
            run_all("%s LSTM T64 B1 I%d" % (v, I), m, 64, 1, I, rng)
    shutil.rmtree(d, ignore_errors=True)


main()

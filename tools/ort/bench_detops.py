#!/usr/bin/env python3
"""bench_detops.py - wall time of the detector and vision ops blis-cpu runs on its device
(NonMaxSuppression, GridSample, RoiAlign, TopK, ArgMax; GatherElements, the bitwise ops, BitShift,
EyeLike, CenterCropPad, 5-D GridSample, Det, MaxRoiPool, 3-D Col2Im) at real exports' sizes, and of
two small graphs (Conv -> GridSample -> Conv; a detector tail Conv -> Sigmoid -> Reshape -> NonMaxSuppression),
on a build, a base build (where these ran as host steps) and ONNX Runtime: interleaved rounds,
per round each model on each side in turn; prints the median of each side's per-run medians with
[min-max] over the rounds and the ratios to the base and to ONNX Runtime per round. Needs node
and tools/ort/setup.sh; the load is printed with the figures.
usage: tools/ort/bench_detops.py BUILD BASE_BUILD [ROUNDS] [REPEAT] [THREADS] [CASE-SUBSTRING[,SUBSTRING...]]"""
import os, random, re, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from onnx_pb import FLOAT, INT64, UINT8, attr, ld, npy, numel, st, tensor, vi, vinfo  # noqa: E402

BUILD, BASE = sys.argv[1], sys.argv[2]
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
REPEAT = int(sys.argv[4]) if len(sys.argv) > 4 else 50
THREADS = sys.argv[5] if len(sys.argv) > 5 else "1"
ONLY = sys.argv[6] if len(sys.argv) > 6 else ""


def model(path, opset, nodes, consts, inputs, outputs):
    """nodes: (op, name, inputs, outputs, attrs); consts: (name, dtype, dims, values); inputs and
    outputs: (name, dtype, dims) (outputs' dims may be [] for unknown)."""
    g = b"".join(ld(1, b"".join(st(1, i) for i in ins) + b"".join(st(2, o) for o in outs) + st(3, nm) + st(4, op) +
                    b"".join(attr(k, v) for k, v in ats)) for op, nm, ins, outs, ats in nodes)
    g += st(2, "g") + b"".join(tensor(*c) for c in consts)
    g += b"".join(ld(11, vinfo(*i)) for i in inputs)
    g += b"".join(ld(12, st(1, nm) + ld(2, ld(1, vi(1, dt)))) for nm, dt, _ in outputs)
    open(path, "wb").write(vi(1, 8) + ld(7, g) + ld(8, st(1, "") + vi(2, opset)))


def yolo_boxes(r, n):
    """n boxes (x1, y1, x2, y2) on a 640 x 640 image, 10 to 200 pixels a side."""
    out = []
    for _ in range(n):
        x, y, w, h = r.uniform(0, 640), r.uniform(0, 640), r.uniform(10, 200), r.uniform(10, 200)
        out += [x - w / 2, y - h / 2, x + w / 2, y + h / 2]
    return out


def cases(d, r):
    """(name, model path, {input: npy path}) of each benchmark."""
    out = []

    def add(name, opset, nodes, consts, ins, outs):
        p = os.path.join(d, name)
        os.makedirs(p)
        model(os.path.join(p, "m.onnx"), opset, nodes, consts, [(n, dt, dims) for n, dt, dims, _ in ins], outs)
        files = {}
        for n, dt, dims, vals in ins:
            files[n] = os.path.join(p, n + ".npy")
            npy(files[n], dt, dims, vals)
        out.append((name, os.path.join(p, "m.onnx"), files))

    nms_c = [("mo", INT64, [1], [100]), ("iou", FLOAT, [1], [0.45]), ("st", FLOAT, [1], [0.25])]
    # YOLOv8's tail: 8400 anchors, 80 classes; scores mostly low (a few hundred above 0.25)
    scores = [r.random() ** 6 for _ in range(80 * 8400)]
    add("nms_yolo_8400x80", 11, [("NonMaxSuppression", "nms", ["boxes", "scores", "mo", "iou", "st"], ["y"], [])], nms_c,
        [("boxes", FLOAT, [1, 8400, 4], yolo_boxes(r, 8400)), ("scores", FLOAT, [1, 80, 8400], scores)], [("y", INT64, [])])
    # SSD-like: 1917 anchors, 91 classes
    add("nms_ssd_1917x91", 11, [("NonMaxSuppression", "nms", ["boxes", "scores", "mo", "iou", "st"], ["y"], [])], nms_c,
        [("boxes", FLOAT, [1, 1917, 4], yolo_boxes(r, 1917)), ("scores", FLOAT, [1, 91, 1917], [r.random() ** 4 for _ in range(91 * 1917)])],
        [("y", INT64, [])])
    for mode in ("bilinear", "bicubic", "nearest"):
        add("gridsample_%s_1x32x64x64" % mode, 16, [("GridSample", "gs", ["x", "g"], ["y"], [("mode", mode), ("padding_mode", "border")])], [],
            [("x", FLOAT, [1, 32, 64, 64], [r.gauss(0, 1) for _ in range(32 * 64 * 64)]),
             ("g", FLOAT, [1, 64, 64, 2], [r.uniform(-1.05, 1.05) for _ in range(64 * 64 * 2)])], [("y", FLOAT, [1, 32, 64, 64])])
    rois = []
    for b in yolo_boxes(r, 100):
        rois.append(min(max(b, 0), 1000) * 1.0)
    add("roialign_maskrcnn_100x256x7x7", 16, [("RoiAlign", "ra", ["x", "rois", "bi"], ["y"],
                                                [("output_height", 7), ("output_width", 7), ("sampling_ratio", 2), ("spatial_scale", 0.0625)])],
        [], [("x", FLOAT, [1, 256, 50, 68], [r.gauss(0, 1) for _ in range(256 * 50 * 68)]), ("rois", FLOAT, [100, 4], rois),
             ("bi", INT64, [100], [0] * 100)], [("y", FLOAT, [100, 256, 7, 7])])
    add("topk_8400_k300", 11, [("TopK", "topk", ["x", "k"], ["y", "i"], [])], [("k", INT64, [1], [300])],
        [("x", FLOAT, [1, 8400], [r.random() for _ in range(8400)])], [("y", FLOAT, [1, 300])])
    add("argmax_seg_1x21x256x256", 13, [("ArgMax", "am", ["x"], ["y"], [("axis", 1)])], [],
        [("x", FLOAT, [1, 21, 256, 256], [r.gauss(0, 1) for _ in range(21 * 65536)])], [("y", INT64, [1, 1, 256, 256])])
    w1 = [r.gauss(0, 0.1) for _ in range(16 * 16 * 9)]
    add("graph_conv_gridsample_conv", 16,
        [("Conv", "c1", ["x", "w1"], ["a"], [("pads", [1, 1, 1, 1])]), ("GridSample", "gs", ["a", "g"], ["b"], []),
         ("Conv", "c2", ["b", "w2"], ["y"], [("pads", [1, 1, 1, 1])])],
        [("w1", FLOAT, [16, 16, 3, 3], w1), ("w2", FLOAT, [16, 16, 3, 3], w1[::-1])],
        [("x", FLOAT, [1, 16, 64, 64], [r.gauss(0, 1) for _ in range(16 * 64 * 64)]),
         ("g", FLOAT, [1, 64, 64, 2], [r.uniform(-1, 1) for _ in range(64 * 64 * 2)])], [("y", FLOAT, [1, 16, 64, 64])])
    add("graph_detector_tail", 11,
        [("Conv", "head", ["feat", "wh"], ["logit"], []), ("Sigmoid", "sig", ["logit"], ["prob"], []),
         ("Reshape", "flat", ["prob", "shape"], ["scores"], []),
         ("NonMaxSuppression", "nms", ["boxes", "scores", "mo", "iou", "st"], ["y"], [])],
        [("wh", FLOAT, [80, 64, 1, 1], [r.gauss(0, 0.15) for _ in range(80 * 64)]), ("shape", INT64, [3], [1, 80, 1600])] + nms_c,
        [("feat", FLOAT, [1, 64, 40, 40], [r.gauss(0, 1) for _ in range(64 * 1600)]), ("boxes", FLOAT, [1, 1600, 4], yolo_boxes(r, 1600))],
        [("y", INT64, [])])
    hostops_cases(r, add)  # appends to out through add
    return [c for c in out if any(o in c[0] for o in ONLY.split(","))]


def hostops_cases(r, add):
    """The ops a blis-cpu session ran on the host until the hostops branch, at real exports' sizes."""
    # a detector's kept boxes: TopK's 300 indices, expanded to the 4 coordinates, pick from 8400 boxes
    add("gatherelements_boxes_8400x4_k300", 13, [("GatherElements", "ge", ["x", "i"], ["y"], [("axis", 1)])], [],
        [("x", FLOAT, [1, 8400, 4], yolo_boxes(r, 8400)), ("i", INT64, [1, 300, 4], [v for _ in range(300) for v in [r.randrange(8400)] * 4])],
        [("y", FLOAT, [1, 300, 4])])
    # relative positions (DeBERTa, Transformer-XL): [heads, L, 2L - 1] scores gathered to [heads, L, L] along the last axis
    L = 256
    add("gatherelements_relpos_12x256x511", 13, [("GatherElements", "ge", ["x", "i"], ["y"], [("axis", 2)])], [],
        [("x", FLOAT, [12, L, 2 * L - 1], [r.gauss(0, 1) for _ in range(12 * L * (2 * L - 1))]),
         ("i", INT64, [12, L, L], [L - 1 - q + k for _ in range(12) for q in range(L) for k in range(L)])], [("y", FLOAT, [12, L, L])])
    # in a graph: the position scores from a MatMul, gathered, added to the content scores
    add("graph_matmul_gatherelements_add_relpos", 13,
        [("MatMul", "qr", ["q", "rel"], ["s"], []), ("GatherElements", "ge", ["s", "i"], ["g"], [("axis", 2)]),
         ("Add", "add", ["g", "c"], ["y"], [])],
        [("rel", FLOAT, [64, 2 * L - 1], [r.gauss(0, 0.1) for _ in range(64 * (2 * L - 1))]),
         ("i", INT64, [12, L, L], [L - 1 - q + k for _ in range(12) for q in range(L) for k in range(L)])],
        [("q", FLOAT, [12, L, 64], [r.gauss(0, 1) for _ in range(12 * L * 64)]),
         ("c", FLOAT, [12, L, L], [r.gauss(0, 1) for _ in range(12 * L * L)])], [("y", FLOAT, [12, L, L])])
    u8 = lambda n: [r.randrange(256) for _ in range(n)]
    add("bitwiseand_uint8_1x1x640x640", 18, [("BitwiseAnd", "ba", ["a", "b"], ["y"], [])], [],
        [("a", UINT8, [1, 1, 640, 640], u8(640 * 640)), ("b", UINT8, [1, 1, 640, 640], u8(640 * 640))], [("y", UINT8, [])])
    add("bitwiseor_int64_8400x80_row", 18, [("BitwiseOr", "bo", ["a", "b"], ["y"], [])], [],
        [("a", INT64, [8400, 80], [r.randrange(1 << 40) for _ in range(8400 * 80)]), ("b", INT64, [1, 80], [1 << k for k in range(80 - 40)] * 2)],
        [("y", INT64, [])])
    add("bitshift_right_uint8_1x3x640x640_by4", 11, [("BitShift", "bs", ["a", "s"], ["y"], [("direction", "RIGHT")])],
        [("s", UINT8, [1], [4])], [("a", UINT8, [1, 3, 640, 640], u8(3 * 640 * 640))], [("y", UINT8, [])])
    add("eyelike_512x512", 9, [("EyeLike", "eye", ["x"], ["y"], [])], [], [("x", FLOAT, [512, 512], [0.0] * (512 * 512))],
        [("y", FLOAT, [512, 512])])
    # in a graph: the EyeLike's input made and its output read by device steps (alone, the session
    # uploads an input EyeLike never reads and downloads its output)
    add("graph_sigmoid_eyelike_mul_512", 9, [("Sigmoid", "sig", ["x"], ["s"], []), ("EyeLike", "eye", ["s"], ["e"], []),
                                            ("Mul", "mul", ["e", "s"], ["y"], [])], [],
        [("x", FLOAT, [512, 512], [r.gauss(0, 1) for _ in range(512 * 512)])], [("y", FLOAT, [512, 512])])
    add("centercroppad_1x3x720x1280_to_640", 18, [("CenterCropPad", "ccp", ["x", "s"], ["y"], [("axes", [2, 3])])],
        [("s", INT64, [2], [640, 640])], [("x", FLOAT, [1, 3, 720, 1280], [r.random() for _ in range(3 * 720 * 1280)])],
        [("y", FLOAT, [1, 3, 640, 640])])
    add("gridsample5d_linear_1x16x32x32x32", 20, [("GridSample", "gs", ["x", "g"], ["y"], [("mode", "linear"), ("padding_mode", "border")])], [],
        [("x", FLOAT, [1, 16, 32, 32, 32], [r.gauss(0, 1) for _ in range(16 * 32768)]),
         ("g", FLOAT, [1, 32, 32, 32, 3], [r.uniform(-1.05, 1.05) for _ in range(32768 * 3)])], [("y", FLOAT, [1, 16, 32, 32, 32])])
    add("det_4096x3x3", 11, [("Det", "det", ["x"], ["y"], [])], [], [("x", FLOAT, [4096, 3, 3], [r.gauss(0, 1) for _ in range(4096 * 9)])],
        [("y", FLOAT, [4096])])
    rois = []
    for b in yolo_boxes(r, 128):
        rois.append(min(max(b, 0), 790) * 1.0)
    rois = [v for k in range(128) for v in [0.0] + rois[4 * k:4 * k + 4]]
    add("maxroipool_fastrcnn_128x512x7x7", 7, [("MaxRoiPool", "mrp", ["x", "rois"], ["y"], [("pooled_shape", [7, 7]), ("spatial_scale", 0.0625)])],
        [], [("x", FLOAT, [1, 512, 38, 50], [r.gauss(0, 1) for _ in range(512 * 38 * 50)]), ("rois", FLOAT, [128, 5], rois)],
        [("y", FLOAT, [128, 512, 7, 7])])
    add("col2im3d_1x216x4096_to_1x8x16x16x16", 18, [("Col2Im", "c2i", ["x", "i", "k"], ["y"], [("pads", [1, 1, 1, 1, 1, 1])])],
        [("i", INT64, [3], [16, 16, 16]), ("k", INT64, [3], [3, 3, 3])],
        [("x", FLOAT, [1, 216, 4096], [r.gauss(0, 1) for _ in range(216 * 4096)])], [("y", FLOAT, [1, 8, 16, 16, 16])])


def run(cmd):
    o = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"latency \(ms[^)]*\): median ([0-9.]+)", o.stdout)
    if o.returncode or not m:
        raise SystemExit("failed: %s\n%s%s" % (" ".join(cmd), o.stdout, o.stderr))
    fb = re.search(r"fallback nodes: (.*)", o.stdout)
    return float(m.group(1)), fb.group(1) if fb else ""


def main():
    d = tempfile.mkdtemp()
    cs = cases(d, random.Random(1))
    sides = (("blis", BUILD), ("base", BASE), ("ort", None))
    t = {(c[0], s): [] for c in cs for s, _ in sides}
    fb = {}
    warm = str(max(3, REPEAT // 10))
    print("load before: " + open("/proc/loadavg").read().strip(), flush=True)
    for _ in range(ROUNDS):
        for name, m, files in cs:
            ins = sum((["--input", "%s=%s" % kv] for kv in files.items()), [])
            for s, b in sides:
                if b:
                    cmd = [os.path.join(b, "bin", "mi-run"), "--model", m, "--device", "blis-cpu:0", "--threads", THREADS]
                else:
                    cmd = ["node", os.path.join(HERE, "ort_run.js"), "--model", m, "--threads", THREADS]
                ms, f = run(cmd + ins + ["--repeat", str(REPEAT), "--warmup", warm])
                t[(name, s)].append(ms)
                if b:
                    fb[(name, s)] = f
    print("load after: " + open("/proc/loadavg").read().strip())
    print("| case | blis-cpu (ms) | base: host step (ms) | ONNX Runtime (ms) | blis / base | blis / ORT | base's fallback |")
    print("|---|---|---|---|---|---|---|")
    for name, _, _ in cs:
        def cell(s):
            v = t[(name, s)]
            return "%.3f [%.3f-%.3f]" % (statistics.median(v), min(v), max(v))

        def ratio(a, b):
            rs = [x / y for x, y in zip(t[(name, a)], t[(name, b)])]
            return "%.2f [%.2f-%.2f]" % (statistics.median(rs), min(rs), max(rs))
        print("| %s | %s | %s | %s | %s | %s | %s |" % (name, cell("blis"), cell("base"), cell("ort"), ratio("blis", "base"),
                                                  ratio("blis", "ort"), fb[(name, "base")]))
        if fb[(name, "blis")] != "none":
            print("  (blis-cpu fallback: %s)" % fb[(name, "blis")])


main()

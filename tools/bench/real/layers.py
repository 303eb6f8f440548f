#!/usr/bin/env python3
"""layers.py - where one real model's time goes on blis-cpu and on ONNX Runtime, side by side:
mi-run --profile (per step: a device kernel with its fused nodes) and ONNX Runtime's own per-node
trace (ort_run.js --profile; its nodes after its graph optimisation: FusedConv, NCHWc convs,
...), both on the same inputs at the same thread count, as time per op type and the slowest
steps of each. Names differ after fusion on both sides, so steps are shown by op and output
shape, not matched one to one.

usage: tools/bench/real/layers.py MODEL|all [--build B] [--threads N] [--repeat N] [--top N]
                                  [--avx2] [--glue-limit F] [--no-ort]
MODEL is a name from run.py's list (e.g. mlsd-tiny-320) or a path to an .onnx file with no
input arguments needed; `all` profiles every fetched model and prints one markdown row each:
its slowest elementwise or data-movement step (every op but convolutions, GEMMs, recurrent
layers and control flow; pooling counts) and that step's share of the summed steps, and the op
type of such steps with the most time over all its steps. Steps inside an If branch that ran as
a nested session count on their own, named <If>/<branch>/<step>. The exit status is 1 when
a model has such a step over --glue-limit (default 5%). Per-step times are medians over the timed runs on both sides (wall
clock around each step); on a loaded machine compare shares more than milliseconds.
"""
import argparse
import collections
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (the model list, the input generator's arguments, sh())


def ort_steps(trace, warmup):
    """Per-node medians over the timed runs of an ONNX Runtime trace: [(ms, op, name, out)]."""
    ev = json.load(open(trace))
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("name") == "model_run")[warmup:]
    per = collections.defaultdict(list)
    info = {}
    for e in ev:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        if not any(t0 <= e["ts"] <= t1 for t0, t1 in runs):
            continue
        name = e["name"][: -len("_kernel_time")]
        per[name].append(e["dur"] / 1e3)
        outs = e["args"].get("output_type_shape", [])
        shape = "x".join(str(d) for d in next(iter(outs[0].values()))) if outs else ""
        info[name] = (e["args"].get("op_name", "?"), shape)
    return [(statistics.median(v), info[n][0], n, info[n][1]) for n, v in per.items()]


def by_op(rows):
    acc = collections.Counter()
    for ms, op, _, _ in rows:
        acc[op] += ms
    return acc


# Ops whose time is arithmetic (or a whole network, for control flow): every other op is
# elementwise or data movement ("glue"), which the per-layer criterion caps at --glue-limit of
# the model's time per step.
COMPUTE = {"Conv", "ConvTranspose", "Gemm", "MatMul", "ConvInteger", "MatMulInteger", "QLinearConv",
           "QLinearMatMul", "LSTM", "GRU", "RNN", "If", "Loop", "Scan"}


def step_op(fused):
    """The op type a blis-cpu step counts under: its first arithmetic op when it has one (a gate Mul
    folded into the weights of the conv after it is that conv's step: its kernel does the conv's
    work and no pass of the Mul's), else its first node's."""
    ops = fused.split("+")
    return next((o for o in ops if o in COMPUTE), ops[0])


def profile(path, gen, a, tmp):
    """(blis-cpu steps [(ms, first op, name, output shape, fused ops)], ONNX Runtime nodes) of
    one model on the same inputs; with a.no_ort, ONNX Runtime's list is empty."""
    ins = run.sh(["node", os.path.join(run.ORT, "gen_inputs.js"), path, os.path.join(tmp, "in")] + gen).split()
    feeds = sum((["--input", i] for i in ins), [])
    common = ["--threads", str(a.threads), "--repeat", str(a.repeat), "--warmup", str(a.warmup)]
    env = dict(os.environ)
    env.pop("MI_BLIS_MAX_SIMD", None)
    env_ort = env
    if a.avx2:
        # as run.py's AVX2 column: ONNX Runtime under cpuid_cap, so its trace is that of its AVX2
        # kernels too
        env["MI_BLIS_MAX_SIMD"] = "avx2"
        cap = run.cpuid_cap(a.build)
        env, env_ort = run.add_env(env, cap["mi-run"]), run.add_env(env, cap["ort"])
    mi = json.loads(run.sh([os.path.join(a.build, "bin", "mi-run"), "--model", path, "--device",
                            "blis-cpu:0", "--profile", "--json"] + common + feeds, env))
    ours = [(r["ms"], step_op(r["op"]), r["name"], r["shapes"].split(" -> ")[-1] if " -> " in r["shapes"] else "",
             r["op"]) for r in mi["profile"]["layers"]]
    if a.no_ort:
        return ours, []
    trace = os.path.join(tmp, "ort.json")
    run.sh(["node", os.path.join(run.ORT, "ort_run.js"), "--model", path, "--profile", trace] + common + feeds,
           env_ort)
    return ours, ort_steps(trace, a.warmup)


def worst_glue(ours):
    """The slowest elementwise or data-movement step and its share of the summed steps."""
    tot = sum(r[0] for r in ours)
    glue = [r for r in ours if r[1] not in COMPUTE]
    if not glue or tot <= 0:
        return None, 0.0
    w = max(glue, key=lambda r: r[0])
    return w, w[0] / tot


def worst_glue_type(ours):
    """The elementwise or data-movement op type with the most time over all its steps, its share."""
    tot = sum(r[0] for r in ours)
    acc = by_op([r[:4] for r in ours if r[1] not in COMPUTE])
    if not acc or tot <= 0:
        return "-", 0.0
    op = max(acc, key=lambda k: acc[k])
    return f"{op} x{sum(1 for r in ours if r[1] == op)}", acc[op] / tot


def report(path, a, ours, ort):
    o_tot, r_tot = sum(r[0] for r in ours), sum(r[0] for r in ort)
    print(f"{os.path.basename(path)}, {a.threads} thread(s), {a.repeat} runs each, load "
          f"{run.load()}: summed steps blis-cpu {o_tot:.3f} ms ({len(ours)} steps), "
          f"ONNX Runtime {r_tot:.3f} ms ({len(ort)} nodes), ratio {o_tot / max(r_tot, 1e-9):.2f}")
    print("\ntime by op type (blis-cpu: a fused step's arithmetic op, else its first node; ORT: its node's op)")
    mo, ro = by_op([r[:4] for r in ours]), by_op(ort)
    print(f"{'op':<24}{'blis ms':>10}{'share':>8}{'ORT ms':>10}{'share':>8}")
    for op in sorted(set(mo) | set(ro), key=lambda k: -(mo[k] + ro[k])):
        print(f"{op:<24}{mo[op]:>10.3f}{mo[op] / max(o_tot, 1e-9):>8.1%}{ro[op]:>10.3f}"
              f"{ro[op] / max(r_tot, 1e-9):>8.1%}")
    print(f"\nslowest {a.top} steps of each")
    print(f"{'blis-cpu op':<28}{'output':<18}{'ms':>8}   {'ORT op':<20}{'output':<22}{'ms':>8}")
    o_top, r_top = sorted(ours, key=lambda r: -r[0])[: a.top], sorted(ort, key=lambda r: -r[0])[: a.top]
    for i in range(max(len(o_top), len(r_top))):
        left = f"{o_top[i][4][:27]:<28}{o_top[i][3][:17]:<18}{o_top[i][0]:>8.3f}" if i < len(o_top) else " " * 54
        right = f"{r_top[i][1][:19]:<20}{r_top[i][3][:21]:<22}{r_top[i][0]:>8.3f}" if i < len(r_top) else ""
        print(f"{left}   {right}")
    w, share = worst_glue(ours)
    if w:
        print(f"\nslowest elementwise/data-movement step: {w[4]} '{w[2]}' {w[0]:.3f} ms, {share:.1%} "
              f"({'over' if share > a.glue_limit else 'within'} the {a.glue_limit:.0%} limit)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a name of run.py's list, an .onnx path, or 'all' (every fetched model)")
    ap.add_argument("--build", default=os.environ.get("MI_BUILD", os.path.join(run.SRC, "build")))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--avx2", action="store_true",
                    help="cap blis-cpu at AVX2 (MI_BLIS_MAX_SIMD) and run ONNX Runtime under cpuid_cap "
                         "(ONNX Runtime's AVX2 kernels; run.py)")
    ap.add_argument("--glue-limit", type=float, default=0.05,
                    help="largest share of one elementwise/data-movement step (default 0.05)")
    ap.add_argument("--no-ort", action="store_true", help="profile blis-cpu only (implied by 'all')")
    a = ap.parse_args()
    a.no_ort = a.no_ort or a.model == "all"  # the summary reads blis-cpu's steps alone
    models_dir = os.environ.get("MI_MODEL_DIR", os.path.expanduser("~/.cache/metainfer/models"))
    known = {n: (f, g) for n, f, g in run.MODELS}
    if a.model == "all":
        todo = [(n, p, g) for n, p, g in run.fetched(None, models_dir)]
    elif a.model in known:
        todo = [(a.model, os.path.join(models_dir, known[a.model][0]), known[a.model][1])]
    elif a.model.endswith(".onnx"):
        todo = [(os.path.basename(a.model), a.model, [])]
    else:
        sys.exit(f"layers.py: '{a.model}' is neither a model of run.py's list nor an .onnx file")
    for _, path, _ in todo:
        if not os.path.exists(path):
            sys.exit(f"layers.py: {path} not found (tools/models/fetch.sh)")
    summary, over = [], 0
    for name, path, gen in todo:
        tmp = tempfile.mkdtemp(prefix="mi-layers-")
        try:
            ours, ort = profile(path, gen, a, tmp)
        except RuntimeError as e:
            sys.exit(f"layers.py: {name}: {e}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        w, share = worst_glue(ours)
        over += share > a.glue_limit
        if len(todo) == 1:
            report(path, a, ours, ort)
        else:
            summary.append((name, sum(r[0] for r in ours), len(ours), w, share, worst_glue_type(ours), run.load()))
    if summary:
        print("| model | threads | summed steps ms | steps | slowest elementwise/data-movement step | ms | share "
              "| that kind's steps together | load |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name, tot, n, w, share, (op, op_share), ld in summary:
            step = f"{w[4]} `{w[2]}`" if w else "-"
            mark = " **over**" if share > a.glue_limit else ""
            print(f"| {name} | {a.threads} | {tot:.3f} | {n} | {step} | {w[0] if w else 0:.3f} | {share:.1%}{mark} "
                  f"| {op} {op_share:.1%} | {ld} |")
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()

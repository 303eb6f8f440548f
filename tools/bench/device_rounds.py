#!/usr/bin/env python3
"""device_rounds.py - two builds' mi-run on the device plugins in alternating rounds: the
"before" build (--base) and the "after" build, each model on each device once per round, the
order of the two builds swapped every round so the machine's drift hits both alike.

Each measurement is `mi-run --model M --device D --repeat N --json` (its medians of N runs after
2 warm-up runs: host wall clock, the process's CPU time, and the device's kernel time where the
plugin has a timer). A ratio is after / before of the same round; the table gives per model and
device the medians over the rounds and the median ratio with its range [min-max].
Before the rounds every model runs once per build and device with --check. The 1-minute load
average is printed with each round.

usage: tools/bench/device_rounds.py AFTER_BUILD --base BEFORE_BUILD [--rounds 4] [--repeat 20]
         [--devices opencl:0,vulkan:0] [--model NAME[:INPUT=D0,D1..][@REPEAT]]...
Models are files in MI_MODEL_DIR (default ~/.cache/metainfer/models), NAME without .onnx; a
model whose input has dynamic dims names its shape; @REPEAT overrides --repeat for it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def load1():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return float("nan")


def parse_model(spec, repeat):
    rep = repeat
    if "@" in spec:
        spec, r = spec.rsplit("@", 1)
        rep = int(r)
    name, _, shape = spec.partition(":")
    return name, shape, rep


def mi_run(build, model_dir, name, shape, device, repeat, check):
    cmd = [os.path.join(build, "bin", "mi-run"), "--model", os.path.join(model_dir, name + ".onnx"),
           "--device", device, "--json"]
    if shape:
        cmd += ["--shape", shape]
    cmd += ["--check"] if check else ["--repeat", str(repeat)]
    env = dict(os.environ, MI_PLUGIN_PATH=os.path.join(build, "plugins"))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-400:]))
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--base", required=True)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--devices", default="opencl:0,vulkan:0")
    ap.add_argument("--model", action="append", required=True)
    a = ap.parse_args()
    model_dir = os.environ.get("MI_MODEL_DIR", os.path.expanduser("~/.cache/metainfer/models"))
    builds = [("before", a.base), ("after", a.build)]
    models = [parse_model(m, a.repeat) for m in a.model]
    devices = a.devices.split(",")
    for name, shape, _ in models:
        for dev in devices:
            for tag, b in builds:
                j = mi_run(b, model_dir, name, shape, dev, 1, True)
                print("check %s %s %s: max error %s" % (name, dev, tag, j.get("check_max_error")),
                      flush=True)
    res = {}  # (name, dev, tag) -> list of (wall ms, device ms or None) per round
    for r in range(a.rounds):
        order = builds if r % 2 == 0 else builds[::-1]
        print("round %d: load %.2f, order %s" % (r + 1, load1(), "/".join(t for t, _ in order)),
              flush=True)
        for name, shape, rep in models:
            for dev in devices:
                for tag, b in order:
                    j = mi_run(b, model_dir, name, shape, dev, rep, False)
                    wall = j["latency_ms"]["median"]
                    dt = j.get("device_time_ms", {}).get("median") if isinstance(
                        j.get("device_time_ms"), dict) else None
                    res.setdefault((name, dev, tag), []).append((wall, dt, j["cpu_ms"]["median"]))
        print("round %d done: load %.2f" % (r + 1, load1()), flush=True)
    print("\n| model | device | before ms (kernels) | after ms (kernels) | after/before wall, median [range] | after/before CPU time |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, _, rep in models:
        for dev in devices:
            b = res[(name, dev, "before")]
            f = res[(name, dev, "after")]
            ratios = [fa[0] / be[0] for be, fa in zip(b, f)]
            cpu = [fa[2] / be[2] for be, fa in zip(b, f)]

            def cell(rows):
                w = statistics.median(x[0] for x in rows)
                d = [x[1] for x in rows if x[1] is not None]
                return "%.3f (%.3f)" % (w, statistics.median(d)) if d else "%.3f" % w

            print("| %s | %s | %s | %s | %.3f [%.3f-%.3f] | %.3f [%.3f-%.3f] |" %
                  (name, dev, cell(b), cell(f), statistics.median(ratios), min(ratios), max(ratios),
                   statistics.median(cpu), min(cpu), max(cpu)))
    print("\nper round: after/before wall; CPU time; kernel time; host share of the wall time "
          "(1 - kernels/wall) before -> after:")
    for name, _, _ in models:
        for dev in devices:
            b = res[(name, dev, "before")]
            f = res[(name, dev, "after")]
            ker = " ".join("%.3f" % (fa[1] / be[1]) if fa[1] and be[1] else "-" for be, fa in zip(b, f))
            host = " ".join("%.2f->%.2f" % (1 - be[1] / be[0], 1 - fa[1] / fa[0]) if fa[1] and be[1] else "-"
                            for be, fa in zip(b, f))
            print("  %s %s: wall %s; cpu %s; kernels %s; host share %s" %
                  (name, dev, " ".join("%.3f" % (fa[0] / be[0]) for be, fa in zip(b, f)),
                   " ".join("%.3f" % (fa[2] / be[2]) for be, fa in zip(b, f)), ker, host))
    return 0


if __name__ == "__main__":
    sys.exit(main())

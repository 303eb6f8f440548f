#!/usr/bin/env python3
"""memory.py - peak resident memory of one mi-run process (blis-cpu at its defaults: load,
prepare, one warm-up, one run) against ONNX Runtime's default CPU session (ort_run.js: node's
whole process) on every real model tools/models/fetch.sh fetched, from /usr/bin/time -v's
"Maximum resident set size". With --base, the old build's mi-run is measured the same way and
its outputs are compared with the new build's byte for byte (a memory plan must not change a
single output bit). mi-run's own report of its tensor memory (planned, one buffer per tensor,
most live at one step) is printed beside.

usage: tools/bench/real/memory.py [BUILD_DIR] [--base OLD_BUILD_DIR] [--only REGEX] [--threads N]
Needs tools/ort/setup.sh, a build, and the models (tools/models/fetch.sh; MI_MODEL_DIR).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import ORT, fetched, load, memory_bench_args, same_bytes, sh  # noqa: E402


def peak_rss_mib(cmd):
    """Runs cmd under /usr/bin/time -v; returns (its stdout, peak RSS in MiB)."""
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1])
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr)
    return r.stdout, int(m.group(1)) / 1024.0


def mirun(binary, model, ins, threads, outdir):
    cmd = [binary, "--model", model, "--device", "blis-cpu:0", "--threads", str(threads), "--repeat", "1",
           "--warmup", "1", "--json", "--timeout", "600", "--output-dir", outdir]
    for i in ins:
        cmd += ["--input", i]
    out, mib = peak_rss_mib(cmd)
    return json.loads(out), mib


def main():
    a, models_dir = memory_bench_args(__doc__)
    tmp = tempfile.mkdtemp(prefix="mi-bench-mem-")
    hdr = "| model | ORT MiB | mi-run MiB | mi/ORT |"
    if a.base:
        hdr += " before MiB | after/before | outputs |"
    print(hdr + " tensors planned / one per tensor / live peak MiB | load |")
    for name, path, gen in fetched(a.only, models_dir):
        d = os.path.join(tmp, name)
        try:
            ins = sh(["node", os.path.join(ORT, "gen_inputs.js"), path, os.path.join(d, "in")] + gen).split()
            ort_cmd = ["node", os.path.join(ORT, "ort_run.js"), "--model", path, "--threads", str(a.threads),
                       "--repeat", "1", "--warmup", "1", "--json"] + sum((["--input", i] for i in ins), [])
            _, ort_mib = peak_rss_mib(ort_cmd)
            j, mi_mib = mirun(os.path.join(a.build, "bin", "mi-run"), path, ins, a.threads, os.path.join(d, "new"))
            row = f"| {name} | {ort_mib:.0f} | {mi_mib:.0f} | {mi_mib / ort_mib:.2f} |"
            if a.base:
                _, old_mib = mirun(os.path.join(a.base, "bin", "mi-run"), path, ins, a.threads, os.path.join(d, "old"))
                same = same_bytes(os.path.join(d, "old"), os.path.join(d, "new"))
                row += f" {old_mib:.0f} | {mi_mib / old_mib:.2f} | {'identical' if same else 'DIFFER'} |"
        except RuntimeError as e:
            print(f"{name}: {e}; skipped", flush=True)
            continue
        tm = j.get("tensor_memory")
        mib = lambda b: b / 1048576.0  # noqa: E731
        row += (f" {mib(tm['planned_bytes']):.1f} / {mib(tm['unplanned_bytes']):.1f} / {mib(tm['live_peak_bytes']):.1f} |"
                if tm else " - |")
        print(row + f" {load()} |", flush=True)
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()

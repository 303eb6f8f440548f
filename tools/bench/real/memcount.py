#!/usr/bin/env python3
"""memcount.py - blis-cpu's memory counter against what a run really makes resident, on every real
model tools/models/fetch.sh fetched. "counted": the `peak_alloc_bytes` counter as the profile reads
it (mi-host profile's peak_memory_bytes: one warm-up, one run; the reading before the session is
created dropped). "resident": mi-run's own peak RSS increase from just before the session is created
to the end of its runs (mi-run --json "rss": VmHWM after the runs minus VmRSS before create, the peak
reset there), which also holds the host's copies and the session's own tables. With --base, the old
build's plugin is measured the same way (the counter through its own mi-host, the RSS through this
build's mi-run loading the old plugin folder), and the two runs' outputs are compared byte for byte.

usage: tools/bench/real/memcount.py [BUILD_DIR] [--base OLD_BUILD_DIR] [--only REGEX] [--threads N]
Needs tools/ort/setup.sh (its input generator), a build, and the models (MI_MODEL_DIR).
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import ORT, fetched, load, memory_bench_args, same_bytes, sh  # noqa: E402

MIB = 1024.0 * 1024.0


def counted(build, model, ins, threads, db):
    cmd = [os.path.join(build, "bin", "mi-host"), "--json", "profile", "--model", model, "--device", "blis-cpu:0",
           "--db", db, "--repeat", "1", "--warmup", "1", "--min-warmup-ms", "0", "--knob", "threads=%d" % threads]
    for i in ins:
        cmd += ["--input", i]
    j = json.loads(sh(cmd))
    j = j[0] if isinstance(j, list) else j
    return j["peak_memory_bytes"] / MIB


def resident(build, plugins, model, ins, threads, outdir):
    cmd = [os.path.join(build, "bin", "mi-run"), "--plugins", plugins, "--model", model, "--device", "blis-cpu:0",
           "--threads", str(threads), "--repeat", "1", "--warmup", "1", "--json", "--timeout", "600",
           "--output-dir", outdir]
    for i in ins:
        cmd += ["--input", i]
    r = json.loads(sh(cmd))["rss"]
    return (r["peak_bytes"] - r["before_create_bytes"]) / MIB


def main():
    a, models_dir = memory_bench_args(__doc__)
    tmp = tempfile.mkdtemp(prefix="mi-bench-memcount-")
    db = os.path.join(tmp, "history.db")
    hdr = "| model |"
    if a.base:
        hdr += " before: counted MiB | resident MiB |"
    print(hdr + " counted MiB | resident MiB | counted/resident |" + (" outputs |" if a.base else "") + " load |",
          flush=True)
    for name, path, gen in fetched(a.only, models_dir):
        d = os.path.join(tmp, name)
        try:
            ins = sh(["node", os.path.join(ORT, "gen_inputs.js"), path, os.path.join(d, "in")] + gen).split()
            row = f"| {name} |"
            if a.base:
                c0 = counted(a.base, path, ins, a.threads, db)
                r0 = resident(a.build, os.path.join(a.base, "plugins"), path, ins, a.threads, os.path.join(d, "old"))
                row += f" {c0:.0f} | {r0:.0f} |"
            c1 = counted(a.build, path, ins, a.threads, db)
            r1 = resident(a.build, os.path.join(a.build, "plugins"), path, ins, a.threads, os.path.join(d, "new"))
            row += f" {c1:.0f} | {r1:.0f} | {c1 / r1 if r1 > 0 else 0:.2f} |"
            if a.base:
                row += " identical |" if same_bytes(os.path.join(d, "old"), os.path.join(d, "new")) else " DIFFER |"
            row += f" {load()} |"
            print(row, flush=True)
        except (RuntimeError, KeyError) as e:
            print(f"{name}: {e}; skipped", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""decode_loop.py - per-token time of a merged decoder's decoding loop, two builds and ONNX
Runtime interleaved: each round runs decode_loop (tools/bench/real/decode_loop.c) of the base
build, then of this build, then tools/ort/decode_loop.js, each over the same cache lengths in one
process (one session), and the table gives the median over rounds of each token's time.

usage: decode_loop.py --bin BUILD/bin/decode_loop --base-bin OTHER/decode_loop
                      [--base-plugins DIR] [--plugins DIR] [--model M.onnx] [--calib DIR]
                      [--from 8] [--tokens 32] [--threads 1] [--rounds 3] [--no-ort]

The base binary may be this file's decode_loop.c compiled against the other build's library: a
library whose session refuses the next length makes it prepare a session per token, and that
time is the token's.
"""
import argparse
import os
import statistics
import subprocess
import time

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HOME = os.path.expanduser("~")


def run_csv(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [l.split(",") for l in out.strip().splitlines()]
    head = rows[0]
    return [dict(zip(head, r)) for r in rows[1:]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--base-bin", required=True)
    ap.add_argument("--plugins")
    ap.add_argument("--base-plugins")
    ap.add_argument("--model", default=os.path.join(HOME, ".cache/metainfer/models/moonshine_tiny_dec.onnx"))
    ap.add_argument("--calib", default=os.path.join(HOME, ".cache/metainfer/calib/moonshine_tiny_dec"))
    ap.add_argument("--from", dest="start", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-ort", action="store_true")
    a = ap.parse_args()
    plugins = a.plugins or os.path.join(os.path.dirname(os.path.dirname(a.bin)), "plugins")
    base_plugins = a.base_plugins or os.path.join(os.path.dirname(os.path.dirname(a.base_bin)), "plugins")
    common = ["--model", a.model, "--calib", a.calib, "--from", str(a.start), "--tokens", str(a.tokens),
              "--threads", str(a.threads)]
    sides = [("before", [a.base_bin, "--plugins", base_plugins] + common),
             ("after", [a.bin, "--plugins", plugins] + common)]
    if not a.no_ort:
        sides.append(("ort", ["node", os.path.join(SRC, "tools", "ort", "decode_loop.js")] + common))
    times = {name: {} for name, _ in sides}
    steady = {name: [] for name, _ in sides}
    print("start %s UTC, load %s" % (time.strftime("%H:%M:%S", time.gmtime()), open("/proc/loadavg").read().split()[:3]))
    for r in range(a.rounds):
        for name, cmd in sides:
            rows = run_csv(cmd + ["--warm", "5"])
            for row in rows:
                times[name].setdefault(int(row["cache_len"]), []).append(float(row["ms"]))
                steady[name].append(float(row["warm_median_ms"]))
    print("end %s UTC, load %s" % (time.strftime("%H:%M:%S", time.gmtime()), open("/proc/loadavg").read().split()[:3]))
    names = [n for n, _ in sides]
    print("| cache length | " + " | ".join("%s ms" % n for n in names) + " |")
    print("| ---: | " + " | ".join("---:" for _ in names) + " |")
    lens = sorted(times[names[0]])
    show = [l for l in lens if l in (lens[0], lens[1], lens[2]) or l % 8 == 0 or l == lens[-1]]
    for l in show:
        print("| %d | " % l + " | ".join("%.2f" % statistics.median(times[n][l]) for n in names) + " |")
    # The first token of a loop prepares the session on every side: the loop's cost per token
    # after it is what changes.
    print("| mean of tokens 2..%d | " % len(lens) +
          " | ".join("%.2f" % statistics.mean(statistics.median(times[n][l]) for l in lens[1:]) for n in names) + " |")
    print("| steady run (median of 5 repeats per length, median over lengths) | " +
          " | ".join("%.2f" % statistics.median(steady[n]) for n in names) + " |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""run.py - blis-cpu at its defaults (mi-run, no config) against ONNX Runtime's default CPU
session on every real model tools/models/fetch.sh fetched, at its natural input size.

For each thread count, each round runs every model on blis-cpu and on ONNX Runtime and, where
the CPU has AVX-512, on both capped at AVX2: blis-cpu with MI_BLIS_MAX_SIMD=avx2, and both
ONNX Runtime under the cpuid_cap preload library (tools/bench/real/cpuid_cap.c: cpuid reports no
AVX-512, AVX-VNNI or AMX, so its MLAS picks its AVX2 kernels), as on an AVX2-only CPU.
The order rotates from round to round, so the machine's drift hits all of them alike. A ratio
is blis-cpu's median over ONNX Runtime's median of the same round (the AVX2 column over ONNX
Runtime capped the same way); the table gives the
median ratio over the rounds and its range [min-max]. Each measurement records two clocks: wall
time per run and the process's CPU time per run (all threads; mi-run's and ort_run.js's cpu_ms).
On a loaded machine the 1-thread CPU-time ratio is the one to read (the scheduler's delays are
not in it); at 2 threads only wall time says whether the second core helped. The 1-minute load
average is recorded with every round. Before timing, every model's blis-cpu outputs are compared
with ONNX Runtime's (relative L2, target <= 1e-4).

usage: tools/bench/real/run.py [BUILD_DIR] [--base OLD_BUILD_DIR] [--rounds N] [--threads 1,2]
                               [--only REGEX] [--no-avx2] [--avx2-only] [--avx2-ort capped|uncapped]
                               [--markdown] [--clock wall|cpu|both]
                               [--quant qdq,dynamic,qop] [--model FILE.onnx]... [--gap MS]
                               [--fix-values NAME,...]
--base times a second build (bin/mi-run and its plugins) in the same rounds: the "before" column,
and with the AVX2-capped column a "before AVX2" column (the old build capped the same way).
--avx2-only times blis-cpu capped at AVX2 only (the new build and --base's), not at its defaults.
--avx2-ort uncapped keeps ONNX Runtime at its own (AVX-512) kernels for the AVX2 column, as this
script did before cpuid_cap (a plugin-only cap; it does not say how blis-cpu fares on an AVX2
CPU). The capped default reaches ONNX Runtime's cpuid instructions through CPUID faulting where
the CPU has it (Linux, /proc/cpuinfo flag cpuid_fault; both processes run under the library), or
else through a copy of ONNX Runtime's library with its cpuid instructions patched to traps
(tools/bench/real/cpuid_patch.py, made once into BUILD_DIR/ort-avx2 and loaded through
LD_LIBRARY_PATH). The script checks either way with cpuid_probe under the same arrangement, and
that the first capped ONNX Runtime run answered cpuid instructions, and refuses the column where
cpuid is not capped.
--quant adds each model's quantized forms (tools/mi-quantize, calibrated on the benchmark's own
input) as models of their own, "NAME:MODE", timed in the same rounds on blis-cpu and on ONNX
Runtime, and prints blis-cpu quantized / blis-cpu FP32 per round (median, range) at the end, for
the --base build too (its quantized form over its FP32).
--gap MS leaves MS idle milliseconds before every run on both sides (mi-run --gap, ort_run.js
--gap), as a streaming caller does (a VAD window every 32 ms, an audio hop every 80 ms): both
runtimes' worker threads may go to sleep in the gap and wake for the next run. The timed runs
per measurement are then capped so that their idle time is about a second.
--fix-values NAME,... gives the new build's mi-run those inputs as fixed values (mi-run --value
NAME=V, from the `--value NAME=V` of the model's input arguments) instead of as files: the input
becomes a constant and an If it decides (Silero's sr, Moonshine's use_cache_branch) is replaced by
its branch before the run. The --base build and ONNX Runtime keep the files and run the If.
Needs tools/ort/setup.sh, a build, and the models (tools/models/fetch.sh; MI_MODEL_DIR).
"""
import argparse
import filecmp
import glob
import hashlib
import json
import math
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
ORT = os.path.join(SRC, "tools", "ort")

# name, file in the cache, gen_inputs.js arguments (natural input sizes: one OCR line / page
# crop, one 80 ms audio hop, one 32 ms VAD window at 16 kHz).
MODELS = [
    ("ppocr-v2-cls", "ppocr_v2_cls.onnx", ["--image", "x=1,3,48,192"]),
    ("ppocr-v4-det", "ppocr_v4_det.onnx", ["--image", "x=1,3,320,320"]),
    ("ppocr-v4-rec", "ppocr_v4_rec.onnx", ["--image", "x=1,3,48,320"]),
    ("oww-melspec", "oww_melspectrogram.onnx", ["input=1,1280"]),
    ("oww-embedding", "oww_embedding.onnx", ["input_1=1,76,32,1"]),
    ("oww-hello-deepa", "oww_hello_deepa.onnx", []),
    ("silero-vad-v4", "silero_vad_v4.onnx", ["input=1,512", "h=2,1,64", "c=2,1,64",
                                             "--value", "sr=16000"]),
    ("silero-vad-v5", "silero_vad_v5.onnx", ["input=1,512", "state=2,1,128",
                                             "--value", "sr=16000"]),
    ("silero-vad-v6", "silero_vad_v6.onnx", ["input=1,512", "state=2,1,128",
                                             "--value", "sr=16000"]),
    # The v6 weights exported without the LSTM op (Gemm/Split/Sigmoid/Tanh cells, opset 18).
    ("silero-vad-v6-ifless", "silero_vad_v6_ifless.onnx", ["input=1,512", "state=2,1,128",
                                                           "--value", "sr=16000"]),
    # tf2onnx detectors, fixed channels-last inputs. M-LSD's `scores` keeps only local maxima
    # (x == MaxPool(x)), so its rel L2 counts float ties that flip (tools/ort/compare.sh --peaks).
    ("blazeface-front", "blazeface_front.onnx", ["--image"]),
    ("blazeface-back", "blazeface_back.onnx", ["--image"]),
    ("mlsd-tiny-320", "mlsd_tiny_320.onnx", ["--image"]),
    # Quantized by its publisher (ONNX Runtime's dynamic quantization), fixed 1x3x1024x1024. Each
    # of its 119 DynamicQuantizeLinear nodes turns a float rounding difference upstream (Resize's
    # interpolation order) into a one-code difference, so its rel L2 vs ORT is that of quantization
    # noise (about 4e-2 at the outputs), not float rounding; docs/benchmarks.md.
    ("isnet-quint8", "isnet_quint8_1024.onnx", ["--image"]),
    # The same network exported in half precision, loaded in float32 (docs/onnx.md): its rel L2
    # vs ORT is ONNX Runtime's rounding of its values to FLOAT16 between ops (about 4e-4).
    ("isnet-fp16", "isnet_fp16_1024.onnx", ["--image"]),
    # Moonshine tiny's speech encoder (a 6-layer transformer) on 5 s of 16 kHz audio (207
    # frames), quantized by its publisher as IS-Net is: its rel L2 vs ORT is quantization noise.
    ("moonshine-tiny-enc", "moonshine_tiny_enc.onnx", ["input_values=1,80000"]),
    # Its merged decoder at one decoding step on the cached branch: the 9th token (8 cached
    # positions per layer) against the 207 frames of 5 s, as each step after the first runs.
    ("moonshine-tiny-dec", "moonshine_tiny_dec.onnx",
     ["input_ids=1,1", "encoder_hidden_states=1,207,288"] +
     ["past_key_values.%d.%s.%s=1,8,%d,36" % (l, part, kv, 8 if part == "decoder" else 207)
      for l in range(6) for part in ("decoder", "encoder") for kv in ("key", "value")] +
     ["--value", "use_cache_branch=1", "--value", "input_ids=100"]),
    # Not fetched: no package ships a transformer text encoder, so this BERT-family encoder is
    # generated (tools/models/bert_like.py MI_MODEL_DIR/bert_like_minilm.onnx): BertModel as
    # torch.onnx writes it at opset 14, all-MiniLM-L6-v2's shapes, seeded random weights. One
    # 128-token chunk: token ids within the vocabulary, no padding, one segment.
    ("bert-like-minilm", "bert_like_minilm.onnx",
     ["input_ids=1,128", "attention_mask=1,128", "token_type_ids=1,128", "--int", "input_ids=0,30521",
      "--value", "attention_mask=1", "--value", "token_type_ids=0"]),
]


def load_npy(path):
    b = open(path, "rb").read()
    hl = struct.unpack("<H", b[8:10])[0] if b[6] == 1 else struct.unpack("<I", b[8:12])[0]
    st = 10 if b[6] == 1 else 12
    h = b[st:st + hl].decode("latin1")
    body = b[st + hl:]
    for key, fmt, size in (("<f4", "f", 4), ("<f2", "e", 2), ("<i8", "q", 8), ("<i4", "i", 4), ("|b1", "B", 1)):
        if key in h:
            return struct.unpack("<%d%s" % (len(body) // size, fmt), body)
    raise SystemExit(f"{path}: dtype not compared")


def rel_l2(a, b):
    num = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    den = math.sqrt(sum(x * x for x in a)) or 1.0
    return num / den if len(a) == len(b) else float("inf")


def sized(specs):
    """--size MODEL:INPUT=DIMS[;INPUT=DIMS...]: rows for a fetched model at other input sizes,
    named MODEL@DIMS, its input-generator arguments with those inputs' dims replaced."""
    rows = []
    for spec in specs:
        name, _, dims = spec.partition(":")
        base = [m for m in MODELS if m[0] == name]
        if not base or not dims:
            sys.exit(f"run.py: --size {spec}: want MODEL:INPUT=DIMS with MODEL one of "
                     f"{', '.join(m[0] for m in MODELS)}")
        gen = list(base[0][2])
        for d in dims.split(";"):
            inp = d.split("=", 1)[0]
            hit = [i for i, g in enumerate(gen) if g.split("=", 1)[0] == inp and "=" in g]
            if not hit or not re.fullmatch(r"[^=]+=\d+(,\d+)*", d):
                sys.exit(f"run.py: --size {spec}: {name} has no input {inp!r} of given dims, or "
                         f"{d!r} is not INPUT=D,D,...")
            gen[hit[0]] = d
        rows.append((f"{name}@{dims.replace(';', '+')}", base[0][1], gen))
    return rows


def fetched(only, models_dir, extra=(), sizes=()):
    """(name, path, input-generator arguments) of each fetched model that
    matches `only`, saying which are skipped and why; then each --size row and
    each extra model file (--model: named by its file, inputs of its declared
    shapes)."""
    for name, file, gen in MODELS + sized(sizes) + [
            (os.path.splitext(os.path.basename(p))[0], os.path.abspath(p), []) for p in extra]:
        if only and not re.search(only, name):
            continue
        path = file if os.path.isabs(file) else os.path.join(models_dir, file)
        if not os.path.exists(path):
            how = ("tools/models/bert_like.py DIR/" + file if file.startswith("bert_like")
                   else "tools/models/fetch.sh")
            print(f"{name}: {file} not in {models_dir} ({how}); skipped", flush=True)
            continue
        yield name, path, gen


def sh(cmd, env=None, stderr=False):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{os.path.basename(cmd[0]) if cmd[0] != 'node' else cmd[1]}: "
                           f"{(r.stderr.strip().splitlines() or ['exit %d' % r.returncode])[-1]}")
    return (r.stdout, r.stderr) if stderr else r.stdout


class Runner:
    def __init__(self, build, threads, warmup=2, gap=0.0):
        self.warmup = str(warmup)
        self.gap = ["--gap", f"{gap:g}"] if gap > 0 else []
        self.mirun = os.path.join(build, "bin", "mi-run")
        self.threads = threads
        self.base = None
        self.cap = None  # the cpuid_cap arrangement (cpuid_cap()): the AVX2 runs are made under it
        self.cap_checked = False  # the first capped ONNX Runtime run counted its capped cpuid
        # capped runs by the kernel's record of AVX-512 use in their timed runs (mi-run's and
        # ort_run.js's avx512_in_timed_runs): True / False / None (no record) -> [model who ...]
        self.avx512 = {True: [], False: [], None: []}
        self.fix = set()  # --fix-values: input names the new build gets as --value
        self.values = {}  # model path -> {input name: value} from its `--value NAME=V` arguments

    def env(self, simd, capped=None):
        """The environment of one run; capped: "ort" or "mi-run", the side of a capped run."""
        e = dict(os.environ)
        e.pop("MI_BLIS_MAX_SIMD", None)
        e.pop("MI_CPUID_CAP_VERBOSE", None)
        if simd != "default":
            e["MI_BLIS_MAX_SIMD"] = simd
        if capped and self.cap:
            return add_env(e, self.cap[capped])
        # blis-cpu's AVX2 column beside an uncapped ONNX Runtime: glibc as on an AVX2-only CPU
        return add_env(e, {"GLIBC_TUNABLES": GLIBC_AVX2}) if capped == "mi-run" else e

    def audit(self, j, model, who):
        """Files a capped run under the kernel's record of AVX-512 use in its timed runs."""
        self.avx512[j.get("avx512_in_timed_runs")].append(f"{os.path.basename(model)} {who}")

    def blis(self, model, inputs, threads, repeat, simd, outdir=None):
        run, who = self.mirun, simd
        if simd.startswith("base"):  # the --base build, uncapped or capped at AVX2
            run, simd = self.base, ("avx2" if simd == "base-avx2" else "default")
        cmd = [run, "--model", model, "--device", "blis-cpu:0", "--threads", str(threads),
               "--repeat", str(repeat), "--warmup", self.warmup, "--json",
               # mi-run's 60 s watchdog per step is shorter than one run of the 1024x1024 model
               # (about 7 s of CPU) on a machine loaded 15 deep; a benchmark measures, 600 s
               # still ends a real hang
               "--timeout", "600"] + self.gap
        fixed = self.values.get(model, {}) if run == self.mirun else {}
        for i in inputs:
            name = i.split("=", 1)[0]
            if name in self.fix and name in fixed:
                cmd += ["--value", f"{name}={fixed[name]}"]
            else:
                cmd += ["--input", i]
        if outdir:
            cmd += ["--output-dir", outdir]
        j = json.loads(sh(cmd, self.env(simd, "mi-run" if simd == "avx2" else None)))
        if simd == "avx2" and not outdir:
            self.audit(j, model, who)
        return j["latency_ms"]["median"], j.get("cpu_ms", {}).get("median", float("nan"))

    def ort(self, model, inputs, threads, repeat, outdir=None, capped=False):
        cmd = ["node", os.path.join(ORT, "ort_run.js"), "--model", model, "--threads", str(threads),
               "--repeat", str(repeat), "--warmup", self.warmup, "--json"] + self.gap
        for i in inputs:
            cmd += ["--input", i]
        if outdir:
            cmd += ["--output-dir", outdir]
        e = self.env("default", "ort" if capped else None)
        if capped and not self.cap_checked:
            # ONNX Runtime must have loaded what the arrangement caps (the patched copy of its
            # library, or any cpuid under faulting) and answered its cpuid through it
            e["MI_CPUID_CAP_VERBOSE"] = "1"
            out, err = sh(cmd, e, stderr=True)
            m = re.search(r"cpuid_cap: (\d+) cpuid instructions capped", err)
            if not m or int(m.group(1)) == 0:
                sys.exit(f"run.py: ONNX Runtime answered no cpuid under cpuid_cap ({self.cap['how']}): its "
                         "AVX2 column would be uncapped; refused (--avx2-ort uncapped, or --no-avx2)")
            print(f"ONNX Runtime under cpuid_cap ({self.cap['how']}): {m.group(1)} cpuid instructions "
                  "answered as an AVX2-only CPU", flush=True)
            self.cap_checked = True
        else:
            out = sh(cmd, e)
        j = json.loads(out)
        if capped and not outdir:
            self.audit(j, model, "ort-avx2")
        return j["latency_ms"]["median"], j.get("cpu_ms", {}).get("median", float("nan"))


# glibc's own AVX-512 (EVEX) string and memory functions off, as on an AVX2-only CPU, in both
# processes of the AVX2 column (glibc picks them by cpuid before any preload library loads)
GLIBC_AVX2 = "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD"


def add_env(env, add):
    """env with add's variables; LD_PRELOAD, LD_LIBRARY_PATH and GLIBC_TUNABLES put add's
    entries before those already there."""
    e = dict(env)
    sep = {"LD_PRELOAD": " ", "LD_LIBRARY_PATH": ":", "GLIBC_TUNABLES": ":"}
    for k, v in add.items():
        e[k] = sep[k].join(x for x in (v, e.get(k, "")) if x) if k in sep else v
    return e


def probe_capped(probe, env):
    """None where cpuid_probe run in env reads no AVX-512 and still AVX2, else why not."""
    r = subprocess.run([probe], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, **env))
    if r.returncode == 0 and "avx512f=0 " in r.stdout and "avx2=1 " in r.stdout:
        return None
    return (r.stderr.strip().splitlines() or [r.stdout.strip() or "exit %d" % r.returncode])[-1]


def cpuid_cap(build):
    """How the AVX2 column's processes run capped: {"ort": env, "mi-run": env, "how": words},
    checked with cpuid_probe under the same arrangement. Through CPUID faulting where the CPU has
    it (both processes under the library); else through a copy of ONNX Runtime's library with its
    cpuid instructions patched to traps (BUILD/ort-avx2, made once per library; mi-run is capped by
    MI_BLIS_MAX_SIMD alone then). Exits with the reason where neither works."""
    lib = os.path.join(build, "lib", "libmi_cpuid_cap.so")
    probe = os.path.join(build, "bin", "cpuid_probe")
    refuse = "(--avx2-ort uncapped for the plugin-only cap, or --no-avx2)"
    if not (os.path.exists(lib) and os.access(probe, os.X_OK)):
        sys.exit(f"run.py: no {lib} or {probe} (built on x86-64 Linux); cannot cap ONNX Runtime at AVX2 {refuse}")
    why = probe_capped(probe, {"LD_PRELOAD": lib})
    if why is None:
        return {"ort": {"LD_PRELOAD": lib, "GLIBC_TUNABLES": GLIBC_AVX2},
                "mi-run": {"LD_PRELOAD": lib, "GLIBC_TUNABLES": GLIBC_AVX2}, "how": "CPUID faulting"}
    src = sorted(glob.glob(os.path.join(ORT, "node_modules", "onnxruntime-node", "bin", "napi-v*",
                                        os.uname().sysname.lower(), "x64", "libonnxruntime.so.*")))
    if not src:
        sys.exit(f"run.py: cpuid is not capped under {os.path.basename(lib)} ({why}) and onnxruntime-node "
                 f"has no x64 libonnxruntime.so to patch; refused {refuse}")
    dest = os.path.join(build, "ort-avx2")
    os.makedirs(dest, exist_ok=True)
    patched = os.path.join(dest, os.path.basename(src[-1]))
    digest = hashlib.sha256(open(src[-1], "rb").read()).hexdigest()
    try:
        fresh = digest in open(patched + ".cpuid-sites").readline() and os.path.exists(patched)
    except OSError:
        fresh = False
    patch = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpuid_patch.py")]
    try:
        if not fresh:
            print(f"patching {src[-1]}'s cpuid instructions into {dest} (once; objdump of the library)", flush=True)
            sh(patch + [src[-1], patched])
        sh(patch + [probe, os.path.join(dest, "cpuid_probe")])
    except RuntimeError as e:
        sys.exit(f"run.py: cpuid is not capped under {os.path.basename(lib)} ({why}) and patching failed ({e}); "
                 f"refused {refuse}")
    pprobe = os.path.join(dest, "cpuid_probe")
    why2 = probe_capped(pprobe, {"LD_PRELOAD": lib, "MI_CPUID_CAP_SITES": pprobe + ".cpuid-sites"})
    if why2 is not None:
        sys.exit(f"run.py: cpuid is not capped under {os.path.basename(lib)} ({why}), nor in a patched "
                 f"cpuid_probe ({why2}); the AVX2 column would compare against an uncapped ONNX Runtime: "
                 f"refused {refuse}")
    return {"ort": {"LD_PRELOAD": lib, "LD_LIBRARY_PATH": dest, "MI_CPUID_CAP_SITES": patched + ".cpuid-sites",
                    "GLIBC_TUNABLES": GLIBC_AVX2},
            "mi-run": {"GLIBC_TUNABLES": GLIBC_AVX2}, "how": f"its library's cpuid instructions patched to traps, {dest}"}


def outputs_match(a_dir, b_dir):
    worst = 0.0
    for f in sorted(os.listdir(a_dir)):
        if not f.endswith(".npy"):
            continue
        m = os.path.join(b_dir, f)
        if not os.path.exists(m):
            return float("inf")
        worst = max(worst, rel_l2(load_npy(os.path.join(a_dir, f)), load_npy(m)))
    return worst


def same_bytes(a_dir, b_dir):
    """Every .npy output in a_dir has a byte-identical twin in b_dir (and there is one)."""
    files = sorted(f for f in os.listdir(a_dir) if f.endswith(".npy"))
    return bool(files) and all(filecmp.cmp(os.path.join(a_dir, f), os.path.join(b_dir, f), shallow=False)
                               for f in files)


def memory_bench_args(doc):
    """The command line memory.py and memcount.py share: (args, models folder); prints the
    machine line."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("build", nargs="?", default=os.environ.get("MI_BUILD", os.path.join(SRC, "build")))
    ap.add_argument("--base")
    ap.add_argument("--only")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    cpu, cores, _ = machine()
    print(f"machine: {cpu}, {cores} cores; threads {a.threads}; load {load()}", flush=True)
    return a, os.environ.get("MI_MODEL_DIR", os.path.expanduser("~/.cache/metainfer/models"))


def machine():
    name = "?"
    flags = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name") and name == "?":
            name = line.split(":", 1)[1].strip()
        if line.startswith("flags") and not flags:
            flags = line
    return name, os.cpu_count(), " avx512f" in flags


def load():
    return open("/proc/loadavg").read().split()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?", default=os.environ.get("MI_BUILD", os.path.join(SRC, "build")))
    ap.add_argument("--base", default="",
                    help="a second build (the code before a change), timed in the same rounds")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds (at least 5 for a table)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-avx2", action="store_true", help="skip the AVX2-capped column")
    ap.add_argument("--avx2-only", action="store_true",
                    help="time blis-cpu capped at AVX2 only (and --base capped too), not at its defaults")
    ap.add_argument("--avx2-ort", choices=("capped", "uncapped"), default="capped",
                    help="the AVX2 column's ONNX Runtime: under cpuid_cap (its AVX2 kernels, the default) "
                         "or at its own kernels (the old plugin-only cap)")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    ap.add_argument("--clock", choices=("wall", "cpu", "both"), default="both",
                    help="which ratios to print: wall time, process CPU time, or both tables")
    ap.add_argument("--target-ms", type=float, default=300.0,
                    help="timed runs per measurement: about this many ms of runs (--min-runs..300)")
    ap.add_argument("--min-runs", type=int, default=5, help="fewest timed runs per measurement")
    ap.add_argument("--warmup", type=int, default=2, help="warm-up runs per measurement")
    ap.add_argument("--gap", type=float, default=0.0,
                    help="idle ms before every run on both sides (a streaming caller); default 0")
    ap.add_argument("--model", action="append", default=[],
                    help="also time this model file (repeatable; e.g. an mi-zoo model), inputs of its "
                         "declared shapes; --only filters it by its file name")
    ap.add_argument("--size", action="append", default=[],
                    help="also time a fetched model at another input size (repeatable): "
                         "MODEL:INPUT=D,D,... (';' between inputs), e.g. ppocr-v4-det:x=1,3,640,640; "
                         "the row is named MODEL@DIMS")
    ap.add_argument("--fix-values", default="",
                    help="inputs (comma list) the new build's mi-run gets as --value NAME=V, not as files")
    ap.add_argument("--quant", default="", help="quantized forms to add: qdq, dynamic, qop (comma list)")
    a = ap.parse_args()
    models_dir = os.environ.get("MI_MODEL_DIR", os.path.expanduser("~/.cache/metainfer/models"))
    if not os.path.isdir(os.path.join(ORT, "node_modules", "onnxruntime-node")):
        sys.exit("run.py: run tools/ort/setup.sh first")
    if not os.access(os.path.join(a.build, "bin", "mi-run"), os.X_OK):
        sys.exit(f"run.py: no mi-run in {a.build}/bin")
    cpu, cores, avx512 = machine()
    simds = ["default"] + (["avx2"] if avx512 and not a.no_avx2 else [])
    if a.avx2_only:
        if "avx2" not in simds:
            sys.exit("run.py: --avx2-only needs a CPU with AVX-512 and no --no-avx2")
        simds = ["avx2"]
    # the --base build's columns: as the new build's, "base" uncapped, "base-avx2" capped
    bases = [{"default": "base", "avx2": "base-avx2"}[s] for s in simds] if a.base else []
    threads = [int(t) for t in a.threads.split(",") if t]
    if a.gap < 0:
        sys.exit("run.py: --gap must be >= 0 ms")
    r = Runner(a.build, threads, a.warmup, a.gap)
    # the AVX2 column's ONNX Runtime: "ort-avx2" (capped by cpuid_cap) or "ort" (uncapped)
    ort_avx2 = "ort"
    if "avx2" in simds and a.avx2_ort == "capped":
        r.cap = cpuid_cap(a.build)
        ort_avx2 = "ort-avx2"
    if a.base:
        r.base = os.path.join(a.base, "bin", "mi-run")
    r.fix = set(n for n in a.fix_values.split(",") if n)
    tmp = tempfile.mkdtemp(prefix="mi-bench-real-")
    ort_version = json.load(open(os.path.join(ORT, "node_modules", "onnxruntime-node", "package.json")))["version"]
    t_start = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load_start = load()
    print(f"machine: {cpu}, {cores} cores, AVX-512: {'yes' if avx512 else 'no'}; "
          f"onnxruntime-node {ort_version}; start {t_start}, load {load_start}", flush=True)
    if a.gap > 0:
        print(f"every run on both sides after {a.gap:g} ms idle (--gap)", flush=True)
    if "avx2" in simds:
        print("AVX2 column: blis-cpu MI_BLIS_MAX_SIMD=avx2" +
              (f", vs ONNX Runtime under cpuid_cap (no AVX-512/AVX-VNNI/AMX in its cpuid; {r.cap['how']})"
               if r.cap else ", vs ONNX Runtime uncapped (its AVX-512 kernels: a plugin-only cap)"), flush=True)

    todo = []
    for name, path, gen in fetched(a.only, models_dir, a.model, a.size):
        d = os.path.join(tmp, name)
        r.values[path] = dict(gen[k + 1].split("=", 1) for k in range(len(gen) - 1) if gen[k] == "--value")
        try:
            ins = sh(["node", os.path.join(ORT, "gen_inputs.js"), path, os.path.join(d, "in")] + gen).split()
            sh(["node", os.path.join(ORT, "ort_run.js"), "--model", path, "--output-dir",
                os.path.join(d, "ort")] + sum((["--input", i] for i in ins), []))
            errs = []
            for simd in simds:
                out = os.path.join(d, "mi-" + simd)
                one = r.blis(path, ins, threads[0], 3, simd, out)[0]
                errs.append(outputs_match(os.path.join(d, "ort"), out))
            reps = max(a.min_runs, min(300, int(a.target_ms / max(one, 1e-3))))
            if a.gap > 0:  # about a second of idle time per measurement
                reps = max(a.min_runs, min(reps, int(1000 / a.gap)))
        except RuntimeError as e:
            print(f"{name}: {e}; skipped")
            continue
        print(f"{name}: {' '.join(ins and [os.path.basename(i) for i in ins] or ['(static)'])}; "
              f"rel L2 vs ORT " + ", ".join(f"{s} {e:.2g}" for s, e in zip(simds, errs)) +
              f"; {reps} timed runs per measurement", flush=True)
        todo.append((name, path, ins, reps, max(errs)))
        for mode in [m for m in a.quant.split(",") if m]:
            qpath = os.path.join(d, f"{mode}.onnx")
            qname = f"{name}:{mode}"
            try:
                sh([os.path.join(a.build, "bin", "mi-quantize"), "--mode", mode, "--model", path,
                    "--out", qpath] + sum((["--input", i.split("=", 1)[1]] for i in ins), []))
                sh(["node", os.path.join(ORT, "ort_run.js"), "--model", qpath, "--output-dir",
                    os.path.join(d, mode + "-ort")] + sum((["--input", i] for i in ins), []))
                out = os.path.join(d, mode + "-mi")
                r.blis(qpath, ins, threads[0], 3, "default", out)
                err = outputs_match(os.path.join(d, mode + "-ort"), out)
            except RuntimeError as e:
                print(f"{qname}: {e}; skipped")
                continue
            print(f"{qname}: rel L2 vs ORT on the same quantized model {err:.2g}", flush=True)
            todo.append((qname, qpath, ins, reps, err))

    def table(done, clock):
        load_end = load()
        t_end = time.strftime("%H:%M:%S UTC", time.gmtime())
        ci = 0 if clock == "wall" else 1

        def ort_of(who):
            return ort_avx2 if who in ("avx2", "base-avx2") else "ort"

        def ort_ms(name, t):
            o = [v[ci] for v in ms.get((name, t, "ort"), []) if v[ci] == v[ci]]
            return f"{statistics.median(o):.3f}" if o else "-"

        def cell(name, t, who):
            b = [v[ci] for v in ms[(name, t, who)]]
            o = [v[ci] for v in ms[(name, t, ort_of(who))]]
            rs = [x / y for x, y in zip(b, o) if x == x and y == y and y > 0]
            if not rs:
                return None
            return statistics.median(b), statistics.median(o), statistics.median(rs), min(rs), max(rs)

        print(f"\n{clock} time ({'per run' if clock == 'wall' else 'process CPU time per run, all threads'}): "
              f"{done} of {a.rounds} rounds, {t_start} - {t_end}, load average {load_start} -> {load_end} "
              f"(after each round: {' '.join(loads)}); "
              "ratio = blis-cpu / ONNX Runtime (median over rounds, [min-max]; AVX2 columns over ONNX Runtime "
              f"{'capped at AVX2 too' if ort_avx2 != 'ort' else 'uncapped'}); < 1: blis-cpu faster")
        worst = {}
        if a.markdown:
            head = "| model | threads | ORT ms |"
            sep = "| --- | ---: | ---: |"
            for s in simds + bases:
                if s == "avx2" and ort_avx2 != "ort":
                    head += " ORT AVX2 ms |"
                    sep += " ---: |"
                head += " %s ms | ratio %s [range] |" % {
                    "default": ("blis-cpu", ""), "avx2": ("blis-cpu AVX2", "AVX2"), "base": ("before", "before"),
                    "base-avx2": ("before AVX2", "before AVX2")}[s]
                sep += " ---: | --- |"
            print(head + " max rel L2 |")
            print(sep + " ---: |")
        else:
            title = {"default": "blis ms", "avx2": "avx2 ms", "base": "before", "base-avx2": "bef avx2"}
            print(f"{'model':<16} {'thr':>3} {'ORT ms':>9}" +
                  "".join((f" {'ORT avx2':>9}" if s == "avx2" and ort_avx2 != "ort" else "") +
                          f" {title[s]:>9} {'ratio':>6} {'range':>11}" for s in simds + bases) + "  rel L2")
        for t in threads:
            for name, _, _, _, err in todo:
                cols = simds + bases
                cells = [cell(name, t, s) for s in cols]
                if cells[0] is None:
                    continue
                for s, c in zip(cols, cells):
                    if c is None:
                        continue
                    if c[2] > worst.get((s, t), (0.0, ""))[0]:
                        worst[(s, t)] = c[2], name
                if a.markdown:
                    line = f"| {name} | {t} | {ort_ms(name, t)} |"
                    for s, c in zip(cols, cells):
                        if s == "avx2" and ort_avx2 != "ort":
                            line += f" {c[1]:.3f} |" if c else " - |"
                        line += (f" {c[0]:.3f} | {c[2]:.2f} [{c[3]:.2f}-{c[4]:.2f}] |" if c else " - | - |")
                    print(line + f" {err:.1g} |")
                else:
                    line = f"{name:<16} {t:>3} {ort_ms(name, t):>9}"
                    for s, c in zip(cols, cells):
                        if s == "avx2" and ort_avx2 != "ort":
                            line += f" {c[1]:>9.3f}" if c else " -"
                        line += (f" {c[0]:>9.3f} {c[2]:>6.2f} {c[3]:>5.2f}-{c[4]:<5.2f}" if c else " -")
                    print(line + f"  {err:.1g}")
        for t in threads:
            for name, _, _, _, _ in todo:
                for who in [w for w in ("default", "base") if w in simds + bases]:
                    if ":" not in name or not ms.get((name, t, who)):
                        continue
                    fp = ms.get((name.split(":")[0], t, who), [])
                    rs = [q[ci] / f[ci] for q, f in zip(ms[(name, t, who)], fp)
                          if q[ci] == q[ci] and f[ci] == f[ci] and f[ci] > 0]
                    if rs:
                        print(f"{name} {t} thread(s): blis-cpu{' (before)' if who == 'base' else ''} quantized / "
                              f"FP32 ({clock}) {statistics.median(rs):.2f} [{min(rs):.2f}-{max(rs):.2f}]")
        for (s, t), (w, name) in sorted(worst.items()):
            capped = " (both sides)" if ort_avx2 != "ort" else " (blis-cpu only)"
            print(f"worst {clock} ratio, "
                  f"{dict(avx2='AVX2-capped' + capped, base='before', **{'base-avx2': 'before, AVX2-capped' + capped}).get(s, 'defaults')}, "
                  f"{t} thread(s): {w:.2f} ({name})")

    # ms[(name, threads, who)] = list over rounds of (wall ms, cpu ms); who: "ort" or a simd value
    ms = {}
    loads = []
    clocks = ["wall", "cpu"] if a.clock == "both" else [a.clock]
    # ONNX Runtime uncapped is timed where a column is compared with it
    plain = "default" in simds or ort_avx2 == "ort"
    whos = simds + bases + (["ort"] if plain else []) + (["ort-avx2"] if ort_avx2 != "ort" else [])
    for rnd in range(a.rounds):
        for t in threads:
            for name, path, ins, reps, _ in todo:
                order = whos[rnd % len(whos):] + whos[:rnd % len(whos)]
                for who in order:
                    try:
                        v = (r.ort(path, ins, t, reps, capped=(who == "ort-avx2")) if who.startswith("ort")
                             else r.blis(path, ins, t, reps, who))
                    except RuntimeError as e:
                        print(f"{name} t={t} {who}: {e}", flush=True)
                        v = (float("nan"), float("nan"))
                    ms.setdefault((name, t, who), []).append(v)
        loads.append(load())
        print(f"round {rnd + 1}/{a.rounds} done, load {loads[-1]}", flush=True)
        if any(r.avx512.values()):
            used = r.avx512[True]
            print(f"AVX2 column, the kernel's record of AVX-512 use in the timed runs: none in "
                  f"{len(r.avx512[False])} measurements, no record in {len(r.avx512[None])}" +
                  (f", USED in {len(used)}: {', '.join(sorted(set(used)))}" if used else ""), flush=True)
        for c in clocks:
            table(rnd + 1, c)
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()

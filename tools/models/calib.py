#!/usr/bin/env python3
# calib.py - real-input calibration folders (.npy samples) for the fetched real models (fetch.sh).
"""Writes OUT/<model>/ for each model of tools/models/fetch.sh: the recipe's `calibration`
folder format (docs/recipes.md; framework/src/transform/xf_samples.c): the .npy files of a
one-input model directly in the folder, one subfolder per input name for the others, N samples
(file names 0.npy .. N-1.npy, taken in name order), at the input size tools/bench/tune_real.sh
uses and with the preprocessing each model's own front end applies:

  images  photographs shipped by Debian's python3-skimage (skimage/data: astronaut, camera,
          coffee, chelsea, rocket, motorcycle; CC0 or public domain, see each image's
          docstring in skimage/data/_fetchers.py), or any folder of .png/.jpg (--photos)
  text    lines and pages rendered with the DejaVu fonts (fonts-dejavu-core) for PaddleOCR
  speech  sentences synthesised by espeak-ng, resampled to 16 kHz; Moonshine's encoder gets the
          clip itself; the openWakeWord embedding and wake-word models get the features of
          their own front end (the melspectrogram model, then the embedding model, run on the
          reference interpreter by mi-run); Silero VAD gets the state it left after the
          windows before (also run by mi-run); Moonshine's decoder gets its 9th step after
          greedy decoding of the encoder's output for the clip (both run by mi-run)
  tokens  for the generated BERT-family encoder (tools/models/bert_like.py): [CLS] ids [SEP] and
          padding, ids within the vocabulary, a padding mask (no text: its weights are random)

The same arguments give the same bytes (seeded crops, texts, voices and noise; np.save).
A model whose source is missing is reported and skipped, and the exit status is 1.

usage: calib.py [--out DIR] [--models DIR] [--only REGEX] [--count N] [--seed S]
                [--photos DIR] [--fetch-photos] [--build DIR] [--zero-state]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import wave
import zlib

import numpy as np
from PIL import Image, ImageDraw, ImageFont

HOME = os.path.expanduser("~")
MODEL_DIR = os.environ.get("MI_MODEL_DIR", os.path.join(HOME, ".cache/metainfer/models"))
SRC_CACHE = os.path.join(HOME, ".cache/metainfer/calib-src")
SKIMAGE_DATA = "usr/lib/python3/dist-packages/skimage/data"
# Photographs from skimage/data, people first (BlazeFace looks for faces); page.png is a scanned
# page, used for the text detector only.
PHOTOS = ["astronaut.png", "camera.png", "coffee.png", "chelsea.png", "rocket.jpg",
          "motorcycle_left.png"]
FONT_DIR = "/usr/share/fonts/truetype/dejavu"
FONTS = ["DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf", "DejaVuSans-Bold.ttf"]
SENTENCES = [
    "hello deepa, turn on the kitchen lights",
    "the quick brown fox jumps over the lazy dog",
    "please set a timer for ten minutes",
    "what is the weather like in paris tomorrow",
    "hello deepa, play some music in the living room",
    "the meeting starts at half past nine on monday",
    "call mum and tell her we are running late",
    "invoice number 4471 is due on the third of march",
    "open the window, it is getting warm in here",
    "hello deepa, what time is it",
    "seven hundred and twenty three kilometres to go",
    "remember to buy milk, eggs and fresh bread",
]
VOICES = ["en", "en-us", "en+f3", "en-us+m3", "en+f2", "en-gb-x-rp"]

# name -> (kind, file, {input name: shape}): the sizes of tools/bench/tune_real.sh.
MODELS = {
    "ppocr_v2_cls": ("ocr_line", "ppocr_v2_cls.onnx", {"x": [1, 3, 48, 192]}),
    "ppocr_v4_det": ("ocr_page", "ppocr_v4_det.onnx", {"x": [1, 3, 320, 320]}),
    "ppocr_v4_rec": ("ocr_line", "ppocr_v4_rec.onnx", {"x": [1, 3, 48, 320]}),
    "oww_melspectrogram": ("oww_audio", "oww_melspectrogram.onnx", {"input": [1, 1280]}),
    "oww_embedding": ("oww_mel", "oww_embedding.onnx", {"input_1": [1, 76, 32, 1]}),
    "oww_hello_deepa": ("oww_emb", "oww_hello_deepa.onnx", {"onnx::Flatten_0": [1, 25, 96]}),
    "silero_vad_v4": ("vad", "silero_vad_v4.onnx", {"input": [1, 512], "h": [2, 1, 64],
                                                    "c": [2, 1, 64], "sr": []}),
    "silero_vad_v5": ("vad", "silero_vad_v5.onnx", {"input": [1, 512], "state": [2, 1, 128],
                                                    "sr": []}),
    "silero_vad_v6": ("vad", "silero_vad_v6.onnx", {"input": [1, 512], "state": [2, 1, 128],
                                                    "sr": []}),
    "silero_vad_v6_ifless": ("vad", "silero_vad_v6_ifless.onnx",
                             {"input": [1, 512], "state": [2, 1, 128], "sr": []}),
    "blazeface_front": ("blazeface", "blazeface_front.onnx", {"input:0": [1, 128, 128, 3]}),
    "blazeface_back": ("blazeface", "blazeface_back.onnx", {"input:0": [1, 256, 256, 3]}),
    "mlsd_tiny_320": ("mlsd", "mlsd_tiny_320.onnx", {"input_image_with_alpha:0": [1, 320, 320, 4]}),
    "isnet_quint8": ("isnet", "isnet_quint8_1024.onnx", {"input": [1, 3, 1024, 1024]}),
    "moonshine_tiny_enc": ("speech", "moonshine_tiny_enc.onnx", {"input_values": [1, 80000]}),
    "moonshine_tiny_dec": ("decoder", "moonshine_tiny_dec.onnx", dict(
        [("input_ids", [1, 1]), ("encoder_hidden_states", [1, 207, 288])] +
        [("past_key_values.%d.%s.%s" % (l, part, kv), [1, 8, 8 if part == "decoder" else 207, 36])
         for l in range(6) for part in ("decoder", "encoder") for kv in ("key", "value")] +
        [("use_cache_branch", [1])])),
    # generated, not fetched (tools/models/bert_like.py): BERT-style token chunks
    "bert_like_minilm": ("tokens", "bert_like_minilm.onnx", {"input_ids": [1, 128], "attention_mask": [1, 128],
                                                             "token_type_ids": [1, 128]}),
}


class Missing(Exception):
    """A source (package, font, tool, model) this model's samples need is not there."""


def die(msg):
    print("calib: " + msg, file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------- sources


def photo_dir(args):
    if args.photos:
        if not os.path.isdir(args.photos):
            die("--photos %s: not a directory" % args.photos)
        return args.photos
    for d in ["/" + SKIMAGE_DATA, os.path.join(SRC_CACHE, SKIMAGE_DATA)]:
        if all(os.path.exists(os.path.join(d, p)) for p in PHOTOS):
            return d
    return None


def fetch_photos():
    """Extracts skimage/data from Debian's python3-skimage .deb (downloaded, not installed)."""
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        die("--fetch-photos needs apt-get and dpkg-deb (Debian)")
    os.makedirs(SRC_CACHE, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run(["apt-get", "download", "python3-skimage"], cwd=tmp,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        debs = [f for f in os.listdir(tmp) if f.endswith(".deb")]
        if r.returncode != 0 or not debs:
            die("apt-get download python3-skimage failed (run apt-get update?): " +
                r.stdout.strip()[-300:])
        x = os.path.join(tmp, "x")
        subprocess.run(["dpkg-deb", "-x", os.path.join(tmp, debs[0]), x], check=True)
        dst = os.path.join(SRC_CACHE, SKIMAGE_DATA)
        os.makedirs(dst, exist_ok=True)
        for f in PHOTOS + ["page.png", "_fetchers.py"]:
            shutil.copy(os.path.join(x, SKIMAGE_DATA, f), dst)
        print("calib: photographs from %s in %s" % (debs[0], dst))


def photos(args):
    d = photo_dir(args)
    if not d:
        raise Missing("no photographs: install python3-skimage, run with --fetch-photos "
                      "(extracts its data images into %s), or give --photos DIR" % SRC_CACHE)
    names = PHOTOS if not args.photos else sorted(
        f for f in os.listdir(d) if f.lower().endswith((".png", ".jpg", ".jpeg")))
    if not names:
        raise Missing("--photos %s: no .png/.jpg files" % d)
    return [Image.open(os.path.join(d, f)).convert("RGB") for f in names]


def fonts():
    paths = [os.path.join(FONT_DIR, f) for f in FONTS]
    have = [p for p in paths if os.path.exists(p)]
    if not have:
        raise Missing("no DejaVu fonts in %s: install fonts-dejavu-core" % FONT_DIR)
    return have


def speech(rng, count, seconds):
    """count utterances of espeak-ng speech at 16 kHz in [-1, 1), each padded or cut to
    `seconds`, with a little seeded noise (a quiet room, not digital silence)."""
    if not shutil.which("espeak-ng"):
        raise Missing("espeak-ng is not installed (apt-get install espeak-ng)")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(count):
            text = SENTENCES[int(rng.integers(len(SENTENCES)))]
            voice = VOICES[int(rng.integers(len(VOICES)))]
            speed = int(rng.integers(130, 180))
            wav = os.path.join(tmp, "%d.wav" % k)
            r = subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", wav, text],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                raise Missing("espeak-ng -v %s failed: %s" % (voice, r.stdout.strip()[-200:]))
            with wave.open(wav) as w:
                rate = w.getframerate()
                x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64) / 32768
            n16 = int(len(x) * 16000 / rate)
            x = np.interp(np.arange(n16) * rate / 16000.0, np.arange(len(x)), x)
            n = int(seconds * 16000)
            lead = int(rng.integers(0, 1600))
            y = np.zeros(n)
            y[lead:lead + len(x)] = x[:max(0, n - lead)]
            y += rng.normal(0, 1e-3, n)
            out.append(np.clip(y, -1, 1 - 2 ** -15).astype(np.float32))
    return out


def mi_run_all(args, model, inputs, tmp):
    """Runs `model` on the reference interpreter with `inputs` (name -> array); returns its
    outputs, {name: array}."""
    exe = os.path.join(args.build, "bin", "mi-run")
    if not os.path.exists(os.path.join(args.models, model)):
        raise Missing("%s is not in %s (tools/models/fetch.sh)" % (model, args.models))
    if not os.access(exe, os.X_OK):
        raise Missing("%s is not built: these samples come from the models themselves run by "
                      "mi-run (give --build DIR)" % exe)
    cmd = [exe, "--model", os.path.join(args.models, model), "--device", "ref",
           "--output-dir", os.path.join(tmp, "o")]
    for k, (name, a) in enumerate(inputs.items()):
        p = os.path.join(tmp, "in%d.npy" % k)
        np.save(p, a)
        cmd += ["--input", "%s=%s" % (name, p)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    outs = re.findall(r"output '([^']*)': \S+ \[[^\]]*\] -> (\S+\.npy)", r.stdout)
    if r.returncode != 0 or not outs:
        raise Missing("mi-run %s failed: %s" % (model, r.stdout.strip()[-300:]))
    return {name: np.load(path) for name, path in outs}


def mi_run(args, model, inputs, tmp):
    """The first output of mi_run_all."""
    return next(iter(mi_run_all(args, model, inputs, tmp).values()))


# ---------------------------------------------------------------- images


def crop_resize(rng, img, w, h, scale=(0.6, 1.0)):
    """A seeded crop of img with the target's aspect ratio, `scale` of the largest such crop,
    resized to w x h (bilinear, as the detectors' front ends scale)."""
    W, H = img.size
    cw, ch = (W, W * h / w) if W * h / w <= H else (H * w / h, H)
    s = rng.uniform(*scale)
    cw, ch = cw * s, ch * s
    x0, y0 = rng.uniform(0, W - cw), rng.uniform(0, H - ch)
    return img.resize((w, h), Image.BILINEAR, box=(x0, y0, x0 + cw, y0 + ch))


def rgb(img):
    return np.asarray(img, dtype=np.float32)  # H x W x 3, 0..255


def blazeface(rng, args, shape, count):
    """MediaPipe BlazeFace: NHWC RGB in [-1, 1]."""
    ph = photos(args)
    n, h, w, _ = shape
    return [{"input": (rgb(crop_resize(rng, ph[k % len(ph)], w, h, (0.7, 1.0)))[None] / 127.5
                       - 1).astype(np.float32)} for k in range(count)]


def mlsd(rng, args, shape, count):
    """M-LSD (keijiro's Preprocess.compute): NHWC RGB in 0..255 and a fourth channel of 1."""
    ph = photos(args)
    n, h, w, _ = shape
    out = []
    for k in range(count):
        x = rgb(crop_resize(rng, ph[k % len(ph)], w, h))
        out.append({"input": np.concatenate([x, np.ones((h, w, 1), np.float32)], 2)[None]})
    return out


def isnet(rng, args, shape, count):
    """IS-Net: NCHW RGB, x / 255 - 0.5 (mean 0.5, std 1)."""
    ph = photos(args)
    n, c, h, w = shape
    return [{"input": (rgb(crop_resize(rng, ph[k % len(ph)], w, h)) / 255 - 0.5)
             .transpose(2, 0, 1)[None].astype(np.float32)} for k in range(count)]


# ---------------------------------------------------------------- text


def text_words(rng, n):
    words = " ".join(SENTENCES).replace(",", "").split()
    return " ".join(words[int(i)] for i in rng.integers(len(words), size=n))


def render_line(rng, fonts_, size_px):
    """One text line, dark ink on light paper, cropped to its box with a small margin."""
    font = ImageFont.truetype(fonts_[int(rng.integers(len(fonts_)))], size_px)
    text = text_words(rng, int(rng.integers(2, 6)))
    if rng.random() < 0.3:
        text = text.title()
    x0, y0, x1, y1 = font.getbbox(text)
    m = size_px // 4
    paper = tuple(int(v) for v in rng.integers(200, 256, 3))
    ink = tuple(int(v) for v in rng.integers(0, 70, 3))
    img = Image.new("RGB", (x1 - x0 + 2 * m, y1 - y0 + 2 * m), paper)
    ImageDraw.Draw(img).text((m - x0, m - y0), text, font=font, fill=ink)
    return img


def ocr_norm(img):
    """PaddleOCR's line front end on a BGR image: (x / 255 - 0.5) / 0.5, CHW."""
    x = np.asarray(img, dtype=np.float32)[:, :, ::-1]
    return ((x / 255 - 0.5) / 0.5).transpose(2, 0, 1)


def ocr_line(rng, args, shape, count):
    """PaddleOCR recognizer / direction classifier: a line resized to height H keeping its
    aspect (width at most W), normalised, padded right with zeros; the classifier's samples
    are a third upside down (what it tells apart)."""
    f = fonts()
    n, c, h, w = shape
    out = []
    for k in range(count):
        img = render_line(rng, f, int(rng.integers(24, 64)))
        if k % 3 == 2:
            img = img.rotate(180)
        rw = min(w, max(1, int(round(h * img.size[0] / img.size[1]))))
        x = np.zeros((c, h, w), np.float32)
        x[:, :, :rw] = ocr_norm(img.resize((rw, h), Image.BILINEAR))
        out.append({"x": x[None]})
    return out


def ocr_page(rng, args, shape, count):
    """PaddleOCR detector: a page of text lines (every other sample over a photograph, else
    on paper), ImageNet mean/std on the BGR image as PaddleOCR's NormalizeImage does, CHW."""
    f = fonts()
    n, c, h, w = shape
    try:
        ph = photos(args)
    except Missing:
        ph = []
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    out = []
    for k in range(count):
        if ph and k % 2 == 1:
            page = crop_resize(rng, ph[k % len(ph)], w, h)
        else:
            page = Image.new("RGB", (w, h), tuple(int(v) for v in rng.integers(215, 256, 3)))
        y = int(rng.integers(4, 24))
        while y < h - 16:
            line = render_line(rng, f, int(rng.integers(12, 30)))
            if line.size[0] > w - 8:
                line = line.crop((0, 0, w - 8, line.size[1]))
            page.paste(line, (int(rng.integers(2, max(3, w - line.size[0]))), y))
            y += line.size[1] + int(rng.integers(2, 20))
        x = np.asarray(page, dtype=np.float64)[:, :, ::-1] / 255
        out.append({"x": ((x - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)})
    return out


# ---------------------------------------------------------------- audio


def oww_audio(rng, args, shape, count):
    """openWakeWord melspectrogram: an 80 ms hop of speech at int16 scale (openWakeWord feeds
    its PCM samples as float without rescaling)."""
    n = shape[1]
    out = []
    for y in speech(rng, count, 2.0):
        start = int(rng.integers(4000, 24000 - n))  # inside the utterance
        out.append({"input": (y[None, start:start + n] * 32768).astype(np.float32)})
    return out


def oww_features(args, y, tmp):
    """The mel features openWakeWord's embedding model eats: the melspectrogram model on the
    whole utterance (int16 scale), then x / 10 + 2; frames x 32."""
    mel = mi_run(args, "oww_melspectrogram.onnx", {"input": (y[None] * 32768).astype(np.float32)},
                 tmp)
    return (mel.reshape(-1, 32) / 10 + 2).astype(np.float32)


def oww_mel(rng, args, shape, count):
    """openWakeWord embedding: a window of 76 mel frames of speech, [1, 76, 32, 1]."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for y in speech(rng, count, 2.5):
            mel = oww_features(args, y, tmp)
            s = int(rng.integers(0, mel.shape[0] - 76 + 1))
            out.append({"input_1": mel[None, s:s + 76, :, None]})
    return out


def oww_emb(rng, args, shape, count):
    """openWakeWord wake-word head: T embeddings (T = 25 for hello_deepa; windows of 76 mel
    frames, 8 frames apart, the embedding model run on all T at once), [1, T, 96]."""
    t = shape[1]
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for y in speech(rng, count, 3.2):
            mel = oww_features(args, y, tmp)
            win = np.stack([mel[8 * j:8 * j + 76] for j in range(t)])[:, :, :, None]
            emb = mi_run(args, "oww_embedding.onnx", {"input_1": win}, tmp)
            out.append({"x": emb.reshape(1, t, 96).astype(np.float32)})
    return out


def vad(rng, args, shape, count):
    """Silero VAD: a 32 ms window (512 samples) of speech in [-1, 1) at 16 kHz, sr = 16000, with
    the recurrent state the model itself left after the 8-31 windows before it (run window by
    window on the reference interpreter from a zero state; its output `hn`, `cn` or `stateN`
    is the next window's `h`, `c` or `state`). --zero-state: a stream's first window instead."""
    states = [n for n in shape if n not in ("input", "sr")]
    sr = np.array(16000, np.int64)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for y in speech(rng, count, 2.0):
            w = int(rng.integers(8, 32))
            st = {n: np.zeros(shape[n], np.float32) for n in states}
            for j in range(0 if args.zero_state else w):
                res = mi_run_all(args, args.model_file,
                                 dict(st, input=y[None, 512 * j:512 * (j + 1)], sr=sr), tmp)
                st = {n: res.get(n + "n", res.get(n + "N")) for n in states}
                if any(v is None for v in st.values()):
                    raise Missing("%s: no output %s" % (args.model_file, " or ".join(
                        n + "n/" + n + "N" for n in states)))
            out.append(dict(st, input=y[None, 512 * w:512 * (w + 1)], sr=sr))
    return out


def speech_clip(rng, args, shape, count):
    """Moonshine's encoder: a clip of speech in [-1, 1) at 16 kHz as its front end passes it
    (no scaling), shape[1] samples long (5 s, padded with the quiet-room noise)."""
    return [{"input_values": y[None]} for y in speech(rng, count, shape[1] / 16000.0)]


def decoder(rng, args, shape, count):
    """Moonshine's merged decoder at the step run.py measures (the 9th token, cached branch):
    the encoder (moonshine_tiny_enc.onnx) run on a clip of speech, then the decoder from the
    start token (1) on its uncached branch and 7 greedy steps on its cached one, all on the
    reference interpreter; the sample is the next step's inputs (its greedy token, the 8
    positions of self-attention cache and the first step's encoder keys and values). A clip
    whose transcript ends (end token 2) before the 9th token is replaced by the next clip, up to
    3 * count clips."""
    past = int(shape["past_key_values.0.decoder.key"][2])
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(3 * count):
            if len(out) == count:
                break
            y = speech(rng, 1, 5.0)[0]  # 5 s: the encoder's 207 frames
            enc = mi_run(args, "moonshine_tiny_enc.onnx", {"input_values": y[None]}, tmp)
            if list(enc.shape) != shape["encoder_hidden_states"]:
                raise Missing("the encoder gave %s frames, not %s" % (list(enc.shape),
                                                                      shape["encoder_hidden_states"]))
            caches = {n: np.zeros([1, 8, 1, 36], np.float32) for n in shape
                      if n.startswith("past_key_values.")}
            tok, enc_kv = 1, None
            for step in range(past + 1):
                feed = dict(caches, input_ids=np.array([[tok]], np.int64), encoder_hidden_states=enc,
                            use_cache_branch=np.array([step > 0]))
                if step == past:
                    out.append(feed)
                    break
                res = mi_run_all(args, args.model_file, feed, tmp)
                tok = int(np.argmax(res["logits"][0, -1]))
                if tok == 2:
                    break
                if enc_kv is None:
                    enc_kv = {n: res[n.replace("past_key_values", "present")] for n in caches
                              if ".encoder." in n}
                caches = {n: enc_kv[n] if ".encoder." in n else
                          res[n.replace("past_key_values", "present")] for n in caches}
    if len(out) < count:
        raise Missing("%d of %d clips had a transcript of %d tokens" % (len(out), 3 * count, past + 1))
    return out


def tokens(rng, args, shape, count):
    """BERT-style chunks for an encoder with a 30522-token WordPiece vocabulary: [CLS] (101),
    ids of the vocabulary's word range (1996-29611), [SEP] (102), then padding (id 0, mask 0) to
    the chunk's length; sentence lengths spread from a quarter of the chunk to all of it; one
    segment (token_type_ids 0). The generated encoder's weights are random, so these are
    inputs of the right kind (ids within the vocabulary, a real padding mask), not text."""
    b, s = shape["input_ids"]
    out = []
    for _ in range(count):
        ids = np.zeros((b, s), np.int64)
        mask = np.zeros((b, s), np.int64)
        for r in range(b):
            n = int(rng.integers(max(3, s // 4), s + 1))
            ids[r, 0], ids[r, n - 1] = 101, 102
            ids[r, 1:n - 1] = rng.integers(1996, 29612, n - 2)
            mask[r, :n] = 1
        out.append({"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros((b, s), np.int64)})
    return out


KINDS = {"tokens": tokens, "decoder": decoder, "blazeface": blazeface, "mlsd": mlsd, "isnet": isnet, "ocr_line": ocr_line,
         "ocr_page": ocr_page, "oww_audio": oww_audio, "oww_mel": oww_mel, "oww_emb": oww_emb,
         "vad": vad, "speech": speech_clip}


def write(d, samples):
    """One folder of k.npy for a one-input model, else one subfolder per input."""
    if os.path.isdir(d):
        shutil.rmtree(d)
    names = list(samples[0])
    for k, s in enumerate(samples):
        for name in names:
            sub = d if len(names) == 1 else os.path.join(d, name)
            os.makedirs(sub, exist_ok=True)
            np.save(os.path.join(sub, "%d.npy" % k), s[name])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HOME, ".cache/metainfer/calib"))
    ap.add_argument("--models", default=MODEL_DIR, help="the fetched models (fetch.sh)")
    ap.add_argument("--only", default=".", help="models whose name matches this regex")
    ap.add_argument("--count", type=int, default=4, help="samples per model")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--photos", help="a folder of .png/.jpg photographs instead of skimage's")
    ap.add_argument("--fetch-photos", action="store_true",
                    help="extract skimage's data images from Debian's python3-skimage .deb")
    ap.add_argument("--build", default=os.environ.get("MI_BUILD", "build"),
                    help="a build with bin/mi-run (the openWakeWord front end, Silero's state)")
    ap.add_argument("--zero-state", action="store_true",
                    help="Silero VAD samples with a zero state (needs neither model nor build)")
    args = ap.parse_args()
    if args.count < 1:
        die("--count must be at least 1")
    if args.fetch_photos:
        fetch_photos()
    missing = 0
    for name, (kind, file, shape) in MODELS.items():
        if not re.search(args.only, name):
            continue
        rng = np.random.default_rng([args.seed, zlib.crc32(name.encode())])
        args.model_file = file
        single = next(iter(shape.values())) if len(shape) == 1 else shape
        try:
            samples = KINDS[kind](rng, args, single, args.count)
        except Missing as e:
            print("calib: %s: skipped: %s" % (name, e), file=sys.stderr)
            missing += 1
            continue
        if len(shape) == 1:  # the maker's own name for a one-input model's tensor
            samples = [{next(iter(shape)): next(iter(x.values()))} for x in samples]
        d = os.path.join(args.out, name)
        write(d, samples)
        first = samples[0]
        print("%s: %d samples in %s (%s)" % (name, len(samples), d, ", ".join(
            "%s %s %s [%.3g, %.3g]" % (k, v.dtype, list(v.shape), v.min(), v.max())
            for k, v in first.items())))
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()

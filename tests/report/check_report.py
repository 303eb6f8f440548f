"""check_report.py - checks on mi-host tune's report.html for tests/report/*.sh.

  check_report.py screenshot PNG              the screenshot is not blank
  check_report.py dom DOM_HTML PARETO_JSON    the rendered DOM: ticks, units, legend, infeasible marks
  check_report.py xml OUT_DIR NAME            every SVG parses as XML; NAME round-trips everywhere
"""
import html
import json
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib
from html.parser import HTMLParser

SVG = "{http://www.w3.org/2000/svg}"


def png_pixels(path):
    """(width, height, rows of bytes, bytes per pixel) of an 8-bit non-interlaced PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat = 8, b""
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0, "unexpected PNG format"
            bpp = {2: 3, 6: 4, 0: 1, 4: 2}[colour]
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows, bpp


def screenshot(path):
    w, h, rows, bpp = png_pixels(path)
    colours, dark, total = set(), 0, 0
    for y in range(0, h, 2):
        r = rows[y]
        for x in range(0, w, 2):
            px = r[x * bpp:x * bpp + 3]
            colours.add(px)
            dark += sum(px) < 3 * 160
            total += 1
    share = dark / total
    print("screenshot %dx%d: %d colours, %.2f%% dark pixels" % (w, h, len(colours), 100 * share))
    assert len(colours) >= 8, "screenshot has %d colours: blank" % len(colours)
    assert share > 0.003, "screenshot is nearly all white (%.4f dark)" % share


class Dom(HTMLParser):
    """Per front SVG: tick labels per axis, axis labels, legend entries, trials by class."""

    def __init__(self):
        super().__init__()
        self.svgs, self.cur, self.text_into, self.sections = [], None, None, []

    def handle_starttag(self, tag, a):
        a = dict(a)
        cls = (a.get("class") or "").split()
        if tag == "section" and "run" in cls:
            self.sections.append(a)
        if tag == "svg" and "front" in cls:
            self.cur = {"device": a.get("data-device"), "model": a.get("data-model"), "xticks": [], "yticks": [],
                        "xlabel": "", "ylabel": "", "legend": [], "feasible": [], "infeasible": [], "missing": "",
                        "front_step": 0, "chosen": 0, "default": 0, "bound": 0, "axis": None}
            self.svgs.append(self.cur)
        if not self.cur:
            return
        if tag == "g" and "axis" in cls:
            self.cur["axis"] = "x" if "x" in cls else "y"
        if tag == "text" and "tick-label" in cls:
            self.text_into = (self.cur["axis"] + "ticks", None)
        if tag == "text" and "axis-label" in cls:
            self.text_into = (("x" if "x" in cls else "y") + "label", None)
        if tag == "text" and "missing" in cls:
            self.text_into = ("missing", None)
        if tag == "g" and "legend-entry" in cls:
            self.cur["legend"].append(cls[1] if len(cls) > 1 else "")
        if tag == "g" and "trial" in cls:
            self.cur["feasible" if "feasible" in cls else "infeasible"].append(int(a["data-trial"]))
        if tag == "path" and "front-step" in cls:
            self.cur["front_step"] += 1
        if tag == "g" and "marker" in cls:
            self.cur["chosen" if "chosen" in cls else "default"] += 1
        if tag == "line" and "bound" in cls:
            self.cur["bound"] += 1

    def handle_data(self, data):
        if self.text_into:
            key = self.text_into[0]
            if isinstance(self.cur[key], list):
                self.cur[key].append(data)
            else:
                self.cur[key] += data

    def handle_endtag(self, tag):
        if tag == "text":
            self.text_into = None
        if tag == "g" and self.cur:
            self.cur["axis"] = None if self.text_into is None else self.cur["axis"]
        if tag == "svg":
            self.cur = None


def dom(dom_path, pareto_path):
    text = open(dom_path).read()
    pj = json.load(open(pareto_path))
    p = Dom()
    p.feed(text)
    assert "nan" not in re.sub(r"<[^>]*>", "", text).lower().split(), "a NaN is shown"
    assert not re.search(r"(points|d|cx|cy|x|y)=\"[^\"]*nan", text, re.I), "NaN coordinates in an SVG"
    assert not re.search(r"(src|href)=\"https?:", text), "the report fetches from the network"
    fronts = {(s["model"], s["device"]): s for s in p.svgs}
    infeasible_total = 0
    for run in pj["runs"]:
        assert run["ok"], run
        s = fronts.get((run["model"], run["device"]))
        assert s, "no front plot for %s on %s" % (run["model"], run["device"])
        ok = [i + 1 for i, t in enumerate(run["trials"]) if t["ok"]]
        feas = [i + 1 for i, t in enumerate(run["trials"]) if t["feasible"]]
        assert all(t["feasible"] == (t["ok"] and not t["violated"]) for t in run["trials"]), run["trials"]
        # every successful trial is drawn, feasible ones as feasible, the rest marked infeasible
        assert sorted(s["feasible"] + s["infeasible"]) == ok, (s["feasible"], s["infeasible"], ok)
        assert sorted(s["feasible"]) == feas, (s["feasible"], feas)
        infeasible_total += len(s["infeasible"])
        # ticks with numbers on both axes, axis labels with units
        for axis in ("xticks", "yticks"):
            nums = [float(v) for v in s[axis]]
            assert len(nums) >= 3, (axis, s[axis])
            assert nums == sorted(nums) and len(set(nums)) == len(nums), (axis, nums)
        units = {"latency": "(ms", "energy": "(mJ", "memory": "(MiB", "accuracy_drop": "(%"}
        names = {"latency": "latency", "energy": "energy per inference", "memory": "peak memory", "accuracy_drop": "accuracy drop"}
        has = {k for k in units if any(t["ok"] and t["objectives"].get(k) is not None for t in run["trials"])}
        for label in (s["xlabel"], s["ylabel"]):
            assert any(label.startswith(names[k] + " " + units[k]) for k in has), (label, has)
        # the legend names the marks
        for kind in ("feasible", "infeasible", "chosen"):
            assert kind in s["legend"], (kind, s["legend"])
        if any(o not in has for o in pj["objectives"]):
            assert "figure here (" in s["missing"], s
        else:
            assert s["front_step"] == 1, s
        if run["front"]:
            assert s["chosen"] == 1, s
        sec = [x for x in p.sections if x.get("data-device") == run["device"] and x.get("data-model") == run["model"]]
        assert len(sec) == 1, sec
    assert infeasible_total > 0, "the run has no infeasible trial to mark"
    assert '<table class="summary">' in text and "details" in text
    print("front plots checked:", {"%s@%s" % k: (len(v["xticks"]), len(v["yticks"]), len(v["infeasible"])) for k, v in fronts.items()})


def xml(out_dir, name):
    import glob
    import os
    page = open(os.path.join(out_dir, "report.html"), encoding="utf-8").read()
    svgs = re.findall(r"<svg\b.*?</svg>", page, re.S)
    files = sorted(glob.glob(os.path.join(out_dir, "*.svg")))
    assert svgs and files, (len(svgs), files)
    seen = 0
    for i, s in enumerate(svgs + [open(f, encoding="utf-8").read() for f in files]):
        root = ET.fromstring(s)  # raises on any SVG that is not well-formed XML
        assert root.tag == SVG + "svg", root.tag
        if root.get("class") == "front":
            assert root.get("data-model") == name, (root.get("data-model"), name)
            title = root.find(SVG + "title").text
            assert title.startswith(name + " on "), (title, name)
            seen += 1
        for t in root.iter(SVG + "title"):
            assert "nan" not in t.text.lower().split(), t.text
    assert seen >= 2, seen
    # the page as HTML: the name shows as itself in the headings
    class H(HTMLParser):
        def __init__(self):
            super().__init__()
            self.h2, self.inside = [], False

        def handle_starttag(self, tag, a):
            self.inside = tag == "h2"

        def handle_data(self, data):
            if self.inside:
                self.h2.append(data)

        def handle_endtag(self, tag):
            self.inside = False
    h = H()
    h.feed(page)
    assert any(t.startswith(name + " on ") for t in h.h2), (h.h2, name)
    assert name not in page, "the name appears unescaped in report.html"
    assert html.escape(name, quote=True).replace("&#x27;", "&#39;") in page
    pj = json.load(open(os.path.join(out_dir, "pareto.json"), encoding="utf-8"))
    assert all(r["model"] == name for r in pj["runs"]), [r["model"] for r in pj["runs"]]
    print("%d SVGs parsed (%d inline, %d files); the name %r round-trips" % (len(svgs) + len(files), len(svgs), len(files), name))


if __name__ == "__main__":
    {"screenshot": screenshot, "dom": dom, "xml": xml}[sys.argv[1]](*sys.argv[2:])

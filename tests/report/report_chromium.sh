# report_chromium.sh - tunes a small zoo model on two devices, opens report.html in headless
# Chromium (offline) and checks from the rendered DOM that every device's front is drawn (SVG
# trial points, the front line, the chosen point) and that the chosen configurations are shown.
set -euo pipefail
B=${MI_BUILD:?}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "skip: $CHROMIUM is not installed"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/bin/mi-zoo" mlp --out "$T/net.onnx" >/dev/null
cat > "$T/recipe.yaml" <<'YAML'
version: 1
model: net.onnx
pool: [ {plugin: npu-stub}, {plugin: blis-cpu} ]
constraints: { latency_ms: 1000, accuracy_drop: 0.5 }
objectives: [latency, accuracy_drop]
budget: { measurements: 4, seconds: 60 }
search: { strategy: random, seed: 2 }
measure: { repeats: 5, warmup: 1 }
YAML
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipe.yaml" --out "$T/out" 2>"$T/log" || { cat "$T/log"; exit 1; }
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$(mktemp -d -p "$T")" --dump-dom "file://$T/out/report.html" >"$T/dom.html" 2>"$T/chromium.log" \
  || { echo "chromium failed"; tail -20 "$T/chromium.log"; exit 1; }
python3 - "$T/dom.html" "$T/out/pareto.json" <<'PY'
import json, sys
from html.parser import HTMLParser
dom, pj = sys.argv[1], json.load(open(sys.argv[2]))
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []; self.svg = {}; self.chosen = {}; self.cur = None; self.section = None
    def handle_starttag(self, tag, a):
        a = dict(a)
        if tag == "section" and a.get("class") == "run": self.section = a.get("data-device")
        if tag == "svg" and a.get("class") == "front":
            self.cur = a["data-device"]; self.svg[self.cur] = {"trial": 0, "chosen": 0, "pareto": 0}
        if self.cur and tag in ("circle", "polyline"):
            c = a.get("class")
            if c in self.svg[self.cur]: self.svg[self.cur][c] += 1
        if tag == "table" and a.get("class") == "chosen-config": self.chosen[self.section] = a.get("data-config")
    def handle_endtag(self, tag):
        if tag == "svg": self.cur = None
p = P(); p.feed(open(dom).read())
assert p.svg, "no front SVG in the rendered DOM"
for run in pj["runs"]:
    assert run["ok"], run
    d = run["device"]
    assert d in p.svg, "no front drawn for %s: %s" % (d, p.svg)
    ok = [t for t in run["trials"] if t["ok"]]
    assert p.svg[d]["trial"] == len(ok), (d, p.svg[d], len(ok))
    if run["front"]:
        assert p.svg[d]["chosen"] == 1, (d, p.svg[d])
        assert p.chosen.get(d) == run["front"][0]["config_id"], (d, p.chosen)
print("fronts drawn:", p.svg, "chosen:", p.chosen)
PY
echo ok

# report_xml.sh - a model whose name holds quotes, an apostrophe, angle brackets and an ampersand:
# every SVG of the tuning report (inline in report.html and the pareto-*.svg files) parses as XML
# (python3's xml.etree; xmllint too when installed), and the name comes back unchanged from the
# SVG titles and attributes, the page's headings and pareto.json.
set -euo pipefail
B=${MI_BUILD:?}
S=${MI_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
NAME='we"ird <net> & Co'"'"'s.onnx'
"$B/bin/mi-zoo" mlp --out "$T/$NAME" >/dev/null
cat > "$T/recipe.yaml" <<'YAML'
version: 1
model: ['we"ird <net> & Co''s.onnx']
pool: [ {plugin: npu-stub}, {plugin: blis-cpu} ]
constraints: { accuracy_drop: 0.002 }
objectives: [latency, energy, accuracy_drop]
budget: { measurements: 5, seconds: 60 }
search: { strategy: random, seed: 4, model: [precision] }
measure: { repeats: 5, warmup: 1 }
YAML
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipe.yaml" --out "$T/out" 2>"$T/log" || { cat "$T/log"; exit 1; }
python3 "$S/tests/report/check_report.py" xml "$T/out" "$NAME"
if command -v xmllint >/dev/null; then
  xmllint --noout "$T"/out/*.svg
  echo "xmllint: $(ls "$T"/out/*.svg | wc -l) SVG files well-formed"
fi
echo ok

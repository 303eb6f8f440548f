# report_chromium.sh - tunes two zoo models on a pool of two devices (npu-stub has an energy
# counter, blis-cpu has none), opens report.html in headless Chromium (offline) and checks the
# screenshot is not blank and the rendered DOM has, per (model, device), a front plot with
# numbered ticks on both axes, axis labels with units, a legend, every successful trial drawn
# with the infeasible ones marked as such (matching pareto.json's `feasible`), the chosen point,
# and on blis-cpu a note that energy has no figure there instead of NaN coordinates.
set -euo pipefail
B=${MI_BUILD:?}
S=${MI_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "skip: $CHROMIUM is not installed (tools/install-deps.sh installs it)"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/bin/mi-zoo" mlp --out "$T/mlp.onnx" >/dev/null
"$B/bin/mi-zoo" resnet --out "$T/resnet.onnx" --width 0.25 --depth 1 --resolution 16 >/dev/null
# The accuracy bound is tight so that quantised configurations break it: infeasible trials.
cat > "$T/recipe.yaml" <<'YAML'
version: 1
model: [resnet.onnx, mlp.onnx]
pool: [ {plugin: npu-stub}, {plugin: blis-cpu} ]
constraints: { latency_ms: 1000, peak_memory_mb: 4096, accuracy_drop: 0.002 }
objectives: [latency, energy]
budget: { measurements: 8, seconds: 120 }
search: { strategy: nsga2, seed: 1, population: 4, model: [precision, fuse, layout] }
measure: { repeats: 5, warmup: 1 }
YAML
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/recipe.yaml" --out "$T/out" 2>"$T/log" || { cat "$T/log"; exit 1; }
# The terminal says which device has no energy figure.
grep -q "on blis-cpu:0: no energy figure (the device has no energy counter)" "$T/log" || { cat "$T/log"; exit 1; }
run_chromium() {
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d -p "$T")" "$@" "file://$T/out/report.html" 2>>"$T/chromium.log" \
    || { echo "chromium failed"; tail -20 "$T/chromium.log"; exit 1; }
}
run_chromium --dump-dom >"$T/dom.html"
run_chromium --hide-scrollbars --window-size=1100,1600 --screenshot="$T/shot.png" >/dev/null
python3 "$S/tests/report/check_report.py" screenshot "$T/shot.png"
python3 "$S/tests/report/check_report.py" dom "$T/dom.html" "$T/out/pareto.json"
echo ok

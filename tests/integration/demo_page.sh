#!/usr/bin/env bash
# demo_page.sh - `make demo` (tools/demo.sh) prints a page, not a log: no plugin dump, no
# deployment.yaml, the paths of the files it wrote; and its run step runs each device's tuned
# configuration from the deployment table, not the generated model (issue 22, finding 7).
set -euo pipefail
: "${MI_BUILD:?}" "${MI_SRC:?}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "demo_page: $*" >&2; exit 1; }
unset MI_PLUGIN_PATH

rc=0
DEMO_OUT="$T/demo" DEMO_BUDGET=3 bash "$MI_SRC/tools/demo.sh" "$MI_BUILD" > "$T/page" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$T/page"; fail "tools/demo.sh exited $rc"; }
lines=$(wc -l < "$T/page")
[ "$lines" -le 40 ] || { head -50 "$T/page"; fail "the demo printed $lines lines, want a page (<= 40)"; }
grep -Eq '^ *(knob|variant|counter|  path) ' "$T/page" && fail "the demo printed the plugin listing"
grep -Eq '^ *(deployments:|config_id:|configuration:)' "$T/page" && fail "the demo printed deployment.yaml"
grep -q "$T/demo/tune/deployment.yaml" "$T/page" || fail "the demo does not say where deployment.yaml is"
grep -q "report.html" "$T/page" || fail "the demo does not say where the report is"
grep -q "$T/demo/tune.log" "$T/page" || fail "the demo does not say where tune's log is"

# Each device that has a chosen configuration ran it: the page names the table's config_id.
python3 - "$T/demo/tune/deployment.yaml" "$T/page" <<'PY'
import re, sys
table, page = open(sys.argv[1]).read(), open(sys.argv[2]).read()
chosen = {}
# Each entry starts "- model:" (at any indent); values may be quoted or plain.
for entry in re.split(r'\n\s*- (?=model:)', table)[1:]:
    dev = re.search(r'device: "?([^"\n]+)"?', entry)
    cid = re.search(r'chosen:\s*\n\s*config_id: "?([0-9a-f]+)"?', entry)
    if dev and cid:
        chosen[dev.group(1)] = cid.group(1)
if not chosen:
    sys.exit("demo_page: the deployment table has no chosen configuration")
for dev, cid in chosen.items():
    if not re.search(r'^\s*%s\s+configuration %s: median' % (re.escape(dev), cid), page, re.M):
        sys.exit("demo_page: the page does not show %s running its tuned configuration %s" % (dev, cid))
print("demo_page: %d device(s) ran their tuned configuration" % len(chosen))
PY
echo "demo_page: a page of $lines lines"

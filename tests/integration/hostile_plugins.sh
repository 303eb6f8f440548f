#!/usr/bin/env bash
# hostile_plugins.sh - `mi-host plugins` over the hostile plugins (tests/plugins/hp_plugin.c):
# each one that crashes, hangs, exits, aborts, prints to stdout or forges a host handle while
# loading or in destroy is listed as refused with the step and the reason, the listing finishes
# (a hanging create is given up on), and --json stdout stays one JSON object; the ones that only
# misbehave later (prepare, run, check_config) load.
set -euo pipefail
: "${MI_BUILD:?}"
host="$MI_BUILD/bin/mi-host"
hostile="$MI_BUILD/tests/plugins/hostile"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "hostile_plugins: $*" >&2; exit 1; }
export MI_LOAD_TIMEOUT_S=6 # a healthy preflight under the sanitizers at load 18 took over 2 s

dirs=$(ls -d "$hostile"/*/ | tr '\n' ':')
[ "$(ls -d "$hostile"/*/ | wc -l)" -ge 45 ] || fail "expected 45 hostile plugin folders under $hostile"
rc=0
MI_PLUGIN_PATH=$dirs timeout 300 "$host" --json plugins >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 0 ] || fail "mi-host plugins exited $rc: $(tail -3 "$tmp/err")"
python3 - "$tmp/out" <<'PY' || fail "listing is wrong (stderr: $(tail -3 "$tmp/err"))"
import json, re, sys
doc = json.load(open(sys.argv[1]))
loaded = {p["name"] for p in doc["plugins"]}
refused = {re.search(r"(hostile-[a-z-]+)\.mi-plugin$", r["path"]).group(1): r["reason"]
           for r in doc["rejected"]}
want = {"crash": "crashed in {s}", "abort": "crashed in {s}", "hang": "hung in {s}",
        "exit": "exited with status 7 in {s}", "stdout": "writes to stdout",
        "forged": "handle the host never gave out"}
for kind, text in want.items():
    for stage in ("entry", "create", "describe", "destroy"):
        name = f"hostile-{kind}-{stage}"
        assert name not in loaded, f"{name} was loaded"
        assert name in refused, f"{name} is neither loaded nor refused"
        assert text.format(s=stage) in refused[name], f"{name}: {refused[name]}"
    for stage in ("prepare", "run", "check"):
        assert f"hostile-{kind}-{stage}" in loaded, f"hostile-{kind}-{stage} not loaded"
for kind in ("wrong", "zero-time", "neg-time"):
    assert f"hostile-{kind}-run" in loaded
PY
echo "hostile_plugins: ok"

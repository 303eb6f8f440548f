#!/usr/bin/env bash
# mi_host_plugins.sh - `mi-host plugins`: text and JSON listings of good and refused plugins,
# usage errors (exit 2), MI_PLUGIN_PATH, the default folder and MI_LOADER_DEBUG tracing.
set -euo pipefail
: "${MI_BUILD:?}"
host="$MI_BUILD/bin/mi-host"
mixed="$MI_BUILD/tests/plugins/mixed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "mi_host_plugins: $*" >&2; exit 1; }

expect_rc() { # expect_rc CODE CMD...
  local want=$1 rc=0
  shift
  "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" = "$want" ] || fail "'$*' exited $rc, wanted $want: $(cat "$tmp/err")"
}

expect_rc 0 "$host" --help
grep -q "plugins" "$tmp/out" || fail "--help does not list the plugins command"
expect_rc 2 "$host"
expect_rc 2 "$host" frobnicate
grep -q "unknown command 'frobnicate'" "$tmp/err" || fail "no message for an unknown command"
expect_rc 2 "$host" --bogus plugins
expect_rc 2 "$host" --plugins
expect_rc 2 "$host" --plugins "$mixed" plugins extra
expect_rc 1 "$host" --plugins "$tmp/does-not-exist" plugins
grep -q "does-not-exist" "$tmp/err" || fail "a missing plugin folder is not named"

# Text: the good plugins with their details, the bad ones with reasons.
expect_rc 0 "$host" --plugins "$mixed" plugins
for want in "plugin template 1.0.0 (ABI 1.4" "device 0: template-cpu" \
            "chunk: int {64,256,1024,4096} default 1024" "relu.scalar: op Relu" \
            "last_run_time (host monotonic clock): timer, unit 'ns'" "plugin test-older" \
            "rejected (11):" "missing entry symbol" "negotiation refused: test plugin needs" \
            "table too small" "dlopen error" "create failed" "wrong major"; do
  grep -qF "$want" "$tmp/out" || fail "text listing lacks '$want'"
done

# JSON: one object, parsed by a real JSON parser.
expect_rc 0 "$host" --plugins "$mixed" --json plugins
python3 - "$tmp/out" <<'PY' || fail "JSON listing is wrong"
import json, sys
doc = json.load(open(sys.argv[1]))
names = sorted(p["name"] for p in doc["plugins"])
assert names == ["template", "test-null-optional", "test-older"], names
t = next(p for p in doc["plugins"] if p["name"] == "template")
assert t["abi"] == "1.4" and t["path"].endswith("libmi_test_template.so")
d = t["devices"][0]
assert d["kind"] == "cpu" and d["dtypes"] == ["float32"] and d["compute_units"] == 1
assert d["knobs"][0]["name"] == "chunk" and d["knobs"][0]["default"] == 1024
assert d["knobs"][0]["domain"]["values"] == [64, 256, 1024, 4096]
assert [v["id"] for v in d["variants"]] == ["relu.scalar", "add.scalar"]
assert d["counters"][0]["modeled"] is False and d["counters"][0]["unit"] == "ns"
assert len(doc["rejected"]) == 11
reasons = {r["path"].rsplit("/", 1)[1]: r["reason"] for r in doc["rejected"]}
assert "missing entry symbol" in reasons["test-no-entry.mi-plugin"]
assert "duplicate" in reasons["zz-duplicate.mi-plugin"]
PY
# `plugins --json` after the command works too.
expect_rc 0 "$host" --plugins "$mixed" plugins --json
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out" || fail "plugins --json"

# MI_PLUGIN_PATH when no --plugins is given.
MI_PLUGIN_PATH="$MI_BUILD/tests/plugins/template:$MI_BUILD/tests/plugins/older" \
  expect_rc 0 "$host" plugins
grep -q "^plugin template" "$tmp/out" && grep -q "^plugin test-older" "$tmp/out" ||
  fail "MI_PLUGIN_PATH not used"

# Default: <exe dir>/../plugins. A copy of mi-host next to a plugins/ folder of our own.
mkdir -p "$tmp/inst/bin" "$tmp/inst/plugins"
cp "$host" "$tmp/inst/bin/"
cp "$MI_BUILD/tests/plugins/template/"* "$tmp/inst/plugins/"
(unset MI_PLUGIN_PATH; expect_rc 0 "$tmp/inst/bin/mi-host" plugins)
grep -q "^plugin template" "$tmp/out" || fail "default plugins folder not used"

# MI_LOADER_DEBUG traces each step to stderr; stdout stays the listing.
MI_LOADER_DEBUG=1 expect_rc 0 "$host" --plugins "$mixed" --json plugins
for want in "mi-loader: scanning" "mi-loader: manifest" "dlopen ok" "negotiated" "rejected"; do
  grep -qF "$want" "$tmp/err" || fail "MI_LOADER_DEBUG trace lacks '$want'"
done
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out" || fail "trace leaked into stdout"
echo "mi_host_plugins: ok"

#!/usr/bin/env bash
# check_policy.sh DIR: the correct test plugin in DIR (conformance/break0), installed in ways
# mi-host refuses, fails mi-conform with the host's reason, and what the host would not open no
# rule opens either (skipped). Cases: a world-writable library, a world-writable folder, a
# manifest of another ABI major, a library path with "../", a name the plugin does not answer
# to, and a link that leads out of the plugin's folder (loaded by the host, failed by R16).
set -euo pipefail
src=$1
lib=$(cd "$src" && ls libmi_conform_*.so)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# case NAME MANIFEST-LINES: a fresh folder with the library and this manifest.
case_dir() {
  local d="$tmp/$1"
  mkdir -p "$d"
  cp "$src/$lib" "$d/"
  printf '%s\n' "$2" >"$d/plugin.mi-plugin"
  echo "$d"
}

# run DIR EXPECT RULES...: mi-conform --json on DIR (only RULES when given), then the checks in
# EXPECT, a Python expression over `rules` ({number: (status, reason)}).
run() {
  local d=$1 expect=$2
  shift 2
  local args=() out rc
  for r in "$@"; do args+=(--rule "$r"); done
  out=$(mktemp -p "$tmp")
  set +e
  "$MI_BUILD/bin/mi-conform" --plugins "$d" --json --timeout 60 "${args[@]}" >"$out"
  rc=$?
  set -e
  python3 - "$out" "$rc" "$expect" "$d" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rc, expect, where = int(sys.argv[2]), sys.argv[3], sys.argv[4]
rules = {r["rule"]: (r["status"], r["reason"]) for r in doc["plugins"][0]["rules"]}
for n, (st, why) in sorted(rules.items()):
    print("  R%-2d %-4s %s" % (n, st, why))
def skipped_unopened(keep=(12, 16)):
    return all(st == "skip" and "not opened" in why for n, (st, why) in rules.items() if n not in keep)
if not eval(expect):
    sys.exit("%s: expected %s" % (where, expect))
if rc != 1:
    sys.exit("%s: exit status %d, expected 1 (a rule failed)" % (where, rc))
print("ok: %s" % where)
PY
}

manifest="name: conform-test
library: $lib
abi_major: 1"

d=$(case_dir ww_lib "$manifest")
chmod o+w "$d/$lib"
run "$d" 'rules[16][0] == "fail" and "world-writable" in rules[16][1] and rules[12][0] == "fail" and skipped_unopened()'

d=$(case_dir ww_dir "$manifest")
chmod 777 "$d"
run "$d" 'rules[16][0] == "fail" and "world-writable" in rules[16][1] and rules[12][0] == "fail" and skipped_unopened()'

d=$(case_dir abi2 "name: conform-test
library: $lib
abi_major: 2")
run "$d" 'rules[16][0] == "fail" and "major" in rules[16][1] and rules[12][0] == "fail" and skipped_unopened()'

mkdir -p "$tmp/escape/plugin" "$tmp/escape/elsewhere"
cp "$src/$lib" "$tmp/escape/elsewhere/"
printf 'name: conform-test\nlibrary: ../elsewhere/%s\nabi_major: 1\n' "$lib" >"$tmp/escape/plugin/p.mi-plugin"
run "$tmp/escape/plugin" 'rules[16][0] == "fail" and "escapes" in rules[16][1] and rules[12][0] == "fail" and skipped_unopened()'

d=$(case_dir renamed "name: conform-other
library: $lib
abi_major: 1")
run "$d" 'rules[12][0] == "fail" and "manifest names" in rules[12][1] and rules[16][0] == "pass"' 12 16

mkdir -p "$tmp/link/plugin" "$tmp/link/elsewhere"
cp "$src/$lib" "$tmp/link/elsewhere/"
ln -s ../elsewhere/"$lib" "$tmp/link/plugin/$lib"
printf '%s\n' "$manifest" >"$tmp/link/plugin/p.mi-plugin"
run "$tmp/link/plugin" 'rules[16][0] == "fail" and "outside the plugin" in rules[16][1] and rules[1][0] == "pass"' 1 16

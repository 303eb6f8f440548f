#!/usr/bin/env bash
# check_hostile.sh DIR: mi-conform over the hostile plugins in DIR (tests/plugins/hp_plugin.c,
# one folder per <kind>-<stage>): each fails the rule it breaks with a reason, and mi-conform
# itself always finishes with exit status 1 and one well-formed JSON report, whatever the plugin
# does (crash, hang, exit, abort, stdout, forged handle, lying timer).
set -euo pipefail
dir=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MI_LOAD_TIMEOUT_S=5 # the host's preflight deadline (R12), below the rule's own
fails=0

# check CASE EXPECT RULES...: EXPECT is a Python expression over `rules`
# ({number: (status, reason)}).
check() {
  local c=$1 expect=$2
  shift 2
  local args=() rc
  for r in "$@"; do args+=(--rule "$r"); done
  if [ ! -d "$dir/$c" ]; then
    echo "FAIL $c: no such hostile plugin folder"
    fails=$((fails + 1))
    return
  fi
  set +e
  timeout 300 "$MI_BUILD/bin/mi-conform" --plugins "$dir/$c" --json --timeout 8 "${args[@]}" \
    >"$tmp/out.json" 2>"$tmp/err.txt"
  rc=$?
  set -e
  if ! python3 - "$tmp/out.json" "$rc" "$expect" "$c" <<'PY'; then
import json, sys
path, rc, expect, case = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    doc = json.load(open(path))
except ValueError as e:
    sys.exit("%s: mi-conform's report is not JSON (%s), exit %d" % (case, e, rc))
rules = {r["rule"]: (r["status"], r["reason"]) for r in doc["plugins"][0]["rules"]}
for n, (st, why) in sorted(rules.items()):
    print("  %s R%-2d %-4s %s" % (case, n, st, why))
if rc != 1:
    sys.exit("%s: exit status %d, expected 1" % (case, rc))
if not eval(expect):
    sys.exit("%s: expected %s" % (case, expect))
print("ok: %s" % case)
PY
    fails=$((fails + 1))
  fi
}

# Writes to the host's output, anywhere: R13 (and R12 where mi-host's preflight sees it).
check stdout-entry 'rules[13][0] == "fail" and "stdout" in rules[13][1] and rules[12][0] == "fail"' 12 13
check stdout-prepare 'rules[13][0] == "fail" and "hostile plugin" in rules[13][1]' 13
check stdout-run 'rules[13][0] == "fail" and "a run of variant" in rules[13][1]' 13
# Forged host handles: R14, and no rule crashes on them.
check forged-create 'rules[14][0] == "fail" and "entry and create" in rules[14][1] and rules[12][0] == "fail"' 7 12 14
check forged-run 'rules[14][0] == "fail" and rules[7][0] == "pass" and rules[11][0] == "pass"' 7 11 14
# Lying timers: R15 with the host's own check.
check zero-time-run 'rules[15][0] == "fail" and "0 ns" in rules[15][1]' 15
check neg-time-run 'rules[15][0] == "fail" and "implausible device time" in rules[15][1]' 15
# Wrong answers: R7.
check wrong-run 'rules[7][0] == "fail" and "relative L2" in rules[7][1]' 7
# Crashes, hangs, exits and aborts fail rules with the signal or the deadline, never mi-conform.
check crash-run 'rules[7][0] == "fail" and "signal" in rules[7][1] and rules[13][0] == "fail"' 7 13
check crash-entry 'all(st == "fail" for st, _ in rules.values()) and "signal" in rules[2][1]' 2 12 14
check hang-run 'rules[7][0] == "fail" and "timed out" in rules[7][1]' 7
check hang-create 'rules[12][0] == "fail" and rules[13][0] == "fail" and "timed out" in rules[13][1]' 12 13
check exit-prepare 'rules[7][0] == "fail" and "ended the process" in rules[7][1]' 7
check abort-describe 'rules[5][0] in ("fail", "skip") and rules[12][0] == "fail" and rules[14][0] == "fail"' 5 12 14

[ "$fails" -eq 0 ] || { echo "$fails hostile case(s) not handled"; exit 1; }
echo "all hostile cases handled"

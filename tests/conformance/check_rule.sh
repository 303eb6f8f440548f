#!/usr/bin/env bash
# check_rule.sh N DIR: mi-conform on the test plugin in DIR fails rule N and no other rule
# (N = 0: fails none; R12, the host's own load, may fail beside N when the host refuses the
# same break).
set -euo pipefail
n=$1
dir=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
set +e
"$MI_BUILD/bin/mi-conform" --plugins "$dir" --json --timeout 60 >"$out"
rc=$?
set -e
python3 - "$n" "$rc" "$out" <<'PY'
import json, sys
n, rc, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
doc = json.load(open(path))
rules = doc["plugins"][0]["rules"]
failed = [r["rule"] for r in rules if r["status"] == "fail"]
for r in rules:
    print("R%-2d %-4s %s" % (r["rule"], r["status"], r["reason"]))
want = [n] if n else []
# R12 loads the plugin as mi-host does, whose loader validates descriptions too: a break of
# another rule that the host itself refuses may fail R12 as well, with the host's reason.
r12 = [r for r in rules if r["rule"] == 12]
if n not in (0, 12) and failed == [n, 12] and "mi-host refuses it" in r12[0]["reason"]:
    failed = [n]
if failed != want:
    sys.exit("expected failing rules %s, got %s" % (want, failed))
if (rc != 0) != bool(n):
    sys.exit("exit status %d does not match" % rc)
if n and not [r for r in rules if r["rule"] == n][0]["reason"]:
    sys.exit("rule %d failed without a reason" % n)
print("ok: rule set %s" % (want or "none"))
PY

#!/usr/bin/env bash
# readme_tour.sh - the README's "A short tour" runs as written: every command line of its sh
# blocks, taken from README.md itself, runs from a scratch copy of the repository root (build/
# is this build, configs/ a copy) with no extra options, in order, and succeeds without a
# failed measurement; what it says it writes is there (issue 22: the tour cannot rot).
set -euo pipefail
: "${MI_BUILD:?}" "${MI_SRC:?}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "readme_tour: $*" >&2; exit 1; }
unset MI_PLUGIN_PATH

# The tour's command lines: the ```sh blocks between "## A short tour" and the next "## ",
# comments and blank lines dropped.
python3 - "$MI_SRC/README.md" > "$T/tour" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r'^## A short tour\n(.*?)(?=^## )', text, re.S | re.M)
if not m:
    sys.exit("README.md has no '## A short tour' section")
for block in re.findall(r'^```sh\n(.*?)^```', m.group(1), re.S | re.M):
    for line in block.splitlines():
        line = re.sub(r'\s+#.*$', '', line).strip()
        if line:
            print(line)
PY
n=$(wc -l < "$T/tour")
[ "$n" -ge 7 ] || fail "found only $n commands in the README's tour: $(cat "$T/tour")"
grep -v '^build/bin/' "$T/tour" && fail "a tour command does not run a built program (above)"

mkdir "$T/root"
ln -s "$MI_BUILD" "$T/root/build"
cp -r "$MI_SRC/configs" "$T/root/configs"
i=0
while IFS= read -r line; do
  i=$((i + 1))
  rc=0
  (cd "$T/root" && bash -c "$line") > "$T/out.$i" 2> "$T/err.$i" < /dev/null || rc=$?
  [ "$rc" = 0 ] || fail "tour command $i exited $rc: $line
$(tail -5 "$T/err.$i")"
  if grep -Eiq 'failed|quarantined|error' "$T/err.$i"; then
    fail "tour command $i reported a failure: $line
$(grep -Ei 'failed|quarantined|error' "$T/err.$i" | head -5)"
  fi
  echo "ok $i: $line"
done < "$T/tour"

# What the tour's text promises.
cd "$T/root"
[ -s out/logits.npy ] || fail "mi-run --output-dir out/ wrote no out/logits.npy"
for f in deployment.yaml pareto.json report.html; do
  [ -s "out/tune/$f" ] || fail "mi-host tune wrote no out/tune/$f"
done
grep -q "chosen:" out/tune/deployment.yaml || fail "the tuned deployment table has no chosen configuration"
grep -hq "^deployment out/tune/deployment.yaml: .* configuration [0-9a-f]" "$T"/out.* ||
  fail "mi-run --deployment did not report the tuned configuration"
echo "readme_tour: all $n commands of the README's tour ran"

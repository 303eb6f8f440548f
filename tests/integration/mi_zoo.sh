#!/usr/bin/env bash
# mi_zoo.sh - mi-zoo's command line: --list, deterministic files per seed, bad options exit 2.
set -u
ZOO="${MI_BUILD:?MI_BUILD not set}/bin/mi-zoo"
tmp=$(mktemp -d /tmp/mi-zoo-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

[ -x "$ZOO" ] || { echo "FAIL: $ZOO not built" >&2; exit 1; }

"$ZOO" --help > "$tmp/help" || bad "--help exited $?"
grep -q -- "--resolution" "$tmp/help" || bad "--help does not mention --resolution"

"$ZOO" --list > "$tmp/list" || bad "--list exited $?"
families="mobilenetv2 mobilenetv3 resnet transformer mlp kws"
for f in $families; do
  grep -q "^$f " "$tmp/list" || bad "--list lacks $f"
done
[ "$(wc -l < "$tmp/list")" -eq 6 ] || bad "--list has $(wc -l < "$tmp/list") lines, want 6"

# Small non-default shapes keep this quick; the unit test runs the models themselves.
declare -A small=(
  [mobilenetv2]="--width 0.5 --depth 3 --resolution 32"
  [mobilenetv3]="--width 0.5 --depth 3 --resolution 32"
  [resnet]="--width 0.5 --depth 2 --resolution 32"
  [transformer]="--width 0.5 --depth 1 --resolution 8"
  [mlp]="--width 0.5 --depth 1 --resolution 8"
  [kws]="--width 0.5 --depth 1 --resolution 20"
)
for f in $families; do
  # shellcheck disable=SC2086
  "$ZOO" "$f" --out "$tmp/$f-a.onnx" --seed 7 ${small[$f]} > "$tmp/out" || bad "$f: exit $?"
  grep -q "wrote $tmp/$f-a.onnx" "$tmp/out" || bad "$f: no summary line: $(cat "$tmp/out")"
  # shellcheck disable=SC2086
  "$ZOO" "$f" --seed 7 ${small[$f]} --out "$tmp/$f-b.onnx" > /dev/null || bad "$f: exit $?"
  # shellcheck disable=SC2086
  "$ZOO" "$f" --out "$tmp/$f-c.onnx" --seed 8 ${small[$f]} > /dev/null || bad "$f: exit $?"
  "$ZOO" "$f" --out "$tmp/$f-d.onnx" --seed 7 --batch 2 > /dev/null || bad "$f: exit $?"
  [ -s "$tmp/$f-a.onnx" ] || bad "$f: empty or missing output"
  cmp -s "$tmp/$f-a.onnx" "$tmp/$f-b.onnx" || bad "$f: same seed, different bytes"
  cmp -s "$tmp/$f-a.onnx" "$tmp/$f-c.onnx" && bad "$f: seeds 7 and 8 gave identical files"
  cmp -s "$tmp/$f-a.onnx" "$tmp/$f-d.onnx" && bad "$f: other options gave an identical file"
done
"$ZOO" mobilenetv2 --out "$tmp/b.onnx" --batch 2 > "$tmp/out"
grep -q "input \[2,3,96,96\], output \[2,100\]" "$tmp/out" || bad "batch 2 not in the summary"

# Each bad invocation: exit 2, exactly one line on stderr, nothing on stdout, no file left.
expect_bad() {
  local want="$1"; shift
  "$ZOO" "$@" > "$tmp/bad.out" 2> "$tmp/bad.err"
  local rc=$?
  [ $rc -eq 2 ] || bad "'$*' exited $rc, want 2"
  [ "$(wc -l < "$tmp/bad.err")" -eq 1 ] || bad "'$*' printed $(wc -l < "$tmp/bad.err") error lines"
  grep -qi -- "$want" "$tmp/bad.err" || bad "'$*': message lacks '$want': $(cat "$tmp/bad.err")"
  [ -s "$tmp/bad.out" ] && bad "'$*' printed on stdout"
  [ -e "$tmp/bad.onnx" ] && { bad "'$*' left $tmp/bad.onnx"; rm -f "$tmp/bad.onnx"; }
}
expect_bad "alexnet"    alexnet --out "$tmp/bad.onnx"
expect_bad "width"      mlp --out "$tmp/bad.onnx" --width 0
expect_bad "width"      mlp --out "$tmp/bad.onnx" --width -1
expect_bad "width"      mlp --out "$tmp/bad.onnx" --width abc
expect_bad "width"      mlp --out "$tmp/bad.onnx" --width 100
expect_bad "depth"      resnet --out "$tmp/bad.onnx" --depth 0
expect_bad "depth"      resnet --out "$tmp/bad.onnx" --depth 1000
expect_bad "resolution" mobilenetv2 --out "$tmp/bad.onnx" --resolution 16
expect_bad "resolution" resnet --out "$tmp/bad.onnx" --resolution 8
expect_bad "resolution" kws --out "$tmp/bad.onnx" --resolution 5
expect_bad "batch"      mlp --out "$tmp/bad.onnx" --batch 0
expect_bad "seed"       mlp --out "$tmp/bad.onnx" --seed x1
expect_bad "--out"      mlp
expect_bad "family"     --out "$tmp/bad.onnx"
expect_bad "unknown option" mlp --out "$tmp/bad.onnx" --colour blue
expect_bad "needs a value" mlp --out
: > "$tmp/afile"
expect_bad "cannot write" mlp --out "$tmp/afile/m.onnx"
# A folder that does not exist yet is created, as the README's recipe comment expects.
"$ZOO" mlp --out "$tmp/no/such/dir/m.onnx" > /dev/null 2>&1 && [ -s "$tmp/no/such/dir/m.onnx" ] ||
  bad "--out into a missing folder did not create it"

# The write is atomic: no temporary files stay behind after successes or failures.
ls "$tmp" | grep -q '\.tmp\.' && bad "temporary files left: $(ls "$tmp")"

[ $fail -eq 0 ] && echo "mi_zoo.sh: all checks passed"
exit $fail

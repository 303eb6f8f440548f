#!/usr/bin/env bash
# cli_help.sh - one argument convention (issue 22, finding 4): `mi-host help COMMAND` and
# `mi-host COMMAND --help` print the same full help, with every option of the command's usage
# line described; every program answers --help; mi-run's options: --bogus is unknown (not
# "needs a value"), `--deployment --help` is the deployment help, and both modes write outputs
# with --output-dir (--output kept as an alias).
set -euo pipefail
: "${MI_BUILD:?}" "${MI_SRC:?}"
B=$MI_BUILD/bin
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "cli_help: $*" >&2; exit 1; }

# run CODE CMD...: runs CMD with stdout in $T/out and stderr in $T/err, wants exit status CODE
run() {
  local want=$1 rc=0
  shift
  "$@" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = "$want" ] || fail "'$*' exited $rc, want $want: $(head -c 300 "$T/err")"
}

# has_option FILE OPT: the help lists OPT as an option line ("  --opt ..." or "  -x, --opt ...")
has_option() { grep -Eq -- "^  (-., |    )$2( |$)" "$1"; }

# Every command in commands.def, with the --options its usage line names.
python3 - "$MI_SRC/tools/mi-host/commands.def" > "$T/commands" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
for m in re.finditer(r'^MI_HOST_COMMAND\((\w+),(.*?)\)\s*$', text, re.S | re.M):
    opts = sorted(set(re.findall(r'(--[a-z][a-z0-9-]*)', m.group(2))))
    print(m.group(1), *opts)
PY
[ "$(wc -l < "$T/commands")" -ge 5 ] || fail "found only $(wc -l < "$T/commands") commands in commands.def"
while read -r cmd opts; do
  run 0 "$B/mi-host" help "$cmd"
  cp "$T/out" "$T/help-$cmd"
  grep -q "^usage: mi-host .*$cmd" "$T/help-$cmd" || fail "help $cmd: no usage line"
  has_option "$T/help-$cmd" --help || fail "help $cmd: no option list"
  for o in $opts; do
    has_option "$T/help-$cmd" "$o" || fail "mi-host help $cmd does not describe $o"
  done
  run 0 "$B/mi-host" "$cmd" --help
  cmp -s "$T/out" "$T/help-$cmd" || fail "mi-host $cmd --help differs from mi-host help $cmd"
  run 0 "$B/mi-host" --plugins "$MI_BUILD/plugins" "$cmd" -h
  cmp -s "$T/out" "$T/help-$cmd" || fail "mi-host $cmd -h differs from mi-host help $cmd"
done < "$T/commands"
# tune's options, by name, so that a table that lost one is noticed here too
for o in --out --seed --verify --jobs --json --agents; do
  has_option "$T/help-tune" "$o" || fail "mi-host help tune lacks $o"
done
# a command's own usage errors exit 2 with one line
for args in "tune" "tune a.yaml b.yaml" "history" "plugins extra" "profile --model"; do
  # shellcheck disable=SC2086
  run 2 "$B/mi-host" $args
  [ "$(wc -l < "$T/err")" = 1 ] || fail "mi-host $args: $(cat "$T/err")"
done
run 0 "$B/mi-host" help
grep -q "help COMMAND" "$T/out" || fail "mi-host help does not mention help COMMAND"

# Every program: --help exits 0 on stdout and lists --version.
for tool in mi-host mi-run mi-conform mi-zoo mi-agent mi-quantize; do
  run 0 "$B/$tool" --help
  has_option "$T/out" --version || fail "$tool --help does not list --version"
  [ -s "$T/err" ] && fail "$tool --help wrote to stderr"
done

# mi-run: an unknown option is unknown, whatever follows it.
for args in "--bogus" "--bogus 3" "--bogus --model x.onnx --device ref" "--deployment t.yaml --bogus"; do
  # shellcheck disable=SC2086
  run 2 "$B/mi-run" $args
  grep -q "unknown option '--bogus'" "$T/err" || fail "mi-run $args: $(cat "$T/err")"
  grep -q "needs a value" "$T/err" && fail "mi-run $args says 'needs a value': $(cat "$T/err")"
done
# `--deployment --help`: the deployment help, not a table named --help
run 0 "$B/mi-run" --deployment --help
grep -q "^usage: mi-run --deployment" "$T/out" || fail "mi-run --deployment --help: $(head -3 "$T/out")"
has_option "$T/out" --stack-policy || fail "mi-run --deployment --help lacks --stack-policy"
has_option "$T/out" --output-dir || fail "mi-run --deployment --help lacks --output-dir"
# an option where a value belongs is named as such
run 2 "$B/mi-run" --model --device ref
grep -q -- "--model needs a value" "$T/err" || fail "mi-run --model --device ref: $(cat "$T/err")"
run 2 "$B/mi-run" --model
grep -q -- "--model needs a value" "$T/err" || fail "mi-run --model: $(cat "$T/err")"

# One output flag: --output-dir in both modes; --output accepted as the old spelling.
run 0 "$B/mi-run" --help
has_option "$T/out" --output-dir || fail "mi-run --help lacks --output-dir"
run 0 "$B/mi-zoo" mlp --out "$T/m.onnx"
for flag in --output-dir --output; do
  run 0 "$B/mi-run" --model "$T/m.onnx" --device ref "$flag" "$T/o$flag"
  [ -s "$T/o$flag/logits.npy" ] || fail "mi-run $flag wrote no $T/o$flag/logits.npy"
done
echo "cli_help: all checks passed ($(wc -l < "$T/commands") mi-host commands)"

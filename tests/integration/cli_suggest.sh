#!/usr/bin/env bash
# cli_suggest.sh - a misspelt command, subcommand or option is refused with exit status 2 and
# the likeliest meant one ("did you mean"), in every program (issue 22, finding 4); a word
# nothing resembles gets no guess.
set -euo pipefail
: "${MI_BUILD:?}"
B=$MI_BUILD/bin
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "cli_suggest: $*" >&2; exit 1; }

# suggests WANT CMD...: CMD exits 2 and its one line of stderr says "did you mean 'WANT'?"
suggests() {
  local want=$1 rc=0
  shift
  "$@" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = 2 ] || fail "'$*' exited $rc, want 2"
  [ "$(wc -l < "$T/err")" = 1 ] || fail "'$*' printed $(wc -l < "$T/err") lines on stderr"
  grep -q "did you mean '$want'?" "$T/err" || fail "'$*' does not suggest $want: $(cat "$T/err")"
  [ -s "$T/out" ] && fail "'$*' printed on stdout"
  return 0
}
# no_guess CMD...: CMD exits 2 without a suggestion
no_guess() {
  local rc=0
  "$@" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = 2 ] || fail "'$*' exited $rc, want 2"
  grep -q "did you mean" "$T/err" && fail "'$*' guessed: $(cat "$T/err")"
  return 0
}

suggests tune     "$B/mi-host" tnue
suggests tune     "$B/mi-host" --plugins "$MI_BUILD/plugins" tun
suggests plugins  "$B/mi-host" plugin
suggests profile  "$B/mi-host" profil --model x.onnx
suggests accuracy "$B/mi-host" help acuracy
suggests export   "$B/mi-host" history exprot
suggests --out    "$B/mi-host" tune r.yaml --ot dir
suggests --seed   "$B/mi-host" tune r.yaml --seeed 3
suggests --device "$B/mi-host" profile --model m.onnx --devcie blis-cpu:0
suggests --plugins "$B/mi-host" --plugisn "$MI_BUILD/plugins" plugins
suggests --model  "$B/mi-run" --modle m.onnx --device ref
suggests --repeat "$B/mi-run" --model m.onnx --device ref --repaet 3
suggests --stack-policy "$B/mi-run" --deployment t.yaml --stack-polcy use
suggests --width  "$B/mi-zoo" mlp --out "$T/m.onnx" --widht 2
suggests --rule   "$B/mi-conform" --plugins "$MI_BUILD/plugins" --rlue 3
suggests setup    "$B/mi-agent" --db postgresql://x/y setpu
no_guess "$B/mi-host" frobnicate
no_guess "$B/mi-run" --bogus
echo "cli_suggest: all checks passed"

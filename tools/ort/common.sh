# common.sh - the opening the ONNX Runtime comparison scripts share, sourced with the script's
# name, the program it needs from the build and its arguments:
#   . "$(dirname "$0")/common.sh" compare.sh mi-run "$@"
# Sets here (tools/ort), build ($1, else $MI_BUILD, else the tree's build), models (the fetch.sh
# cache, $MI_MODEL_DIR), tmp (a folder removed at exit); exits 2 when setup.sh has not run or
# the build lacks the program.
ort_script="$1" ort_prog="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${3:-${MI_BUILD:-$here/../../build}}"
models="${MI_MODEL_DIR:-$HOME/.cache/metainfer/models}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -d "$here/node_modules/onnxruntime-node" ] || { echo "$ort_script: run tools/ort/setup.sh first" >&2; exit 2; }
[ -x "$build/bin/$ort_prog" ] || { echo "$ort_script: no $ort_prog in $build/bin" >&2; exit 2; }

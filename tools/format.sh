#!/usr/bin/env bash
# format.sh - applies .clang-format to the C sources git tracks under framework/ plugins/ sdk/
# tools/ tests/ (generated code under build folders is not tracked, so it is left alone).
#   tools/format.sh            rewrites the files in place
#   tools/format.sh --check    changes nothing; lists each file that would change with the count
#                              of its lines that would, then the total; exits 1 when any would
#   tools/format.sh [--check] FILE...   only those files
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
check=0
if [ "${1:-}" = "--check" ]; then
  check=1
  shift
fi
cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null 2>&1; then
  echo "format.sh: $cf not found (apt-get install clang-format, or set CLANG_FORMAT)" >&2
  exit 2
fi
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'framework/*.[ch]' 'plugins/*.[ch]' 'sdk/*.[ch]' \
    'tools/*.[ch]' 'tests/*.[ch]')
fi
if [ $check -eq 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 32 "$cf" -i --style=file
  exit $?
fi
total=0
for f in "${files[@]}"; do
  n=$("$cf" --style=file "$f" | diff -- "$f" - | grep -c '^<')
  if [ "$n" -gt 0 ]; then
    echo "$f: $n lines"
    total=$((total + n))
  fi
done
echo "format.sh: $total lines would change in ${#files[@]} files"
[ $total -eq 0 ]

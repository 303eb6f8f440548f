#!/usr/bin/env bash
# cli_version.sh - every program answers --version with the same line: the project version from
# CMakeLists.txt, the plugin ABI version of the SDK header and the commit (issue 22, finding 4).
set -euo pipefail
: "${MI_BUILD:?}" "${MI_SRC:?}"
fail() { echo "cli_version: $*" >&2; exit 1; }
err=$(mktemp)
trap 'rm -f "$err"' EXIT

version=$(sed -n 's/^project(metainfer VERSION \([0-9.]*\).*/\1/p' "$MI_SRC/CMakeLists.txt")
major=$(sed -n 's/^#define MI_ABI_VERSION_MAJOR \([0-9]*\).*/\1/p' "$MI_SRC/sdk/include/metainfer/mi_plugin.h")
minor=$(sed -n 's/^#define MI_ABI_VERSION_MINOR \([0-9]*\).*/\1/p' "$MI_SRC/sdk/include/metainfer/mi_plugin.h")
[ -n "$version" ] && [ -n "$major" ] || fail "cannot read the version from the sources"

first=""
for tool in mi-host mi-run mi-conform mi-zoo mi-agent mi-worker mi-quantize; do
  rc=0
  line=$("$MI_BUILD/bin/$tool" --version 2>"$err") || rc=$?
  [ "$rc" = 0 ] || fail "$tool --version exited $rc: $(cat "$err")"
  [ "$(printf '%s\n' "$line" | wc -l)" = 1 ] || fail "$tool --version printed more than one line"
  case "$line" in
    "metainfer $version (plugin ABI $major.$minor, git "*")") ;;
    *) fail "$tool --version: '$line' lacks version $version, ABI $major.$minor or the commit" ;;
  esac
  [ -z "$first" ] && first=$line
  [ "$line" = "$first" ] || fail "$tool --version '$line' differs from mi-host's '$first'"
done

# The commit is the source tree's when it is a git checkout.
if head=$(git -C "$MI_SRC" rev-parse --short=12 HEAD 2>/dev/null); then
  case "$first" in *"git $head)") ;; *"git "*) echo "note: built from another commit than $head" ;; esac
fi
echo "cli_version: all programs print '$first'"

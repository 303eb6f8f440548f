#!/usr/bin/env bash
# check_plugin.sh NAME: the shipped plugin NAME passes every conformance rule. Exits 77 (ctest:
# skipped) when this build has no such plugin (its dependencies were missing at configure).
set -euo pipefail
if ! grep -qs "^name: $1\$" "$MI_BUILD"/plugins/*.mi-plugin; then
  echo "SKIP: $1 was not built here"
  exit 77
fi
"$MI_BUILD/bin/mi-conform" --plugins "$MI_BUILD/plugins" --plugin "$1" --timeout 300

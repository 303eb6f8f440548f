#!/usr/bin/env bash
# module-graph.sh - the framework's module graph as the code draws it: one line "a -> b" per
# module a that has a file including one of module b's headers (framework/src/b/...), sorted.
# docs/architecture.md carries its output between the module-graph markers; --check (run by
# ctest lint.module_graph) exits 1 when the two differ, so the page cannot drift from the code.
set -uo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
cd "$src" || exit 2
graph() {
  grep -rHoE '^#include[[:space:]]*"[a-z_]+/[^"]+\.h"' framework/src --include='*.c' --include='*.h' |
    sed -E 's|^framework/src/([a-z_]+)/[^:]*:#include[[:space:]]*"([a-z_]+)/.*|\1 -> \2|' |
    awk '$1 != $3 && $3 != "metainfer"' | sort -u
}
if [ "${1:-}" != "--check" ]; then
  graph
  exit 0
fi
doc=docs/architecture.md
documented=$(sed -n '/<!-- module-graph:begin -->/,/<!-- module-graph:end -->/p' "$doc" |
  grep -E '^[a-z_]+ -> [a-z_]+$')
if [ "$documented" != "$(graph)" ]; then
  echo "module-graph: $doc's module graph differs from the code's #include lines:" >&2
  diff <(echo "$documented") <(graph) | sed -n 's/^</  only in the page:/p; s/^>/  only in the code:/p' >&2
  echo "  (regenerate with tools/module-graph.sh and say in the page why any edge points down)" >&2
  exit 1
fi
# Every edge must point up the module table (a module uses only the ones listed above it).
order=$(grep -oE '^\| [a-z_]+ \| framework/src/[a-z_]+ \|' "$doc" | awk '{print $2}')
down=$(graph | awk -v order="$order" 'BEGIN { n = split(order, m, "\n"); for (i = 1; i <= n; i++) at[m[i]] = i }
  !($1 in at) || !($3 in at) || at[$3] >= at[$1] { print "  " $0 }')
if [ -n "$down" ]; then
  echo "module-graph: edges that point down (or name a module the table lacks) in $doc:" >&2
  echo "$down" >&2
  exit 1
fi
echo "module-graph: ok"

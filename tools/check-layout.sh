#!/usr/bin/env bash
# check-layout.sh - the module rules of docs/architecture.md that the compiler does not check:
# a framework file includes no other module's *_internal.h (modules offer <module>/<name>.h
# interfaces instead), no framework file includes the users' umbrella metainfer/mi.h, and
# plugins and the SDK include nothing of the host. Prints each breach as file:line and exits 1.
set -uo pipefail
src="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$src" || exit 2
bad=0
while IFS=: read -r file line text; do
  mod=${file#framework/src/}
  mod=${mod%%/*}
  inc=$(sed -E 's/.*#include[[:space:]]*"([^"]+)".*/\1/' <<<"$text")
  if [ "${inc#*/}" != "$inc" ] && [ "${inc%%/*}" != "$mod" ]; then
    echo "$file:$line: includes $inc, module $mod's files may include only their own *_internal.h"
    bad=1
  fi
done < <(grep -rnE '#include[[:space:]]*"[^"]*_internal\.h"' framework/src --include='*.c' --include='*.h')
while IFS=: read -r file line _; do
  echo "$file:$line: a framework file includes metainfer/mi.h (the umbrella is for users; include what is used)"
  bad=1
done < <(grep -rnE '#include[[:space:]]*[<"]metainfer/mi\.h[">]' framework/src --include='*.c' --include='*.h')
while IFS=: read -r file line text; do
  echo "$file:$line: plugins and the SDK build against the SDK header alone: $text"
  bad=1
done < <(grep -rnE '#include[[:space:]]*[<"]([^>"]*framework/|metainfer/mi(_core|_graph|_measure|_meta|_runtime|_transform|_tune|_farm)?\.h)' plugins sdk)
[ $bad -eq 0 ] && echo "check-layout: ok"
exit $bad

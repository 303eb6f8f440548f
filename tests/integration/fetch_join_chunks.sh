#!/usr/bin/env bash
# fetch_join_chunks.sh - tools/models/join_chunks.js, which fetch.sh uses for models a package
# ships split into chunks: chunks listed out of order are joined in offset order, byte for byte;
# a gap (no size declared to catch it), a wrong size, a missing key or a chunk name with a path in it is one line and exit 2,
# with no crash. Skipped (77) without node.
set -euo pipefail
: "${MI_SRC:?}"
command -v node >/dev/null || { echo "SKIP: node is not installed"; exit 77; }
fail() { echo "fetch_join_chunks: $*" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
join="$MI_SRC/tools/models/join_chunks.js"

# Three chunks of 5, 3 and 4 bytes; the index lists them out of order.
printf 'AAAAA' >"$T/c1"
printf 'BBB' >"$T/c2"
printf 'CCCC' >"$T/c3"
cat >"$T/index.json" <<'J'
{"/models/m": {"size": 12, "chunks": [
   {"hash": "c3", "offsets": [8, 12]}, {"hash": "c1", "offsets": [0, 5]}, {"hash": "c2", "offsets": [5, 8]}]},
 "/models/gap": {"chunks": [{"hash": "c1", "offsets": [0, 5]}, {"hash": "c3", "offsets": [8, 12]}]},
 "/models/size": {"size": 13, "chunks": [{"hash": "c1", "offsets": [0, 5]}, {"hash": "c2", "offsets": [5, 8]}]},
 "/models/path": {"chunks": [{"hash": "../c1", "offsets": [0, 5]}]}}
J
node "$join" "$T/index.json" /models/m "$T/out" || fail "a well-formed chunk list was refused"
[ "$(cat "$T/out")" = "AAAAABBBCCCC" ] || fail "joined '$(cat "$T/out")', expected AAAAABBBCCCC"

for key in /models/gap /models/size /models/none /models/path; do
  rc=0
  node "$join" "$T/index.json" "$key" "$T/bad" 2>"$T/err" || rc=$?
  [ "$rc" = 2 ] || fail "$key: exit $rc, expected 2"
  [ "$(wc -l <"$T/err")" = 1 ] || fail "$key: the error is not one line: $(cat "$T/err")"
  grep -q "^join_chunks: .*'$key'" "$T/err" || fail "$key: the error does not name the key: $(cat "$T/err")"
done
rc=0
node "$join" "$T/missing.json" /models/m "$T/bad" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "missing.json" "$T/err" || fail "a missing index: exit $rc, $(cat "$T/err")"
echo "fetch_join_chunks: ok"

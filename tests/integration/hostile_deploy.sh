#!/usr/bin/env bash
# hostile_deploy.sh - `mi-run --deployment` against hostile plugins and hostile tables. A table
# tune wrote for the SDK template is pointed at each hostile plugin (tests/plugins/hp_plugin.c,
# the template with one thing broken): one that crashes, hangs, exits or aborts in entry,
# create, describe, prepare, run or destroy ends mi-run with one line naming the plugin and the
# step (prepare is part of the runtime's "open"; --timeout 1 bounds a hang), nothing on stdout;
# one that prints or forges a handle while it prepares or runs is logged and the JSON stays one object. Then the table itself is cut at
# every line, and its config_id, integers and device index are edited: each is refused in one
# line, exit 2, nothing run.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
host="$MI_BUILD/bin/mi-host"
run="$MI_BUILD/bin/mi-run"
hostile="$MI_BUILD/tests/plugins/hostile"
template="$MI_BUILD/tests/plugins/template"
fail() { echo "hostile_deploy: $*" >&2; exit 1; }
export MI_LOAD_TIMEOUT_S=6

mi_relu_add_model
cat >"$T/recipe.yaml" <<'YAML'
version: 1
model: ra.onnx
pool: [ {plugin: template} ]
objectives: [latency]
budget: { measurements: 3, seconds: 60 }
search: { strategy: random, seed: 1 }
measure: { repeats: 5, warmup: 1 }
YAML
"$host" --plugins "$template" tune "$T/recipe.yaml" --out "$T" --json >/dev/null 2>"$T/tune.log" ||
  fail "tune on the template: $(tail -3 "$T/tune.log")"
D="$T/deployment.yaml"
grep -q 'device: "template:0"' "$D" || fail "the table has no template:0 entry"
"$run" --plugins "$template" --deployment "$D" --json >/dev/null 2>"$T/err" || fail "the table does not run: $(cat "$T/err")"

# 1. The same table on each hostile plugin (the template's variants and knobs, so it parses).
one_line() { # CASE WANT: exit 1 or 2, stdout empty, one mi-run line naming the plugin and WANT
  [ "$rc" = 1 ] || [ "$rc" = 2 ] || fail "$1: exit $rc, want 1 or 2 (stderr: $(tail -3 "$T/err"))"
  [ ! -s "$T/out" ] || fail "$1: stdout not empty: $(head -c 200 "$T/out")"
  line=$(grep '^mi-run: ' "$T/err" || true)
  [ "$(printf '%s\n' "$line" | grep -c .)" = 1 ] || fail "$1: want one mi-run line: $(cat "$T/err")"
  printf '%s' "$line" | grep -q "hostile-$1" || fail "$1: '$line' does not name the plugin"
  printf '%s' "$line" | grep -Eq "$2" || fail "$1: '$line' does not say '$2'"
}
for kind in crash hang exit abort stdout forged; do
  for stage in entry create describe prepare run destroy; do
    c=$kind-$stage
    sed "s/template:0/hostile-$c:0/g" "$D" >"$T/d-$c.yaml"
    rc=0
    timeout 60 "$run" --plugins "$hostile/$c" --deployment "$T/d-$c.yaml" --timeout 1 --json \
      >"$T/out" 2>"$T/err" || rc=$?
    case $kind-$stage in
      stdout-prepare|stdout-run|forged-prepare|forged-run)
        [ "$rc" = 0 ] || fail "$c: exit $rc ($(tail -3 "$T/err"))"
        python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/out" ||
          fail "$c: stdout is not one JSON object: $(head -c 300 "$T/out")"
        grep -Eq "writes to stdout|call refused" "$T/err" || fail "$c: nothing logged: $(cat "$T/err")" ;;
      crash-*|abort-*) one_line "$c" "crashed in ($stage|open)" ;;
      hang-*) one_line "$c" "hung in ($stage|open)" ;;
      exit-*) one_line "$c" "exited with status 7 in ($stage|open)" ;;
      stdout-*) one_line "$c" "writes to stdout" ;;
      forged-*) one_line "$c" "handle the host never gave out" ;;
    esac
    echo "hostile_deploy: $c: ok"
  done
done

# A lying timer: the runtime checks every run's device time against the wall clock, so the
# figure never reaches the monitor or the report.
for c in zero-time-run neg-time-run; do
  sed "s/template:0/hostile-$c:0/g" "$D" >"$T/d-$c.yaml"
  rc=0
  timeout 60 "$run" --plugins "$hostile/$c" --deployment "$T/d-$c.yaml" --repeat 3 --json \
    >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = 1 ] || fail "$c: exit $rc, want 1 ($(tail -3 "$T/err"); stdout $(head -c 200 "$T/out"))"
  [ ! -s "$T/out" ] || fail "$c: stdout not empty: $(head -c 200 "$T/out")"
  [ "$(grep -c '^mi-run: ' "$T/err")" = 1 ] &&
    grep -q "^mi-run: device 'hostile-$c:0': implausible device time: " "$T/err" ||
    fail "$c: $(cat "$T/err")"
  echo "hostile_deploy: $c: ok"
done

# 2. Hostile tables, on the healthy template: refused in one line naming the table, exit 2.
refused() { # NAME [WANT]
  rc=0
  timeout 20 "$run" --plugins "$template" --deployment "$T/$1.yaml" --json >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = 2 ] || fail "$1: exit $rc, want 2 (stderr: $(head -3 "$T/err"))"
  [ ! -s "$T/out" ] || fail "$1: ran: $(head -c 200 "$T/out")"
  [ "$(wc -l <"$T/err")" = 1 ] || fail "$1: not one line: $(cat "$T/err")"
  grep -Eq "^mi-run: .*${2:-$1\.yaml:[0-9]+:[0-9]+: }" "$T/err" || fail "$1: $(cat "$T/err")"
}
# Cut after every line up to the assignment. A cut just before "fallbacks:", a fallback's
# "- config_id" or the assignment leaves a smaller whole table (all optional): that one runs.
last=$(grep -n '^assignment:' "$D" | cut -d: -f1)
for n in $(seq 0 $((last - 1))); do
  head -n "$n" "$D" >"$T/cut$n.yaml"
  if sed -n "$((n + 1))p" "$D" | grep -Eq '^(  fallbacks:|  - config_id:|assignment:)' &&
     ! sed -n "${n}p" "$D" | grep -q '^  fallbacks:'; then
    "$run" --plugins "$template" --deployment "$T/cut$n.yaml" >/dev/null 2>"$T/err" ||
      fail "cut$n: a whole table cut at an entry's end does not run: $(cat "$T/err")"
  else
    refused "cut$n"
  fi
done
# And inside a line: half of the chosen configuration's first value is gone.
python3 - "$D" "$T/midline.yaml" <<'PY'
import sys
t = open(sys.argv[1]).read(); i = t.index("configuration:"); j = t.index('"', t.index("\n", i))
open(sys.argv[2], "w").write(t[:j + 2])
PY
refused midline
id=$(grep -m1 -o 'config_id: "[0-9a-f]*"' "$D" | cut -d'"' -f2)
edit() { python3 -c 'import sys; t=open(sys.argv[1]).read(); open(sys.argv[2],"w").write(t.replace(sys.argv[3], sys.argv[4], 1))' "$D" "$T/$1.yaml" "$2" "$3"; }
edit id_flipped "config_id: \"$id\"" "config_id: \"${id%?}$(printf '%x' $(( (0x${id: -1} + 1) % 16 )))\""
refused id_flipped "does not match its configuration"
edit id_junk "config_id: \"$id\"" 'config_id: "not-an-id"'
refused id_junk "must be 16 lowercase hex digits"
edit id_huge "config_id: \"$id\"" 'config_id: 340282366920938463463374607431768211456'
refused id_huge "must be 16 lowercase hex digits"
edit version_huge 'version: 1' 'version: 99999999999999999999'
refused version_huge "'version' must be 1"
edit rounds_huge 'rounds: ' 'rounds: 99999999999999999999999 #'
refused rounds_huge "out of range"
edit latency_huge 'latency_ms: ' 'latency_ms: 1e99999 #'
refused latency_huge "must be a number"
# A knob value past int64: edited where the chosen configuration sets the knob, else added to it
# (an all-auto default sets none); either way the id no longer matches.
python3 - "$D" "$T/knob_huge.yaml" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
if 'chunk: "' in t:
    t = t.replace('chunk: "', 'chunk: "99999999999999999999999', 1)
else:
    t = re.sub(r"(\n( *)configuration:)( \{\})?\n", r'\1\n\2  node.relu.knob.chunk: "99999999999999999999999"\n', t, count=1)
open(sys.argv[2], "w").write(t)
PY
cmp -s "$D" "$T/knob_huge.yaml" && fail "knob_huge: the table was not edited"
refused knob_huge "does not match its configuration|no value|unknown key"
# A knob value outside its domain, and a key the space does not have, in the chosen
# configuration, with the config_id recomputed so the table reads: a table is a contract, so
# mi-run refuses it in one line naming the key (it used to run the defaults, exit 0).
for bad in 'node.relu.knob.chunk: "100"' 'node.relu.knob.nosuch: "1"'; do
  key=${bad%%:*}
  name=knob_${key##*.}
  python3 - "$D" "$T/$name.yaml" "$bad" <<'PY2'
import re, sys
t, key = open(sys.argv[1]).read(), sys.argv[3].split(":")[0]
m = re.search(r"\n( *)configuration:( \{\})?\n", t)
body = t[m.end():]
# Drop the key where the chosen configuration sets it, then add the hostile line.
ind = m.group(1) + "  "
lines = body.split("\n")
n = 0
while n < len(lines) and lines[n].startswith(ind):
    n += 1
kept = [l for l in lines[:n] if not l.strip().startswith(key + ":")]
t = t[:m.start()] + "\n%sconfiguration:\n" % m.group(1) + "\n".join([ind + sys.argv[3]] + kept + lines[n:])
open(sys.argv[2], "w").write(t)
PY2
  rc=0
  "$run" --plugins "$template" --deployment "$T/$name.yaml" >/dev/null 2>"$T/err" || rc=$?
  [ "$rc" = 2 ] || fail "$name: the edited table was not refused (exit $rc: $(cat "$T/err"))"
  new=$(grep -o 'which hash to [0-9a-f]*' "$T/err" | cut -d' ' -f4)
  [ -n "$new" ] || fail "$name: no recomputed id in: $(cat "$T/err")"
  old=$(grep -m1 -o 'config_id: "[0-9a-f]*"' "$T/$name.yaml" | cut -d'"' -f2)
  sed -i "0,/config_id: \"$old\"/s//config_id: \"$new\"/" "$T/$name.yaml"
  rc=0
  timeout 20 "$run" --plugins "$template" --deployment "$T/$name.yaml" --json >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = 2 ] || fail "$name: exit $rc, want 2 (stderr: $(cat "$T/err"); stdout: $(head -c 200 "$T/out"))"
  [ ! -s "$T/out" ] || fail "$name: ran: $(head -c 200 "$T/out")"
  [ "$(wc -l <"$T/err")" = 1 ] || fail "$name: not one line: $(cat "$T/err")"
  grep -q "^mi-run: .*$new.*'\?$key" "$T/err" || fail "$name: does not name the id and '$key': $(cat "$T/err")"
  echo "hostile_deploy: $name: ok ($(cat "$T/err"))"
done
edit device_huge 'template:0' 'template:99999999999999999999'
refused device_huge "index must be a number"
edit device_big 'template:0' 'template:4294967296'
refused device_big "has 1 device"
echo "hostile_deploy: ok"

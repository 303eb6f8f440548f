#!/usr/bin/env bash
# hostile_thread.sh - a plugin that starts a thread in create and never stops it (hostile-thread-
# create, tests/plugins/hp_plugin.c: the thread spins in the plugin's code and calls a host
# service now and then): every host that loads it ends cleanly, each time. Before, unloading
# unmapped the code under the running thread and freed the services table it reads, and the
# host crashed at exit now and then; the scenario is repeated to catch that (no timing asserted).
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
host="$MI_BUILD/bin/mi-host"
run="$MI_BUILD/bin/mi-run"
dir="$MI_BUILD/tests/plugins/hostile/thread-create"
fail() { echo "hostile_thread: $*" >&2; exit 1; }
export MI_LOAD_TIMEOUT_S=20
rounds=${HOSTILE_THREAD_ROUNDS:-12}

mi_relu_add_model 64
cat >"$T/recipe.yaml" <<YAML
version: 1
model: ra.onnx
pool: [ {plugin: hostile-thread-create} ]
objectives: [latency]
budget: { measurements: 2, seconds: 60 }
search: { strategy: random, seed: 1 }
measure: { repeats: 5, warmup: 1 }
YAML

for i in $(seq "$rounds"); do
  rc=0
  "$run" --plugins "$dir" --model "$T/ra.onnx" --device hostile-thread-create:0 --json \
    >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = 0 ] || fail "mi-run round $i: exit $rc ($(tail -2 "$T/err"))"
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/out" || fail "mi-run round $i: bad JSON"
  rc=0
  "$host" --plugins "$dir" --json plugins >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = 0 ] || fail "mi-host plugins round $i: exit $rc ($(tail -2 "$T/err"))"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [p["name"] for p in d["plugins"]] == ["hostile-thread-create"], d' "$T/out" ||
    fail "mi-host plugins round $i: listing is wrong"
done
# tune loads the plugin for its descriptions and unloads it at the end.
for i in 1 2 3; do
  rc=0
  "$host" --plugins "$dir" tune "$T/recipe.yaml" --out "$T/tune$i" --json >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -lt 128 ] || fail "mi-host tune round $i: died (exit $rc): $(tail -2 "$T/err")"
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/out" || fail "tune round $i: bad JSON"
done
echo "hostile_thread: ok ($rounds rounds)"

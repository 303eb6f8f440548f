# farm_tune.sh - mi-host tune --agents against a PostgreSQL history: two tunes share the farm at
# once, their measurements are made by agents and written to the shared history, and a farm tune
# reaches the same quality as a local tune (SQLite history, no agents) with the same budget.
set -euo pipefail
. "$(dirname "$0")/farm_lib.bash"

bash "$S/tools/pg-test-server.sh" start "$T/pg" >/dev/null || fail "server did not start"
. "$T/pg/env"
"$B/bin/mi-agent" --db "$MI_PG_URL" setup 2>"$T/setup.log" || {
  grep -q "no PostgreSQL client" "$T/setup.log" && { echo "skip: built without libpq"; exit 77; }
  fail "setup"
}
q "CREATE ROLE agent LOGIN PASSWORD 'pw-agent' IN ROLE mi_agent"
AU="postgresql://agent:pw-agent@127.0.0.1:$PGPORT/postgres"
"$B/bin/mi-zoo" resnet --out "$T/net.onnx" --width 0.25 --depth 2 --resolution 32 >/dev/null
recipe() { # FILE HISTORY SEED
  cat > "$1" <<YAML
version: 1
model: net.onnx
pool: [ {plugin: npu-stub} ]
constraints: { latency_ms: 1000, accuracy_drop: 0.05 }
objectives: [latency, energy]
budget: { measurements: 6, seconds: 120 }
search: { strategy: nsga2, seed: $3, population: 3 }
measure: { repeats: 5, warmup: 1 }
history: $2
YAML
}
recipe "$T/farm.yaml" "$MI_PG_URL" 3
recipe "$T/farm2.yaml" "$MI_PG_URL" 5
recipe "$T/local.yaml" local.db 3

# The tune host has no agent of its own: without agents nothing would be measured.
for i in 1 2; do
  "$B/bin/mi-agent" --db "$AU" --plugins "$B/plugins" --name "h$i" --cache "$T/c$i" \
    --no-fingerprint --exit-idle 60 >"$T/a$i.log" 2>&1 &
  PIDS+=($!)
  disown $! 2>/dev/null || true
done
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/farm2.yaml" --agents --out "$T/o3" >"$T/t3.log" 2>&1 &
T3=$!
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/farm.yaml" --agents --out "$T/o1" >"$T/t1.log" 2>&1 ||
  fail "farm tune"
wait "$T3" || fail "second farm tune"
"$B/bin/mi-host" --plugins "$B/plugins" tune "$T/local.yaml" --out "$T/o2" >"$T/t2.log" 2>&1 || fail "local tune"
# --agents needs a PostgreSQL history.
if "$B/bin/mi-host" --plugins "$B/plugins" tune "$T/local.yaml" --agents --out "$T/o4" >"$T/t4.log" 2>&1; then
  fail "--agents accepted a SQLite history"
fi

# The two farm tunes share the history: a configuration one of them measured first is replayed
# by the other, and replayed trials count against the budget. So each spends 6 trials, and
# together they queued exactly as many jobs as they measured (12 when nothing overlapped).
JOBS=$(python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
n = 0
for o in ("o1", "o3"):
    r = json.load(open(f"{t}/{o}/pareto.json"))["runs"][0]
    assert r["measured"] + r["replayed"] == 6, (o, r["measured"], r["replayed"])
    n += r["measured"]
print(n)
PY
) || fail "farm tune budgets"
[ "$(q "SELECT count(*) FROM farm_jobs WHERE state = 'done' AND ok = 1")" = "$JOBS" ] ||
  fail "jobs (expected $JOBS): $(q "SELECT id, state, ok, failure FROM farm_jobs")"
[ "$(q "SELECT count(*) FROM measurements m JOIN farm_jobs j ON j.uuid = m.uuid")" = "$JOBS" ] ||
  fail "measurements"
[ "$(q "SELECT count(DISTINCT run_id) FROM measurements")" = 2 ] || fail "two runs expected"
python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
def best(o):
    r = json.load(open(f"{t}/{o}/pareto.json"))["runs"][0]
    assert r["ok"] and r["measured"] + r["replayed"] == 6, (o, r.get("measured"))
    lat = [x["objectives"]["latency"] for x in r["front"] if x["ok"]]
    assert lat, o
    return min(lat)
farm, local = best("o1"), best("o2")
best("o3")
# Same budget, same seed: the farm's best is as good as the local one (5% for noise).
assert farm <= local * 1.05, (farm, local)
print(f"farm best {farm:.4f} ms, local best {local:.4f} ms")
PY
# The history commands take the URL too: the same store interface as SQLite.
"$B/bin/mi-host" history stats --db "$MI_PG_URL" --json >"$T/stats.json" 2>"$T/stats.log" || fail "history stats"
"$B/bin/mi-host" history export --db "$MI_PG_URL" --out "$T/export.jsonl" 2>"$T/export.log" || fail "history export"
python3 - "$T" "$JOBS" <<'PY'
import json, sys
t, jobs = sys.argv[1], int(sys.argv[2])
s = json.load(open(f"{t}/stats.json"))
assert s["measurements"] == jobs and s["schema_version"] == 5, s  # schema 5: paired measurements
lines = [json.loads(l) for l in open(f"{t}/export.jsonl")]
assert len(lines) == jobs and all(l["result"]["ok"] and l["result"]["latency_s"]["n"] >= 5 for l in lines)
PY
if grep -rqF -e "$MI_PG_PASSWORD" -e pw-agent "$T"/*.log "$T"/o1 "$T"/o3; then fail "a password was printed"; fi
echo ok

# farm_agents.sh - three agents as separate hosts (network namespaces joined to the server by
# veth pairs; three processes on loopback where namespaces cannot be made) with different
# plugin sets: the agent in the middle of a job is killed, its job is reclaimed and finished
# by another, and nothing is lost or duplicated. Also: the agent role's limits, TLS, blobs
# checked by hash, and no password in any output.
set -euo pipefail
. "$(dirname "$0")/farm_lib.bash"

VETH=()
HOSTS=(127.0.0.1 127.0.0.1 127.0.0.1)
EXEC=("" "" "")
if [ "$(id -u)" -eq 0 ] && ip netns add "mi-farm-probe-$$" 2>/dev/null; then
  ip netns del "mi-farm-probe-$$"
  for i in 1 2 3; do
    n="mi-farm-$$-$i"; a="mif$$a$i"; b="mif$$b$i"
    a=${a:0:15}; b=${b:0:15}
    ip netns add "$n"; NETNS+=("$n")
    ip link add "$a" type veth peer name "$b"; VETH+=("$a")
    ip link set "$b" netns "$n"
    ip addr add "10.231.$i.1/24" dev "$a"; ip link set "$a" up
    ip -n "$n" addr add "10.231.$i.2/24" dev "$b"; ip -n "$n" link set "$b" up
    ip -n "$n" link set lo up
    HOSTS[$((i-1))]=10.231.$i.1
    EXEC[$((i-1))]="ip netns exec $n"
  done
  echo "three hosts: network namespaces ${NETNS[*]}"
  LISTEN=10.231.1.1,10.231.2.1,10.231.3.1
else
  echo "network namespaces unavailable: three agent processes on loopback instead"
  LISTEN=
fi
bash "$S/tools/pg-test-server.sh" start "$T/pg" "$LISTEN" >/dev/null || fail "server did not start"
. "$T/pg/env"
"$B/bin/mi-agent" --db "$MI_PG_URL" setup 2>"$T/setup.log" || {
  grep -q "no PostgreSQL client" "$T/setup.log" && { echo "skip: built without libpq"; exit 77; }
  fail "setup"
}
for i in 1 2 3; do q "CREATE ROLE agent$i LOGIN PASSWORD 'pw-agent-$i' IN ROLE mi_agent"; done
url() { echo "postgresql://agent$1:pw-agent-$1@${HOSTS[$(($1-1))]}:$PGPORT/postgres"; }

# The agent role reads and answers, but cannot change tasks or drop history.
AU=$(url 1)
${EXEC[0]} psql "$AU" -XAtq -c "SELECT count(*) FROM tasks" >/dev/null || fail "agent cannot read"
for sql in "UPDATE tasks SET batch = 2" "DELETE FROM measurements" "DROP TABLE measurements" \
           "TRUNCATE farm_jobs" "ALTER TABLE tasks ADD COLUMN x int" "UPDATE farm_jobs SET hw = 'x'"; do
  if ${EXEC[0]} psql "$AU" -XAtq -v ON_ERROR_STOP=1 -c "$sql" >/dev/null 2>&1; then fail "agent role may: $sql"; fi
done
# The server checks blobs against their names.
if q "INSERT INTO farm_blobs VALUES('00', 1, '\\x01')" 2>/dev/null; then fail "blob with a wrong hash stored"; fi

plugin_set "$T/p1" npu-stub
plugin_set "$T/p2" blis-cpu
plugin_set "$T/p3" npu-stub blis-cpu
"$B/bin/mi-zoo" mlp --out "$T/m.onnx" --width 0.25 --depth 2 >/dev/null

agent() { # I EXTRA... : starts agent I in its host, logs to T/aI.log
  local i=$1; shift
  ${EXEC[$((i-1))]} "$B/bin/mi-agent" --db "$(url "$i")" --plugins "$T/p$i" --name "host$i" \
    --cache "$T/cache$i" --lease 2 --timeout 60 "$@" >"$T/a$i.log" 2>&1 &
  PIDS+=($!)
  disown $! 2>/dev/null || true
}
ready() { for _ in $(seq 1 150); do grep -q "ready on" "$T/a$1.log" 2>/dev/null && return 0; sleep 0.2; done; fail "agent $1 not ready"; }

# Host 1 (npu only) hangs in every run: it takes the first job and is killed in the middle.
agent 1 --env MI_NPU_FAULT=hang --no-fingerprint
A1=${PIDS[-1]}
ready 1
"$B/bin/mi-agent" --db "$MI_PG_URL" --plugins "$T/p3" submit --model "$T/m.onnx" --device npu-stub:0 \
  --count 1 >"$T/submit0.log" 2>&1 || fail "submit"
for _ in $(seq 1 100); do
  [ "$(q "SELECT state FROM farm_jobs WHERE id = 1")" = running ] && break; sleep 0.1
done
[ "$(q "SELECT a.name FROM farm_jobs j JOIN farm_agents a ON a.id = j.agent_id WHERE j.id = 1")" = host1 ] ||
  fail "host1 did not claim the first job"
sleep 0.5
kill -9 "$A1"
echo "killed host1 in the middle of job 1"

agent 2 --exit-idle 4
agent 3 --exit-idle 4
ready 2; ready 3
"$B/bin/mi-agent" --db "$MI_PG_URL" --plugins "$T/p3" submit --model "$T/m.onnx" --device npu-stub:0 \
  --count 4 --wait --timeout 60 >"$T/submit1.log" 2>&1 &
S1=$!
"$B/bin/mi-agent" --db "$MI_PG_URL" --plugins "$T/p3" submit --model "$T/m.onnx" --device blis-cpu:0 \
  --knob threads=1 --count 4 --wait --timeout 60 >"$T/submit2.log" 2>&1 || fail "blis jobs"
wait "$S1" || fail "npu jobs"
# Job 1 too: the submitters waited for their own jobs only.
for _ in $(seq 1 100); do [ "$(q "SELECT state FROM farm_jobs WHERE id = 1")" = done ] && break; sleep 0.2; done

jobs=$(q "SELECT count(*) FROM farm_jobs")
[ "$jobs" = 9 ] || fail "expected 9 jobs, got $jobs"
[ "$(q "SELECT count(*) FROM farm_jobs WHERE state = 'done' AND ok = 1")" = 9 ] ||
  fail "not every job done: $(q "SELECT id, state, ok, failure FROM farm_jobs ORDER BY id")"
# Nothing lost or duplicated: one measurement per job, named by the job's uuid.
[ "$(q "SELECT count(*) FROM measurements")" = 9 ] || fail "measurements: $(q "SELECT count(*) FROM measurements")"
[ "$(q "SELECT count(*) FROM farm_jobs j JOIN measurements m ON m.uuid = j.uuid AND m.id = j.measurement_id")" = 9 ] ||
  fail "jobs and measurements do not match one to one"
# The killed job was claimed twice and answered by host3, the other host with an NPU.
[ "$(q "SELECT attempts FROM farm_jobs WHERE id = 1")" = 2 ] || fail "job 1 attempts: $(q "SELECT attempts FROM farm_jobs WHERE id = 1")"
[ "$(q "SELECT a.name FROM farm_jobs j JOIN farm_agents a ON a.id = j.agent_id WHERE j.id = 1")" = host3 ] ||
  fail "job 1 not finished by host3"
# Plugin sets decide who takes what: no NPU job ran on host2, no job at all on host1.
[ "$(q "SELECT count(*) FROM farm_jobs j JOIN farm_agents a ON a.id = j.agent_id WHERE a.name = 'host2' AND j.spec LIKE 'npu%'")" = 0 ] ||
  fail "an NPU job ran on the host without the NPU plugin"
[ "$(q "SELECT count(*) FROM farm_jobs j JOIN farm_agents a ON a.id = j.agent_id WHERE a.name = 'host1'")" = 0 ] ||
  fail "the dead host answered a job"
# Devices registered with their fingerprints; agents connected with TLS; measured in workers.
[ "$(q "SELECT count(*) FROM farm_agent_devices WHERE fingerprint IS NOT NULL")" -ge 4 ] || fail "fingerprints"
grep -q "(TLS)" "$T/a3.log" || fail "agent 3 did not use TLS"
[ "$(q "SELECT count(DISTINCT a.role) FROM farm_agents a")" = 3 ] || fail "agent roles"
# The model travelled once, as one blob, and every agent cached it under its hash.
[ "$(q "SELECT count(*) FROM farm_blobs")" = 1 ] || fail "blobs"
SHA=$(sha256sum "$T/m.onnx" | cut -d' ' -f1)
[ "$(q "SELECT sha256 FROM farm_blobs")" = "$SHA" ] || fail "blob name is not the model's SHA-256"
cmp -s "$T/m.onnx" "$T/cache3/$SHA.onnx" || fail "cached model differs"
# No output shows a password.
if grep -rqF -e "$MI_PG_PASSWORD" -e pw-agent- "$T"/*.log; then fail "a password was printed"; fi
grep -q "agent3:\*\*\*@" "$T/a3.log" || fail "the redacted URL is not shown"
echo "ok: 9 jobs, 9 measurements, job 1 reclaimed from host1 and finished by host3"

#!/usr/bin/env bash
# profile_kill.sh - mi-host profile end to end: JSON figures, a crashing device recorded with
# its reason while the others go on, SIGKILL in the middle of a run (the database opens clean
# and keeps the completed measurements), history export/import through the CLI, and the steps
# inside an If branch that ran as a nested session in the per-layer table (text and JSON).
set -u
. "${BASH_SOURCE[0]%/*}/lib.bash"
fail() { echo "FAIL: $*" >&2; exit 1; }
HOST="$B/bin/mi-host --plugins $B/plugins"

"$B/bin/mi-zoo" mlp --out "$T/m.onnx" > /dev/null || fail "mi-zoo"

# 1. --json: end-to-end figures and layers at the top level, one record in the db; --workers.
$HOST profile --model "$T/m.onnx" --device npu-stub:0 --db "$T/a.db" --repeat 5 \
  --no-fingerprint --json > "$T/p.json" || fail "profile exit $?"
python3 - "$T/p.json" <<'PY' || fail "profile JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["latency_ms"]["median"] > 0, d
assert d["latency_ms"]["p10"] <= d["latency_ms"]["median"] <= d["latency_ms"]["p90"], d
assert len(d["layers"]) == 6 and d["energy_source"] == "modeled", d
assert d["results"][0]["ok"] is True and d["failed"] == 0
# One figure from three fresh workers by default: the one reported is the median one.
w = d["latency_ms"]["worker_medians"]
assert d["latency_ms"]["workers"] == 3 and len(w) == 3, d["latency_ms"]
assert sorted(w)[1] == d["latency_ms"]["median"], d["latency_ms"]
PY
$HOST profile --model "$T/m.onnx" --device npu-stub:0 --db "$T/w.db" --repeat 5 --workers 1 \
  --no-fingerprint --json | python3 -c 'import json,sys; l=json.load(sys.stdin)["latency_ms"]; assert l["workers"] == 1 and l["worker_medians"] == [l["median"]], l' \
  || fail "--workers 1"
$HOST profile --model "$T/m.onnx" --device npu-stub:0 --db "$T/w.db" --workers 16 2> "$T/err" \
  && fail "--workers 16 accepted"
grep -q "workers wants 1..15" "$T/err" || fail "--workers error: $(cat "$T/err")"

# 2. A crashing NPU: the host survives, records why, and still measures the CPU.
MI_NPU_FAULT=crash $HOST profile --model "$T/m.onnx" --device npu-stub:0 --device blis-cpu:0 \
  --knob threads=1@blis-cpu:0 --db "$T/a.db" --repeat 5 --no-fingerprint --json > "$T/c.json"
[ $? -eq 1 ] || fail "a failed device should make the exit status 1"
python3 - "$T/c.json" "$T/a.db" <<'PY' || fail "crash record"
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
r = {x["device"]: x for x in d["results"]}
assert r["npu-stub:0"]["ok"] is False and "signal 11" in r["npu-stub:0"]["failure"], r
assert r["blis-cpu:0"]["ok"] is True and r["blis-cpu:0"]["latency_ms"]["median"] > 0, r
db = sqlite3.connect(sys.argv[2])
rows = db.execute("SELECT device_spec, ok, failure FROM measurements ORDER BY id").fetchall()
assert len(rows) == 3, rows
assert rows[1][0] == "npu-stub:0" and rows[1][1] == 0 and "signal 11" in rows[1][2], rows
assert rows[2][1] == 1, rows
PY

# 3. SIGKILL mid-run: many rounds, killed after a moment.
$HOST profile --model "$T/m.onnx" --device npu-stub:0 --db "$T/k.db" --repeat 5 \
  --rounds 100000 --no-fingerprint > /dev/null 2>&1 &
pid=$!
for i in $(seq 1 50); do
  sleep 0.2
  n=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from measurements').fetchone()[0])" "$T/k.db" 2>/dev/null || echo 0)
  [ "${n:-0}" -ge 3 ] && break
done
kill -9 $pid
wait $pid 2>/dev/null
python3 - "$T/k.db" <<'PY' || fail "database after SIGKILL"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
n = db.execute("SELECT count(*) FROM measurements WHERE ok = 1 AND median_s > 0").fetchone()[0]
assert n >= 3, n
print("measurements kept after SIGKILL:", n)
PY
$HOST history stats --db "$T/k.db" > /dev/null || fail "mi-host opens the killed db"

# 4. Export, import twice, bad line with its number.
$HOST history export --db "$T/a.db" --out "$T/a.jsonl" 2> /dev/null || fail "export"
[ "$(wc -l < "$T/a.jsonl")" -eq 3 ] || fail "3 lines expected"
# An output that is the history itself is refused (it used to empty the history).
( cd "$T" && cp a.db history.db && $HOST history export history.db 2> "$T/err" > /dev/null; [ $? -eq 2 ] ) \
  || fail "export onto the history itself not refused: $(cat "$T/err")"
grep -q "is the history itself" "$T/err" || fail "message: $(cat "$T/err")"
$HOST history export --db "$T/history.db" --out "$T/history.db" 2> /dev/null && fail "export --out onto --db"
[ "$($HOST history export --db "$T/history.db" | wc -l)" -eq 3 ] || fail "history emptied by an export onto itself"
$HOST history import --db "$T/b.db" "$T/a.jsonl" | grep -q "imported 3 records" || fail "import"
$HOST history import --db "$T/b.db" "$T/a.jsonl" | grep -q "imported 0 records, skipped 3" \
  || fail "second import must add nothing"
{ head -1 "$T/a.jsonl"; echo '{"format":1,"kind":"measurement"'; } > "$T/bad.jsonl"
$HOST history import --db "$T/c.db" "$T/bad.jsonl" 2> "$T/err" > /dev/null && fail "bad line accepted"
grep -q "line 2" "$T/err" || fail "bad line number: $(cat "$T/err")"
# 6. out = Mul(y, y), y = If(max(x) > 0.5, Tanh(Relu(x) + x), Sigmoid(Relu(x) + x)): the If
# runs on the host and the branch it picks as a nested session on blis-cpu; that branch's
# steps are rows named <If>/<branch>/<step> under the If, in JSON and in the text, where a
# path longer than the column keeps its tail (the step's own name). Plain job and --shape job.
mi_wire_py
python3 - "$T" <<'PY' || fail "If model"
import struct, sys
sys.path.insert(0, sys.argv[1]); from mi_wire import *
def graph(nodes, name, outs):
    return b"".join(ld(1, n) for n in nodes) + s(2, name) + b"".join(ld(12, vinfo(*o)) for o in outs)
def gattr(name, g): return s(1, name) + ld(6, g) + vi(20, 5)
IF = "an_if_node_named_at_length"
def branch(name, op):
    return graph([node("Relu", "relu_step_with_a_long_name", ["x"], ["r" + name]),
                  node("Add", "add", ["r" + name, "x"], ["a" + name]),
                  node(op, "last", ["a" + name], ["y" + name])], name, [("y" + name, 1, [1, 64])])
then_g, else_g = branch("then", "Tanh"), branch("else", "Sigmoid")
half = vi(2, 1) + s(8, "half") + ld(9, struct.pack("<f", 0.5))
rmax = node("ReduceMax", "rmax", ["x"], ["m"]) + ld(5, s(1, "keepdims") + vi(3, 0) + vi(20, 2))
ifn = node("If", IF, ["c"], ["y"]) + ld(5, gattr("then_branch", then_g)) + ld(5, gattr("else_branch", else_g))
save("if.onnx", model([rmax, node("Greater", "gt", ["m", "half"], ["c"]), ifn,
                       node("Mul", "sq", ["y", "y"], ["out"])],
                      [("x", 1, [1, 64])], [("out", 1, [1, 64])], inits=ld(5, half)))
PY
for opt in "" "--shape x=1x64"; do
  # shellcheck disable=SC2086
  $HOST profile --model "$T/if.onnx" --device blis-cpu:0 --db "$T/if.db" --repeat 5 --workers 1 \
    --no-fingerprint --json $opt > "$T/if.json" || fail "profile of the If model $opt"
  python3 - "$T/if.json" <<'PY' || fail "nested rows in the JSON table $opt"
import json, sys
rows = json.load(open(sys.argv[1]))["table"]
IF = "an_if_node_named_at_length"
nested = {r["name"] for r in rows if r["depth"] == 1}
ran = [b for b in ("then", "else") if IF + "/" + b + "/add" in nested]
assert len(ran) == 1, (nested, rows)
want = {IF + "/" + ran[0] + "/" + n for n in ("relu_step_with_a_long_name", "add", "last")}
assert want <= nested and all(n.startswith(IF + "/" + ran[0] + "/") for n in nested), nested
assert [r["name"] for r in rows if r["depth"] == 0 and r["op"] == "If"] == [IF], rows
assert abs(sum(r["share"] for r in rows) - 1) < 1e-6, rows
ms = [r["ms"] for r in rows]
assert ms == sorted(ms, reverse=True), "not sorted by time"
PY
done
$HOST profile --model "$T/if.onnx" --device blis-cpu:0 --db "$T/if.db" --repeat 5 --workers 1 \
  --no-fingerprint > "$T/if.txt" || fail "profile of the If model (text)"
grep -Eq "^~.*/(then|else)/relu_step_with_a_long_name +Relu " "$T/if.txt" ||
  fail "the long nested name lost its tail: $(cat "$T/if.txt")"
grep -Eq "^an_if_node_named_at_length/(then|else)/add +Add " "$T/if.txt" ||
  fail "nested row in the text: $(cat "$T/if.txt")"
# 7. The If's condition as a bool graph input: random data cannot stand for it, so its value
# comes from --input, which must reach the worker (it carried only the shapes once) and pick
# the branch: true runs then, false runs else.
python3 - "$T" <<'PY' || fail "If model with a bool input"
import struct, sys
sys.path.insert(0, sys.argv[1]); from mi_wire import *
def graph(nodes, name, outs):
    return b"".join(ld(1, n) for n in nodes) + s(2, name) + b"".join(ld(12, vinfo(*o)) for o in outs)
def gattr(name, g): return s(1, name) + ld(6, g) + vi(20, 5)
def branch(name, op):
    return graph([node(op, "step", ["x"], ["y" + name])], name, [("y" + name, 1, [1, 64])])
ifn = node("If", "cond", ["c"], ["y"]) + ld(5, gattr("then_branch", branch("then", "Tanh"))) + \
    ld(5, gattr("else_branch", branch("else", "Sigmoid")))
save("ifc.onnx", model([ifn], [("x", 1, [1, 64]), ("c", 9, [])], [("y", 1, [1, 64])]))
for v in (0, 1):
    h = "{'descr': '|b1', 'fortran_order': False, 'shape': (), }"
    h += " " * (63 - (10 + len(h)) % 64) + "\n"
    open("%s/c%d.npy" % (sys.argv[1], v), "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + bytes([v]))
PY
for v in 0 1; do
  $HOST profile --model "$T/ifc.onnx" --device blis-cpu:0 --db "$T/if.db" --repeat 3 --workers 1 \
    --no-fingerprint --json --input "c=$T/c$v.npy" > "$T/ifc.json" || fail "profile with --input c=c$v.npy"
  python3 - "$T/ifc.json" $v <<'PY' || fail "the --input value did not pick the branch (c=$v)"
import json, sys
rows = json.load(open(sys.argv[1]))["table"]
want = "cond/" + ("then" if sys.argv[2] == "1" else "else") + "/step"
assert want in {r["name"] for r in rows if r["depth"] == 1}, rows
PY
done
echo "profile_kill: ok"

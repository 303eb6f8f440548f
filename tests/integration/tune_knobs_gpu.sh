# tune_knobs_gpu.sh - the layer tasks' knob stage on opencl (PoCL) and vulkan (lavapipe), for real:
# mi-host tune of a small MobileNet-style zoo model with layer tasks must (1) report knob rounds and
# knob layer measurements, (2) measure some convolution task at two values of one knob with the
# same variant (before the stage every variant was measured at its declared knobs only, so no task
# ever had two), and (3) carry each task's best choice into the point the joint search measures
# next after the default (its first measurement with the tasks' choices held): when the stage made
# a task faster, a choice only the knob stage measured is in that point. (That the best of each
# task is the one carried is checked deterministically by test_ltask_knob.) A device the machine
# lacks is skipped; 77 when neither is there. No timing is asserted.
set -euo pipefail
: "${MI_BUILD:?}"
source "$(dirname "$0")/lib.bash"
mi_gpu_net
ran=0
for dev in opencl vulkan; do
  # budget 20: 6 variant rounds, then 10 - 6 = 4 knob rounds. The seconds are not what is
  # tested: under ASan on a loaded 2-core machine the default 300 s (40% for the layer tasks)
  # ended the phase after 4 variant rounds, before any knob round (CI, 2026-12-05).
  mi_gpu_dir "$dev" 'budget: { measurements: 20, seconds: 3000 }' 'search: { seed: 3 }' || continue
  ran=$((ran + 1))
  D=$T/$dev
  "${H[@]}" tune "$D/recipe.yaml" --out "$D/tune" 2>"$D/tlog" || { cat "$D/tlog"; exit 1; }
  python3 - "$D" "$dev" <<'PY'
import json, sqlite3, sys
D, dev = sys.argv[1], sys.argv[2]
lt = json.load(open(D + "/tune/pareto.json"))["runs"][0]["layer_tasks"]
assert lt["knob_rounds"] >= 1 and lt["knob_layer_measurements"] >= 1, (dev, lt)
db = sqlite3.connect(D + "/hist.db")
def parse(choice):  # "variant=V;knob.a=1;knob.b=2" (a dw+pw unit: "DW | PW") -> [(V, {a: 1, ...})]
    out = []
    for part in choice.split(" | "):
        kv = dict(e.split("=", 1) for e in part.split(";") if "=" in e)
        out.append((kv.pop("variant", "auto"), kv))
    return out
varied = 0
rows = db.execute("SELECT key, choice, seconds FROM layer_tasks WHERE ok = 1 AND op LIKE 'Conv%' ORDER BY key").fetchall()
by_key = {}
for key, choice, sec in rows:
    by_key.setdefault(key, []).append((parse(choice), sec, choice))
for key, rs in by_key.items():
    variants = {}
    for p, sec, choice in rs:
        variants.setdefault(tuple(v for v, _ in p), []).append(p)
    # two rows of the same variant(s) whose knobs differ: a knob was varied
    varied += any(len({json.dumps([k for _, k in p], sort_keys=True) for p in ps}) > 1 for ps in variants.values())
assert varied >= 1, "%s: no Conv task was measured at two knob values of one variant" % dev
# The joint search's first point with the tasks' choices held: the first measurement after the
# layer-task rounds that is not the default.
canon = [c for (c,) in db.execute("SELECT c.canonical FROM measurements m JOIN configs c ON c.id = m.config_id ORDER BY m.id")]
after = [c for c in canon[lt["rounds"]:] if c != canon[0]]
assert after, "%s: no measurement after the layer-task rounds: %d measurements, %d rounds" % (dev, len(canon), lt["rounds"])
held = set(e.split(":", 1)[1] for e in after[0].split(";")[1:] if ":" in e)
# (variant, knobs) pairs only the knob stage measured, as the canonical text writes them: a
# variant's later rows in a task (its first row is the variant stage's, at its declared knobs),
# and every row written after the variant stage's (the history starts empty; each of its layer
# measurements writes at most one row): a step from a task's auto names the variant auto stands
# for, which the variant stage may not have measured.
first_stage = lt["layer_measurements"] - lt["knob_layer_measurements"]
def entries(v, k):
    return "%s{%s}" % (v, ",".join("%s=%s" % (n[5:], k[n]) for n in sorted(k)))
stage = set()
for key in by_key:
    seen = set()
    for (choice,) in db.execute("SELECT choice FROM layer_tasks WHERE key = ? AND ok = 1 ORDER BY id", (key,)):
        for v, k in parse(choice):
            if v in seen:
                stage.add(entries(v, k))
            seen.add(v)
for i, (choice,) in enumerate(db.execute("SELECT choice FROM layer_tasks ORDER BY id")):
    if i >= first_stage:
        stage.update(entries(v, k) for v, k in parse(choice) if v != "auto")
carried = len(held & stage)
if lt["knob_improved"] > 0:
    assert carried >= 1, "%s: %d tasks faster in the knob stage, none of their choices in the held point" % (dev, lt["knob_improved"])
print("%s: %d knob rounds, %d knob layer measurements, %d tasks faster; %d Conv tasks varied a knob; "
      "%d knob-stage choices in the held point" % (dev, lt["knob_rounds"], lt["knob_layer_measurements"],
      lt["knob_improved"], varied, carried))
PY
done
[ "$ran" -gt 0 ] || { echo "SKIP: no OpenCL or Vulkan device"; exit 77; }

# soak.py - driver of tests/integration/tune_soak.sh: per strategy one uninterrupted reference
# run, then the same recipe from an empty history killed (SIGKILL to the process group) ten
# times at seeded random moments and resumed until it completes; then the checks.
# usage: soak.py BUILD DIR STRATEGY... (DIR/STRATEGY/{ref,soak}/recipe.yaml prepared)
import json, os, random, re, signal, sqlite3, subprocess, sys, time

B, T, STRATEGIES = sys.argv[1], sys.argv[2], sys.argv[3:]
KILLS = int(os.environ.get("MI_SOAK_KILLS", "10"))
SEED = int(os.environ.get("MI_SOAK_SEED", "14"))
ROWS = """SELECT m.uuid, c.canonical, c.model_canonical, m.ok, m.failure, m.median_s, m.energy_j,
                 m.peak_memory_bytes, m.accuracy
          FROM measurements m JOIN configs c ON c.id = m.config_id ORDER BY m.id"""


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def rows(db):
    """Every measurement row committed so far ([] before the file or its schema exists)."""
    for attempt in range(50):
        if not os.path.exists(db):
            return []
        try:
            con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=10)
            try:
                return con.execute(ROWS).fetchall()
            finally:
                con.close()
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return []
            if attempt == 49:  # e.g. the file exists but the tool is still creating it
                raise
            time.sleep(0.01)


def start(d, log):
    # Its own session: the tool, its threads and its measurement workers share one group.
    # --no-layer-tasks: a kill inside the layer-task rounds is not resumed exactly yet (the
    # rounds re-measure, docs/tuning.md "Layer tasks"); this soak checks the search's resume.
    return subprocess.Popen([B + "/bin/mi-host", "--plugins", B + "/plugins", "tune", d + "/recipe.yaml",
                             "--out", d + "/out", "--no-layer-tasks"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=log, start_new_session=True)


def group_alive(pgid):
    """Processes of the group that are still running (zombies awaiting a reaper excluded)."""
    alive = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % p).read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(p))
    return alive


def reference(d):
    """The uninterrupted run; returns its length and the median time between two commits."""
    t0, seen, stamps = time.monotonic(), 0, []
    with open(d + "/log", "w") as log:
        p = start(d, log)
        while p.poll() is None:
            n = committed(d + "/hist.db")
            if n > seen:
                seen = n
                stamps.append(time.monotonic())
            time.sleep(0.002)
        rc = p.wait()
    if rc != 0:
        fail("%s: uninterrupted run exited %d:\n%s" % (d, rc, open(d + "/log").read()))
    gaps = sorted(b - a for a, b in zip(stamps, stamps[1:])) or [0.01]
    return time.monotonic() - t0, gaps[len(gaps) // 2]


def committed(db):
    """How many measurement rows are committed (0 before the schema exists)."""
    if not os.path.exists(db):
        return 0
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=10)
        try:
            return con.execute("SELECT count(*) FROM measurements").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


def soak(d, rng, per, budget):  # per: up to how long to wait once the rows are there
    """Kills the run KILLS times, resumes it each time; returns the rows committed at each kill.
    Each kill waits for a random number (0..2) of new rows, then up to two measurements' time,
    so kills land in start-up and replay, inside a measurement, and between a commit and the
    next measurement."""
    db, kills, t0, finished, busy = d + "/hist.db", [], time.monotonic(), 0, 0
    with open(d + "/log", "w") as log:
        while True:
            p = start(d, log)
            if len(kills) == KILLS:
                break
            target = min(committed(db) + rng.randint(0, 2), budget - 1)
            while p.poll() is None and committed(db) < target:
                time.sleep(0.002)
            try:
                p.wait(timeout=rng.uniform(0.001, per))
                # It finished first: the next start resumes a finished run (it must replay it
                # all and measure nothing) and is killed in turn.
                finished += 1
                if finished > KILLS:
                    fail("%s: the run keeps finishing before the kill" % d)
                continue
            except subprocess.TimeoutExpired:
                pass
            before = rows(db)
            busy += len(group_alive(p.pid)) > 1  # the tool and its measurement worker(s)
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            for _ in range(50):  # workers die with the group; give the kernel a moment
                if not group_alive(p.pid):
                    break
                time.sleep(0.02)
            if group_alive(p.pid):
                fail("%s: processes of the killed group still run: %s" % (d, group_alive(p.pid)))
            after = rows(db)
            lost = set(before) - set(after)
            if lost:
                fail("%s: kill %d lost %d committed measurement(s): %s" % (d, len(kills) + 1, len(lost), sorted(lost)[:3]))
            kills.append(len(before))
        rc = p.wait()
    if rc != 0:
        fail("%s: the resumed run exited %d:\n%s" % (d, rc, open(d + "/log").read()[-4000:]))
    return kills, finished, busy, time.monotonic() - t0


def integrity(db):
    con = sqlite3.connect(db)
    try:
        ic = con.execute("PRAGMA integrity_check").fetchall()
        fk = con.execute("PRAGMA foreign_key_check").fetchall()
    finally:
        con.close()
    if ic != [("ok",)] or fk:
        fail("%s: integrity_check %s, foreign_key_check %s" % (db, ic, fk))


def by_config(rs):
    """(hardware side, model side) -> the list of its recorded results, in order."""
    m = {}
    for r in rs:
        # r[7], the peak memory, is left out: see deployment()
        m.setdefault((r[1], r[2]), []).append(r[3:7] + r[8:])
    return m


def same(x, y):
    """Equal, floats to 1e-9 relative: npu-stub's energy counter is cumulative over the worker's
    plugin instance, and a run's energy is the difference of two readings (measure/profile.c), so
    its last bits depend on what that worker measured before (e.g. 4.87212912500005e-05 against
    4.872129125e-05 J). Latency (the simulator's clock) and accuracy come out exact."""
    if isinstance(x, float) and isinstance(y, float):
        return x == y or abs(x - y) <= 1e-9 * max(abs(x), abs(y))
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y))
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    return x == y


def deployment(path):
    # The comment lines and the `recipe:` key name the recipe's path. Peak memory is left out:
    # npu-stub reports no device memory, so it is the worker's VmHWM, whose baseline depends on
    # the jobs that worker ran before (a few pages either way), which a resumed run changes;
    # memory is no objective of this recipe, so it cannot move the front.
    return [l for l in open(path).read().splitlines()
            if not l.lstrip().startswith(("#", "recipe:", "peak_memory"))]


def pareto(path):
    run = json.load(open(path))["runs"][0]
    # Whether a trial was measured now or replayed differs by construction; what was tried, in
    # which order, with which results, and the front, must not.
    def strip(t):
        t = {k: v for k, v in t.items() if k != "from_history"}
        t["objectives"] = {k: v for k, v in t["objectives"].items() if k != "memory"}
        return t
    return {"ok": run["ok"], "hv": run.get("hypervolume"), "front": [strip(t) for t in run.get("front", [])],
            "trials": [strip(t) for t in run.get("trials", [])],
            "total": run.get("measured", 0) + run.get("replayed", 0)}


for s in STRATEGIES:
    ref, sk = T + "/" + s + "/ref", T + "/" + s + "/soak"
    rng = random.Random("%d-%s" % (SEED, s))
    span, per = reference(ref)
    ref_rows = rows(ref + "/hist.db")
    budget = len(ref_rows)
    kills, finished, busy, took = soak(sk, rng, 2 * per, budget)
    soak_rows = rows(sk + "/hist.db")
    integrity(sk + "/hist.db")
    integrity(ref + "/hist.db")
    a, b = by_config(ref_rows), by_config(soak_rows)
    dup = {k: len(v) for k, v in b.items() if len(v) > max(1, len(a.get(k, [])))}
    if dup:
        fail("%s: %d configuration(s) measured more than once (more often than in the uninterrupted run), e.g. %s"
             % (s, len(dup), [(k[0][:48] + "...", n) for k, n in list(dup.items())[:2]]))
    if set(a) != set(b):
        last = json.load(open(sk + "/out/pareto.json"))["runs"][0]
        fail("%s: the killed and resumed run measured %d configurations, the uninterrupted one %d (%d not in both); "
             "its last start measured %s and replayed %s: not the same search" % (s, len(b), len(a), len(set(a) ^ set(b)),
                                                                                 last.get("measured"), last.get("replayed")))
    diff = [k for k in a if not same(a[k], b[k])]
    if diff:
        fail("%s: %d configuration(s) measured differently, e.g. %s: %s vs %s"
             % (s, len(diff), diff[0], a[diff[0]], b[diff[0]]))
    pa, pb = pareto(ref + "/out/pareto.json"), pareto(sk + "/out/pareto.json")
    if not pa["ok"] or not pa["front"]:
        fail("%s: the reference run found no front: %s" % (s, pa))
    for key in ("front", "trials", "hv", "total", "ok"):
        if not same(pa[key], pb[key]):
            fail("%s: pareto.json %s differs from the uninterrupted run:\n%s\nvs\n%s" % (s, key, pa[key], pb[key]))
    da, db = deployment(ref + "/out/deployment.yaml"), deployment(sk + "/out/deployment.yaml")
    if da != db:
        fail("%s: deployment.yaml differs:\n%s" % (s, "\n".join(l for l in set(da) ^ set(db))))
    chosen = re.search(r'config_id: "([0-9a-f]+)"', "\n".join(da))
    print("soak %s: %d rows, %d kills (rows committed at each: %s; %d with worker processes in the group; %d start(s) "
          "finished before their kill), "
          "front of %d, chosen %s; reference %.1f s, soak %.1f s"
          % (s, len(soak_rows), len(kills), kills, busy, finished, len(pa["front"]), chosen.group(1) if chosen else "-", span, took))

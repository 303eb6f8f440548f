/* test_blis_pool.c - the blis-cpu plugin's own thread pool (blis_threads.c, built into this test):
 * every item of every parallel region runs exactly once, whether the workers are spinning, in the
 * spin's yielding part or asleep when a region opens, on all cores and with the whole process
 * held on one core (the caller sharing its worker's core, where the spin yields it); regions back
 * to back, where a worker joins late; the split decision; the last loop's parts, a hint the
 * global pools read; the idle workers' spin budget (from the recent gaps between regions) and
 * their sleep; a small region, which does not wake a sleeping worker unless one was just woken;
 * a sleeper woken after its region closed, which leaves its sleep; and a sleeping worker steered
 * off the caller's core for its wake-up, which gets all its cores back once it runs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "test_util.h"

#include "../../plugins/blis_cpu/blis_threads.c"

#define ITEMS 20000
#define REGIONS 60

static int32_t g_hits[ITEMS];

static void count_items(void *arg, int64_t b, int64_t e) {
  (void)arg;
  for (int64_t i = b; i < e; i++) g_hits[i]++;
}

static void pause_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

/* A zeroed env of `threads` with its own pool; g_hits cleared. */
static void pool_env(mi__blis_env_t *env, int32_t threads) {
  memset(env, 0, sizeof *env);
  memset(g_hits, 0, sizeof g_hits);
  env->threads = threads;
  REQUIRE(env->pool = mi__blis_pool_create(threads));
}

/* The first item whose count is not want (want + 1 for the first `extra` items), or -1. */
static int hits_miss(int32_t want, int32_t extra) {
  for (int i = 0; i < ITEMS; i++)
    if (g_hits[i] != want + (i < extra)) return i;
  return -1;
}

/* REGIONS regions on a pool of `threads`, the gap before each one cycling through none (the
 * workers still spinning), 50 us (past the spin's first part: the workers yield) and 2 ms (past
 * the spin: asleep, woken by the region). */
static void regions(int32_t threads, const char *where) {
  mi__blis_env_t env;
  int miss;
  pool_env(&env, threads);
  for (int r = 0; r < REGIONS; r++) {
    if (r % 3 == 1) pause_us(50);
    if (r % 3 == 2) pause_us(2000);
    /* item_work high enough that every thread gets a part */
    mi__blis_parallel(&env, ITEMS, 8, 1000, count_items, NULL);
  }
  mi__blis_pool_destroy(env.pool);
  if ((miss = hits_miss(REGIONS, 0)) >= 0)
    CHECK(0, " %s, %d threads: item %d ran %d times in %d regions", where, (int)threads, miss,
          (int)g_hits[miss], REGIONS);
}

static void all_cores(void) {
  regions(2, "all cores");
  regions(4, "all cores");
}

static void one_core(void) {
  cpu_set_t one, all;
  REQUIRE(sched_getaffinity(0, sizeof all, &all) == 0);
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) TU_SKIP("one_core: cannot pin to one core");
  /* the workers, created by the pool, inherit the caller's single core */
  regions(2, "one core");
  regions(3, "one core");
  REQUIRE(sched_setaffinity(0, sizeof all, &all) == 0); /* the cases after this one use every core */
}

/* Regions back to back with no gap, each with its own argument: the workers join without a
 * lock, so one that saw a region open but joined after the caller closed it must claim nothing
 * (else it would run the next region's items with a stale argument, or the caller would return
 * while it still writes). Every item must be counted once, in its own region's slot, before
 * mi__blis_parallel returns. */
#define TIGHT_ITEMS 64
#define TIGHT_REGIONS 5000
static int32_t g_tight[2][TIGHT_ITEMS];

static void count_tight(void *arg, int64_t b, int64_t e) {
  int32_t *slot = arg;
  for (int64_t i = b; i < e; i++) {
    /* a little work per item, so the workers find chunks left to claim, and more on the last
     * chunk, which a worker that joined late often claims: the caller must wait for it */
    for (volatile int spin = 0; spin < (i >= TIGHT_ITEMS - 8 ? 5000 : 200); spin++) {
    }
    slot[i]++;
  }
}

static void tight(int32_t threads) {
  mi__blis_env_t env;
  int bad = 0;
  memset(g_tight, 0, sizeof g_tight);
  pool_env(&env, threads);
  for (int r = 0; r < TIGHT_REGIONS && !bad; r++) {
    int32_t *mine = g_tight[r & 1], *other = g_tight[(r & 1) ^ 1];
    mi__blis_parallel(&env, TIGHT_ITEMS, 1, MI__PAR_MIN_WORK, count_tight, mine);
    for (int i = 0; i < TIGHT_ITEMS; i++)
      if (mine[i] != r / 2 + 1 || other[i] != (r + 1) / 2) {
        CHECK(0, " %d threads, region %d: item %d counted %d (this region's slot) and %d (the other)",
              (int)threads, r, i, (int)mine[i], (int)other[i]);
        bad = 1;
        break;
      }
  }
  mi__blis_pool_destroy(env.pool);
}

static void back_to_back(void) {
  tight(2);
  tight(4);
}

/* The split decision: a part never gets less than MI__PAR_MIN_WORK, nor more parts than grains. */
static void parts_decision(void) {
  CHECK(mi__blis_par_parts(2, 100, 1, MI__PAR_MIN_WORK / 100) == 1, " tiny loop split");
  CHECK(mi__blis_par_parts(2, 2, 1, MI__PAR_MIN_WORK - 1) == 1, " two parts under the minimum");
  CHECK(mi__blis_par_parts(2, 2, 1, MI__PAR_MIN_WORK) == 2, " two parts at the minimum");
  CHECK(mi__blis_par_parts(4, 3, 1, MI__PAR_MIN_WORK * 10) == 3, " more parts than items");
  CHECK(mi__blis_par_parts(4, 4096 * 3, 4096, MI__PAR_MIN_WORK) == 3, " more parts than grains");
  CHECK(mi__blis_par_parts(1, 1 << 20, 1, 1 << 20) == 1, " one thread split");
  CHECK(mi__blis_par_parts(2, 0, 1, 1) == 1, " empty loop");
}

/* The hint a global pool reads (blis_pool.c): the threads of the pool's last loop, 1 after one that
 * ran on the calling thread, 1 without a pool. */
static void last_parts(void) {
  mi__blis_env_t env;
  memset(&env, 0, sizeof env);
  env.threads = 2;
  CHECK(mi__blis_last_parts(&env) == 1, " no pool: one part");
  REQUIRE(env.pool = mi__blis_pool_create(2));
  mi__blis_parallel(&env, ITEMS, 8, 1000, count_items, NULL);
  CHECK(mi__blis_last_parts(&env) == 2, " after a split loop: %d", (int)mi__blis_last_parts(&env));
  mi__blis_parallel(&env, 100, 1, 1, count_items, NULL);
  CHECK(mi__blis_last_parts(&env) == 1, " after a loop on the calling thread: %d", (int)mi__blis_last_parts(&env));
  mi__blis_pool_destroy(env.pool);
}

/* Polls up to 2 s (a loaded machine may not run the worker for a while) for `n` sleeping workers. */
static int wait_sleepers(mi__blis_pool_t *pool, int32_t n) {
  for (int i = 0; i < 2000 && atomic_load(&pool->sleepers) < n; i++) pause_us(1000);
  return atomic_load(&pool->sleepers) >= n;
}

/* The budget: MI__POOL_SPIN_GAPS times the recent longest gap, within [min, max]; the longest
 * loses 1/256 a region, a longer gap replaces it, a gap over the cap (an idle pause) is left out. */
static void spin_policy(void) {
  int64_t longest = 100000;
  CHECK(spin_budget(0) == MI__POOL_SPIN_MIN_NS, " no gap: %lld", (long long)spin_budget(0));
  CHECK(spin_budget(60000) == MI__POOL_SPIN_GAPS * 60000, " 60 us gaps: %lld", (long long)spin_budget(60000));
  CHECK(spin_budget(1000000000) == MI__POOL_SPIN_MAX_NS, " 1 s gaps: %lld", (long long)spin_budget(1000000000));
  CHECK(gap_longest(0, 40000) == 40000, " one 40 us gap: %lld", (long long)gap_longest(0, 40000));
  CHECK(gap_longest(40000, 1000000000) == 40000 - 40000 / 256, " an idle pause counted: %lld",
        (long long)gap_longest(40000, 1000000000));
  for (int i = 0; i < 256; i++) longest = gap_longest(longest, 1000);
  CHECK(longest > 30000 && longest < 45000, " 256 short gaps after a 100 us one: %lld", (long long)longest);
}

/* Regions 3 ms apart (more than any budget): an idle pause, not a gap to cover, so the spin
 * budget stays at its floor; the worker sleeps between them and the regions wake it; every item
 * still runs once. */
static void idle_sleep(void) {
  mi__blis_env_t env;
  int64_t wakes;
  int miss;
  pool_env(&env, 2);
  for (int r = 0; r < 12; r++) {
    mi__blis_parallel(&env, ITEMS, 8, 1000, count_items, NULL);
    pause_us(3000);
  }
  CHECK(spin_budget(atomic_load(&env.pool->gap_ns)) == MI__POOL_SPIN_MIN_NS, " budget %lld ns after 3 ms gaps",
        (long long)spin_budget(atomic_load(&env.pool->gap_ns)));
  CHECK(wait_sleepers(env.pool, 1), " the worker does not sleep after its budget");
  CHECK(atomic_load(&env.pool->sleeps) >= 1, " no sleep counted");
  wakes = atomic_load(&env.pool->wakes);
  mi__blis_parallel(&env, ITEMS, 8, 1000, count_items, NULL);
  CHECK(atomic_load(&env.pool->wakes) == wakes + 1, " a large region did not wake the sleeping worker");
  mi__blis_pool_destroy(env.pool);
  if ((miss = hits_miss(13, 0)) >= 0) CHECK(0, " item %d ran %d times in 13 regions", miss, (int)g_hits[miss]);
}

/* A region split in two but under MI__POOL_WAKE_MIN_WORK a part, with the only worker asleep,
 * runs on the calling thread: no wake-up, the worker stays asleep, the last loop ran serially. */
static void small_no_wake(void) {
  mi__blis_env_t env;
  int64_t wakes;
  int miss;
  pool_env(&env, 2);
  mi__blis_parallel(&env, ITEMS, 8, 1000, count_items, NULL); /* starts the worker */
  REQUIRE(wait_sleepers(env.pool, 1));
  wakes = atomic_load(&env.pool->wakes);
  REQUIRE(mi__blis_par_parts(2, 2, 1, MI__PAR_MIN_WORK) == 2);
  mi__blis_parallel(&env, 2, 1, MI__PAR_MIN_WORK, count_items, NULL);
  CHECK(atomic_load(&env.pool->wakes) == wakes, " a small region woke the worker");
  CHECK(mi__blis_last_parts(&env) == 1, " a small region with the worker asleep ran on %d threads",
        (int)mi__blis_last_parts(&env));
  CHECK(atomic_load(&env.pool->sleepers) == 1, " the worker left its sleep");
  mi__blis_pool_destroy(env.pool);
  if ((miss = hits_miss(1, 2)) >= 0) CHECK(0, " item %d ran %d times", miss, (int)g_hits[miss]);
}

/* Within MI__POOL_WAKE_LATE_NS of a wake-up, a small region opens although the worker still
 * counts as asleep (it may be on its way and join late); past it, it runs on the calling thread. */
static void late_window(void) {
  mi__blis_env_t env;
  int64_t wakes;
  int miss;
  pool_env(&env, 2);
  mi__blis_parallel(&env, ITEMS, 8, 1000, count_items, NULL); /* starts the worker */
  REQUIRE(wait_sleepers(env.pool, 1));
  wakes = atomic_load(&env.pool->wakes);
  env.pool->woke_ns = now_ns() + 60 * 1000000000LL; /* a wake-up just sent, whatever the machine's load */
  mi__blis_parallel(&env, 2, 1, MI__PAR_MIN_WORK, count_items, NULL);
  CHECK(mi__blis_last_parts(&env) == 2, " a small region right after a wake-up ran on %d threads",
        (int)mi__blis_last_parts(&env));
  CHECK(atomic_load(&env.pool->wakes) == wakes, " a small region woke the worker");
  env.pool->woke_ns = now_ns() - 2 * MI__POOL_WAKE_LATE_NS;
  REQUIRE(wait_sleepers(env.pool, 1));
  mi__blis_parallel(&env, 2, 1, MI__PAR_MIN_WORK, count_items, NULL);
  CHECK(mi__blis_last_parts(&env) == 1, " a small region long after a wake-up ran on %d threads",
        (int)mi__blis_last_parts(&env));
  mi__blis_pool_destroy(env.pool);
  g_hits[0] -= 1; /* the two small regions ran items 0 and 1 once each */
  g_hits[1] -= 1;
  if ((miss = hits_miss(1, 2)) >= 0) CHECK(0, " item %d ran %d times", miss, (int)g_hits[miss]);
}

typedef struct {
  mi__blis_pool_t *pool;
  uint32_t got;
} sleeper_t;

static void *sleeper(void *p) {
  sleeper_t *sl = p;
  sl->got = sleep_wait(sl->pool, 1, atomic_load(&sl->pool->gen));
  return NULL;
}

/* A sleeper woken when the region that woke it is closed already (gen moved on by two: opened and
 * closed while it slept) leaves its sleep and returns the new generation, so the worker spins for
 * the run's next region; it used to wait again until it saw a region open. */
static void woken_after_close(void) {
  mi__blis_pool_t *pool;
  sleeper_t sl;
  pthread_t th;
  struct timespec until;
  REQUIRE(pool = mi__blis_pool_create(2));
  sl.pool = pool;
  sl.got = 0;
  REQUIRE(pthread_create(&th, NULL, sleeper, &sl) == 0);
  REQUIRE(wait_sleepers(pool, 1));
  atomic_fetch_add(&pool->gen, 2);
  wake_sleepers(pool);
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 30;
  if (pthread_timedjoin_np(th, NULL, &until) != 0) {
    CHECK(0, " the sleeper woken after its region closed did not leave its sleep");
    atomic_store(&pool->quit, 1);
    atomic_fetch_add(&pool->gen, 2);
    wake_sleepers(pool);
    pthread_join(th, NULL);
  } else {
    CHECK(sl.got == 2, " the sleeper returned generation %u, not 2", (unsigned)sl.got);
    CHECK(atomic_load(&pool->sleepers) == 0 && !atomic_load(&pool->asleep[1]), " still counted asleep");
  }
  mi__blis_pool_destroy(pool);
}

/* A region that wakes a worker asleep for an idle pause first takes the caller's core out of the
 * worker's affinity (one steer), and the woken worker gets every core back; one that has just gone
 * to sleep is left alone; every item runs once. Needs two cores. */
static void steer_wake(void) {
  mi__blis_env_t env;
  cpu_set_t all, now;
  int64_t steers, sleeps;
  int32_t tid;
  int miss, i;
  REQUIRE(sched_getaffinity(0, sizeof all, &all) == 0);
  if (CPU_COUNT(&all) < 2) {
    printf("steer_wake: one core, nothing to steer to (not run)\n");
    return;
  }
  pool_env(&env, 2);
  mi__blis_parallel(&env, ITEMS, 8, 1000, count_items, NULL); /* starts the worker */
  REQUIRE(wait_sleepers(env.pool, 1));
  CHECK(env.pool->allowed_n == CPU_COUNT(&all), " the pool took %d cores, the process has %d",
        (int)env.pool->allowed_n, (int)CPU_COUNT(&all));
  /* a worker that has just gone to sleep (a short stretch in back-to-back runs) is not steered */
  atomic_store(&env.pool->slept_ns[1], now_ns() + 60 * 1000000000LL);
  steers = atomic_load(&env.pool->steers);
  sleeps = atomic_load(&env.pool->sleeps);
  mi__blis_parallel(&env, ITEMS, 8, 1000, count_items, NULL);
  CHECK(atomic_load(&env.pool->steers) == steers, " a worker asleep for less than %d ms was steered",
        (int)(MI__POOL_STEER_AFTER_NS / 1000000));
  /* asleep past MI__POOL_STEER_AFTER_NS (an idle pause), in a sleep begun after that wake-up */
  for (i = 0; i < 2000 && atomic_load(&env.pool->sleeps) == sleeps; i++) pause_us(1000);
  REQUIRE(atomic_load(&env.pool->sleeps) > sleeps && wait_sleepers(env.pool, 1));
  pause_us(MI__POOL_STEER_AFTER_NS / 1000 + 1000);
  steers = atomic_load(&env.pool->steers);
  mi__blis_parallel(&env, ITEMS, 8, 1000, count_items, NULL);
  CHECK(atomic_load(&env.pool->steers) == steers + 1, " %lld steers for one sleeping worker",
        (long long)(atomic_load(&env.pool->steers) - steers));
  for (i = 0; i < 2000 && atomic_load(&env.pool->steered[1]); i++) pause_us(1000);
  CHECK(!atomic_load(&env.pool->steered[1]), " the woken worker did not widen its affinity");
  tid = atomic_load(&env.pool->tid[1]);
  REQUIRE(tid > 0 && sched_getaffinity(tid, sizeof now, &now) == 0);
  CHECK(CPU_EQUAL(&now, &all), " the woken worker has %d cores, not %d", (int)CPU_COUNT(&now), (int)CPU_COUNT(&all));
  mi__blis_pool_destroy(env.pool);
  if ((miss = hits_miss(3, 0)) >= 0) CHECK(0, " item %d ran %d times in 3 regions", miss, (int)g_hits[miss]);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(all_cores),
    TU_CASE(one_core),
    TU_CASE(back_to_back),
    TU_CASE(parts_decision),
    TU_CASE(last_parts),
    TU_CASE(spin_policy),
    TU_CASE(idle_sleep),
    TU_CASE(small_no_wake),
    TU_CASE(late_window),
    TU_CASE(woken_after_close),
    TU_CASE(steer_wake),
};

TU_MAIN(NULL, NULL)

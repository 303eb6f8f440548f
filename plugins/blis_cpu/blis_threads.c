/* blis_threads.c - the plugin instance's own small pthread pool for its loops (BLIS threads itself). */
#define _GNU_SOURCE /* sched_getcpu, syscall */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "blis_internal.h"

#define MI__POOL_MAX 256

struct mi__blis_pool {
  pthread_mutex_t region; /* one parallel region at a time; a second caller runs serially */
  pthread_mutex_t m;      /* only for the caller's sleep and for starting workers */
  pthread_cond_t done;    /* the last worker left (the caller asleep) */
  pthread_t th[MI__POOL_MAX];
  int32_t spawned, max_workers;
  /* Odd while a region is open, even while closed: bumped by the caller when it opens a region
   * and again when it has claimed the last chunk. Workers join only an open region. 32 bits: the
   * futex sleeping workers wait on (a worker sees every change: one wrap takes 2^31 regions). */
  _Alignas(64) _Atomic uint32_t gen;
  _Atomic int32_t active;   /* workers inside the current region (joined, not yet left) */
  _Atomic int32_t sleepers; /* workers asleep on `gen`, or about to be */
  _Atomic int64_t gap_ns;   /* the recent longest gap between regions (gap_longest) */
  int64_t closed_ns;        /* when the caller closed the last region (0: none yet) */
  _Atomic int64_t sleeps;   /* times a worker went to sleep (tests read these two) */
  _Atomic int64_t wakes;    /* futex wake-ups the callers sent */
  _Atomic int32_t quit;
  _Atomic int32_t caller_waiting;         /* the caller sleeps on `done`, or is about to */
  _Atomic int32_t caller_cpu;             /* where the caller opened the last region: a hint */
  _Atomic int32_t wcpu[MI__POOL_MAX + 1]; /* per worker: its core while in a region, else -1 */
  /* Steering a sleeping worker off the caller's core (steer_sleepers): per worker its thread id,
   * whether it sleeps (or is about to), and whether the caller narrowed its affinity for its
   * wake-up (1; the worker widens it again) or gave it back before the worker ran (2); `allowed`
   * the cores the workers were started with. */
  _Atomic int32_t tid[MI__POOL_MAX + 1];
  _Atomic int32_t asleep[MI__POOL_MAX + 1];
  _Atomic int64_t slept_ns[MI__POOL_MAX + 1]; /* when it last went to sleep */
  _Atomic int32_t steered[MI__POOL_MAX + 1];
  cpu_set_t allowed;
  int32_t allowed_n;      /* cores in `allowed` (0: unknown, no steering) */
  int64_t woke_ns;        /* when a caller last sent a wake-up (0: never) */
  int64_t steered_ns;     /* when a caller last steered a worker (0: none to release) */
  _Atomic int64_t steers; /* sleeping workers the callers steered (tests read it) */
  /* the region, written by the caller only while closed and no worker is active */
  mi__blis_task_fn fn;
  void *arg;
  int64_t count, grain, units; /* items, items a grain, grains (units) */
  int64_t chunks;              /* claimed one at a time: mi__blis_even_start's units */
  int32_t parts;               /* threads of the current region, the caller included */
  int32_t ranges;              /* the chunks' home ranges, min(parts, MI__POOL_RANGES) */
  _Atomic int32_t last_parts;  /* threads of the last loop run through the pool (1: serially) */
  struct {
    _Alignas(64) _Atomic int64_t next; /* first unclaimed chunk (its own cache line: claimed often) */
    int64_t end;
  } range[MI__POOL_RANGES];
};

typedef struct worker_arg {
  mi__blis_pool_t *pool;
  int32_t index;      /* 1..: joins a region only when index < the region's parts */
  uint32_t start_gen; /* generation when spawned: a region opened right after is not missed */
} worker_arg_t;

/* Claims chunks of the current region until none is left: those of range `home` (the part's own),
 * then those of the ranges after it. Chunks start on multiples of grain, so every item is computed
 * by the same code (same vector/tail split) whoever runs it. */
static int64_t run_chunks(mi__blis_pool_t *pool, int32_t home) {
  int64_t n = 0;
  for (int32_t j = 0; j < pool->ranges; j++) {
    int32_t r = (home + j) % pool->ranges;
    for (;; n++) {
      int64_t i = atomic_fetch_add(&pool->range[r].next, 1), b, e;
      if (i >= pool->range[r].end) break;
      b = mi__blis_chunk_start(pool->units, pool->chunks, pool->ranges, i) * pool->grain;
      e = mi__blis_chunk_start(pool->units, pool->chunks, pool->ranges, i + 1) * pool->grain;
      pool->fn(pool->arg, b, e < pool->count ? e : pool->count);
    }
  }
  return n; /* chunks this thread ran */
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A worker between regions spins, then sleeps on a futex, for as long as the recent gaps between
 * regions suggest the next one is near: MI__POOL_SPIN_GAPS times the recent longest gap, within
 * [MI__POOL_SPIN_MIN_NS, MI__POOL_SPIN_MAX_NS]. The longest, not an average: on this VM a wake-up
 * costs the next region more than the spin (spinning 2 x a moving average, at least 30 us, made
 * ppocr-v2-cls and blazeface-front 7-11% slower at 2 threads, whose steps leave gaps of 16-256 us
 * between regions, for 2% less CPU time or 5% more; docs/benchmarks.md 2026-12-04 05:19 UTC). The
 * worker used to spin a fixed 20000 pauses (0.36 ms, more with its yields) after every region,
 * also after a run's last one; now that spin follows the model's own gaps (a model whose regions
 * come within 25 us of each other spins 50 us after its run). A gap over the cap is an idle
 * pause (between runs), not a gap to cover, and does not enter the estimate; the estimate loses
 * 1/256 a region, so a long run of short gaps brings the spin down. ONNX Runtime's workers spin long
 * (2^20 pauses) but can be told to stop between runs; this pool cannot tell a run's end (the host
 * runs it kernel by kernel), so the gaps stand in for it. */
#define MI__POOL_SPIN_GAPS 2
#define MI__POOL_SPIN_MIN_NS 50000
#define MI__POOL_SPIN_MAX_NS 350000

static int64_t spin_budget(int64_t gap_ns) {
  int64_t b = MI__POOL_SPIN_GAPS * gap_ns;
  if (b < MI__POOL_SPIN_MIN_NS) return MI__POOL_SPIN_MIN_NS;
  return b < MI__POOL_SPIN_MAX_NS ? b : MI__POOL_SPIN_MAX_NS;
}

/* The recent longest gap after a gap of gap_ns (one over MI__POOL_SPIN_MAX_NS is left out). */
static int64_t gap_longest(int64_t longest, int64_t gap_ns) {
  longest -= longest / 256;
  return gap_ns <= MI__POOL_SPIN_MAX_NS && gap_ns > longest ? gap_ns : longest;
}

/* Past the first MI__POOL_SPIN_HOT iterations the spinner yields its core every
 * MI__POOL_YIELD_EVERY: with more runnable threads than cores, the region's caller often shares
 * this worker's core (the wake-up put the worker there and it preempted the caller) and, behind a
 * spinner that never yields, it waited out the spin before it could go on. blazeface-back's first
 * step, the one region that wakes a sleeping worker each run, took 0.3-0.45 ms at 2 threads
 * instead of 0.1 ms at 1 thread on a loaded 2-core machine. With nothing else runnable,
 * sched_yield returns at once and the spin goes on. */
#define MI__POOL_SPIN_HOT 1024
#define MI__POOL_YIELD_EVERY 64

/* Whether this thread runs on the core given (sched_getcpu: a hint, the thread may move). */
static int on_cpu(int32_t cpu) { return cpu >= 0 && sched_getcpu() == cpu; }

static int is_open_after(uint32_t gen, uint32_t seen) { return gen != seen && (gen & 1); }

/* Waits, without sleeping, up to budget_ns for a region opened after `seen`, or quit. Returns the
 * generation it saw. */
static uint32_t spin_wait(mi__blis_pool_t *pool, uint32_t seen, int64_t budget_ns) {
  uint32_t g = atomic_load(&pool->gen);
  int64_t end = 0;
  for (int32_t spin = 0;; spin++) {
    if (is_open_after(g, seen) || atomic_load(&pool->quit)) return g;
    if (spin % MI__POOL_YIELD_EVERY == 0) {
      int64_t t = now_ns();
      if (!end) end = t + budget_ns;
      if (t > end) return g;
      /* on the caller's core a spin only delays it: yield at once there */
      if (spin >= MI__POOL_SPIN_HOT || on_cpu(atomic_load(&pool->caller_cpu))) sched_yield();
    } else {
      __builtin_ia32_pause();
    }
    g = atomic_load(&pool->gen);
  }
}

/* Sleeps until `gen` moves on from a closed generation after `seen`, or quit: on the futex word
 * `gen` itself, so a wake-up is one system call on each side, with no mutex to take again after it.
 * The worker counts itself in `sleepers` before it reads `gen` (both sequentially consistent), and
 * the caller bumps `gen` before it reads `sleepers`: either the worker reads the new value, or the
 * caller sees it and wakes it (a wait on a stale value returns at once). It returns on any change of
 * `gen`, also when the region that woke it is closed already: the woken worker then spins as after
 * a region (worker()), so the run's next regions find it awake. It used to wait again until it saw
 * a region open; woken after an idle pause, it came back after the caller had run the small
 * region alone and slept through the rest of the run (docs/benchmarks.md, 2026-12-05). */
static uint32_t sleep_wait(mi__blis_pool_t *pool, int32_t idx, uint32_t seen) {
  uint32_t g, g0;
  atomic_store(&pool->slept_ns[idx], now_ns());
  atomic_store(&pool->asleep[idx], 1);
  atomic_fetch_add(&pool->sleepers, 1);
  atomic_fetch_add(&pool->sleeps, 1);
  g0 = g = atomic_load(&pool->gen);
  while (!is_open_after(g, seen) && g == g0 && !atomic_load(&pool->quit)) {
    syscall(SYS_futex, (uint32_t *)&pool->gen, FUTEX_WAIT_PRIVATE, g, NULL, NULL, 0);
    g = atomic_load(&pool->gen);
  }
  atomic_fetch_sub(&pool->sleepers, 1);
  atomic_store(&pool->asleep[idx], 0);
  return g;
}

static void wake_sleepers(mi__blis_pool_t *pool) {
  atomic_fetch_add(&pool->wakes, 1);
  syscall(SYS_futex, (uint32_t *)&pool->gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* A worker joins a region without a lock: it counts itself active, then checks that the region
 * it saw is still open. The caller closes (bumps gen) before it waits for `active` to drop to 0,
 * so a worker either counted itself before that wait (the caller waits for it) or sees the
 * region closed and claims nothing; and the caller rewrites the region only when none is in. */
static void *worker(void *p) {
  worker_arg_t *wa = p;
  mi__blis_pool_t *pool = wa->pool;
  int32_t idx = wa->index;
  uint32_t seen = wa->start_gen;
  free(wa);
  atomic_store(&pool->tid[idx], (int32_t)syscall(SYS_gettid));
  for (;;) {
    uint32_t g = spin_wait(pool, seen, spin_budget(atomic_load(&pool->gap_ns)));
    if (!is_open_after(g, seen) && !atomic_load(&pool->quit)) g = sleep_wait(pool, idx, seen);
    {
      /* off the caller's core now: all cores again, and only then no longer counted steered (a
       * caller's release, 1 -> 2, widens it too; no caller steers a worker that is awake) */
      int32_t st = atomic_load(&pool->steered[idx]);
      if (st == 1) sched_setaffinity(0, sizeof pool->allowed, &pool->allowed);
      if (st) atomic_store(&pool->steered[idx], 0);
    }
    if (atomic_load(&pool->quit)) break;
    if (!is_open_after(g, seen)) continue; /* woken after the region closed: spin for the next */
    seen = g;
    atomic_fetch_add(&pool->active, 1);
    if (atomic_load(&pool->gen) == g && idx < pool->parts) {
      atomic_store(&pool->wcpu[idx], sched_getcpu());
      run_chunks(pool, idx % pool->ranges);
      atomic_store(&pool->wcpu[idx], -1);
    }
    if (atomic_fetch_sub(&pool->active, 1) == 1 && atomic_load(&pool->caller_waiting)) {
      pthread_mutex_lock(&pool->m);
      pthread_cond_broadcast(&pool->done);
      pthread_mutex_unlock(&pool->m);
    }
  }
  return NULL;
}

mi__blis_pool_t *mi__blis_pool_create(int32_t max_threads) {
  mi__blis_pool_t *pool = aligned_alloc(64, (sizeof(mi__blis_pool_t) + 63) / 64 * 64);
  if (!pool) return NULL;
  memset(pool, 0, sizeof *pool);
  pthread_mutex_init(&pool->region, NULL);
  pthread_mutex_init(&pool->m, NULL);
  pthread_cond_init(&pool->done, NULL);
  pool->max_workers = max_threads - 1 < MI__POOL_MAX ? max_threads - 1 : MI__POOL_MAX;
  atomic_store(&pool->caller_cpu, -1);
  for (int32_t i = 0; i <= MI__POOL_MAX; i++) atomic_store(&pool->wcpu[i], -1);
  return pool;
}

void mi__blis_pool_destroy(mi__blis_pool_t *pool) {
  int32_t i;
  if (!pool) return;
  atomic_store(&pool->quit, 1);
  /* a closed generation the sleepers' futex waits do not expect (one about to wait returns) */
  atomic_fetch_add(&pool->gen, 2);
  wake_sleepers(pool);
  for (i = 0; i < pool->spawned; i++) pthread_join(pool->th[i], NULL);
  pthread_cond_destroy(&pool->done);
  pthread_mutex_destroy(&pool->m);
  pthread_mutex_destroy(&pool->region);
  free(pool);
}

/* Workers are started on first need, so a threads=1 instance never owns a thread. Called with
 * pool->region held, the region closed; returns how many workers exist (fewer when
 * pthread_create fails). */
static int32_t ensure_workers(mi__blis_pool_t *pool, int32_t want) {
  if (pool->spawned >= want || pool->spawned >= pool->max_workers) return pool->spawned;
  pthread_mutex_lock(&pool->m);
  if (!pool->spawned && sched_getaffinity(0, sizeof pool->allowed, &pool->allowed) == 0)
    pool->allowed_n = CPU_COUNT(&pool->allowed); /* the workers inherit the caller's cores */
  while (pool->spawned < want && pool->spawned < pool->max_workers) {
    worker_arg_t *wa = malloc(sizeof *wa);
    if (!wa) break;
    wa->pool = pool;
    wa->index = pool->spawned + 1;
    wa->start_gen = atomic_load(&pool->gen);
    if (pthread_create(&pool->th[pool->spawned], NULL, worker, wa) != 0) {
      free(wa);
      break;
    }
    pool->spawned++;
  }
  pthread_mutex_unlock(&pool->m);
  return pool->spawned;
}

int32_t mi__blis_par_parts(int32_t threads, int64_t count, int64_t grain, int64_t item_work) {
  double work = (double)count * (double)(item_work > 0 ? item_work : 1);
  int64_t units;
  int32_t parts = threads;
  if (count <= 0) return 1;
  if (grain < 1) grain = 1;
  units = (count + grain - 1) / grain;
  if ((double)parts * MI__PAR_MIN_WORK > work) parts = (int32_t)(work / MI__PAR_MIN_WORK);
  if (parts > units) parts = (int32_t)units;
  return parts < 1 ? 1 : parts;
}

/* Whether a worker inside the region last ran on the core given. */
static int worker_on(mi__blis_pool_t *pool, int32_t cpu) {
  for (int32_t i = 1; i <= pool->spawned && cpu >= 0; i++)
    if (atomic_load(&pool->wcpu[i]) == cpu) return 1;
  return 0;
}

/* The caller waits for the chunks workers claimed. A worker that runs finishes its chunk within
 * about one chunk's time, so the caller spins that long (twice the mean of its own chunks, plus
 * 20 us, at most MI__POOL_WAIT_MAX_NS) and does not sleep then: on this virtual machine a futex
 * sleep and wake-up per region (what a condition variable did every time) cost more than the
 * small regions, and 2-thread runs of small models were slower than 1-thread ones on a quiet
 * machine. Past that the worker is likely descheduled: the caller sleeps until the last worker
 * leaves, so its core can run the worker or others (the cap: a region whose chunks last longer
 * pays a wake-up of a few percent, and a descheduled worker gets the caller's core sooner). A
 * worker on the caller's own core cannot go on while the caller spins: it yields at once then. */
#define MI__POOL_WAIT_MAX_NS 100000
static void wait_workers(mi__blis_pool_t *pool, int64_t spin_ns) {
  int32_t me = sched_getcpu();
  int64_t t0 = 0;
  for (int32_t spin = 0; atomic_load(&pool->active) > 0; spin++) {
    if (spin % 64 == 63) {
      if (worker_on(pool, me)) {
        sched_yield();
        continue;
      }
      if (!t0) t0 = now_ns();
      else if (now_ns() - t0 > spin_ns) {
        pthread_mutex_lock(&pool->m);
        atomic_store(&pool->caller_waiting, 1);
        while (atomic_load(&pool->active) > 0) pthread_cond_wait(&pool->done, &pool->m);
        atomic_store(&pool->caller_waiting, 0);
        pthread_mutex_unlock(&pool->m);
        return;
      }
    }
    __builtin_ia32_pause();
  }
}

static void run_serial(mi__blis_pool_t *pool, int64_t count, mi__blis_task_fn fn, void *arg) {
  if (pool) atomic_store(&pool->last_parts, 1);
  fn(arg, 0, count);
}

/* A region whose parts get under this many operations each does not wake a sleeping worker: it
 * runs on the workers that are awake, or on the calling thread if none is (ONNX Runtime's cost
 * model runs small loops inline, so its workers seldom wake on small models). A woken worker joins
 * after its wake-up, when such a region has few chunks left, and the caller would have paid the
 * wake-up's system call; four times the floor of a part. */
#define MI__POOL_WAKE_MIN_WORK (4 * MI__PAR_MIN_WORK)
/* A worker is steered only after it slept this long (an idle pause, past any spin budget): one
 * that slept through a short stretch of small regions in back-to-back runs, where the other core
 * is busy, was left to the kernel before and is left to it now (steered onto a core taken by other
 * work it joined regions there and was descheduled on claimed chunks: blazeface-front back to
 * back at 2 threads 0.843 against 0.739 ms at load 1.6-2.3; docs/benchmarks.md, 2026-12-05). */
#define MI__POOL_STEER_AFTER_NS 2000000
/* How long after a wake-up a worker still asleep by the count is taken to be on its way. */
#define MI__POOL_WAKE_LATE_NS 1000000

/* Before it wakes sleeping workers, the caller takes its own core out of their affinity (each
 * worker widens it again once it runs, release_steers if it does not come). Left to the kernel,
 * a worker asleep for 5 ms or more was woken on the caller's core, busy with the region, in 39-40
 * of 40 wake-ups on the 2-vCPU VM, where it preempted the caller within 6-12 us: it ran the
 * region's chunks in the caller's place, not beside it, then slept there again, so the next
 * run's wake-up put it there too. In a streaming run after 20 ms idle it took a chunk of the
 * run's first region on the caller's core and joined none of the 29 regions after it; steered,
 * it came on the other core about 0.1 ms after the wake-up and joined every region from the
 * second or third on (docs/benchmarks.md, 2026-12-05). A sleeping thread's affinity changes
 * without moving it (about 1.2 us a call); its wake-up then picks one of the cores left. Only
 * after an idle pause: a worker that spins between regions is not woken. */
static void steer_sleepers(mi__blis_pool_t *pool, int32_t cpu) {
  cpu_set_t others;
  int64_t now;
  if (pool->allowed_n < 2 || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &pool->allowed)) return;
  others = pool->allowed;
  CPU_CLR(cpu, &others);
  now = now_ns();
  for (int32_t i = 1; i <= pool->spawned; i++) {
    int32_t tid = atomic_load(&pool->tid[i]);
    if (!atomic_load(&pool->asleep[i]) || tid <= 0 || atomic_load(&pool->steered[i]) ||
        now - atomic_load(&pool->slept_ns[i]) < MI__POOL_STEER_AFTER_NS)
      continue;
    if (sched_setaffinity(tid, sizeof others, &others) == 0) {
      atomic_store(&pool->steered[i], 1);
      atomic_fetch_add(&pool->steers, 1);
      pool->steered_ns = now_ns();
    }
  }
}

/* Gives every core back to the workers still steered MI__POOL_WAKE_LATE_NS after the steer: one
 * that has not run by then waits on a core something else holds (a real-time process holds it
 * for good), and the caller's core must be open to it again. */
static void release_steers(mi__blis_pool_t *pool, int64_t now) {
  if (now - pool->steered_ns <= MI__POOL_WAKE_LATE_NS) return;
  for (int32_t i = 1; i <= pool->spawned; i++) {
    int32_t one = 1; /* 2: released, and not steered again before it has run */
    if (atomic_compare_exchange_strong(&pool->steered[i], &one, 2))
      sched_setaffinity(atomic_load(&pool->tid[i]), sizeof pool->allowed, &pool->allowed);
  }
  pool->steered_ns = 0;
}

/* Writes the region's fields (the region closed, no worker in it). */
static void set_region(mi__blis_pool_t *pool, int64_t count, int64_t grain, int32_t parts,
                       mi__blis_task_fn fn, void *arg) {
  int64_t units = (count + grain - 1) / grain;
  pool->fn = fn;
  pool->arg = arg;
  pool->count = count;
  pool->parts = parts;
  /* four chunks per part, so a late worker still finds work and an early one does more */
  pool->grain = grain;
  pool->units = units;
  pool->chunks = units < MI__PAR_CHUNKS * parts ? units : MI__PAR_CHUNKS * parts;
  pool->ranges = parts < MI__POOL_RANGES ? parts : MI__POOL_RANGES;
  for (int32_t r = 0; r < pool->ranges; r++) {
    atomic_store(&pool->range[r].next, mi__blis_even_start(pool->chunks, pool->ranges, r));
    pool->range[r].end = mi__blis_even_start(pool->chunks, pool->ranges, r + 1);
  }
}

/* The caller opens the region and claims chunks itself; workers that are awake join and claim
 * the rest. The caller then waits only for chunks a worker has already claimed, never for a
 * worker that the OS has not scheduled yet (on a loaded machine that wait stalled whole runs). */
void mi__blis_parallel(const mi__blis_env_t *env, int64_t count, int64_t grain, int64_t item_work,
                       mi__blis_task_fn fn, void *arg) {
  mi__blis_pool_t *pool = env ? env->pool : NULL;
  int32_t parts = mi__blis_par_parts(env ? env->threads : 1, count, grain, item_work), wake;
  int64_t t0, mine;
  if (count <= 0) return;
  if (parts <= 1 || !pool || pthread_mutex_trylock(&pool->region) != 0) {
    run_serial(pool, count, fn, arg);
    return;
  }
  if (pool->steered_ns) release_steers(pool, now_ns());
  wake = (double)count * (double)(item_work > 0 ? item_work : 1) >= (double)parts * MI__POOL_WAKE_MIN_WORK;
  /* within MI__POOL_WAKE_LATE_NS of a wake-up, a worker still counted asleep may be on its way:
   * the region opens, and it joins late if it comes in time */
  if (ensure_workers(pool, parts - 1) == 0 ||
      (!wake && atomic_load(&pool->sleepers) >= pool->spawned &&
       (!pool->woke_ns || now_ns() - pool->woke_ns > MI__POOL_WAKE_LATE_NS))) {
    pthread_mutex_unlock(&pool->region);
    run_serial(pool, count, fn, arg);
    return;
  }
  atomic_store(&pool->last_parts, parts);
  set_region(pool, count, grain < 1 ? 1 : grain, parts, fn, arg);
  atomic_store(&pool->caller_cpu, sched_getcpu());
  t0 = now_ns();
  if (pool->closed_ns) atomic_store(&pool->gap_ns, gap_longest(atomic_load(&pool->gap_ns), t0 - pool->closed_ns));
  if (wake && atomic_load(&pool->sleepers) > 0) steer_sleepers(pool, atomic_load(&pool->caller_cpu));
  atomic_fetch_add(&pool->gen, 1); /* open */
  if (wake && atomic_load(&pool->sleepers) > 0) {
    wake_sleepers(pool);
    pool->woke_ns = t0;
  }
  mine = run_chunks(pool, 0);
  atomic_fetch_add(&pool->gen, 1); /* closed: every chunk is claimed */
  if (atomic_load(&pool->active) > 0) {
    int64_t spin_ns = 2 * (now_ns() - t0) / (mine > 0 ? mine : 1) + 20000;
    wait_workers(pool, spin_ns < MI__POOL_WAIT_MAX_NS ? spin_ns : MI__POOL_WAIT_MAX_NS);
  }
  pool->closed_ns = now_ns();
  pthread_mutex_unlock(&pool->region);
}

int32_t mi__blis_last_parts(const mi__blis_env_t *env) {
  return env && env->pool ? atomic_load(&env->pool->last_parts) : 1;
}

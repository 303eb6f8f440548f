/* blis_threads.c - the plugin instance's own small pthread pool for its loops (BLIS threads itself). */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "blis_internal.h"

#define MI__POOL_MAX 256

struct mi__blis_pool {
  pthread_mutex_t region; /* one parallel region at a time; a second caller runs serially */
  pthread_mutex_t m;
  pthread_cond_t go, done;
  pthread_t th[MI__POOL_MAX];
  int32_t spawned, max_workers;
  _Atomic uint64_t gen; /* bumped when a region opens */
  int32_t open;         /* under m: workers may still join the current region */
  int32_t active;       /* under m: workers inside the current region */
  int32_t sleepers;     /* under m: workers blocked on `go` */
  _Atomic int32_t quit;
  mi__blis_task_fn fn;
  void *arg;
  int64_t count, grain, chunk; /* chunk: items claimed at a time, a multiple of grain */
  int32_t parts;               /* threads of the current region, the caller included */
  _Atomic int64_t next;        /* first unclaimed item */
};

typedef struct worker_arg {
  mi__blis_pool_t *pool;
  int32_t index;      /* 1..: joins a region only when index < the region's parts */
  uint64_t start_gen; /* generation when spawned: a region opened right after is not missed */
} worker_arg_t;

/* Claims chunks of the current region until none is left. Chunks start on multiples of grain, so
 * every item is computed by the same code (same vector/tail split) whoever runs it. */
static void run_chunks(mi__blis_pool_t *pool) {
  for (;;) {
    int64_t b = atomic_fetch_add(&pool->next, pool->chunk), e;
    if (b >= pool->count) break;
    e = b + pool->chunk < pool->count ? b + pool->chunk : pool->count;
    pool->fn(pool->arg, b, e);
  }
}

/* Spin iterations a worker waits for the next region before it sleeps: regions come in quick
 * succession during a run, and a futex wake-up per region costs more than the small ones. Past
 * the first MI__POOL_SPIN_HOT iterations the spinner yields its core every MI__POOL_YIELD_EVERY:
 * with more runnable threads than cores, the region's caller often shares this worker's core
 * (the wake-up put the worker there and it preempted the caller) and, behind a spinner that
 * never yields, it waited out the spin before it could go on. blazeface-back's first step, the
 * one region that wakes a sleeping worker each run, took 0.3-0.45 ms at 2 threads instead of
 * 0.1 ms at 1 thread on a loaded 2-core machine: about what the 20000 pauses last there. With
 * nothing else runnable, sched_yield returns at once and the spin goes on. */
#define MI__POOL_SPIN 20000
#define MI__POOL_SPIN_HOT 1024
#define MI__POOL_YIELD_EVERY 64

/* Waits, without sleeping, up to MI__POOL_SPIN iterations for a region after `seen` or quit. */
static void spin_wait(mi__blis_pool_t *pool, uint64_t seen) {
  for (int32_t spin = 0; spin < MI__POOL_SPIN; spin++) {
    if (atomic_load(&pool->gen) != seen || atomic_load(&pool->quit)) return;
    if (spin >= MI__POOL_SPIN_HOT && spin % MI__POOL_YIELD_EVERY == 0) sched_yield();
    else
      __builtin_ia32_pause();
  }
}

static void *worker(void *p) {
  worker_arg_t *wa = p;
  mi__blis_pool_t *pool = wa->pool;
  int32_t idx = wa->index;
  uint64_t seen = wa->start_gen;
  free(wa);
  for (;;) {
    spin_wait(pool, seen);
    pthread_mutex_lock(&pool->m);
    while (atomic_load(&pool->gen) == seen && !atomic_load(&pool->quit)) {
      pool->sleepers++;
      pthread_cond_wait(&pool->go, &pool->m);
      pool->sleepers--;
    }
    if (atomic_load(&pool->quit)) {
      pthread_mutex_unlock(&pool->m);
      break;
    }
    seen = atomic_load(&pool->gen);
    if (!pool->open || idx >= pool->parts) { /* finished by the caller alone, or not needed */
      pthread_mutex_unlock(&pool->m);
      continue;
    }
    pool->active++;
    pthread_mutex_unlock(&pool->m);
    run_chunks(pool);
    pthread_mutex_lock(&pool->m);
    if (--pool->active == 0) pthread_cond_signal(&pool->done);
    pthread_mutex_unlock(&pool->m);
  }
  return NULL;
}

mi__blis_pool_t *mi__blis_pool_create(int32_t max_threads) {
  mi__blis_pool_t *pool = calloc(1, sizeof *pool);
  if (!pool) return NULL;
  pthread_mutex_init(&pool->region, NULL);
  pthread_mutex_init(&pool->m, NULL);
  pthread_cond_init(&pool->go, NULL);
  pthread_cond_init(&pool->done, NULL);
  pool->max_workers = max_threads - 1 < MI__POOL_MAX ? max_threads - 1 : MI__POOL_MAX;
  return pool;
}

void mi__blis_pool_destroy(mi__blis_pool_t *pool) {
  int32_t i;
  if (!pool) return;
  pthread_mutex_lock(&pool->m);
  atomic_store(&pool->quit, 1);
  pthread_cond_broadcast(&pool->go);
  pthread_mutex_unlock(&pool->m);
  for (i = 0; i < pool->spawned; i++) pthread_join(pool->th[i], NULL);
  pthread_cond_destroy(&pool->go);
  pthread_cond_destroy(&pool->done);
  pthread_mutex_destroy(&pool->m);
  pthread_mutex_destroy(&pool->region);
  free(pool);
}

/* Workers are started on first need, so a threads=1 instance never owns a thread. Called with
 * pool->m held; returns how many workers exist (fewer when pthread_create fails). */
static int32_t ensure_workers(mi__blis_pool_t *pool, int32_t want) {
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
  return pool->spawned;
}

/* The caller opens the region and claims chunks itself; workers that are awake join and claim
 * the rest. The caller then waits only for chunks a worker has already claimed, never for a
 * worker that the OS has not scheduled yet (on a loaded machine that wait stalled whole runs). */
void mi__blis_parallel(const mi__blis_env_t *env, int64_t count, int64_t grain, int64_t item_work,
                       mi__blis_task_fn fn, void *arg) {
  mi__blis_pool_t *pool = env ? env->pool : NULL;
  int32_t parts = env ? env->threads : 1;
  int64_t units;
  double work = (double)count * (double)(item_work > 0 ? item_work : 1);
  if (grain < 1) grain = 1;
  units = (count + grain - 1) / grain;
  if ((double)parts * MI__PAR_MIN_WORK > work) parts = (int32_t)(work / MI__PAR_MIN_WORK);
  if (parts > units) parts = (int32_t)units;
  if (count <= 0) return;
  if (parts <= 1 || !pool || pthread_mutex_trylock(&pool->region) != 0) {
    fn(arg, 0, count);
    return;
  }
  pthread_mutex_lock(&pool->m);
  if (ensure_workers(pool, parts - 1) == 0) {
    pthread_mutex_unlock(&pool->m);
    pthread_mutex_unlock(&pool->region);
    fn(arg, 0, count);
    return;
  }
  pool->fn = fn;
  pool->arg = arg;
  pool->count = count;
  pool->grain = grain;
  pool->parts = parts;
  /* about four chunks per part, so a late worker still finds work and an early one does more */
  pool->chunk = (units + 4 * parts - 1) / (4 * parts) * grain;
  atomic_store(&pool->next, 0);
  pool->open = 1;
  atomic_fetch_add(&pool->gen, 1);
  if (pool->sleepers) pthread_cond_broadcast(&pool->go);
  pthread_mutex_unlock(&pool->m);
  run_chunks(pool);
  pthread_mutex_lock(&pool->m);
  pool->open = 0;
  while (pool->active > 0) pthread_cond_wait(&pool->done, &pool->m);
  pthread_mutex_unlock(&pool->m);
  pthread_mutex_unlock(&pool->region);
}

/* blis_threads.c - the plugin instance's own small pthread pool for its loops (BLIS threads itself). */
#include <pthread.h>
#include <stdlib.h>

#include "blis_internal.h"

#define MI__POOL_MAX 256

struct mi__blis_pool {
  pthread_mutex_t region; /* one parallel region at a time; a second caller runs serially */
  pthread_mutex_t m;
  pthread_cond_t go, done;
  pthread_t th[MI__POOL_MAX];
  int32_t spawned, max_workers;
  uint64_t gen;
  int32_t pending, quit;
  mi__blis_task_fn fn;
  void *arg;
  int64_t count, grain;
  int32_t parts;
};

typedef struct worker_arg {
  mi__blis_pool_t *pool;
  int32_t index;      /* part index this worker runs (1..) */
  uint64_t start_gen; /* generation when spawned: a region opened right after is not missed */
} worker_arg_t;

/* Part i of `parts` over [0, count), boundaries on multiples of grain so that every element is
 * computed by the same code path (same vector/tail split) whatever the thread count. */
static void part_range(int64_t count, int64_t grain, int32_t parts, int32_t i, int64_t *b, int64_t *e) {
  int64_t units = (count + grain - 1) / grain;
  *b = units * i / parts * grain;
  *e = units * (i + 1) / parts * grain;
  if (*b > count) *b = count;
  if (*e > count) *e = count;
}

static void *worker(void *p) {
  worker_arg_t *wa = p;
  mi__blis_pool_t *pool = wa->pool;
  int32_t idx = wa->index;
  uint64_t seen = wa->start_gen;
  free(wa);
  pthread_mutex_lock(&pool->m);
  for (;;) {
    while (pool->gen == seen && !pool->quit) pthread_cond_wait(&pool->go, &pool->m);
    if (pool->quit) break;
    seen = pool->gen;
    if (idx < pool->parts) {
      int64_t b, e;
      mi__blis_task_fn fn = pool->fn;
      void *arg = pool->arg;
      part_range(pool->count, pool->grain, pool->parts, idx, &b, &e);
      pthread_mutex_unlock(&pool->m);
      if (b < e) fn(arg, b, e);
      pthread_mutex_lock(&pool->m);
    }
    if (--pool->pending == 0) pthread_cond_signal(&pool->done);
  }
  pthread_mutex_unlock(&pool->m);
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
  pool->quit = 1;
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
    wa->start_gen = pool->gen;
    if (pthread_create(&pool->th[pool->spawned], NULL, worker, wa) != 0) {
      free(wa);
      break;
    }
    pool->spawned++;
  }
  return pool->spawned;
}

void mi__blis_parallel(const mi__blis_env_t *env, int64_t count, int64_t grain, int64_t item_work,
                       mi__blis_task_fn fn, void *arg) {
  mi__blis_pool_t *pool = env ? env->pool : NULL;
  int32_t parts = env ? env->threads : 1;
  int64_t b, e;
  double work = (double)count * (double)(item_work > 0 ? item_work : 1);
  if (grain < 1) grain = 1;
  if ((double)parts * MI__PAR_MIN_WORK > work) parts = (int32_t)(work / MI__PAR_MIN_WORK);
  if (parts > (count + grain - 1) / grain) parts = (int32_t)((count + grain - 1) / grain);
  if (count <= 0) return;
  if (parts <= 1 || !pool || pthread_mutex_trylock(&pool->region) != 0) {
    fn(arg, 0, count);
    return;
  }
  pthread_mutex_lock(&pool->m);
  if (ensure_workers(pool, parts - 1) + 1 < parts) parts = pool->spawned + 1;
  pool->fn = fn;
  pool->arg = arg;
  pool->count = count;
  pool->grain = grain;
  pool->parts = parts;
  pool->pending = pool->spawned;
  pool->gen++;
  pthread_cond_broadcast(&pool->go);
  pthread_mutex_unlock(&pool->m);
  part_range(count, grain, parts, 0, &b, &e);
  if (b < e) fn(arg, b, e);
  pthread_mutex_lock(&pool->m);
  while (pool->pending > 0) pthread_cond_wait(&pool->done, &pool->m);
  pthread_mutex_unlock(&pool->m);
  pthread_mutex_unlock(&pool->region);
}

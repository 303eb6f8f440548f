/* test_blis_pool.c - the blis-cpu plugin's own thread pool (blis_threads.c, built into this test):
 * every item of every parallel region runs exactly once, whether the workers are spinning, in the
 * spin's yielding part or asleep when a region opens, on all cores and with the whole process
 * held on one core (the caller sharing its worker's core, where the spin yields it). */
#define _GNU_SOURCE
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

/* REGIONS regions on a pool of `threads`, the gap before each one cycling through none (the
 * workers still spinning), 50 us (past the spin's first part: the workers yield) and 2 ms (past
 * the spin: asleep, woken by the region). */
static void regions(int32_t threads, const char *where) {
  mi__blis_env_t env;
  memset(&env, 0, sizeof env);
  memset(g_hits, 0, sizeof g_hits);
  env.threads = threads;
  REQUIRE(env.pool = mi__blis_pool_create(threads));
  for (int r = 0; r < REGIONS; r++) {
    if (r % 3 == 1) pause_us(50);
    if (r % 3 == 2) pause_us(2000);
    /* item_work high enough that every thread gets a part */
    mi__blis_parallel(&env, ITEMS, 8, 1000, count_items, NULL);
  }
  mi__blis_pool_destroy(env.pool);
  for (int i = 0; i < ITEMS; i++)
    if (g_hits[i] != REGIONS) {
      CHECK(0, " %s, %d threads: item %d ran %d times in %d regions", where, (int)threads, i,
            (int)g_hits[i], REGIONS);
      break;
    }
}

static void all_cores(void) {
  regions(2, "all cores");
  regions(4, "all cores");
}

static void one_core(void) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) TU_SKIP("one_core: cannot pin to one core");
  /* the workers, created by the pool, inherit the caller's single core */
  regions(2, "one core");
  regions(3, "one core");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(all_cores),
    TU_CASE(one_core),
};

TU_MAIN(NULL, NULL)

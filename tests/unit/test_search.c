/* test_search.c - random, exhaustive and NSGA-II on the real npu-stub space with a synthetic
 * evaluator: budgets, distinct valid points, determinism, resume, fronts and bounds. */
#include <math.h>

#include "test_space_util.h"

typedef struct {
  int32_t calls;
  uint64_t seen[4096];
  int32_t seen_n;
  int32_t fail_mod; /* hash % fail_mod == 0 fails (0: never) */
} eval_ctx_t;

/* Two conflicting objectives of the point's values, and a failure for some hashes. */
static int32_t synth(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj, mi_error_t *err) {
  eval_ctx_t *e = ctx;
  uint64_t h = mi_space_hash(s, pt);
  double f1 = 1, f2 = 1;
  e->calls++;
  if (e->seen_n < 4096) e->seen[e->seen_n++] = h;
  if (mi_space_check(s, pt, err) != MI_OK) return MI_ERR_INVALID_CONFIG; /* must never happen */
  for (int32_t d = 0; d < mi_space_dim_count(s); d++) {
    if (!mi_space_active(s, pt, d)) continue;
    f1 += pt[d] * (d % 3 + 1);
    f2 += (mi_space_dim_size(s, d) - 1 - pt[d]) * (d % 2 + 1);
  }
  obj[MI_OBJ_LATENCY] = f1;
  obj[MI_OBJ_ENERGY] = f2;
  if (e->fail_mod && h % (uint64_t)e->fail_mod == 0) return mi_errorf(err, MI_ERR_DEVICE, "synthetic failure");
  return MI_OK;
}

typedef struct {
  const mi_search_result_t *prev;
} lookup_ctx_t;

static int lookup(void *ctx, uint64_t h, double *obj, int32_t *status) {
  const lookup_ctx_t *l = ctx;
  for (int32_t i = 0; i < l->prev->count; i++)
    if (l->prev->trials[i].hash == h) {
      memcpy(obj, l->prev->trials[i].objectives, sizeof l->prev->trials[i].objectives);
      *status = l->prev->trials[i].status;
      return 1;
    }
  return 0;
}

static const int32_t k_obj[2] = {MI_OBJ_LATENCY, MI_OBJ_ENERGY};

static void base_options(mi_search_options_t *o, eval_ctx_t *e, int32_t strategy, int64_t budget) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->strategy = strategy;
  o->seed = 5;
  o->max_measurements = budget;
  o->objective_count = 2;
  o->objectives = k_obj;
  o->evaluate = synth;
  o->evaluate_ctx = e;
  o->population = 6;
}

static void check_distinct_valid(const mi_space_t *s, const mi_search_result_t *r) {
  mi_error_t err;
  for (int32_t i = 0; i < r->count; i++) {
    CHECK(mi_space_check(s, r->trials[i].point, &err) == MI_OK, "trial %d invalid: %s", i, err.message);
    for (int32_t j = 0; j < i; j++)
      CHECK(r->trials[i].hash != r->trials[j].hash, "trials %d and %d repeat a configuration", j, i);
  }
}

static void test_strategy(const mi_space_t *s, int32_t strategy) {
  eval_ctx_t *e1 = calloc(1, sizeof *e1), *e2 = calloc(1, sizeof *e2), *e3 = calloc(1, sizeof *e3);
  mi_search_options_t o;
  mi_search_result_t *r1 = NULL, *r2 = NULL, *r3 = NULL;
  mi_error_t err;
  int32_t idx[64], c;
  mi_bound_t bound = {MI_OBJ_LATENCY, 0};
  const char *name = mi_strategy_name(strategy);

  base_options(&o, e1, strategy, 30);
  e1->fail_mod = 5;
  CHECK(mi_search_run(s, &o, &r1, &err) == MI_OK, "%s: %s", name, err.message);
  if (!r1) return;
  CHECK(r1->measured == 30 && e1->calls == 30, "%s: %d measured, %d calls", name, r1->measured, e1->calls);
  check_distinct_valid(s, r1);
  /* Same seed, same trials. */
  base_options(&o, e2, strategy, 30);
  e2->fail_mod = 5;
  CHECK(mi_search_run(s, &o, &r2, &err) == MI_OK, "%s", err.message);
  for (int32_t i = 0; r2 && i < r1->count && i < r2->count; i++)
    CHECK(r1->trials[i].hash == r2->trials[i].hash, "%s: not deterministic at %d", name, i);

  /* The front: feasible (under a bound), never a failed trial, mutually non-dominated. */
  {
    double lo = INFINITY;
    for (int32_t i = 0; i < r1->count; i++)
      if (r1->trials[i].status == MI_OK && r1->trials[i].objectives[0] < lo) lo = r1->trials[i].objectives[0];
    bound.max = lo + 20;
    o.bounds = &bound;
    o.bound_count = 1;
  }
  c = mi_search_front(r1, &o, k_obj, 2, idx);
  CHECK(c > 0, "%s: empty front", name);
  for (int32_t i = 0; i < c; i++) {
    const mi_trial_t *t = &r1->trials[idx[i]];
    CHECK(t->status == MI_OK && t->objectives[0] <= bound.max, "%s: front member %d infeasible", name, i);
    for (int32_t j = 0; j < c; j++) {
      const mi_trial_t *u = &r1->trials[idx[j]];
      double a[2] = {u->objectives[MI_OBJ_LATENCY], u->objectives[MI_OBJ_ENERGY]};
      double b[2] = {t->objectives[MI_OBJ_LATENCY], t->objectives[MI_OBJ_ENERGY]};
      CHECK(!mi_pareto_dominates(a, b, 2), "%s: front member %d dominated by %d", name, i, j);
    }
    if (i > 0) CHECK(r1->trials[idx[i - 1]].objectives[0] <= t->objectives[0], "%s: front not in preference order", name);
  }
  /* Resume: with the first run as history, nothing measured there is measured again. Random
   * search keeps the first run's seed, so it draws the first run's configurations again and
   * must take each from the history; NSGA-II's new seed still breeds some of them. */
  {
    lookup_ctx_t l = {r1};
    base_options(&o, e3, strategy, 15);
    o.seed = strategy == MI_STRATEGY_RANDOM ? 5 : 6;
    o.lookup = lookup;
    o.lookup_ctx = &l;
    CHECK(mi_search_run(s, &o, &r3, &err) == MI_OK, "%s", err.message);
    if (r3) {
      CHECK(r3->measured <= 15, "%s: budget exceeded on resume", name);
      for (int32_t i = 0; i < e3->seen_n; i++)
        for (int32_t j = 0; j < r1->count; j++)
          CHECK(e3->seen[i] != r1->trials[j].hash, "%s: re-measured a configuration in the history", name);
      CHECK(r3->replayed > 0, "%s: nothing replayed", name);
    }
  }
  mi_search_result_destroy(r1);
  mi_search_result_destroy(r2);
  mi_search_result_destroy(r3);
  free(e1);
  free(e2);
  free(e3);
}

/* A one-Relu model: a space small enough to enumerate. */
static mi_graph_t *relu_graph(void) {
  static const int64_t d[2] = {4, 16};
  mi_graph_t *g = mi_graph_create("relu");
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, d), y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
  mi_error_t err;
  mi_graph_add_input(g, x);
  mi_graph_add_node(g, "Relu", "relu", 1, &x, 1, &y);
  mi_graph_add_output(g, y);
  if (mi_graph_toposort(g, &err) != MI_OK || mi_graph_infer_shapes(g, &err) != MI_OK) exit(1);
  return g;
}

static void test_exhaustive(mi_plugin_t *p) {
  mi_graph_t *g = relu_graph();
  mi_space_t *s = NULL;
  mi_search_options_t o;
  mi_search_result_t *r = NULL;
  eval_ctx_t *e = calloc(1, sizeof *e);
  mi_error_t err;
  int64_t size;
  CHECK(mi_space_create(g, p, 0, NULL, &s, &err) == MI_OK, "%s", err.message);
  size = mi_space_exact_size(s);
  CHECK(size > 1 && size < 5000, "relu space size %lld", (long long)size);
  base_options(&o, e, MI_STRATEGY_EXHAUSTIVE, 100000);
  CHECK(mi_search_run(s, &o, &r, &err) == MI_OK, "%s", err.message);
  if (r) {
    /* Every distinct valid configuration, once. */
    CHECK(r->measured == size, "exhaustive measured %d of %lld", r->measured, (long long)size);
    check_distinct_valid(s, r);
  }
  mi_search_result_destroy(r);
  /* A budget below the size stops it there. */
  base_options(&o, e, MI_STRATEGY_EXHAUSTIVE, 7);
  r = NULL;
  CHECK(mi_search_run(s, &o, &r, &err) == MI_OK && r && r->measured == 7, "budget 7");
  mi_search_result_destroy(r);
  free(e);
  mi_space_destroy(s);
  mi_graph_destroy(g);
}

static tsu_npu_space_t fx;

static void setup(void) { tsu_npu_space_build(&fx); }

static void teardown(void) { tsu_npu_space_free(&fx); }

static void random_search(void) { test_strategy(fx.s, MI_STRATEGY_RANDOM); }
static void nsga2(void) { test_strategy(fx.s, MI_STRATEGY_NSGA2); }
static void exhaustive(void) { test_exhaustive(fx.p); }

static const tu_case_t tu_cases[] = {
    TU_CASE(random_search),
    TU_CASE(nsga2),
    TU_CASE(exhaustive),
};

TU_MAIN(setup, teardown)

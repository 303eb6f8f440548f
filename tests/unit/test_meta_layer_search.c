/* test_meta_layer_search.c - the per-layer base model inside the surrogate-guided search, on the
 * real npu-stub space of a small CNN: layer times that depend on each layer's size, its own
 * node's configuration and the device knobs; a source device whose history holds only per-layer
 * times (its end-to-end latencies unknown, so no end-to-end source model and no warm points),
 * and the target device 1.7x slower with an end-to-end overhead, whose evaluator hands back its
 * layer times. A faithful per-layer history must earn the base model weight; an inverted one
 * must get none; without per-layer rows (or with the model switched off) nothing changes. */
#include <math.h>

#include "test_space_util.h"

/* The effect of a value of a dimension, by its key without the node and its label, so a knob
 * acts alike on every layer (as in test_meta_layer.c). */
static double cell(const mi_space_t *s, int32_t d, int32_t v) {
  const char *name = mi_space_dim_name(s, d), *key = strstr(name, ".knob.");
  const char *label = mi_space_dim_label(s, d, v);
  mi_rng_t r;
  if (!key) key = strrchr(name, '.');
  if (!key || !strncmp(name, "device.", 7)) key = name;
  mi_rng_seed(&r, mi_hash64(key, strlen(key), 4242u) ^ mi_hash64(label, strlen(label), 7u));
  return mi_rng_uniform(&r);
}

/* Every node's seconds under pt on a device `scale` times slower; `sign` -1 inverts the effect
 * of the configuration (a misleading history). Returns the sum. */
static double layer_times(const mi_space_t *s, const mi_graph_t *g, const mi_layer_features_t *lf,
                          const int32_t *pt, double scale, double sign, double *sec) {
  double sum = 0;
  int32_t k = 0;
  for (int32_t nd = 0; nd < g->node_count; nd++) {
    double f = 0;
    sec[nd] = NAN;
    if (!strcmp(g->nodes[nd].op_type, "Constant")) continue;
    for (int32_t d = 0; d < mi_space_dim_count(s); d++) {
      int32_t node = mi_space_dim_node(s, d);
      if (mi_space_dim_size(s, d) < 2 || (node >= 0 && node != nd)) continue;
      f += cell(s, d, pt[d]);
    }
    sec[nd] = scale * 1e-6 * (1 + log10(1 + lf[k++].flops)) * exp(sign * 0.4 * f);
    sum += sec[nd];
  }
  return sum;
}

/* The target device as an evaluator: end to end 1.2 x the summed layers + 0.005 ms; the layer
 * times of the last evaluation for layer_times. */
typedef struct {
  const mi_graph_t *g;
  const mi_layer_features_t *lf;
  double *last;
  int32_t fetched;
} target_t;

static int32_t evaluate(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj, mi_error_t *err) {
  target_t *t = ctx;
  double sum = layer_times(s, t->g, t->lf, pt, 1.7, 1, t->last);
  (void)err;
  for (int j = 0; j < MI_OBJ_COUNT; j++) obj[j] = NAN;
  obj[MI_OBJ_LATENCY] = 1.2 * sum * 1e3 + 0.005;
  return MI_OK;
}

static int32_t layer_cb(void *ctx, double *sec, int32_t cap) {
  target_t *t = ctx;
  int32_t n = cap < t->g->node_count ? cap : t->g->node_count;
  memcpy(sec, t->last, (size_t)n * sizeof *sec);
  t->fetched++;
  return n;
}

/* A source device's history: count configurations with per-layer times only. */
static void history(const mi_space_t *s, const mi_graph_t *g, const mi_layer_features_t *lf, double sign,
                    int32_t count, uint64_t seed, int32_t **pts, double **lsec, double **obj) {
  int32_t D = mi_space_dim_count(s), N = g->node_count;
  int32_t *dflt = malloc(sizeof(int32_t) * (size_t)D);
  mi_rng_t r;
  mi_rng_seed(&r, seed);
  mi_space_default(s, dflt);
  *pts = malloc(sizeof(int32_t) * (size_t)D * (size_t)count);
  *lsec = malloc(sizeof(double) * (size_t)N * (size_t)count);
  *obj = malloc(sizeof(double) * MI_OBJ_COUNT * (size_t)count);
  for (int32_t i = 0; i < count; i++) {
    int32_t *pt = *pts + (size_t)i * D;
    CHECK(mi_space_sample(s, &r, pt, NULL) == MI_OK, "sample");
    /* As in the search benchmark: the device knobs and the first two nodes free. */
    for (int32_t d = 0; d < D; d++)
      if (mi_space_dim_node(s, d) >= 2) pt[d] = dflt[d];
    mi_space_repair(s, pt, NULL, NULL);
    layer_times(s, g, lf, pt, 1.0, sign, *lsec + (size_t)i * N);
    for (int j = 0; j < MI_OBJ_COUNT; j++) (*obj)[(size_t)i * MI_OBJ_COUNT + j] = NAN;
  }
  free(dflt);
}

/* One search on the target; returns the result (caller frees) and fills the report. */
static mi_search_result_t *search(const mi_space_t *s, const mi_graph_t *g, target_t *tg, const mi_meta_task_t *src,
                                  int no_layer, uint64_t seed, const uint8_t *frozen, mi_meta_report_t *rep) {
  mi_search_options_t o;
  mi_meta_options_t mo;
  mi_search_result_t *r = NULL;
  mi_error_t err;
  int32_t objs[1] = {MI_OBJ_LATENCY};
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.seed = seed;
  o.max_measurements = 26;
  o.objective_count = 1;
  o.objectives = objs;
  o.evaluate = evaluate;
  o.evaluate_ctx = tg;
  o.layer_times = layer_cb;
  o.layer_times_ctx = tg;
  o.frozen = frozen;
  mi_meta_options_default(&mo);
  mo.graph = g;
  mo.screen = 1500;
  mo.report = rep;
  mo.device_moves = 0; /* the budget for the rounds whose weights this reads */
  mo.sources = src;
  mo.source_count = 1;
  mo.desc[MI_META_FP_OFFSET] = 2.0; /* the target device's fingerprint */
  mo.no_layer_model = no_layer;
  CHECK(mi_meta_search_run(s, &o, &mo, &r, &err) == MI_OK, "search: %s", err.message);
  return r;
}

/* The largest and the mean weight the per-layer model got over the rounds (each round's fit);
 * returns the number of rounds that report one. */
static int32_t weights(const mi_meta_report_t *rep, double *mx, double *mean) {
  int32_t c = 0;
  *mx = 0;
  *mean = 0;
  for (int32_t i = 0; i < rep->rounds && i < MI_META_MAX_ROUNDS; i++)
    if (isfinite(rep->layer_weight[i])) {
      if (rep->layer_weight[i] > *mx) *mx = rep->layer_weight[i];
      *mean += rep->layer_weight[i];
      c++;
    }
  if (c) *mean /= c;
  return c;
}

enum { SEEDS = 6 };
static tsu_npu_space_t fx;

static void setup(void) { tsu_npu_space_build(&fx); }

static void teardown(void) { tsu_npu_space_free(&fx); }

static void layer_history_weight(void) {
  const mi_space_t *s = fx.s;
  const mi_graph_t *g = fx.g;
  int32_t D = mi_space_dim_count(s), lc = 0, good_weight = 0, liar_zero = 0, same = 0;
  mi_layer_features_t *lf = NULL;
  mi_model_features_t mf;
  uint8_t *frozen = calloc((size_t)D, 1);
  int32_t *gp, *lp;
  double *gl, *go, *ll, *lo;
  mi_meta_task_t good, liar;
  target_t tg;
  CHECK(mi_model_features(g, &mf, &lf, &lc, NULL) == MI_OK, "features");
  for (int32_t d = 0; d < D; d++) frozen[d] = mi_space_dim_node(s, d) >= 2;
  history(s, g, lf, 1, 64, 1, &gp, &gl, &go);
  history(s, g, lf, -1, 64, 1, &lp, &ll, &lo);
  memset(&good, 0, sizeof good);
  good.name = "per-layer history";
  good.space = s;
  good.graph = g;
  good.desc[MI_META_FP_OFFSET] = 1.0;
  good.count = 64;
  good.points = gp;
  good.objectives = go;
  good.layer_latency = gl;
  liar = good;
  liar.points = lp;
  liar.objectives = lo;
  liar.layer_latency = ll;
  memset(&tg, 0, sizeof tg);
  tg.g = g;
  tg.lf = lf;
  tg.last = malloc(sizeof(double) * (size_t)g->node_count);
  for (uint64_t seed = 1; seed <= SEEDS; seed++) {
    mi_meta_report_t rg, rl, ra, rb;
    mi_meta_task_t plain = good;
    mi_search_result_t *a, *b;
    double mx, mean, lmx, lmean;
    int32_t rounds;
    mi_search_result_destroy(search(s, g, &tg, &good, 0, seed, frozen, &rg));
    rounds = weights(&rg, &mx, &mean);
    CHECK(rounds == rg.rounds && rounds >= 2, "faithful: %d of %d rounds weighed the model", (int)rounds, (int)rg.rounds);
    tg.fetched = 0;
    mi_search_result_destroy(search(s, g, &tg, &liar, 0, seed, frozen, &rl));
    rounds = weights(&rl, &lmx, &lmean);
    CHECK(rounds == rl.rounds && rounds >= 2, "inverted: %d of %d rounds weighed the model", (int)rounds, (int)rl.rounds);
    printf("seed %d: faithful per-layer history: weight max %.2f mean %.2f; inverted: max %.3f mean %.3f\n",
           (int)seed, mx, mean, lmx, lmean);
    /* The report says the model was built and used, and every measurement brought its layers. */
    CHECK(rg.layer_model == 1 && rl.layer_model == 1, "per-layer model not built");
    CHECK(rg.layer_rows > 64 && rg.layer_sources == 1, "layer rows %d sources %d", (int)rg.layer_rows, (int)rg.layer_sources);
    CHECK(rl.layer_trials == tg.fetched && rl.layer_trials >= 20, "layer trials %d fetched %d", (int)rl.layer_trials,
          (int)tg.fetched);
    good_weight += mx >= 0.3 && mean >= 0.15;
    liar_zero += lmx <= 0.02;
    /* No per-layer rows, or the model switched off: the same search, step for step. */
    plain.layer_latency = NULL;
    a = search(s, g, &tg, &plain, 0, seed, frozen, &ra);
    b = search(s, g, &tg, &good, 1, seed, frozen, &rb);
    CHECK(ra.layer_model == 0 && rb.layer_model == 0, "per-layer model built without rows / switched off");
    if (a && b && a->count == b->count) {
      int eq = 1;
      for (int32_t i = 0; i < a->count; i++) eq &= a->trials[i].hash == b->trials[i].hash;
      same += eq;
    }
    mi_search_result_destroy(a);
    mi_search_result_destroy(b);
  }
  printf("faithful: substantial weight on %d/%d seeds; inverted: weight <= 0.02 on %d/%d; off = no rows on %d/%d\n",
         (int)good_weight, SEEDS, (int)liar_zero, SEEDS, (int)same, SEEDS);
  CHECK(good_weight >= SEEDS - 1, "faithful per-layer history weighted on %d/%d seeds", (int)good_weight, SEEDS);
  CHECK(liar_zero == SEEDS, "inverted per-layer history kept weight on %d/%d seeds", (int)(SEEDS - liar_zero), SEEDS);
  CHECK(same == SEEDS, "switched off differs from no rows on %d/%d seeds", (int)(SEEDS - same), SEEDS);
  free(tg.last);
  free(gp);
  free(gl);
  free(go);
  free(lp);
  free(ll);
  free(lo);
  free(lf);
  free(frozen);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(layer_history_weight),
};

TU_MAIN(setup, teardown)

/* test_ltask_knob.c - the knob stage of layer-task tuning: on a real plugin's space (blis-cpu,
 * and opencl / vulkan where the machine has them), a per-layer clock whose fastest choice for a
 * Conv sits two values up one of its knobs is found by the knob stage and carried into the
 * point the end-to-end search starts from; without the stage (knob_rounds 0, what the tuner
 * did before) every variant is tried at its declared knobs only and the knob is never moved. The
 * stage measures a few steps per task, not the knobs' cross product. */
#include <math.h>
#include <time.h>

#include "metainfer/mi_ltask.h"
#include "test_space_util.h"

/* A synthetic per-layer clock: a Conv's time grows with the distance of each knob it reads from
 * its target (the declared default, two values up for the first knob with room for it); other
 * nodes and an "auto" Conv (no knobs: the plugin's own) take the time of the declared knobs. */
typedef struct {
  const mi_graph_t *g;
  const mi_space_t *s;
  int32_t *dflt;
  int32_t calls;
  double sleep_s; /* wall time each whole-model measurement takes (0: none) */
  int flat;       /* the target is a named (categorical) knob and every other value of it costs the
                     same: no neighbouring value pays on the way (simd: auto|avx512|avx2|c, where
                     auto is avx512 and only avx2 is faster) */
} kclock_t;

static int named_knob(const mi_space_t *s, int32_t d) {
  for (int32_t v = 0; v < mi_space_dim_size(s, d); v++) {
    const char *l = mi_space_dim_label(s, d, v);
    char *end = NULL;
    (void)strtod(l, &end);
    if (!*l || *end) return 1;
  }
  return 0;
}
static int g_flat; /* target_dim's mode (kclock_t.flat) */

/* The knob dimension of node n the clock wants moved: its first active one with room for two
 * steps up, -1 none. */
static int32_t target_dim(const mi_space_t *s, const int32_t *pt, const int32_t *dflt, int32_t n) {
  for (int32_t d = 0; d < mi_space_dim_count(s); d++)
    if (mi_space_dim_node(s, d) == n && mi_space_dim_kind(s, d) == MI_DIM_KNOB && mi_space_active(s, pt, d) &&
        dflt[d] + 2 < mi_space_dim_size(s, d) && (!g_flat || named_knob(s, d)))
      return d;
  return -1;
}

static double conv_time(const kclock_t *c, const int32_t *pt, int32_t n) {
  int32_t td = target_dim(c->s, pt, c->dflt, n);
  double t = 1.0;
  if (td < 0) return 1e-4 * (1.0 + 0.4); /* auto, or a variant with no knob to move */
  for (int32_t d = 0; d < mi_space_dim_count(c->s); d++) {
    int32_t want = d == td ? c->dflt[d] + 2 : c->dflt[d];
    if (mi_space_dim_node(c->s, d) != n || mi_space_dim_kind(c->s, d) != MI_DIM_KNOB ||
        !mi_space_active(c->s, pt, d))
      continue;
    t += c->flat ? 0.2 * (pt[d] != want) : 0.2 * abs(pt[d] - want);
  }
  return 1e-4 * t;
}

static int32_t kmeasure(void *ctx, const int32_t *pt, double *node_s, mi_error_t *err) {
  kclock_t *c = ctx;
  (void)err;
  c->calls++;
  if (c->sleep_s > 0) {
    struct timespec ts = {0, (long)(c->sleep_s * 1e9)};
    nanosleep(&ts, NULL);
  }
  for (int32_t n = 0; n < c->g->node_count; n++)
    node_s[n] = !strcmp(c->g->nodes[n].op_type, "Conv") ? conv_time(c, pt, n) : 1e-5;
  return MI_OK;
}

/* Tunes the small CNN's tasks on `plugin` with `rounds` knob rounds; returns how many of its
 * Convs whose best has a knob to move ended on the clock's target, into *hit (of *want). */
static void tune_knobs_timed(mi_registry_t *r, const char *plugin, int32_t rounds, double sleep_s,
                             double max_seconds, double hard_seconds, int32_t reserve_runs, int32_t *hit,
                             int32_t *want, mi_ltask_result_t *res) {
  mi_plugin_t *p = mi_registry_find(r, plugin);
  mi_graph_t *g = tsu_small_cnn();
  mi_space_t *s = NULL;
  mi_ltasks_t *t = NULL;
  mi_ltask_options_t o;
  mi_error_t err;
  int32_t D, *base;
  kclock_t c;
  *hit = *want = 0;
  REQUIRE(p != NULL, "%s not loaded", plugin);
  REQUIRE(mi_space_create(g, p, 0, NULL, &s, &err) == MI_OK, "space: %s", err.message);
  D = mi_space_dim_count(s);
  base = calloc((size_t)D + 1, sizeof *base);
  c.dflt = calloc((size_t)D + 1, sizeof *c.dflt);
  mi_space_default(s, base);
  mi_space_default(s, c.dflt);
  mi_space_repair(s, base, NULL, NULL);
  REQUIRE(mi_ltasks_extract(g, s, base, &t, &err) == MI_OK, "extract: %s", err.message);
  c.g = g;
  c.s = s;
  c.calls = 0;
  c.sleep_s = sleep_s;
  c.flat = g_flat;
  mi_ltask_options_default(&o);
  o.measure = kmeasure;
  o.measure_ctx = &c;
  o.knob_rounds = rounds;
  o.max_seconds = max_seconds;
  o.hard_seconds = hard_seconds;
  o.reserve_runs = reserve_runs;
  CHECK(mi_ltasks_tune(g, s, t, base, &o, res, &err) == MI_OK, "%s: %s", plugin, err.message);
  CHECK(res->rounds == c.calls, "rounds %d, measurements %d", (int)res->rounds, (int)c.calls);
  for (int32_t n = 0; res->point && n < g->node_count; n++) {
    int32_t td;
    if (strcmp(g->nodes[n].op_type, "Conv") != 0 || (td = target_dim(s, res->point, c.dflt, n)) < 0) continue;
    (*want)++;
    *hit += res->point[td] == c.dflt[td] + 2;
    if (rounds > 0) {
      char *ch = mi_ltask_choice(s, res->point, n);
      fprintf(stderr, "%s %s: %s (target %s=%s)\n", plugin, g->nodes[n].name, ch, mi_space_dim_name(s, td),
              mi_space_dim_label(s, td, c.dflt[td] + 2));
      free(ch);
    }
  }
  fprintf(stderr,
          "%s, %d knob rounds: %d tasks, %d layer measurements in %d rounds (knob stage %d in %d, %d tasks "
          "faster); %d of %d Convs on the target\n",
          plugin, (int)rounds, (int)res->tasks, (int)res->layer_measurements, (int)res->rounds,
          (int)res->knob_measurements, (int)res->knob_rounds, (int)res->knob_improved, (int)*hit, (int)*want);
  free(base);
  free(c.dflt);
  mi_ltasks_destroy(t);
  mi_space_destroy(s);
  mi_graph_destroy(g);
}

static void tune_knobs(mi_registry_t *r, const char *plugin, int32_t rounds, int32_t *hit, int32_t *want,
                       mi_ltask_result_t *res) {
  tune_knobs_timed(r, plugin, rounds, 0, 0, 0, 0, hit, want, res);
}

/* The phase's seconds (max_seconds): with measurements of 40 ms and 0.1 s for the phase, no
 * round is begun after 0.1 s (so at most 4 run), and the rounds left out, variant and knob, are
 * counted; the untimed run makes them all. A tuner's time budget holds on a model whose
 * measurements take seconds only so (the knob stage alone used to be capped, the variant rounds
 * not at all). */
static void phase_seconds_blis(void) {
  mi_registry_t *r = tsu_registry();
  mi_ltask_result_t full, timed;
  int32_t hit, want;
  tune_knobs(r, "blis-cpu", 12, &hit, &want, &full);
  tune_knobs_timed(r, "blis-cpu", 12, 0.04, 0.1, 0, 0, &hit, &want, &timed);
  CHECK(full.rounds > 4 && full.variant_rounds_cut == 0 && full.knob_rounds_cut == 0,
        "untimed: %d rounds, %d + %d cut", (int)full.rounds, (int)full.variant_rounds_cut, (int)full.knob_rounds_cut);
  CHECK(timed.rounds >= 1 && timed.rounds <= 4, "timed: %d rounds in 0.1 s of 40 ms each", (int)timed.rounds);
  CHECK(timed.variant_rounds_cut + timed.knob_rounds_cut > 0, "timed: nothing counted as cut (%d rounds of %d)",
        (int)timed.rounds, (int)full.rounds);
  mi_ltask_result_free(&full);
  mi_ltask_result_free(&timed);
  mi_registry_destroy(r);
}

/* The extension (hard_seconds, reserve_runs): with 40 ms rounds, a 0.1 s share and 0.6 s in all,
 * a phase that must leave 2 runs after it (0.12 s at its pace) runs on past the share, up to
 * 0.6 s; one that must leave 20 (1.2 s) keeps to the share. The tuner grants the extension when
 * its joint search has only a few points left (opencl and vulkan on a face detector: 2). */
static void phase_reserve_blis(void) {
  mi_registry_t *r = tsu_registry();
  mi_ltask_result_t few, many;
  int32_t hit, want;
  double t0 = mi_now_s(), el;
  tune_knobs_timed(r, "blis-cpu", 12, 0.04, 0.1, 0.6, 2, &hit, &want, &few);
  el = mi_now_s() - t0;
  tune_knobs_timed(r, "blis-cpu", 12, 0.04, 0.1, 0.6, 20, &hit, &want, &many);
  CHECK(few.rounds > 4 && el < 0.6 + 0.2, "2 runs reserved: %d rounds in %.2f s", (int)few.rounds, el);
  CHECK(many.rounds >= 1 && many.rounds <= 4, "20 runs reserved: %d rounds past a 0.1 s share", (int)many.rounds);
  mi_ltask_result_free(&few);
  mi_ltask_result_free(&many);
  mi_registry_destroy(r);
}

static void knob_stage_on(const char *plugin, int required) {
  mi_registry_t *r = tsu_registry();
  mi_ltask_result_t off, on;
  int32_t hit0, want0, hit1, want1;
  if (!mi_registry_find(r, plugin) && !required) {
    fprintf(stderr, "%s: not built or no device, skipped\n", plugin);
    mi_registry_destroy(r);
    return;
  }
  tune_knobs(r, plugin, 0, &hit0, &want0, &off);
  tune_knobs(r, plugin, 12, &hit1, &want1, &on);
  /* Before the stage the knob never moved; with it every Conv reaches its target (two steps,
   * the second taken first because the first paid), in far fewer rounds than a sweep. */
  CHECK(off.knob_rounds == 0 && hit0 == 0, "%s without the stage: %d on target", plugin, (int)hit0);
  CHECK(want1 >= 1 && hit1 == want1, "%s: %d of %d Convs on the knob target", plugin, (int)hit1, (int)want1);
  CHECK(on.knob_improved >= want1 && on.knob_rounds <= 12, "%s: %d improved in %d rounds", plugin,
        (int)on.knob_improved, (int)on.knob_rounds);
  mi_ltask_result_free(&off);
  mi_ltask_result_free(&on);
  mi_registry_destroy(r);
}

static void knob_stage_blis(void) { knob_stage_on("blis-cpu", 1); }

/* A named knob (blis-cpu's `simd`) whose faster value is two places from the default in its
 * list, with the value between no faster than the default: a climb one neighbouring value at a
 * time never gets there (before: 0 Convs on the target); every other value of a named knob is
 * one step, tried once the neighbouring steps are spent (40 rounds: the small CNN's Convs have
 * several knobs each). */
static void knob_stage_named_blis(void) {
  mi_registry_t *r = tsu_registry();
  mi_ltask_result_t on;
  int32_t hit = 0, want = 0;
  g_flat = 1;
  tune_knobs(r, "blis-cpu", 40, &hit, &want, &on);
  g_flat = 0;
  CHECK(want >= 1 && hit == want, "blis-cpu named knob: %d of %d Convs on the target", (int)hit, (int)want);
  mi_ltask_result_free(&on);
  mi_registry_destroy(r);
}

/* A per-layer clock for the depthwise conv: auto runs conv.depthwise_direct at its declared knobs
 * (the plugin's pick), which is 1.7x faster at simd=avx2; every other variant splits the unit
 * and is 3x slower. The pointwise conv and the rest take a fixed time. */
typedef struct {
  const mi_graph_t *g;
  const mi_space_t *s;
  int32_t dw, vd, simd;
} aclock_t;

static int32_t ameasure(void *ctx, const int32_t *pt, double *node_s, mi_error_t *err) {
  aclock_t *c = ctx;
  const char *v = mi_space_dim_label(c->s, c->vd, pt[c->vd]);
  (void)err;
  for (int32_t n = 0; n < c->g->node_count; n++) node_s[n] = 1e-5;
  if (!strcmp(v, "auto"))
    node_s[c->dw] = 1e-4;
  else if (!strcmp(v, "conv.depthwise_direct"))
    node_s[c->dw] = !strcmp(mi_space_dim_label(c->s, c->simd, pt[c->simd]), "avx2") ? 0.6e-4 : 1e-4;
  else
    node_s[c->dw] = 3e-4;
  return MI_OK;
}

/* What auto runs, with its knobs stepped. A task whose best is auto (no variant named: the plugin
 * picks) had no knob to step, and the kernel auto runs for a dw+pw unit (blis-cpu's
 * conv.depthwise_direct, the one Conv variant that fuses the pointwise conv) came after the
 * variant stage's cut: the tuner never measured it with another `simd` (before: the unit stayed
 * auto). The knob stage now steps auto's stand-in's knobs, and the variant stage lists the
 * variants that keep the unit first; a single depthwise conv (no fusion) reaches it too. */
static void auto_stand_in_blis(void) {
  for (int fused = 1; fused >= 0; fused--) {
    mi_registry_t *r = tsu_registry();
    mi_plugin_t *p = mi_registry_find(r, "blis-cpu");
    mi_graph_t *g = tsu_dwpw(16, 32, 24);
    mi_space_t *s = NULL;
    mi_ltasks_t *t = NULL;
    mi_ltask_options_t o;
    mi_ltask_result_t res;
    mi_error_t err;
    aclock_t c = {g, NULL, -1, -1, -1};
    int32_t *base;
    char *ch;
    REQUIRE(p != NULL && mi_space_create(g, p, 0, NULL, &s, &err) == MI_OK, "space: %s", err.message);
    for (int32_t n = 0; n < g->node_count; n++)
      if (!strcmp(g->nodes[n].name, "dw")) c.dw = n;
    c.s = s;
    c.vd = tsu_dim(s, "node.dw.variant");
    c.simd = tsu_dim(s, "node.dw.knob.simd");
    REQUIRE(c.dw >= 0 && c.vd >= 0 && c.simd >= 0 && tsu_value(s, c.vd, "conv.depthwise_direct") > 0,
            "blis-cpu offers conv.depthwise_direct with simd for the depthwise conv");
    base = calloc((size_t)mi_space_dim_count(s) + 1, sizeof *base);
    mi_space_default(s, base);
    mi_space_repair(s, base, NULL, NULL);
    REQUIRE(mi_ltasks_extract_fused(g, s, base, fused, &t, &err) == MI_OK, "extract: %s", err.message);
    REQUIRE(t->count == (fused ? 1 : 2), "%d tasks", (int)t->count);
    mi_ltask_options_default(&o);
    o.measure = ameasure;
    o.measure_ctx = &c;
    o.knob_rounds = 12;
    REQUIRE(mi_ltasks_tune(g, s, t, base, &o, &res, &err) == MI_OK, "tune: %s", err.message);
    ch = mi_ltask_choice(s, res.point, c.dw);
    fprintf(stderr, "%s: dw %s in %d rounds (%d knob rounds)\n", fused ? "dw+pw unit" : "single dw", ch ? ch : "?",
            (int)res.rounds, (int)res.knob_rounds);
    CHECK(!strcmp(mi_space_dim_label(s, c.vd, res.point[c.vd]), "conv.depthwise_direct") &&
              !strcmp(mi_space_dim_label(s, c.simd, res.point[c.simd]), "avx2"),
          "%s: the depthwise conv ends on %s, not depthwise_direct at simd=avx2", fused ? "dw+pw" : "single",
          ch ? ch : "?");
    free(ch);
    mi_ltask_result_free(&res);
    free(base);
    mi_ltasks_destroy(t);
    mi_space_destroy(s);
    mi_graph_destroy(g);
    mi_registry_destroy(r);
  }
}
static void knob_stage_opencl(void) { knob_stage_on("opencl", 0); }
static void knob_stage_vulkan(void) { knob_stage_on("vulkan", 0); }

static const tu_case_t tu_cases[] = {
    TU_CASE(knob_stage_blis),
    TU_CASE(knob_stage_named_blis),
    TU_CASE(auto_stand_in_blis),
    TU_CASE(knob_stage_opencl),
    TU_CASE(knob_stage_vulkan),
    TU_CASE(phase_seconds_blis),
    TU_CASE(phase_reserve_blis),
};

TU_MAIN(NULL, NULL)
